"""The ``dali-gallery serve`` options and their hand-off to :func:`.serve.serve`.

``python -m dali_gallery.gallery.serve_cli [options]`` runs the same as ``dali-gallery serve``.
"""

from __future__ import annotations

import argparse
import os
import sys

from .serve import DEFAULT_IMAGES_DIR, DEFAULT_MAX_KERNELS, DEFAULT_POOL_SIZE, TOKEN_ENV, serve


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
        "--pool-size",
        type=int,
        default=DEFAULT_POOL_SIZE,
        metavar="N",
        help="kernels started ahead of any page, each given to one page, so pages open at once "
        f"(default: {DEFAULT_POOL_SIZE}; 0: each page waits for a kernel started for it)",
    )
    parser.add_argument(
        "--max-kernels",
        type=int,
        default=DEFAULT_MAX_KERNELS,
        metavar="N",
        help="at most this many kernels at once, the pool's included; a page beyond it gets a "
        f"503 page saying so (default: {DEFAULT_MAX_KERNELS}; each costs 0.3-0.5 GB)",
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
        pool_size=args.pool_size,
        max_kernels=args.max_kernels,
    )


if __name__ == "__main__":  # python -m dali_gallery.gallery.serve_cli [options]
    _parser = main_args(argparse.ArgumentParser(prog="dali-gallery serve"))
    sys.exit(run_from_args(_parser.parse_args()))
