"""Fixtures for real-browser tests: Voilà / JupyterLab servers and a headless Chromium page.

Servers
    ``voila_server(notebook, **voila_command_kwargs)`` starts Voilà with the real
    ``gallery.serve.voila_command`` settings; ``gallery_voila`` is one such server on
    ``GALLERY_NOTEBOOK`` shared by a test module; ``lab_server(root_dir)`` starts JupyterLab.
    Every server gets a free loopback port, its own temporary JUPYTER_CONFIG_DIR /
    JUPYTER_DATA_DIR / JUPYTER_RUNTIME_DIR / IPYTHONDIR, its own session (process group), is
    polled until ready and is stopped by PID at teardown (SIGTERM, then SIGKILL of its process
    group and of any kernel it left behind).

Browser
    ``browser`` (per module) is Playwright's Chromium at ``/usr/bin/chromium`` (``playwright
    install`` is never run); ``page`` is a fresh context + page whose requests to anything but
    the loopback address are aborted; ``page_log`` collects page errors, console errors, failed
    and blocked requests of that page. Without Chromium the tests are skipped, or fail when
    ``$CI`` is set.

Page helpers (plain functions, also reachable as attributes of the ``ui`` fixture)
    ``wait_for_widgets``, ``wait_for_voila``, ``img_bytes``, ``wait_img_changed``,
    ``move_slider``, ``slider_value``.

The server helpers (``find_free_port``, ``start_voila``, ``start_lab``, ``stop_server``, ...)
import nothing from Playwright, so ``tests/gallery/test_serve.py`` loads this file to reuse them.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlparse

import pytest

# the bench's flags: among them, no host but this machine resolves (no request interception)
from dali_gallery.gallery.browser_bench import CHROMIUM_ARGS
from dali_gallery.gallery.serve import DEFAULT_IMAGES_DIR, GALLERY_NOTEBOOK, voila_command

LOOPBACK = "127.0.0.1"
CHROMIUM = os.environ.get("DALI_GALLERY_CHROMIUM", "/usr/bin/chromium")
SERVER_START_TIMEOUT_S = 90.0
SERVER_STOP_TIMEOUT_S = 10.0
DEFAULT_TIMEOUT_MS = 60_000


# --------------------------------------------------------------------------------------------
# processes and ports
# --------------------------------------------------------------------------------------------


def find_free_port(host: str = LOOPBACK) -> int:
    """A TCP port free on ``host`` right now (the servers get port_retries=0, so a race fails
    loudly instead of silently moving the server elsewhere)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def jupyter_env(base: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """os.environ with private, empty Jupyter/IPython dirs under ``base`` (created)."""
    env = dict(os.environ)
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR"):
        path = base / name.lower()
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    env["JUPYTER_PLATFORM_DIRS"] = "1"  # silences jupyter_core's platformdirs notice
    env["PYTHONUNBUFFERED"] = "1"
    # A token or config from the developer's shell must not leak into the servers under test.
    for name in ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE", "JUPYTER_PATH", "JUPYTER_CONFIG_PATH"):
        env.pop(name, None)
    env.update(extra or {})
    return env


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir() if Path("/proc").is_dir() else []:
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid ...; comm may contain spaces and parentheses
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    return children


def descendants(pid: int) -> list[int]:
    """PIDs of all live descendants of ``pid`` (Linux /proc; empty elsewhere)."""
    children = _children_map()
    found: list[int] = []
    stack = [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def kernel_pids(server: Server) -> list[int]:
    """PIDs of the Jupyter kernels a server started (its live ``ipykernel`` descendants)."""
    pids = []
    for pid in descendants(server.proc.pid):
        try:
            if b"ipykernel" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:  # gone meanwhile
            continue
    return pids


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # a zombie child of ours is "alive" for kill(); reap it if it is ours
    try:
        done, _ = os.waitpid(pid, os.WNOHANG)
        return done == 0
    except ChildProcessError:
        stat = Path(f"/proc/{pid}/stat")
        with contextlib.suppress(OSError):
            return stat.read_text().rsplit(")", 1)[1].split()[0] != "Z"
        return True


def stop_process(proc: subprocess.Popen, timeout: float = SERVER_STOP_TIMEOUT_S) -> None:
    """SIGTERM the process, wait, then SIGKILL its process group and every descendant left.

    Kernels run in sessions of their own (jupyter_client starts them with start_new_session), so
    they are not in the server's process group: they are found through /proc before the server
    goes and killed by PID if the server did not shut them down.
    """
    if proc.poll() is not None:
        return
    kids = descendants(proc.pid)
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)  # helpers still in the group
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(_alive(pid) for pid in kids):
        time.sleep(0.1)
    for pid in kids:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)


