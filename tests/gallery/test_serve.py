"""What a Voilà server started with ``gallery.serve`` settings exposes, checked over HTTP.

The servers are started with ``gallery.serve.voila_command`` (the real settings) through the
process helpers of ``tests/browser/conftest.py`` (temporary Jupyter dirs, own session, stopped
by PID). Requests go out through ``http.client`` with exact raw paths (no client-side
normalisation of ``..``); websockets use tornado's client (tornado is already a Voilà dependency).
"""

from __future__ import annotations

import ast
import asyncio
import concurrent.futures
import contextlib
import html
import http.client
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import quote, urlsplit

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

import dali_gallery.gallery.serve as serve_mod
from dali_gallery.gallery.serve import (
    ALLOWED_ROOT_ENV,
    DEFAULT_IMAGES_DIR,
    DEFAULT_MAX_KERNELS,
    DEFAULT_POOL_SIZE,
    GALLERY_NOTEBOOK,
    IMAGES_ENV,
    KERNEL_WS_PROTOCOL,
    MAX_POOL_SIZE,
    MAX_WS_MESSAGE_BYTES,
    PAGE_EXTENSIONS,
    POOL_FILL_DELAY_S,
    TEMPLATE,
    TEMPLATE_ROOT,
    v1_frame_ok,
    voila_command,
)

REPO = Path(__file__).resolve().parents[2]
POOL = 2
"""Kernels started ahead in the tests of the pool (whatever ``serve``'s default is)."""


