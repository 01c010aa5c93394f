"""Serve the gallery notebook with Voilà, locked down for a local (or team) preview server.

``voila_command`` builds the exact command line; ``serve`` runs it in the foreground.
``main_args`` / ``run_from_args`` let ``gallery/cli.py`` expose it as ``dali-gallery serve``.

What the settings do (see ``voila_command`` for the flags):

* single-notebook mode: only ``GALLERY_NOTEBOOK`` can be rendered; the Jupyter contents, files,
  tree, terminals, sessions and kernel-listing APIs do not exist on this server (Voilà answers
  those URLs with a redirect to ``/voila/files/...``, which is refused);
* sources stripped and no tracebacks sent to the page; template and theme are not taken from
  the URL (Voilà 0.5.13 reflects ``?theme=`` unescaped into the page); the template is the app's
  own (``TEMPLATE``: Voilà's lab page that also paints a pooled kernel's poster);
* ``/voila/files/`` serves nothing (an allowlist that matches nothing *and* a deny-all
  denylist): the app sends images as widget bytes over the kernel websocket and needs no static
  files of its own;
* bound to 127.0.0.1 by default, no port hopping (``port_retries=0``), and on a loopback address
  the ``Host`` header must be local too (blocks DNS-rebinding pages from driving the kernel);
* every page gets a kernel of its own, never shared: ``pool_size`` kernels are started ahead
  and have already run the app (Voilà's ``preheat_kernel``), so a page opens without waiting
  for Python, DALI and the widgets; a page takes one from the pool (the pool is refilled) and
  learns its link from Voilà afterwards (``page_request``); more pages at once than the pool
  holds get a kernel started for them, as with ``pool_size=0``;
* idle kernels are culled (not those waiting in the pool);
* websocket messages (widget comms, uploads included) are capped in size, and only the v1 kernel
  websocket protocol is spoken, with its frames checked (``serve_websocket``
  closes two ways a single client could freeze the whole server);
* kernels talk to the server over Unix sockets in Voilà's private temp folder (no TCP ports that
  kernels starting together could race for), and a page whose kernel dies while starting gets
  an error page instead of spinning forever (``serve_kernels``);
* the kernel learns its image folder from ``DALI_GALLERY_IMAGES`` and the folder the app's picker
  may browse from ``DALI_GALLERY_ALLOWED_ROOT`` (both absolute and resolved);
* a token, when given, travels in ``JUPYTER_TOKEN`` (read by ``--token``), not as a visible
  ``--Voila.token=...`` argument of the long-running server process;
* the page loads the widget managers as its only frontend extensions (``PAGE_EXTENSIONS``).
"""

from __future__ import annotations

import importlib
import ipaddress
import os
import shlex
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import warnings
import webbrowser
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ALLOWED_ROOT_ENV",
    "DEFAULT_IMAGES_DIR",
    "GALLERY_NOTEBOOK",
    "IMAGES_ENV",
    "MAX_WS_MESSAGE_BYTES",
    "serve",
    "server_url",
    "voila_command",
]

IMAGES_ENV = "DALI_GALLERY_IMAGES"
ALLOWED_ROOT_ENV = "DALI_GALLERY_ALLOWED_ROOT"
TOKEN_ENV = "DALI_GALLERY_TOKEN"

_PACKAGE_DIR = Path(__file__).resolve().parent
DEFAULT_IMAGES_DIR = _PACKAGE_DIR / "samples"

#: Largest websocket message (one widget comm message, e.g. an uploaded file) the server accepts.
#: Tornado's own default is 10 MiB; uploads of big photos need a little more headroom.
MAX_WS_MESSAGE_BYTES = 32 * 1024 * 1024