def http_status(url: str, method: str = "GET", timeout: float = 5.0) -> int:
    """Status code of a request to ``url`` (redirects are not followed)."""

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(urllib.request.Request(url, method=method), timeout=timeout) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@dataclass
class Server:
    """A server process started by these fixtures."""

    name: str
    proc: subprocess.Popen
    port: int
    host: str
    log_path: Path
    env: dict[str, str]
    cmd: list[str]
    token: str | None = None
    start_s: float = 0.0
    _log_file: Any = field(default=None, repr=False)

    @property
    def url(self) -> str:
        """Base URL with a trailing slash (no token)."""
        return f"http://{self.host}:{self.port}/"

    def page_url(self, path: str = "") -> str:
        url = self.url + path.lstrip("/")
        if self.token:
            url += ("&" if "?" in url else "?") + f"token={self.token}"
        return url

    def log_tail(self, chars: int = 4000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-chars:]
        return ""

    def stop(self) -> None:
        stop_process(self.proc)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None


def start_server(
    name: str,
    cmd: Sequence[str],
    *,
    port: int,
    ready_path: str,
    ready_method: str,
    workdir: Path,
    env: dict[str, str],
    cwd: Path | None = None,
    host: str = LOOPBACK,
    token: str | None = None,
    timeout: float = SERVER_START_TIMEOUT_S,
) -> Server:
    """Start ``cmd`` in its own session, logging to ``workdir/<name>.log``, and poll
    ``ready_path`` until it answers 200 (the process exiting or the timeout fails the test)."""
    log_path = workdir / f"{name}.log"
    log_file = open(log_path, "wb")  # noqa: SIM115 - closed by Server.stop
    t0 = time.monotonic()
    proc = subprocess.Popen(
        list(cmd),
        cwd=cwd or workdir,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=log_file,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    server = Server(name, proc, port, host, log_path, env, list(cmd), token, 0.0, log_file)
    ready_url = server.url + ready_path.lstrip("/")
    if token:
        ready_url += f"?token={token}"
    deadline = t0 + timeout
    while True:
        if proc.poll() is not None:
            server.stop()
            pytest.fail(
                f"{name} exited with {proc.returncode} before it was ready:\n{server.log_tail()}"
            )
        try:
            if http_status(ready_url, method=ready_method, timeout=2) == 200:
                break
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            server.stop()
            pytest.fail(f"{name} not ready after {timeout:.0f} s:\n{server.log_tail()}")
        time.sleep(0.2)
    server.start_s = time.monotonic() - t0
    return server


def start_voila(
    notebook: Path,
    workdir: Path,
    *,
    images_dir: Path | None = None,
    port: int | None = None,
    extra_env: dict[str, str] | None = None,
    **command_kwargs: Any,
) -> Server:
    """Voilà on ``notebook`` with exactly the ``gallery.serve.voila_command`` settings."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or find_free_port()
    host = command_kwargs.get("host", LOOPBACK)
    cmd = voila_command(
        notebook,
        images_dir=images_dir or DEFAULT_IMAGES_DIR,
        port=port,
        **command_kwargs,
    )
    return start_server(
        "voila",
        cmd,
        port=port,
        ready_path="voila/static/voila.js",  # HEAD on a static file: starts no kernel
        ready_method="HEAD",
        workdir=workdir,
        env=jupyter_env(workdir / "jupyter", extra_env),
        cwd=Path(notebook).resolve().parent,
        host=LOOPBACK if host in ("0.0.0.0", "") else host,
        token=command_kwargs.get("token"),
    )


LAB_SETTINGS = {
    # no "Get notified about Jupyter news?" toast, no update check
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


def start_lab(root_dir: Path, workdir: Path, *, port: int | None = None) -> Server:
    """JupyterLab serving ``root_dir``, no token, news and update checks off."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = port or find_free_port()
    settings_dir = workdir / "lab-user-settings"
    for rel, value in LAB_SETTINGS.items():
        path = settings_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    workspaces = workdir / "lab-workspaces"
    workspaces.mkdir(exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        f"--ServerApp.ip={LOOPBACK}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.allow_root=True",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={root_dir}",
        f"--LabApp.user_settings_dir={settings_dir}",
        f"--LabApp.workspaces_dir={workspaces}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    return start_server(
        "jupyterlab",
        cmd,
        port=port,
        ready_path="api/status",  # HEAD answers 405 here
        ready_method="GET",
        workdir=workdir,
        env=jupyter_env(workdir / "jupyter"),
        cwd=root_dir,
    )


# --------------------------------------------------------------------------------------------
# server fixtures
# --------------------------------------------------------------------------------------------


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.path).parents:
            item.add_marker(pytest.mark.browser)


