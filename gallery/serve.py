"""Serve the gallery notebook with Voilà, locked down for a local (or team) preview server.

``voila_command`` builds the exact command line; ``serve`` runs it in the foreground.
``main_args`` / ``run_from_args`` let ``gallery/cli.py`` expose it as ``dali-gallery serve``.

What the settings do (see ``voila_command`` for the flags):

* single-notebook mode: only ``GALLERY_NOTEBOOK`` can be rendered; the Jupyter contents, files,
  tree, terminals, sessions and kernel-listing APIs do not exist on this server (Voilà answers
  those URLs with a redirect to ``/voila/files/...``, which is refused);
* sources stripped and no tracebacks sent to the page; template and theme are not taken from
  the URL (Voilà 0.5.13 reflects ``?theme=`` unescaped into the page);
* ``/voila/files/`` serves nothing (an allowlist that matches nothing *and* a deny-all
  denylist): the app sends images as widget bytes over the kernel websocket and needs no static
  files of its own;
* bound to 127.0.0.1 by default, no port hopping (``port_retries=0``), and on a loopback address
  the ``Host`` header must be local too (blocks DNS-rebinding pages from driving the kernel);
* idle kernels are culled (every page load starts one);
* websocket messages (widget comms, uploads included) are capped in size, and only the v1 kernel
  websocket protocol is spoken, with its frames checked (``V1OnlyKernelWebsocketConnection``
  closes two ways a single client could freeze the whole server);
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
    "KERNEL_WS_PROTOCOL",
    "MAX_WS_MESSAGE_BYTES",
    "main_args",
    "run_from_args",
    "serve",
    "server_url",
    "v1_frame_ok",
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
"""Shipped inside the package (package data), alone in its folder: Voilà serves static files
from the notebook's folder, so nothing else may live there."""

#: Seconds Voilà waits for a cell's output after the cell has run (see ``voila_command``).
IOPUB_TIMEOUT_S = 120

#: The only kernel websocket protocol the server accepts (what Voilà's and Lab's front-ends use).
KERNEL_WS_PROTOCOL = "v1.kernel.websocket.jupyter.org"
_MAX_V1_PARTS = 2 + 4 + 1024  # offsets: channel start/end + header, parent, metadata, content,
# and up to 1024 binary buffers


def v1_frame_ok(message: bytes | str) -> bool:
    """Is ``message`` a well-formed v1 kernel websocket frame (as far as its offset table goes)?

    jupyter_server's ``deserialize_msg_from_ws_v1`` trusts the first 8 bytes as the number of
    offsets and loops that many times: one 72-byte message claiming 2**40 offsets blocks the
    server's event loop and eats memory until it is killed (checked with jupyter_server 2.21).
    """
    if isinstance(message, str) or len(message) < 8:
        return False
    count = int.from_bytes(message[:8], "little")
    table_end = 8 * (count + 1)
    if not 3 <= count <= _MAX_V1_PARTS or table_end > len(message):
        return False
    offsets = [int.from_bytes(message[8 * i : 8 * (i + 1)], "little") for i in range(1, count + 1)]
    return offsets[0] == table_end and offsets == sorted(offsets) and offsets[-1] <= len(message)


