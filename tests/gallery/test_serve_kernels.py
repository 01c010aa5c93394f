"""Kernels of the served app (gallery/serve_kernels.py): many pages at once, dying kernels.

Real Voilà servers with the real ``serve.voila_command`` settings on the real gallery notebook.
The kernel that dies is a kernelspec named like the notebook's (``python3``) in the server's
private JUPYTER_DATA_DIR, which Jupyter prefers over the installed one.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import shutil
import stat
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from dali_gallery.gallery.serve import GALLERY_NOTEBOOK, voila_command
from tests.browser.conftest import http_status, kernel_pids, start_voila
from tests.support import SAMPLES, write_notebook

PAGES = 12
POOL = 2
"""Kernels started ahead in the tests of the pool (whatever ``serve``'s default is)."""
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
KERNEL_ID_RE = re.compile(r'"kernelId":\s*"([0-9a-f-]{36})"')


def get(url: str, timeout: float = 300) -> tuple[int, str]:
    """(status, body) of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp:
            return resp.status, resp.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode("utf-8", "replace")


def connection_info(pid: int) -> tuple[Path, dict]:
    """The connection file a kernel process was started with (``-f FILE``) and its contents."""
    args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    path = Path(os.fsdecode(args[args.index(b"-f") + 1]))
    return path, json.loads(path.read_text())


def wait_pool_filled(server, timeout: float = 180) -> None:
    """Until the server's pool of kernels started ahead is full (pages before that get kernels
    started for them: Voilà uses the pool once one of its kernels has run the notebook)."""
    deadline = time.monotonic() + timeout
    while "is filled with" not in server.log_tail(200_000):
        assert time.monotonic() < deadline, server.log_tail()
        time.sleep(0.3)


def write_kernelspec(server_workdir: Path, argv: list[str]) -> None:
    """A ``python3`` kernelspec in the private JUPYTER_DATA_DIR that ``start_voila`` gives the
    server (``jupyter_env``), so it replaces the real kernel for that server only."""
    spec = server_workdir / "jupyter" / "jupyter_data_dir" / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps(
        {"argv": argv, "display_name": "Python 3", "language": "python"}))


def test_command_runs_kernels_over_ipc_with_the_checking_manager():
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=SAMPLES, port=1)
    assert "--KernelManager.transport=ipc" in cmd
    assert f"--Voila.connection_dir_root={tempfile.gettempdir()}" in cmd
    assert not any(a.startswith("PYTHONPATH=") for a in cmd)  # the installed package, as is
    # the classes the server is told to load exist under those names
    for flag in ("--VoilaConfiguration.multi_kernel_manager_class=",
                 "--Voila.kernel_websocket_connection_class="):
        dotted = next(a for a in cmd if a.startswith(flag)).split("=", 1)[1]
        module, _, name = dotted.rpartition(".")
        assert isinstance(getattr(__import__(module, fromlist=[name]), name), type), dotted


def test_command_refuses_a_temp_folder_too_long_for_unix_sockets(monkeypatch, tmp_path):
    long_dir = tmp_path / ("t" * 80)
    long_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(long_dir))
    with pytest.raises(ValueError, match="too long for the kernels' Unix sockets.*TMPDIR"):
        voila_command(GALLERY_NOTEBOOK, images_dir=SAMPLES, port=1)


@pytest.mark.slow
@pytest.mark.timeout(600)
@pytest.mark.parametrize("pool_size", [0, POOL])
def test_twelve_pages_opened_together_all_get_their_kernel(tmp_path, pool_size):
    """Twelve page loads at once (the pool's kernels go to the first pages, the others start
    one each and run the app): every page comes back with the app's widgets within the time
    limit and a kernel of its own, and every kernel talks to the server over Unix sockets in a
    private folder: no port the server picked for one kernel can be taken by another
    (ipykernel binds random TCP ports of its own for internal pipes, which is how kernels
    started together collided). No page names the server's folders."""
    root = tmp_path / "root"
    (root / "photos").mkdir(parents=True)
    for name in ("cat.jpg", "coffee.jpg"):
        shutil.copy(SAMPLES / name, root / "photos" / name)
    server = start_voila(GALLERY_NOTEBOOK, tmp_path / "server", images_dir=root / "photos",
                         allowed_root=root, pool_size=pool_size)
    try:
        if pool_size:
            wait_pool_filled(server)
        t0 = time.monotonic()
        with concurrent.futures.ThreadPoolExecutor(PAGES) as pool:
            pages = list(pool.map(lambda _: get(server.url), range(PAGES)))
        took = time.monotonic() - t0
        log = server.log_tail(200_000)
        assert [status for status, _ in pages] == [200] * PAGES, log
        assert all(WIDGET_VIEW in body for _, body in pages), log
        assert took < 300, f"{PAGES} pages took {took:.0f} s"
        assert "Address already in use" not in log and "failed while starting" not in log
        ids = [KERNEL_ID_RE.search(body).group(1) for _, body in pages]
        assert len(set(ids)) == PAGES, ids  # one kernel per page, never shared
        assert ("Using pre-heated kernel" in log) == bool(pool_size), log

        kernels = kernel_pids(server)  # the pages' kernels and the pool, refilling
        assert PAGES <= len(kernels) <= PAGES + pool_size, kernels
        folders = set()
        for pid in kernels:
            path, info = connection_info(pid)
            assert info["transport"] == "ipc", info
            assert Path(info["ip"]).parent == path.parent  # the sockets live beside the file
            folders.add(path.parent)
        (folder,) = folders  # one folder for the server ...
        # ... that only its user can enter (jupyter_client adds the sticky bit)
        assert stat.S_IMODE(folder.stat().st_mode) & 0o777 == 0o700

        for needle in (str(root), str(root.resolve()), sys.prefix, tempfile.gettempdir()):
            assert not any(needle in body for _, body in pages), needle
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("pool_size", [0, POOL])
def test_a_kernel_that_dies_while_starting_gets_an_error_page(tmp_path, pool_size):
    """Before: Voilà sent heartbeats forever and the page spun. Now: one retry, then a 503
    page that says what happened, quickly, and the server keeps serving (a pooled kernel
    goes through the same start; the page that takes that pool entry gets the 503)."""
    workdir = tmp_path / "server"
    write_kernelspec(workdir, [sys.executable, "-c", "raise SystemExit(3)", "-f",
                               "{connection_file}"])
    server = start_voila(GALLERY_NOTEBOOK, workdir, pool_size=pool_size)
    try:
        # the old page never ended (a heartbeat every 10 s): wait for the whole answer 60 s
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            answer = pool.submit(get, server.url, 120)
            try:
                status, body = answer.result(timeout=60)
            except concurrent.futures.TimeoutError:
                server.stop()  # ends the request, and with it the thread
                pytest.fail("the page whose kernel died was still loading after 60 s")
        assert status == 503, body[-2000:]
        assert "kernel stopped while starting. Reload the page to try again" in body
        log = server.log_tail(50_000)
        assert "attempt 1 of 2" in log and "attempt 2 of 2" in log, log
        assert http_status(server.url + "voila/static/voila.js", method="HEAD") == 200
        assert not kernel_pids(server)
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("pool_size", [0, POOL])
def test_a_kernel_that_dies_once_is_replaced_and_the_page_works(tmp_path, pool_size):
    workdir = tmp_path / "server"
    marker = tmp_path / "died-once"
    launcher = tmp_path / "flaky_kernel.py"
    launcher.write_text(
        "import os, sys\n"
        f"marker = {str(marker)!r}\n"
        "if not os.path.exists(marker):\n"
        "    open(marker, 'w').close()\n"
        "    raise SystemExit('flaky kernel: dying on its first start')\n"
        "os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', *sys.argv[1:]])\n"
    )
    write_kernelspec(workdir, [sys.executable, str(launcher), "-f", "{connection_file}"])
    server = start_voila(GALLERY_NOTEBOOK, workdir, pool_size=pool_size)
    try:
        if pool_size:
            wait_pool_filled(server)
        status, body = get(server.url)
        log = server.log_tail(50_000)
        assert status == 200 and WIDGET_VIEW in body, log
        assert marker.exists() and "attempt 1 of 2" in log and "attempt 2 of 2" not in log
        if not pool_size:
            assert len(kernel_pids(server)) == 1
        else:  # the page took a pooled kernel (the replaced one or its sibling)
            assert "Using pre-heated kernel" in log
    finally:
        server.stop()