@contextlib.contextmanager
def _servers(workdir: Path, prefix: str,
             launch: Callable[..., Server]) -> Iterator[Callable[..., Server]]:
    """``start(path, **kw)`` launches a server in its own folder under ``workdir``; every server
    started is stopped on the way out."""
    servers: list[Server] = []

    def start(path: Path, **kwargs: Any) -> Server:
        server = launch(Path(path), workdir / f"{prefix}-{len(servers)}", **kwargs)
        servers.append(server)
        return server

    try:
        yield start
    finally:
        for server in servers:
            server.stop()


@pytest.fixture
def voila_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Factory: ``voila_server(notebook=GALLERY_NOTEBOOK, images_dir=..., **voila_command kw)``."""
    with _servers(tmp_path, "voila", start_voila) as start:
        yield lambda notebook=GALLERY_NOTEBOOK, **kwargs: start(notebook, **kwargs)


@pytest.fixture(scope="module")
def gallery_voila(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One Voilà server on GALLERY_NOTEBOOK with the default sample images, per test module."""
    server = start_voila(GALLERY_NOTEBOOK, tmp_path_factory.mktemp("gallery-voila"))
    yield server
    server.stop()


@pytest.fixture
def lab_server(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Factory: ``lab_server(root_dir)`` starts JupyterLab on ``root_dir``."""
    with _servers(tmp_path, "lab", start_lab) as start:
        yield start


# --------------------------------------------------------------------------------------------
# browser fixtures
# --------------------------------------------------------------------------------------------


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set, so this is an error, not a skip)", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium driven by Playwright (system Chromium, never `playwright install`).

    Module-scoped: Playwright's sync API keeps an asyncio loop marked as running in the main
    thread while it is open, which would break ``asyncio.run`` in tests collected after ours."""
    if not Path(CHROMIUM).exists():
        _unavailable(f"Chromium not found at {CHROMIUM} (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright (Python) is not installed: pip install -e '.[test]'")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@dataclass
class PageLog:
    """What went wrong on a page: useful in assertion messages."""

    page_errors: list[str] = field(default_factory=list)
    console_errors: list[str] = field(default_factory=list)
    failed_responses: list[str] = field(default_factory=list)  # local 4xx/5xx
    blocked: list[str] = field(default_factory=list)  # non-loopback requests (failed)

    def summary(self) -> str:
        return json.dumps(self.__dict__, indent=1)


def _is_local(url: str) -> bool:
    parsed = urlparse(url)
    if parsed.scheme in ("data", "blob", "about"):
        return True
    return parsed.hostname in (LOOPBACK, "localhost")


@pytest.fixture
def page_log() -> PageLog:
    return PageLog()


@pytest.fixture
def page(browser: Any, page_log: PageLog) -> Iterator[Any]:
    """A new browser context and page (only 127.0.0.1 / localhost resolve: CHROMIUM_ARGS)."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    pg = context.new_page()
    pg.on("requestfailed",
          lambda req: None if _is_local(req.url) else page_log.blocked.append(req.url))
    pg.on("pageerror", lambda exc: page_log.page_errors.append(str(exc)))
    pg.on(
        "console",
        lambda msg: page_log.console_errors.append(msg.text) if msg.type == "error" else None,
    )
    pg.on(
        "response",
        lambda resp: (
            page_log.failed_responses.append(f"{resp.status} {resp.url}")
            if resp.status >= 400 and _is_local(resp.url)
            else None
        ),
    )
    try:
        yield pg
    finally:
        context.close()


# --------------------------------------------------------------------------------------------
# page helpers
# --------------------------------------------------------------------------------------------


def wait_for_widgets(
    page: Any,
    selector: str = ".jupyter-widgets",
    min_count: int = 1,
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> None:
    """Wait until at least ``min_count`` elements match ``selector`` and the first is visible."""
    page.wait_for_function(
        "([sel, n]) => document.querySelectorAll(sel).length >= n",
        arg=[selector, min_count],
        timeout=timeout_ms,
    )
    page.locator(selector).first.wait_for(state="visible", timeout=timeout_ms)


def wait_for_voila(page: Any, url: str, timeout_ms: int = DEFAULT_TIMEOUT_MS) -> None:
    """Open a Voilà page and wait until its widgets are rendered (the notebook has executed)."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    wait_for_widgets(page, timeout_ms=timeout_ms)


_FETCH_BYTES_JS = """async (el) => {
    const src = el.currentSrc || el.src;
    if (!src) return null;
    const resp = await fetch(src);
    const buf = new Uint8Array(await resp.arrayBuffer());
    let bin = "";
    for (let i = 0; i < buf.length; i += 0x8000) {
        bin += String.fromCharCode.apply(null, buf.subarray(i, i + 0x8000));
    }
    return btoa(bin);
}"""


def open_images(page: Any) -> None:
    """Open the served app's Images section (collapsed when the page loads), unless open."""
    section = page.locator(".dg-app-images .jupyter-widget-Collapse").first
    section.wait_for(state="attached", timeout=240_000)
    if "jupyter-widget-Collapse-open" not in (section.get_attribute("class") or ""):
        section.locator(".jupyter-widget-Collapse-header").first.click()
    page.locator(".dg-app-images .dg-upload").first.wait_for(state="visible")


def chain(page: Any) -> list[str]:
    """The builder's chain as its step cards show it: the operators, in order."""
    texts = page.locator(".dg-step-card .dg-step-title").all_inner_texts()
    return [re.match(r"\s*\d+\.\s*(\S+)", t).group(1) for t in texts]


def img_bytes(page: Any, target: Any = "img.widget-image") -> bytes | None:
    """The bytes behind an ``<img>`` (blob:, data: or http URL), fetched inside the page.

    ``target`` is a CSS selector (first match) or a Playwright Locator.
    """
    locator = page.locator(target).first if isinstance(target, str) else target
    encoded = locator.evaluate(_FETCH_BYTES_JS)
    return None if encoded is None else base64.b64decode(encoded)


def wait_img_changed(
    page: Any,
    previous: bytes | None,
    target: Any = "img.widget-image",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    settle_ms: int = 300,
) -> bytes:
    """Wait until the image's bytes differ from ``previous`` and then stay the same for
    ``settle_ms`` (intermediate slider values each produce an image); return the final bytes."""
    deadline = time.monotonic() + timeout_ms / 1000
    current = previous
    while time.monotonic() < deadline:
        current = img_bytes(page, target)
        if current is not None and current != previous:
            page.wait_for_timeout(settle_ms)
            again = img_bytes(page, target)
            if again == current:
                return current
            continue
        page.wait_for_timeout(100)
    raise AssertionError(f"image did not change within {timeout_ms} ms")


def slider_value(page: Any, target: Any = ".widget-slider") -> str | None:
    """``aria-valuenow`` of a slider's (first) noUi handle."""
    slider = page.locator(target).first if isinstance(target, str) else target
    return slider.locator(".noUi-handle").first.get_attribute("aria-valuenow")


def move_slider(
    page: Any,
    steps: int,
    target: Any = ".widget-slider",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
) -> str:
    """Press ArrowRight (steps > 0) or ArrowLeft (steps < 0) on the slider's handle, one key at a
    time (each press waits until the handle has moved; a press the page dropped while busy
    re-rendering is pressed again), then wait until ``aria-valuenow`` settles ``steps`` steps
    (for a step of 1) from where it started. Returns the final value."""
    slider = page.locator(target).first if isinstance(target, str) else target
    handle = slider.locator(".noUi-handle").first
    start = handle.get_attribute("aria-valuenow")
    key = "ArrowRight" if steps > 0 else "ArrowLeft"
    deadline = time.monotonic() + timeout_ms / 1000
    for _ in range(abs(steps)):
        before = handle.get_attribute("aria-valuenow")
        while handle.get_attribute("aria-valuenow") == before:
            if time.monotonic() > deadline:
                raise AssertionError(f"slider stayed at {before} (from {start}, {steps:+d} "
                                     "steps)")
            handle.focus()
            handle.press(key)
            pressed = time.monotonic()
            while (handle.get_attribute("aria-valuenow") == before
                   and time.monotonic() - pressed < 3):
                page.wait_for_timeout(20)
    expected = None
    with contextlib.suppress(TypeError, ValueError):
        expected = float(start) + steps
    while True:
        now = handle.get_attribute("aria-valuenow")
        if expected is None or float(now) == expected:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"slider at {now}, expected {expected} (from {start}, "
                                 f"{steps:+d} steps)")
        page.wait_for_timeout(50)


@pytest.fixture
def ui() -> SimpleNamespace:
    """The page helpers, for tests that prefer a fixture to importing from conftest."""
    return SimpleNamespace(
        wait_for_widgets=wait_for_widgets,
        wait_for_voila=wait_for_voila,
        img_bytes=img_bytes,
        wait_img_changed=wait_img_changed,
        move_slider=move_slider,
        slider_value=slider_value,
    )