def _load_server_helpers():
    path = REPO / "tests" / "browser" / "conftest.py"
    spec = importlib.util.spec_from_file_location("_dali_gallery_server_helpers", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


helpers = _load_server_helpers()

FORBIDDEN = {403, 404, 405}
REDIRECTS = {301, 302, 303, 307, 308}
KERNEL_ID_RE = re.compile(r'"kernelId":\s*"([0-9a-f-]{36})"')
SKIP_DIRS = {
    ".git",
    "__pycache__",
    ".venv",
    "venv",
    "node_modules",
    ".pytest_cache",
    ".ruff_cache",
    ".hypothesis",
    "build",
    "dist",
    ".gpu",
    "out",
}


# --------------------------------------------------------------------------------------------
# HTTP / websocket helpers
# --------------------------------------------------------------------------------------------


def request(server, path, method="GET", headers=None, body=None, follow=3):
    """(final status, body, [status path ...]) for a raw request path, following same-server
    redirects up to ``follow`` times."""
    chain = []
    for _ in range(follow + 1):
        conn = http.client.HTTPConnection(server.host, server.port, timeout=30)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            resp = conn.getresponse()
            data = resp.read()
        finally:
            conn.close()
        chain.append(f"{resp.status} {path}")
        location = resp.getheader("Location")
        if resp.status not in REDIRECTS or not location:
            return resp.status, data, chain
        target = urlsplit(location)
        if target.netloc and target.netloc != f"{server.host}:{server.port}":
            return resp.status, data, chain  # never follow off the server
        path = target.path + (f"?{target.query}" if target.query else "")
        method, body = "GET", None
    return resp.status, data, chain


def start_kernel_via_page(server, path="/"):
    """GET the page (which starts a kernel and executes the notebook); return (html, kernel_id)."""
    status, body, chain = request(server, path)
    assert status == 200, chain
    text = body.decode("utf-8", "replace")
    match = KERNEL_ID_RE.search(text)
    assert match, "no kernelId in the Voilà page"
    return text, match.group(1)


def _msg(msg_type, content=None, channel="shell"):
    return {
        "header": {
            "msg_id": uuid.uuid4().hex,
            "msg_type": msg_type,
            "username": "test",
            "session": uuid.uuid4().hex,
            "date": "2026-01-01T00:00:00.000000Z",
            "version": "5.3",
        },
        "parent_header": {},
        "metadata": {},
        "content": content or {},
        "channel": channel,
        "buffers": [],
    }


async def _ws_connect(server, kernel_id, host_header=None, subprotocols=(KERNEL_WS_PROTOCOL,)):
    """A kernel websocket, speaking the v1 protocol (as Voilà's page does) unless told not to."""
    from tornado.httpclient import HTTPRequest
    from tornado.websocket import websocket_connect

    url = (
        f"ws://{server.host}:{server.port}/api/kernels/{kernel_id}/channels"
        f"?session_id={uuid.uuid4().hex}"
    )
    headers = {"Host": host_header} if host_header else {}
    return await websocket_connect(
        HTTPRequest(url, headers=headers, request_timeout=30),
        max_message_size=2**27,
        subprotocols=list(subprotocols) or None,
    )


def _v1(msg) -> bytes:
    """``msg`` as a v1 kernel websocket frame."""
    from jupyter_server.services.kernels.connection.base import serialize_msg_to_ws_v1

    return serialize_msg_to_ws_v1(msg, msg["channel"], lambda part: json.dumps(part).encode())


def _from_v1(frame: bytes) -> dict:
    from jupyter_server.services.kernels.connection.base import deserialize_msg_from_ws_v1

    channel, parts = deserialize_msg_from_ws_v1(frame)
    header, parent, metadata, content = (json.loads(part) for part in parts[:4])
    return {
        "header": header,
        "msg_type": header.get("msg_type"),
        "parent_header": parent,
        "metadata": metadata,
        "content": content,
        "channel": channel,
    }


async def _send(conn, msg) -> None:
    await conn.write_message(_v1(msg), binary=True)


async def _kernel_info(server, kernel_id):
    """(kernel_info_reply or None, message types seen) over a new v1 connection."""
    conn = await _ws_connect(server, kernel_id)
    try:
        info = _msg("kernel_info_request")
        await _send(conn, info)
        return await _wait_reply(conn, info["header"]["msg_id"])
    finally:
        conn.close()


async def _wait_reply(conn, parent_id, timeout=30.0):
    """Messages until the reply to ``parent_id``; None if the connection closes or time runs out."""
    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        try:
            raw = await asyncio.wait_for(conn.read_message(), deadline - time.monotonic())
        except asyncio.TimeoutError:
            return None, seen
        if raw is None:
            return None, seen
        msg = _from_v1(raw) if isinstance(raw, bytes) else json.loads(raw)
        seen.append(msg.get("msg_type") or msg.get("header", {}).get("msg_type"))
        if msg.get("parent_header", {}).get("msg_id") == parent_id and msg.get(
            "msg_type", msg["header"]["msg_type"]
        ).endswith("_reply"):
            return msg, seen
    return None, seen


def run(coro):
    """Run a coroutine to completion in a thread of its own: the main thread may already have a
    running event loop (Playwright's sync API keeps one while a browser is open)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def file_snippet(path: Path, size: int = 256) -> bytes | None:
    """Leading bytes of a file, if long enough to be a meaningful 'file content' marker."""
    try:
        data = path.read_bytes()[:size]
    except OSError:
        return None
    return data if len(data.strip()) >= 16 else None


def repo_files(limit: int = 400) -> list[Path]:
    found = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = sorted(
            d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info")
        )
        for name in sorted(filenames):
            found.append(Path(dirpath) / name)
            if len(found) >= limit:
                return found
    return found


def traversal_variants(rel: str, absolute: Path) -> list[str]:
    """Ways to name a file under /voila/files/: plain, %2f, %2e%2e, double-encoded, absolute."""
    plain = quote(rel, safe="/.")
    variants = {
        plain,
        plain.replace("/", "%2f"),
        plain.replace("..", "%2e%2e"),
        plain.replace("..", "%252e%252e").replace("/", "%252f"),
        plain.replace("../", "..%5c"),  # backslash separators
        "/" + quote(str(absolute), safe="/"),  # //abs/path
        quote(str(absolute), safe=""),  # %2Fabs%2Fpath
        "./" + plain,
    }
    return ["/voila/files/" + v for v in sorted(variants)]


def assert_not_readable(server, path, secrets, method="GET"):
    status, body, chain = request(server, path, method=method)
    assert status in FORBIDDEN, f"{path}: {chain}"
    for secret in secrets:
        assert secret not in body, f"{path} leaked file content ({chain})"


# --------------------------------------------------------------------------------------------
# notebooks and servers
# --------------------------------------------------------------------------------------------

ENV_PROBE_SOURCE = f"""\
import os
print("IMAGES=" + os.environ.get({IMAGES_ENV!r}, "<unset>"))
print("ROOT=" + os.environ.get({ALLOWED_ROOT_ENV!r}, "<unset>"))
SOURCE_ONLY_MARKER = "this-line-is-source-code-only-0451"
"""


def write_env_notebook(path: Path) -> Path:
    nb = new_notebook(
        cells=[new_markdown_cell("# decoy notebook"), new_code_cell(ENV_PROBE_SOURCE)]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def gallery_server(tmp_path_factory):
    server = helpers.start_voila(GALLERY_NOTEBOOK, tmp_path_factory.mktemp("gallery-serve"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def decoy(tmp_path_factory):
    """A notebook folder full of things the default Voilà settings would serve."""
    base = tmp_path_factory.mktemp("decoy")
    root = base / "root"
    images = root / "images"
    images.mkdir(parents=True)
    outside = base / "outside"
    outside.mkdir()
    secret = b"TOP-SECRET-OUTSIDE-ROOT " * 8
    (outside / "secret.png").write_bytes(secret)
    (outside / "secret.txt").write_bytes(secret)
    visible = b"\x89PNG\r\n\x1a\n" + b"VISIBLE-DECOY-IMAGE " * 8
    (root / "visible.png").write_bytes(visible)
    (images / "inner.jpg").write_bytes(b"\xff\xd8\xff" + b"INNER-DECOY-IMAGE " * 8)
    (root / "notes.txt").write_bytes(b"PLAIN-TEXT-DECOY " * 8)
    os.symlink(outside / "secret.png", root / "link.png")
    os.symlink(outside, root / "linkdir")
    os.symlink(images, base / "images-via-link")  # the images dir named through a symlink
    notebook = write_env_notebook(root / "probe.ipynb")
    return {
        "base": base,
        "root": root,
        "images": images,
        "images_link": base / "images-via-link",
        "notebook": notebook,
        "secrets": [secret, visible[:64], b"INNER-DECOY-IMAGE", b"PLAIN-TEXT-DECOY"],
        "paths": [
            "visible.png",
            "link.png",
            "linkdir/secret.png",
            "linkdir/secret.txt",
            "images/inner.jpg",
            "notes.txt",
            "probe.ipynb",
            "../outside/secret.png",
        ],
    }


@pytest.fixture(scope="module")
def decoy_server(decoy, tmp_path_factory):
    server = helpers.start_voila(
        decoy["notebook"],
        tmp_path_factory.mktemp("decoy-serve"),
        images_dir=decoy["images_link"],
        allowed_root=decoy["root"],
    )
    yield server
    server.stop()


# --------------------------------------------------------------------------------------------
# the command line itself (no server)
# --------------------------------------------------------------------------------------------


def test_gallery_notebook_found():
    assert GALLERY_NOTEBOOK.is_file()
    assert GALLERY_NOTEBOOK.is_absolute()


def test_command_flags(tmp_path):
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=12345)
    assert cmd[0] == "env"
    assert f"{IMAGES_ENV}={DEFAULT_IMAGES_DIR.resolve()}" in cmd
    assert f"{ALLOWED_ROOT_ENV}={DEFAULT_IMAGES_DIR.resolve()}" in cmd
    assert cmd[cmd.index("-m") + 1] == "voila"
    assert str(GALLERY_NOTEBOOK.resolve()) in cmd  # single-notebook mode, not a folder
    for flag in [
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        "--Voila.port=12345",
        "--Voila.port_retries=0",
        "--VoilaConfiguration.strip_sources=True",
        "--VoilaConfiguration.show_tracebacks=False",
        "--VoilaConfiguration.file_denylist=.*",
        "--VoilaConfiguration.allow_template_override=NOTEBOOK",
        "--VoilaConfiguration.allow_theme_override=NOTEBOOK",
        "--MappingKernelManager.cull_idle_timeout=600",
        "--MappingKernelManager.cull_connected=False",
        "--MappingKernelManager.cull_busy=True",
    ]:
        assert flag in cmd, flag
    settings = next(a for a in cmd if a.startswith("--Voila.tornado_settings="))
    assert "'allow_remote_access': False" in settings
    assert f"'websocket_max_message_size': {MAX_WS_MESSAGE_BYTES}" in settings
    assert not any("token" in a.lower() for a in cmd)

    public = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, host="0.0.0.0")
    assert "'allow_remote_access': True" in next(a for a in public if "tornado_settings" in a)


def test_command_serves_the_apps_own_page_template(monkeypatch):
    """The poster's page (gallery.poster): Voilà's lab template with one block changed, found
    first on the server's JUPYTER_PATH, the caller's own data folders after it; the page
    loads the widget managers as its only frontend extensions."""
    folder = TEMPLATE_ROOT / "voila" / "templates" / TEMPLATE
    assert json.loads((folder / "conf.json").read_text()) == {"base_template": "lab"}
    page = (folder / "index.html.j2").read_text()
    assert "{%- extends 'lab/index.html.j2' -%}" in page and "block data_priority" in page
    monkeypatch.delenv("JUPYTER_PATH", raising=False)
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1)
    assert f"--VoilaConfiguration.template={TEMPLATE}" in cmd
    allow = next(a for a in cmd if a.startswith("--VoilaConfiguration.extension_allowlist="))
    assert ast.literal_eval(allow.split("=", 1)[1]) == list(PAGE_EXTENSIONS)
    assert f"JUPYTER_PATH={TEMPLATE_ROOT}" in cmd[: cmd.index("-m")]
    monkeypatch.setenv("JUPYTER_PATH", "/opt/mine")
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1)
    assert f"JUPYTER_PATH={TEMPLATE_ROOT}{os.pathsep}/opt/mine" in cmd[: cmd.index("-m")]


def test_command_keeps_a_pool_of_kernels_started_ahead():
    default = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1)
    assert f"--VoilaConfiguration.default_pool_size={DEFAULT_POOL_SIZE}" in default
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, pool_size=POOL)
    env_part = cmd[: cmd.index("-m")]
    assert "--VoilaConfiguration.preheat_kernel=True" in cmd
    assert f"--VoilaConfiguration.default_pool_size={POOL}" in cmd
    # a pooled kernel asks the server for its page's request where the server listens
    assert "VOILA_APP_IP=127.0.0.1" in env_part
    other = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1,
                          host="127.0.0.2", pool_size=3)
    assert "VOILA_APP_IP=127.0.0.2" in other and "--VoilaConfiguration.default_pool_size=3" in other
    v6 = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, host="::1",
                       pool_size=POOL)
    assert "VOILA_APP_IP=[::1]" in v6
    off = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, pool_size=0)
    assert "--VoilaConfiguration.preheat_kernel=False" in off
    assert not any(a.startswith("VOILA_APP_IP=") for a in off)
    # serve() finds its two variables where it looks for them, whatever follows
    assert [a.split("=")[0] for a in cmd[1:3]] == [IMAGES_ENV, ALLOWED_ROOT_ENV]
    for bad in (-1, MAX_POOL_SIZE + 1, True):
        with pytest.raises(ValueError, match="pool_size"):
            voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, pool_size=bad)
    # the pool is refilled a while after a page took a kernel, not while that page loads
    assert f"--VoilaKernelManager.fill_delay={POOL_FILL_DELAY_S}" in default
    later = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1,
                          pool_fill_delay_s=2.5)
    assert "--VoilaKernelManager.fill_delay=2.5" in later
    for bad in (-1, 3601, float("nan")):
        with pytest.raises(ValueError, match="pool_fill_delay_s"):
            voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1,
                          pool_fill_delay_s=bad)


def test_command_token_is_not_a_server_argument():
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, token="abc123")
    server_args = cmd[cmd.index("-m") :]
    assert "--token" in server_args
    assert not any("abc123" in a for a in server_args)
    assert "JUPYTER_TOKEN=abc123" in cmd[: cmd.index("-m")]  # consumed by `env`, then exec'd


def test_command_validates_paths(tmp_path):
    inside = tmp_path / "root" / "images"
    inside.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=inside, port=1, allowed_root=tmp_path / "root")
    assert f"{ALLOWED_ROOT_ENV}={(tmp_path / 'root').resolve()}" in cmd
    with pytest.raises(ValueError, match="outside the allowed root"):
        voila_command(GALLERY_NOTEBOOK, images_dir=elsewhere, port=1, allowed_root=inside)
    with pytest.raises(NotADirectoryError):
        voila_command(GALLERY_NOTEBOOK, images_dir=tmp_path / "missing", port=1)
    with pytest.raises(FileNotFoundError):
        voila_command(tmp_path / "missing.ipynb", images_dir=inside, port=1)
    with pytest.raises(ValueError):
        voila_command(GALLERY_NOTEBOOK, images_dir=inside, port=0)


def test_serve_warns_on_all_interfaces_without_token(monkeypatch, capsys):
    started = []

    class FakeProc:
        pid = 0

        def __init__(self, cmd, **kwargs):
            started.append(cmd)

        def poll(self):
            return 0

        def wait(self, timeout=None):
            return 0

    monkeypatch.setattr(serve_mod.subprocess, "Popen", FakeProc)
    with pytest.warns(UserWarning, match="without a token"):
        assert serve_mod.serve(host="0.0.0.0", port=12345) == 0
    assert started and "--Voila.ip=0.0.0.0" in started[0]
    # a token silences it
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert serve_mod.serve(host="0.0.0.0", port=12345, token="t0ken") == 0
    # and bad input is an error message + status 2, not a traceback
    assert serve_mod.serve(images_dir="/nonexistent/dir", port=12345) == 2
    assert "not a directory" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# the real server on GALLERY_NOTEBOOK
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_page_loads_without_source(gallery_server):
    text, _ = start_kernel_via_page(gallery_server)
    assert "application/vnd.jupyter.widget-view+json" in text or "jupyter-widgets" in text
    nb = nbformat.read(GALLERY_NOTEBOOK, as_version=4)
    code_lines = {
        line.strip()
        for cell in nb.cells
        if cell.cell_type == "code"
        for line in cell.source.splitlines()
        if len(line.strip()) >= 20 and not line.strip().startswith("#")
    }
    assert code_lines, "the gallery notebook has no code to look for"
    for line in code_lines:
        assert line not in text and html.escape(line) not in text, f"source leaked: {line!r}"
    assert '"source"' not in text  # no notebook JSON embedded


JUPYTER_APIS = [
    "/api/contents",
    "/api/contents/gallery.ipynb",
    "/api/contents/../pyproject.toml",
    "/api/kernels",
    "/api/kernelspecs",
    "/api/sessions",
    "/api/terminals",
    "/api/config/notebook",
    "/api/nbconvert",
    "/api/me",
    "/tree",
    "/tree/gallery.ipynb",
    "/notebooks/gallery.ipynb",
    "/edit/gallery.ipynb",
    "/files/gallery.ipynb",
    "/files/../pyproject.toml",
    "/lab",
    "/lab/tree/gallery.ipynb",
    "/terminals/1",
    "/voila/tree",
    "/voila/render/gallery.ipynb",
    "/voila/api/contents",
    "/voila/api/contents/gallery.ipynb",
    "/gallery.ipynb",
    "/?template=../../../../etc",
]


@pytest.mark.slow
@pytest.mark.parametrize("path", JUPYTER_APIS)
def test_jupyter_apis_are_not_reachable(gallery_server, path):
    secrets = [
        s for s in (file_snippet(GALLERY_NOTEBOOK), file_snippet(REPO / "pyproject.toml")) if s
    ]
    if path.startswith("/?"):
        # the page itself, but the template query is ignored (allow_template_override=NOTEBOOK)
        status, body, chain = request(gallery_server, path)
        assert status == 200, chain
        for secret in secrets:
            assert secret not in body
        return
    assert_not_readable(gallery_server, path, secrets)
    body = request(gallery_server, path)[1]
    for listing_marker in (
        b'"type": "directory"',
        b'"type": "notebook"',
        b'"kernelspecs"',
        b'"execution_state"',
        b'"last_activity"',
    ):
        assert listing_marker not in body, (path, listing_marker)


@pytest.mark.slow
@pytest.mark.parametrize(
    "method,path",
    [
        ("POST", "/api/kernels"),
        ("POST", "/api/sessions"),
        ("PUT", "/api/contents/new.ipynb"),
        ("POST", "/api/contents"),
        ("DELETE", "/api/contents/gallery.ipynb"),
        ("POST", "/api/terminals"),
        ("PATCH", "/api/sessions/x"),
    ],
)
def test_jupyter_write_apis_are_refused(gallery_server, method, path):
    status, _, chain = request(
        gallery_server,
        path,
        method=method,
        body=b"{}",
        headers={"Content-Type": "application/json"},
    )
    assert status in FORBIDDEN, chain


@pytest.mark.slow
def test_no_repo_file_is_readable_through_voila_files(gallery_server):
    notebook_dir = GALLERY_NOTEBOOK.parent
    files = repo_files()
    assert len(files) > 10
    checked = 0
    for path in files:
        secret = file_snippet(path)
        rel = os.path.relpath(path, notebook_dir)
        for url in traversal_variants(rel, path):
            status, body, chain = request(gallery_server, url)
            assert status in FORBIDDEN, f"{url}: {chain}"
            if secret:
                assert secret not in body, f"{url} leaked {path}"
            checked += 1
    for url in [
        "/voila/files/",
        "/voila/files/.",
        "/voila/files/..",
        "/voila/files/..%2f..",
        "/voila/files/%2e%2e",
        "/voila/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd",
        "/voila/files//etc/passwd",
        "/voila/files/%2fetc%2fpasswd",
        "/voila/files/..%252f..%252fetc%252fpasswd",
        "/voila/files/../../../../etc/passwd",
    ]:
        status, body, chain = request(gallery_server, url)
        assert status in FORBIDDEN, f"{url}: {chain}"
        assert b"root:x:0:0" not in body, url
        checked += 1
    # Voilà's own static handlers: traversal must fail too (the template handler answers 500,
    # from an assertion in Voilà, for some of these: refused all the same).
    for url in [
        "/voila/static/../../../../../etc/passwd",
        "/voila/static/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/voila/templates/lab/static/..%2f..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/voila/templates/lab/static/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
        "/voila/labextensions/..%2f..%2f..%2f..%2fetc%2fpasswd",
        "/voila/api/themes/..%2f..%2f..%2f..%2fetc%2fpasswd",
    ]:
        status, body, chain = request(gallery_server, url)
        assert status in FORBIDDEN | {400, 500}, f"{url}: {chain}"
        assert b"root:x:0:0" not in body, url
        checked += 1
    print(f"{checked} /voila/files and static paths refused")


@pytest.mark.slow
@pytest.mark.parametrize("param", ["theme", "template", "voila-test-param"])
def test_query_parameters_are_not_reflected(gallery_server, param):
    """Voilà 0.5.13 writes ?theme= into the page unescaped when allow_theme_override=YES."""
    payload = '"><script>alert("xss-0451")</script>'
    status, body, chain = request(gallery_server, f"/?{param}={quote(payload)}")
    assert status == 200, chain
    assert b'alert("xss-0451")' not in body and b"alert(&#34;xss-0451" not in body


@pytest.mark.slow
def test_foreign_host_header_is_refused(gallery_server):
    """DNS rebinding: a page on evil.example resolving to 127.0.0.1 sends Host: evil.example."""
    foreign = {"Host": f"evil.example:{gallery_server.port}"}
    status, body, _ = request(gallery_server, "/", headers=foreign)
    assert status == 403
    assert b"kernelId" not in body
    _, kernel_id = start_kernel_via_page(gallery_server)
    status, _, _ = request(gallery_server, f"/api/kernels/{kernel_id}", headers=foreign)
    assert status == 403

    async def ws_with_foreign_host():
        from tornado.httpclient import HTTPClientError

        with pytest.raises(HTTPClientError) as info:
            await _ws_connect(gallery_server, kernel_id, host_header=foreign["Host"])
        return info.value.code

    assert run(ws_with_foreign_host()) == 403
    # localhost by name is still fine
    assert (
        request(
            gallery_server,
            "/voila/static/voila.js",
            method="HEAD",
            headers={"Host": f"localhost:{gallery_server.port}"},
        )[0]
        == 200
    )


@pytest.mark.slow
def test_websocket_drops_execute_requests(gallery_server, tmp_path):
    _, kernel_id = start_kernel_via_page(gallery_server)
    marker = tmp_path / "executed.txt"

    async def scenario():
        conn = await _ws_connect(gallery_server, kernel_id)
        try:
            execute = _msg(
                "execute_request",
                {
                    "code": f"open({str(marker)!r}, 'w').write('pwned')",
                    "silent": False,
                    "store_history": False,
                    "user_expressions": {},
                    "allow_stdin": False,
                    "stop_on_error": True,
                },
            )
            await _send(conn, execute)
            info = _msg("kernel_info_request")
            await _send(conn, info)
            # the channel works: the kernel answers kernel_info (sent after the execute) ...
            reply, seen = await _wait_reply(conn, info["header"]["msg_id"])
            assert reply is not None, f"no kernel_info_reply; saw {seen}"
            # ... but never saw the execute_request
            late, _ = await _wait_reply(conn, execute["header"]["msg_id"], timeout=2)
            assert late is None
        finally:
            conn.close()

    run(scenario())
    assert not marker.exists(), "code sent over the kernel websocket was executed"


@pytest.mark.slow
def test_websocket_message_size_is_capped(gallery_server):
    """Messages up to MAX_WS_MESSAGE_BYTES pass (more than tornado's 10 MiB default, so the
    setting is applied); one byte more and the server drops the connection (close code 1009
    when the close frame arrives before the abort)."""
    from tornado.websocket import WebSocketClosedError

    _, kernel_id = start_kernel_via_page(gallery_server)

    async def scenario():
        conn = await _ws_connect(gallery_server, kernel_id)
        # just under the cap: a comm_msg to no comm, which the kernel ignores
        ok = _msg("comm_msg", {"comm_id": uuid.uuid4().hex, "data": {"x": ""}})
        filler = MAX_WS_MESSAGE_BYTES - len(_v1(ok)) - 1024
        ok["content"]["data"]["x"] = "a" * filler
        await _send(conn, ok)
        info = _msg("kernel_info_request")
        await _send(conn, info)
        reply, seen = await _wait_reply(conn, info["header"]["msg_id"], timeout=60)
        assert reply is not None, f"connection unusable after a {filler} B message; saw {seen}"
        # one byte over the cap
        with contextlib.suppress(WebSocketClosedError):
            await conn.write_message("x" * (MAX_WS_MESSAGE_BYTES + 1))
        while await asyncio.wait_for(conn.read_message(), 30) is not None:
            pass
        return conn.close_code

    assert run(scenario()) in (1009, None)


def test_v1_frame_check():
    good = _v1(_msg("kernel_info_request"))
    assert v1_frame_ok(good)
    assert not v1_frame_ok(good.decode("latin-1"))  # text frames are legacy protocol
    assert not v1_frame_ok(b"")
    assert not v1_frame_ok(good[:7])
    # 72 bytes claiming 2**40 offsets: jupyter_server would loop 2**40 times on it
    huge = (2**40).to_bytes(8, "little") + bytes(64)
    assert not v1_frame_ok(huge)
    count = int.from_bytes(good[:8], "little")
    offsets = [int.from_bytes(good[8 * i : 8 * i + 8], "little") for i in range(1, count + 1)]
    swapped = list(offsets)
    swapped[2], swapped[3] = swapped[3], swapped[2]
    table = b"".join(o.to_bytes(8, "little") for o in swapped)
    unsorted = good[:8] + table + good[8 * (count + 1) :]
    assert not v1_frame_ok(unsorted)
    assert not v1_frame_ok(good[: offsets[-1] - 1])  # the last part runs past the end
    shifted = good[:8] + (offsets[0] + 8).to_bytes(8, "little") + good[16:]
    assert not v1_frame_ok(shifted)  # the channel does not start right after the table


def _server_answers(server) -> bool:
    status, _, _ = request(server, "/voila/static/voila.js", method="HEAD")
    return status == 200


@pytest.mark.slow
def test_legacy_websocket_protocol_is_refused(gallery_server):
    """A client without the v1 subprotocol is closed (1008) before the kernel sends anything:
    on the legacy protocol Voilà 0.5.13 misreads outgoing binary messages and freezes."""
    _, kernel_id = start_kernel_via_page(gallery_server)

    async def scenario():
        conn = await _ws_connect(gallery_server, kernel_id, subprotocols=())
        info = _msg("kernel_info_request")
        with contextlib.suppress(Exception):
            await conn.write_message(json.dumps(info))
        got = []
        while (raw := await asyncio.wait_for(conn.read_message(), 30)) is not None:
            got.append(raw)
        legacy = (conn.close_code, got)
        reply, seen = await _kernel_info(gallery_server, kernel_id)  # v1 still works
        return legacy, reply, seen

    (code, got), reply, seen = run(scenario())
    assert code == 1008 and got == []
    assert reply is not None, f"v1 connection unusable after a refused legacy one; saw {seen}"
    assert _server_answers(gallery_server)


@pytest.mark.slow
def test_malformed_v1_frames_close_the_connection(gallery_server):
    """Frames whose offset table does not fit are refused (1003) instead of reaching
    jupyter_server's decoder; the server keeps answering and the kernel keeps working.

    Each refusal is a server-side close while the kernel is still streaming the gallery's
    widgets: without the pinned protocol, output sent in that window froze the server (the
    next connection timed out about one run in three), so the refusals are repeated."""
    _, kernel_id = start_kernel_via_page(gallery_server)
    good = _v1(_msg("kernel_info_request"))
    bad_frames = [
        (2**40).to_bytes(8, "little") + bytes(64),  # would loop 2**40 times
        (2**20).to_bytes(8, "little") + bytes(64),  # table longer than the message
        good[:-5],  # content cut short
    ] * 3

    async def scenario():
        codes = []
        for frame in bad_frames:
            conn = await _ws_connect(gallery_server, kernel_id)
            await conn.write_message(frame, binary=True)
            t0 = time.monotonic()
            while await asyncio.wait_for(conn.read_message(), 30) is not None:
                pass
            codes.append((conn.close_code, time.monotonic() - t0))
        reply, seen = await _kernel_info(gallery_server, kernel_id)
        return codes, reply, seen

    codes, reply, seen = run(scenario())
    assert [code for code, _ in codes] == [1003] * len(bad_frames), codes
    assert reply is not None, f"kernel unusable after malformed frames; saw {seen}"
    assert _server_answers(gallery_server)


# --------------------------------------------------------------------------------------------
# decoy folder: files the default settings would serve, symlinks, environment variables
# --------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_decoy_files_and_symlinks_are_not_served(decoy, decoy_server):
    for rel in decoy["paths"]:
        absolute = (decoy["root"] / rel).resolve()
        for url in traversal_variants(rel, absolute):
            assert_not_readable(decoy_server, url, decoy["secrets"])
        assert_not_readable(decoy_server, "/" + rel, decoy["secrets"])


@pytest.mark.slow
def test_control_default_voila_would_serve_the_decoys(decoy, tmp_path):
    """Proves the checks above can fail: plain `voila notebook` serves the decoy images
    (tornado itself refuses the symlink that points out of the folder)."""
    port = helpers.find_free_port()
    cmd = [
        sys.executable,
        "-m",
        "voila",
        str(decoy["notebook"]),
        "--no-browser",
        f"--Voila.ip={helpers.LOOPBACK}",
        f"--Voila.port={port}",
        "--Voila.port_retries=0",
    ]
    server = helpers.start_server(
        "voila-default",
        cmd,
        port=port,
        ready_path="voila/static/voila.js",
        ready_method="HEAD",
        workdir=tmp_path,
        env=helpers.jupyter_env(tmp_path / "jupyter"),
        cwd=decoy["root"],
    )
    try:
        status, body, _ = request(server, "/voila/files/visible.png")
        assert status == 200 and decoy["secrets"][1] in body
        status, body, _ = request(server, "/voila/files/images/inner.jpg")
        assert status == 200 and b"INNER-DECOY-IMAGE" in body
        status, body, _ = request(server, "/voila/files/link.png")
        assert status == 403 and decoy["secrets"][0] not in body
    finally:
        server.stop()


@pytest.mark.slow
def test_kernel_gets_image_env_vars(decoy, decoy_server):
    text, _ = start_kernel_via_page(decoy_server)
    images = decoy["images"].resolve()
    root = decoy["root"].resolve()
    assert f"IMAGES={images}" in text  # absolute and resolved (it was given via a symlink)
    assert f"ROOT={root}" in text
    assert "this-line-is-source-code-only-0451" not in text  # sources stripped
    assert "decoy notebook" in text  # markdown stays


# --------------------------------------------------------------------------------------------
# culling, token, the serve() entry point
# --------------------------------------------------------------------------------------------


def kernel_processes(server) -> dict[str, int]:
    """Kernel id -> process id of every kernel the server runs (from the connection file each
    kernel was started with: ``.../kernel-<id>.json``)."""
    found = {}
    for pid in helpers.descendants(server.proc.pid):
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"-f" in args:
            name = Path(os.fsdecode(args[args.index(b"-f") + 1])).name
            match = re.fullmatch(r"kernel-([0-9a-f-]{36})\.json", name)
            if match:
                found[match.group(1)] = pid
    return found


@pytest.mark.slow
@pytest.mark.parametrize("pool_size", [0, POOL])
def test_idle_kernels_are_culled(decoy, tmp_path, pool_size):
    """A page's kernel is culled once no page is connected and it is idle; kernels waiting in
    the pool for a page are not (Voilà keeps them out of culling)."""
    server = helpers.start_voila(
        decoy["notebook"],
        tmp_path,
        images_dir=decoy["images"],
        allowed_root=decoy["root"],
        cull_idle_s=2,
        cull_interval_s=1,
        pool_size=pool_size,
    )
    try:
        _, kernel_id = start_kernel_via_page(server)
        assert request(server, f"/api/kernels/{kernel_id}")[0] == 200
        assert kernel_id in kernel_processes(server), "no kernel process after a page load"
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline:
            if request(server, f"/api/kernels/{kernel_id}")[0] == 404:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"kernel {kernel_id} not culled:\n{server.log_tail()}")
        deadline = time.monotonic() + 15
        while kernel_id in kernel_processes(server) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert kernel_id not in kernel_processes(server), "kernel process still running"
        assert "culling" in server.log_tail(50000).lower()
        # the pool is full again and stays: its kernels wait for pages, however long
        deadline = time.monotonic() + 60
        while len(kernel_processes(server)) < pool_size and time.monotonic() < deadline:
            time.sleep(0.5)
        pooled = set(kernel_processes(server))
        assert len(pooled) == pool_size, server.log_tail()
        time.sleep(4)  # two culling intervals past the idle timeout
        assert set(kernel_processes(server)) == pooled
    finally:
        server.stop()


@pytest.mark.slow
def test_token_is_required_and_hidden_from_ps(decoy, tmp_path):
    token = "tok-" + uuid.uuid4().hex
    server = helpers.start_voila(
        decoy["notebook"],
        tmp_path,
        images_dir=decoy["images"],
        allowed_root=decoy["root"],
        token=token,
    )
    try:
        status, body, chain = request(server, "/")
        assert status != 200 or b"kernelId" not in body, chain
        assert b"IMAGES=" not in body
        status, body, chain = request(server, f"/?token={token}")
        assert status == 200 and b"IMAGES=" in body, chain
        assert request(server, "/?token=wrong")[1].find(b"IMAGES=") == -1
        cmdline = Path(f"/proc/{server.proc.pid}/cmdline")
        if cmdline.exists():
            args = cmdline.read_bytes().split(b"\0")
            assert b"voila" in b" ".join(args)
            assert not any(token.encode() in a for a in args), "token visible in ps"
    finally:
        server.stop()


@pytest.mark.slow
def test_serve_entry_point_runs_and_stops(tmp_path):
    """`python -m dali_gallery.gallery.serve_cli` (main_args + run_from_args + serve) serves the
    page, prints the URL, and stops cleanly on SIGTERM with its kernels."""
    port = helpers.find_free_port()
    env = helpers.jupyter_env(tmp_path / "jupyter")
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "dali_gallery.gallery.serve_cli", "--port", str(port),
             "--cull-idle", "30"],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = helpers.Server("serve", proc, port, helpers.LOOPBACK, log, env, [])
    try:
        deadline = time.monotonic() + 90
        while f"open http://127.0.0.1:{port}/" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        text, _ = start_kernel_via_page(server)
        assert "jupyter-widgets" in text or "widget-view" in text
        kids = helpers.descendants(proc.pid)  # Voilà and its kernel
        assert len(kids) >= 2, kids
        proc.terminate()  # serve() forwards SIGTERM to Voilà, which shuts its kernels down
        assert proc.wait(timeout=30) == 0
        deadline = time.monotonic() + 15
        while any(helpers._alive(pid) for pid in kids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not [pid for pid in kids if helpers._alive(pid)], "processes left behind"
    finally:
        server.stop()
    output = log.read_text(errors="replace")
    assert f"images from {DEFAULT_IMAGES_DIR.resolve()}" in output
    assert shutil.which("env") is not None


def test_max_kernels_is_an_option_of_the_command_line(monkeypatch, capsys):
    """`dali-gallery serve --max-kernels N` reaches Voilà's kernel manager; a limit not above
    the pool size is refused before anything starts, saying why."""
    import argparse

    from dali_gallery.gallery import serve_cli

    seen = {}
    monkeypatch.setattr(serve_cli, "serve", lambda **kw: seen.update(kw) or 0)
    parser = serve_cli.main_args(argparse.ArgumentParser())
    assert serve_cli.run_from_args(parser.parse_args(["--max-kernels", "5"])) == 0
    assert seen["max_kernels"] == 5
    assert serve_cli.run_from_args(parser.parse_args([])) == 0
    assert seen["max_kernels"] == DEFAULT_MAX_KERNELS
    cmd = voila_command(GALLERY_NOTEBOOK, images_dir=DEFAULT_IMAGES_DIR, port=1, max_kernels=5)
    assert "--GalleryKernelManager.max_kernels=5" in cmd
    monkeypatch.undo()
    assert serve_cli.serve(pool_size=2, max_kernels=2, port=1) == 2
    assert "max_kernels must be more than pool_size" in capsys.readouterr().err
