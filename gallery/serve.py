"""Serve the gallery notebook with Voilà, locked down for a local (or team) preview server.

``voila_command`` builds the exact command line; ``serve`` runs it in the foreground.
``main_args`` / ``run_from_args`` let ``gallery/cli.py`` expose it as ``dali-gallery serve``.

What the settings do (see ``voila_command`` for the flags):

* single-notebook mode: only ``GALLERY_NOTEBOOK`` can be rendered; the Jupyter contents, files,
  tree, terminals, sessions and kernel-listing APIs do not exist on this server (Voilà answers
  those URLs with a redirect to ``/voila/files/...``, which is refused);
* sources stripped and no tracebacks sent to the page;
* ``/voila/files/`` serves nothing (empty allowlist *and* a deny-all denylist): the app sends
  images as widget bytes over the kernel websocket and needs no static files of its own;
* bound to 127.0.0.1 by default, no port hopping (``port_retries=0``), and on a loopback address
  the ``Host`` header must be local too (blocks DNS-rebinding pages from driving the kernel);
* idle kernels are culled (every page load starts one);
* websocket messages (widget comms, uploads included) are capped in size;
* the kernel learns its image folder from ``DALI_GALLERY_IMAGES`` and the folder the app's picker
  may browse from ``DALI_GALLERY_ALLOWED_ROOT`` (both absolute and resolved);
* a token, when given, travels in ``JUPYTER_TOKEN`` (read by ``--token``), not as a visible
  ``--Voila.token=...`` argument of the long-running server process.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import shlex
import signal
import socket
import subprocess
import sys
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
    "main_args",
    "run_from_args",
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


def _find_notebook() -> Path:
    # A source checkout or an editable install (setuptools maps the package to the source tree, so
    # __file__ is <repo>/gallery/serve.py): the notebook lives in <repo>/notebooks/. A copy shipped
    # as package data (gallery/app/gallery.ipynb) is the fallback for a regular wheel install.
    candidates = [
        _PACKAGE_DIR.parent / "notebooks" / "gallery.ipynb",
        _PACKAGE_DIR / "app" / "gallery.ipynb",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    return candidates[0]


#: The notebook ``dali-gallery serve`` renders.
GALLERY_NOTEBOOK: Path = _find_notebook()

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
) -> list[str]:
    """The command line that serves ``notebook`` with Voilà under the gallery's safe settings.

    The command starts with ``env NAME=VALUE ...`` so that the Voilà server (and through it every
    kernel it starts, which inherits its environment) sees ``DALI_GALLERY_IMAGES`` and
    ``DALI_GALLERY_ALLOWED_ROOT``; run it with ``subprocess`` as it is, no shell needed.

    ``images_dir`` must lie inside ``allowed_root`` (default: ``images_dir`` itself).
    ``cull_idle_s=0`` disables culling. ``cull_connected=False`` (the default) culls only kernels
    that no page is connected to any more (closed or crashed tabs, scripted page loads); a page
    that stays open keeps its kernel however long it is idle.
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

    env_assignments = [f"{IMAGES_ENV}={images}", f"{ALLOWED_ROOT_ENV}={root}"]
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
        "-m",
        "voila",
        str(notebook),  # one notebook, not a folder: nothing else can be listed or run
        "--no-browser",
        f"--Voila.ip={host}",
        f"--Voila.port={port}",
        "--Voila.port_retries=0",  # fail instead of silently moving to another port
        "--Voila.root_dir=" + str(notebook.parent),
        "--VoilaConfiguration.strip_sources=True",
        "--VoilaConfiguration.show_tracebacks=False",
        # ?template=... from a URL could pick any installed template; only the notebook may.
        "--VoilaConfiguration.allow_template_override=NOTEBOOK",
        # /voila/files/ serves nothing at all: empty allowlist, and a denylist matching anything.
        "--VoilaConfiguration.file_allowlist=[]",
        "--VoilaConfiguration.file_denylist=.*",
        "--VoilaConfiguration.preheat_kernel=False",
        f"--MappingKernelManager.cull_idle_timeout={int(cull_idle_s)}",
        f"--MappingKernelManager.cull_interval={int(cull_interval_s)}",
        f"--MappingKernelManager.cull_connected={bool(cull_connected)}",
        "--MappingKernelManager.cull_busy=False",
        # A dict literal is the only CLI form that keeps non-string values (traitlets 5 prints a
        # DeprecationWarning for it, hidden by default); tests check that both settings work.
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
    return shlex.join(
        "JUPYTER_TOKEN=***" if part.startswith("JUPYTER_TOKEN=") else part for part in cmd
    )


def _wait_until_ready(host: str, port: int, proc: subprocess.Popen, timeout: float = 60) -> bool:
    probe_host = "127.0.0.1" if host in _ALL_INTERFACES else host.strip("[]")
    if ":" in probe_host:
        probe_host = f"[{probe_host}]"
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
) -> int:
    """Run the gallery under Voilà in the foreground until Ctrl-C; return Voilà's exit status."""
    images = DEFAULT_IMAGES_DIR if images_dir is None else images_dir
    notebook = GALLERY_NOTEBOOK if notebook is None else notebook
    try:
        cmd = voila_command(
            notebook,
            images_dir=images,
            port=port,
            host=host,
            token=token,
            cull_idle_s=cull_idle_s,
            allowed_root=allowed_root,
        )
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
    print(f"dali-gallery: images from {cmd[1].split('=', 1)[1]}", flush=True)
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


def main_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``dali-gallery serve`` options to ``parser`` (a sub-command parser)."""
    parser.add_argument(
        "--images",
        metavar="DIR",
        default=None,
        help=f"folder of images to start with (default: the bundled samples, {DEFAULT_IMAGES_DIR})",
    )
    parser.add_argument(
        "--allowed-root",
        metavar="DIR",
        default=None,
        help="folder the app's folder picker may browse (default: the images folder)",
    )
    parser.add_argument("--port", type=int, default=8866, help="port (default: 8866)")
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default: 127.0.0.1; 0.0.0.0 exposes it to the network)",
    )
    parser.add_argument(
        "--token",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"require this token (?token=...) to open the page; default: ${TOKEN_ENV} if set. "
        "Prefer the environment variable: arguments are visible to other users in `ps`.",
    )
    parser.add_argument(
        "--cull-idle",
        type=int,
        default=600,
        metavar="SECONDS",
        help="shut down kernels no page is connected to after this many idle seconds "
        "(default: 600; 0 disables)",
    )
    parser.add_argument(
        "--open", dest="open_browser", action="store_true", help="open a web browser"
    )
    return parser


def run_from_args(args: argparse.Namespace) -> int:
    """Run ``serve`` with the options parsed by a parser set up by ``main_args``."""
    return serve(
        images_dir=args.images,
        port=args.port,
        host=args.host,
        token=args.token,
        open_browser=args.open_browser,
        allowed_root=args.allowed_root,
        cull_idle_s=args.cull_idle,
    )


if __name__ == "__main__":  # python -m gallery.serve [options]
    sys.exit(run_from_args(main_args(argparse.ArgumentParser(prog="dali-gallery serve")).parse_args()))