#: The notebook ``dali-gallery serve`` renders.
GALLERY_NOTEBOOK: Path = _PACKAGE_DIR / "voila" / "gallery.ipynb"
#: Voilà's lab page that also paints the pooled kernel's poster (``gallery.poster``), found
#: under this data folder (``voila/templates/dali-gallery``), put first on ``JUPYTER_PATH``.
TEMPLATE, TEMPLATE_ROOT = "dali-gallery", _PACKAGE_DIR / "page_template"
#: The page's only frontend extensions: the widget managers, not every lab extension
#: installed beside Voilà (each is script the page fetches and runs).
PAGE_EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8")
"""Shipped inside the package (package data), alone in its folder: Voilà serves static files
from the notebook's folder, so nothing else may live there."""

#: Seconds Voilà waits for a cell's output after the cell has run (see ``voila_command``).
IOPUB_TIMEOUT_S = 120

#: Kernels kept started ahead of any page (each one ~250 MB of memory while it waits).
DEFAULT_POOL_SIZE = 2
MAX_POOL_SIZE = 16
#: Seconds from a page taking a pooled kernel to its replacement's start (Voilà's default, 1 s,
#: started it on the cores that page was loading on: its first picture, median 2.68 s against
#: 2.46 s on 2 cores). The pool's other kernels serve the pages that come meanwhile.
POOL_FILL_DELAY_S = 10.0
#: Kernels running or starting at once, the pool's included (``serve_kernels``); pages beyond
#: them get a 503 page instead of a kernel (each costs 0.3-0.5 GB).
DEFAULT_MAX_KERNELS = 32

#: Names served from :mod:`.serve_websocket` / :mod:`.serve_kernels` on first use: they import
#: jupyter_server (seconds), which the CLI and the kernels never need.
_SERVER_SIDE = {
    "KERNEL_WS_PROTOCOL": "serve_websocket",
    "V1OnlyKernelWebsocketConnection": "serve_websocket",
    "v1_frame_ok": "serve_websocket",
    "GalleryKernelManager": "serve_kernels",
    "KERNEL_FAILED_REASON": "serve_kernels",
}
_WEBSOCKET_CLASS = "dali_gallery.gallery.serve_websocket.V1OnlyKernelWebsocketConnection"
_KERNEL_MANAGER_CLASS = "dali_gallery.gallery.serve_kernels.GalleryKernelManager"
_IDENTITY_CLASS = "dali_gallery.gallery.serve_identity.PageCookieIdentityProvider"

#: Longest Unix socket path Linux accepts (sun_path is 108 bytes, NUL included).
_MAX_SOCKET_PATH = 107
#: What Voilà appends to the temp folder for one kernel's IPC socket:
#: "/voila_XXXXXXXX/kernel-<uuid4>-ipc-<n>" with room for n up to 99999.
_IPC_SUFFIX_LEN = len("/voila_12345678/kernel-") + 36 + len("-ipc-99999")


def __getattr__(name: str):
    if name in _SERVER_SIDE:
        module = importlib.import_module(f"{__package__}.{_SERVER_SIDE[name]}")
        value = getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}
_ALL_INTERFACES = {"", "0.0.0.0", "::", "*"}


def _is_loopback(host: str) -> bool:
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _resolve_dir(path: os.PathLike[str] | str, what: str) -> Path:
    resolved = Path(path).expanduser().resolve()
    if not resolved.is_dir():
        raise NotADirectoryError(f"{what} is not a directory: {resolved}")
    return resolved