PROBE = """\
from voila.utils import get_query_string
print("QUERY=" + repr(get_query_string()))
"""


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_pooled_kernel_learns_its_own_pages_query_where_the_server_listens(tmp_path):
    """Pooled kernels ran the notebook before any page asked: each learns its page's request
    (the link) from the server when a page claims it. Voilà's kernels ask 127.0.0.1 unless told
    otherwise: a server bound to another address (here 127.0.0.2) never answered them, and the
    pages lost their links. Two pages, two kernels, each with its own query string."""
    notebook = tmp_path / "nb" / "probe.ipynb"
    notebook.parent.mkdir()
    write_notebook(notebook, PROBE)
    server = start_voila(notebook, tmp_path / "server", host="127.0.0.2", pool_size=POOL)
    try:
        wait_pool_filled(server)
        answers = [get(f"{server.url}?preset=page{k}&token=", timeout=120) for k in range(2)]
        log = server.log_tail(50_000)
        assert "Using pre-heated kernel" in log, log  # (the second may start its own)
        for k, (status, body) in enumerate(answers):
            assert status == 200, log
            assert f"QUERY=&#39;preset=page{k}&amp;token=&#39;" in body, body[-3000:]
        assert KERNEL_ID_RE.search(answers[0][1]).group(1) != KERNEL_ID_RE.search(
            answers[1][1]).group(1)
    finally:
        server.stop()