def _make_connection_class() -> type:
    from jupyter_server.services.kernels.connection.channels import (
        ZMQChannelsWebsocketConnection,
    )

    class V1OnlyKernelWebsocketConnection(ZMQChannelsWebsocketConnection):
        """Kernel websocket connection that only speaks the v1 protocol, and checks its frames.

        * Clients that do not ask for the v1 subprotocol get the "legacy" protocol, on which
          Voilà 0.5.13 misreads every outgoing binary message (widget images, any buffer) as a
          v1 frame: the server then loops over a garbage offset count, freezing every page it
          serves and growing without bound (20 GB in 10 minutes seen here). They are refused
          (close code 1008) before anything is sent.
        * Incoming v1 frames whose offset table does not fit the message are refused (close
          1003) instead of being handed to jupyter_server's decoder (see ``v1_frame_ok``).
        * The protocol is pinned once negotiated. When the server closes a socket (a refused
          frame, a ping timeout), tornado forgets the subprotocol at once but the kernel's
          output keeps arriving until the client answers the close: jupyter_server then encodes
          it in the legacy format and Voilà's ``write_message`` loops over it as above (seen
          here: the next page load hung). Output for a closing socket is dropped instead.
        """

        _refused = False
        _protocol: str | None = None

        @property
        def subprotocol(self) -> str | None:
            if self._protocol is None:
                self._protocol = super().subprotocol  # None until the handshake is done
            return self._protocol

        def handle_outgoing_message(self, stream, outgoing_msg):
            ws = self.websocket_handler.ws_connection
            if ws is None or ws.is_closing():
                return None  # the socket is going away: nobody is left to read this
            return super().handle_outgoing_message(stream, outgoing_msg)

        async def connect(self):  # type: ignore[override]
            if self.subprotocol != KERNEL_WS_PROTOCOL:
                self._refused = True
                self.log.warning(
                    "refusing a kernel websocket without the %s subprotocol", KERNEL_WS_PROTOCOL
                )
                self.websocket_handler.close(1008, f"only {KERNEL_WS_PROTOCOL} is supported")
                return None
            connected = super().connect()
            if connected is not None:
                await connected
            return None

        def disconnect(self):
            if self._refused:  # never connected: do not decrement the kernel's connection count
                return None
            return super().disconnect()

        def handle_incoming_message(self, incoming_msg):
            if self._refused:
                return None
            if not v1_frame_ok(incoming_msg):
                self.log.warning("closing a kernel websocket after a malformed v1 frame")
                self.websocket_handler.close(1003, "malformed v1 frame")
                return None
            return super().handle_incoming_message(incoming_msg)

    V1OnlyKernelWebsocketConnection.__module__ = "dali_gallery.gallery.serve"
    V1OnlyKernelWebsocketConnection.__qualname__ = "V1OnlyKernelWebsocketConnection"
    return V1OnlyKernelWebsocketConnection


def __getattr__(name: str):
    # Built on first use so that importing gallery.serve (the CLI) does not import jupyter_server;
    # the Voilà server process imports it by name through --Voila.kernel_websocket_connection_class.
    if name == "V1OnlyKernelWebsocketConnection":
        cls = _make_connection_class()
        globals()[name] = cls
        return cls
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
) -> list[str]:
    """The command line that serves ``notebook`` with Voilà under the gallery's safe settings.

    The command starts with ``env NAME=VALUE ...`` so that the Voilà server (and through it every
    kernel it starts, which inherits its environment) sees ``DALI_GALLERY_IMAGES`` and
    ``DALI_GALLERY_ALLOWED_ROOT``; run it with ``subprocess`` as it is, no shell needed.

    ``images_dir`` must lie inside ``allowed_root`` (default: ``images_dir`` itself).
    ``cull_idle_s=0`` disables culling. ``cull_connected=False`` (the default) culls only kernels
    that no page is connected to any more (closed or crashed tabs, scripted page loads, a laptop
    gone to sleep) once they have been silent for ``cull_idle_s``, busy or not; a page that stays
    open keeps its kernel however long it is idle (closing the page normally asks Voilà to shut
    its kernel down at once).
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

    # The server imports gallery.serve (the websocket connection class) and the kernels import
    # the app: both must find this very copy of the package, installed or not.
    python_path = os.pathsep.join(
        p for p in (str(_PACKAGE_DIR.parent), os.environ.get("PYTHONPATH", "")) if p
    )
    env_assignments = [
        f"{IMAGES_ENV}={images}",
        f"{ALLOWED_ROOT_ENV}={root}",
        f"PYTHONPATH={python_path}",
    ]
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
        "--VoilaConfiguration.preheat_kernel=False",
        # Voilà collects a cell's output for at most iopub_timeout seconds after the cell ends
        # (nbclient's default: 4 s); with several kernels starting at once on a small machine the
        # app's display message came later, and those pages stayed blank for good.
        f"--VoilaExecutor.iopub_timeout={IOPUB_TIMEOUT_S}",
        # v1 kernel websocket protocol only, with its frames checked: see
        # V1OnlyKernelWebsocketConnection (the server process imports it from this module).
        "--Voila.kernel_websocket_connection_class="
        "dali_gallery.gallery.serve.V1OnlyKernelWebsocketConnection",
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


if __name__ == "__main__":  # python -m dali_gallery.gallery.serve [options]
    _parser = main_args(argparse.ArgumentParser(prog="dali-gallery serve"))
    sys.exit(run_from_args(_parser.parse_args()))