def voila_command(
    notebook: os.PathLike[str] | str,
    *,
    images_dir: os.PathLike[str] | str,
    port: int,
    host: str = "127.0.0.1",
    token: str | None = None,
    cull_idle_s: int = 600,
    allowed_root: os.PathLike[str] | str | None = None,
    cull_interval_s: int | None = None,
    cull_connected: bool = False,
    max_message_bytes: int = MAX_WS_MESSAGE_BYTES,
    python: str | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_kernels: int = DEFAULT_MAX_KERNELS,
    pool_fill_delay_s: float = POOL_FILL_DELAY_S,
) -> list[str]:
    """The command line that serves ``notebook`` with Voilà under the gallery's safe settings.

    It starts with ``env NAME=VALUE ...``: the server (and every kernel it starts) sees
    ``DALI_GALLERY_IMAGES``, ``DALI_GALLERY_ALLOWED_ROOT`` and ``JUPYTER_PATH`` (the app's page
    template first); run it with ``subprocess`` as it is, no shell needed.
    ``images_dir`` must lie inside ``allowed_root`` (default: ``images_dir`` itself).
    ``cull_idle_s=0`` disables culling. ``cull_connected=False`` (the default) culls only kernels
    that no page is connected to any more (closed or crashed tabs, scripted page loads, a laptop
    gone to sleep) once they have been silent for ``cull_idle_s``, busy or not; a page that stays
    open keeps its kernel however long it is idle (closing the page asks Voilà to end it).
    ``pool_size``: kernels started ahead, each given to one page (0: every page waits for a
    kernel started for it); ``pool_fill_delay_s``: when after a page took one it is replaced.
    """
    notebook = Path(notebook).expanduser().resolve()
    if not notebook.is_file():
        raise FileNotFoundError(f"notebook not found: {notebook}")
    images = _resolve_dir(images_dir, "images folder")
    root = images if allowed_root is None else _resolve_dir(allowed_root, "allowed root")
    if images != root and root not in images.parents:
        raise ValueError(f"images folder {images} is outside the allowed root {root}")
    port = int(port)
    if not 0 < port < 65536:
        raise ValueError(f"port must be in 1..65535, got {port}")
    if cull_idle_s < 0:
        raise ValueError("cull_idle_s must be >= 0 (0 disables culling)")
    if cull_interval_s is None:
        cull_interval_s = max(1, min(60, cull_idle_s // 2 or 1))
    if max_message_bytes <= 0:
        raise ValueError("max_message_bytes must be > 0")
    if isinstance(pool_size, bool) or not 0 <= int(pool_size) <= MAX_POOL_SIZE:
        raise ValueError(f"pool_size must be 0 to {MAX_POOL_SIZE} kernels, got {pool_size!r}")
    if not 0 <= float(pool_fill_delay_s) <= 3600:
        raise ValueError(f"pool_fill_delay_s must be 0 to 3600 seconds, got {pool_fill_delay_s!r}")
    if isinstance(max_kernels, bool) or int(max_kernels) <= int(pool_size):
        raise ValueError(f"max_kernels must be more than pool_size ({pool_size}): the pool's "
                         f"kernels count too, got {max_kernels!r}")

    socket_dir = tempfile.gettempdir()
    if len(os.fsencode(socket_dir)) + _IPC_SUFFIX_LEN > _MAX_SOCKET_PATH:
        raise ValueError(
            f"the temp folder path is too long for the kernels' Unix sockets ({socket_dir!r}; "
            f"at most {_MAX_SOCKET_PATH - _IPC_SUFFIX_LEN} characters): set TMPDIR to a "
            "shorter folder"
        )
    # The server and its kernels run this interpreter (``python``), so they import the same
    # installed dali_gallery; nothing is added to their sys.path.
    data_path = os.pathsep.join(filter(None, [str(TEMPLATE_ROOT), os.environ.get("JUPYTER_PATH")]))
    env_assignments = [f"{IMAGES_ENV}={images}", f"{ALLOWED_ROOT_ENV}={root}",
                       f"JUPYTER_PATH={data_path}"]
    if pool_size:
        # a pooled kernel asks the server for its page's request at this address (Voilà's
        # default, 127.0.0.1, is not where a server bound to another address listens)
        env_assignments.append(f"VOILA_APP_IP={_probe_host(host)}")
    tornado_settings = {
        # On a loopback address also demand a local Host header: a web page that rebinds its own
        # DNS name to 127.0.0.1 is then refused (403) instead of reaching the kernel.
        "allow_remote_access": not _is_loopback(host),
        "websocket_max_message_size": int(max_message_bytes),
    }
    args = [
        "env",
        *env_assignments,
        python or sys.executable,
        # Hide traitlets' "--X=[...] for containers is deprecated" notes about the literal forms
        # below (this flag affects the server process only, not the kernels it starts).
        "-W",
        "ignore:--:DeprecationWarning:traitlets.traitlets",
        "-m",
        "voila",
        str(notebook),  # one notebook, not a folder: nothing else can be listed or run
        "--no-browser",
        f"--Voila.ip={host}",
        f"--Voila.port={port}",
        "--Voila.port_retries=0",  # fail instead of silently moving to another port
        "--Voila.root_dir=" + str(notebook.parent),
        "--VoilaConfiguration.strip_sources=True",
        f"--VoilaConfiguration.template={TEMPLATE}",
        f"--VoilaConfiguration.extension_allowlist={list(PAGE_EXTENSIONS)!r}",
        "--VoilaConfiguration.show_tracebacks=False",
        # Only the notebook's metadata may pick the template / theme, not the URL: ?template=
        # could select any installed template, and Voilà 0.5.13 writes ?theme= unescaped into
        # the page (`?theme="><script>...` is a reflected XSS on the kernel's origin).
        "--VoilaConfiguration.allow_template_override=NOTEBOOK",
        "--VoilaConfiguration.allow_theme_override=NOTEBOOK",
        # /voila/files/ serves nothing at all: an allowlist pattern that matches no path (`(?!)`
        # always fails), and a denylist pattern that matches every path.
        r"--VoilaConfiguration.file_allowlist=\A(?!)",
        "--VoilaConfiguration.file_denylist=.*",
        # kernels started ahead, each handed to one page (page_request: the link comes later)
        f"--VoilaConfiguration.preheat_kernel={bool(pool_size)}",
        f"--VoilaConfiguration.default_pool_size={int(pool_size)}",
        f"--VoilaKernelManager.fill_delay={float(pool_fill_delay_s)}",
        # Voilà collects a cell's output for at most iopub_timeout seconds after the cell ends
        # (nbclient's default: 4 s); with several kernels starting at once on a small machine the
        # app's display message came later, and those pages stayed blank for good.
        f"--VoilaExecutor.iopub_timeout={IOPUB_TIMEOUT_S}",
        # v1 kernel websocket protocol only, with its frames checked (serve_websocket).
        f"--Voila.kernel_websocket_connection_class={_WEBSOCKET_CLASS}",
        # Kernels over Unix sockets in Voilà's private mkdtemp folder: no TCP ports to race for
        # when many pages start kernels at once; a kernel that dies while starting is retried,
        # then the page says so (serve_kernels).
        "--KernelManager.transport=ipc",
        f"--Voila.connection_dir_root={socket_dir}",
        f"--VoilaConfiguration.multi_kernel_manager_class={_KERNEL_MANAGER_CLASS}",
        f"--GalleryKernelManager.max_kernels={int(max_kernels)}",
        # the page gets the _xsrf cookie its unload post needs to end its kernel (serve_identity)
        f"--Voila.identity_provider_class={_IDENTITY_CLASS}",
        f"--MappingKernelManager.cull_idle_timeout={int(cull_idle_s)}",
        f"--MappingKernelManager.cull_interval={int(cull_interval_s)}",
        f"--MappingKernelManager.cull_connected={bool(cull_connected)}",
        # a kernel stuck in a callback with nobody connected is culled too (no output for
        # cull_idle_s counts as idle; a connected page still protects it unless cull_connected)
        "--MappingKernelManager.cull_busy=True",
        # A dict literal is the only CLI form that keeps non-string values (key=value items stay
        # strings); tests check that both settings take effect.
        f"--Voila.tornado_settings={tornado_settings!r}",
    ]
    if token is not None:
        if not token:
            raise ValueError("token must not be empty (use token=None for no token)")
        # `--token` makes Voilà read JUPYTER_TOKEN; `env` sets it and then execs Python, so the
        # token is not in the server's visible command line (ps), only in its environment.
        args.insert(1 + len(env_assignments), f"JUPYTER_TOKEN={token}")
        args.append("--token")
    return args


def server_url(host: str, port: int, token: str | None = None) -> str:
    """The URL to open in a browser for a server started with these settings."""
    shown = host
    if host in _ALL_INTERFACES:
        shown = socket.gethostname()
    elif ":" in host and not host.startswith("["):
        shown = f"[{host}]"
    url = f"http://{shown}:{port}/"
    if token:
        url += f"?token={token}"
    return url


def _redacted(cmd: Sequence[str]) -> str:
    return shlex.join("JUPYTER_TOKEN=***" if p.startswith("JUPYTER_TOKEN=") else p for p in cmd)


def _probe_host(host: str) -> str:
    """The address to reach a server bound to ``host`` from this machine (URL form)."""
    probe_host = "127.0.0.1" if host in _ALL_INTERFACES else host.strip("[]")
    return f"[{probe_host}]" if ":" in probe_host else probe_host


def _wait_until_ready(host: str, port: int, proc: subprocess.Popen, timeout: float = 60) -> bool:
    probe_host = _probe_host(host)
    # HEAD on a static file: unlike GET /, it does not start a kernel.
    url = f"http://{probe_host}:{port}/voila/static/voila.js"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=2):
                return True
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    return False


def serve(
    images_dir: os.PathLike[str] | str | None = None,
    port: int = 8866,
    host: str = "127.0.0.1",
    token: str | None = None,
    open_browser: bool = False,
    *,
    allowed_root: os.PathLike[str] | str | None = None,
    cull_idle_s: int = 600,
    notebook: os.PathLike[str] | str | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
    max_kernels: int = DEFAULT_MAX_KERNELS,
) -> int:
    """Run the gallery under Voilà in the foreground until Ctrl-C; return Voilà's exit status."""
    images = DEFAULT_IMAGES_DIR if images_dir is None else images_dir
    notebook = GALLERY_NOTEBOOK if notebook is None else notebook
    try:
        cmd = voila_command(notebook, images_dir=images, port=port, host=host, token=token,
                            cull_idle_s=cull_idle_s, allowed_root=allowed_root,
                            pool_size=pool_size, max_kernels=max_kernels)
    except (OSError, ValueError) as exc:
        print(f"dali-gallery serve: {exc}", file=sys.stderr)
        return 2
    if not _is_loopback(host) and not token:
        warnings.warn(
            f"serving on {host!r} without a token: anyone who can reach this machine can use "
            "the gallery (and its GPU). Pass --token (or set DALI_GALLERY_TOKEN), or keep the "
            "default 127.0.0.1 behind an authenticating proxy.",
            stacklevel=2,
        )
    url = server_url(host, port, token)
    env_values = dict(part.split("=", 1) for part in cmd[1:3])
    print(f"dali-gallery: images from {env_values[IMAGES_ENV]}", flush=True)
    print(f"dali-gallery: starting {_redacted(cmd)}", flush=True)

    proc = subprocess.Popen(cmd, cwd=Path(notebook).resolve().parent)

    def _forward_sigterm(signum, frame):  # pragma: no cover - signal path
        proc.terminate()

    previous = signal.signal(signal.SIGTERM, _forward_sigterm)

    def _announce() -> None:
        if _wait_until_ready(host, port, proc):
            print(f"dali-gallery: open {url}", flush=True)
            if open_browser:
                webbrowser.open(url)

    threading.Thread(target=_announce, daemon=True).start()
    try:
        while True:
            try:
                return proc.wait()
            except KeyboardInterrupt:
                # Ctrl-C reached Voilà as well (same process group); give it time to stop kernels.
                try:
                    return proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
    finally:
        signal.signal(signal.SIGTERM, previous)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