@pytest.mark.slow
@pytest.mark.timeout(300)
def test_the_pool_is_refilled_only_after_its_delay(tmp_path):
    """A page took the pool's kernel: its replacement starts ``pool_fill_delay_s`` later
    (Voilà's own default, 1 s, started it while that page was still loading)."""
    notebook = tmp_path / "nb" / "probe.ipynb"
    notebook.parent.mkdir()
    write_notebook(notebook, PROBE)
    delay = 6.0
    server = start_voila(notebook, tmp_path / "server", pool_size=1, pool_fill_delay_s=delay)
    try:
        wait_pool_filled(server)
        started = server.log_tail(200_000).count("Kernel started:")
        t0 = time.monotonic()
        status, _ = get(f"{server.url}", timeout=120)
        assert status == 200
        assert "Using pre-heated kernel" in server.log_tail(200_000)
        while server.log_tail(200_000).count("Kernel started:") == started:
            assert time.monotonic() - t0 < 120, server.log_tail()
            time.sleep(0.1)
        assert time.monotonic() - t0 >= delay - 0.2
    finally:
        server.stop()


def test_a_kernel_already_removed_counts_as_died_while_starting():
    """A kernel that died at once can be removed by its restarter before the manager asks it
    for kernel_info: that is a failed start (retried, then the 503 page), not a KeyError (a
    500 page: seen once in a full suite with a pool of 2)."""
    import asyncio

    from dali_gallery.gallery.serve_kernels import GalleryKernelManager

    class Gone:
        def get_kernel(self, kernel_id: str) -> None:
            raise KeyError(kernel_id)

    problem = asyncio.run(GalleryKernelManager._first_reply(Gone(), "k1"))  # type: ignore[arg-type]
    assert "stopped before it could be asked" in problem


def test_a_kernel_being_restarted_is_shut_down_once_its_restart_ends():
    """Regression (a 500 instead of the 503 page, about one run in two with a pool of 2): the
    restarter was restarting the dead kernel when the manager discarded it, and
    jupyter_client's shutdown read its pending ``ready`` future (InvalidStateError). The
    restarter is stopped and the restart awaited before the shutdown."""
    import asyncio

    from dali_gallery.gallery.serve_kernels import GalleryKernelManager

    class Restarting:
        ready_timeout = 5.0

        def __init__(self) -> None:
            self.events: list[str] = []
            self.km = self

        def get_kernel(self, kernel_id: str) -> Restarting:
            return self

        def stop_restarter(self) -> None:
            self.events.append("restarter stopped")

        async def shutdown_kernel(self, kernel_id: str, now: bool = False) -> None:
            self.events.append(f"shutdown, ready done: {self.ready.done()}")

    async def discard() -> list[str]:
        fake = Restarting()
        fake.ready = asyncio.get_running_loop().create_future()  # a restart under way
        asyncio.get_running_loop().call_later(0.05, fake.ready.set_result, None)
        await GalleryKernelManager._discard(fake, "k1")  # type: ignore[arg-type]
        return fake.events

    assert asyncio.run(discard()) == ["restarter stopped", "shutdown, ready done: True"]


def test_kernels_beyond_max_kernels_get_the_503_page(monkeypatch):
    """Every page load starts a kernel and nothing capped them: one client reloading a page
    started kernels (0.3-0.5 GB each) until the machine ran out of memory for every page.
    Kernels starting together count before they are in the map."""
    import asyncio

    from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
    from tornado import web

    from dali_gallery.gallery.serve_kernels import KERNELS_FULL_REASON, GalleryKernelManager

    started: list[str] = []

    async def fake_start(self, *, kernel_id=None, path=None, **kwargs):  # type: ignore[no-untyped-def]
        await asyncio.sleep(0.05)  # starting: not in the map yet
        started.append(f"k{len(started)}")
        self._kernels[started[-1]] = object()
        return started[-1]

    async def answers(self, kernel_id):  # type: ignore[no-untyped-def]
        return ""

    monkeypatch.setattr(AsyncMappingKernelManager, "start_kernel", fake_start)
    monkeypatch.setattr(GalleryKernelManager, "_first_reply", answers)
    manager = GalleryKernelManager(max_kernels=3)

    async def pages(n: int) -> list[object]:
        return await asyncio.gather(*(manager.start_kernel() for _ in range(n)),
                                    return_exceptions=True)

    results = asyncio.run(pages(5))
    refused = [r for r in results if isinstance(r, web.HTTPError)]
    assert sorted(r for r in results if isinstance(r, str)) == ["k0", "k1", "k2"]
    assert len(refused) == 2 and all(r.status_code == 503 and r.reason == KERNELS_FULL_REASON
                                     for r in refused)
    assert manager._starting == 0 and len(manager) == 3
    assert "--GalleryKernelManager.max_kernels=32" in voila_command(
        GALLERY_NOTEBOOK, images_dir=SAMPLES, port=1)
    with pytest.raises(ValueError, match="max_kernels must be more than pool_size"):
        voila_command(GALLERY_NOTEBOOK, images_dir=SAMPLES, port=1, pool_size=4, max_kernels=4)
