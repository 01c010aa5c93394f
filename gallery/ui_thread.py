"""Run widget updates from worker threads safely in a Jupyter kernel.

When a page (Voilà, Lab) connects, the widget manager asks the kernel for the state of every
widget; the kernel answers on its main thread by walking the registry of widgets. A worker
thread that creates or changes widgets at the same time can leave the page with a model it
never learns about ("widget model not found") or a lost update, so a gallery card would never
appear. Handing each widget change to the kernel's main event loop serialises it with those
requests. Outside a kernel (scripts, tests, benches) the change runs right away.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

_log = logging.getLogger(__name__)


def _kernel_loop() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    kernel = getattr(shell, "kernel", None)
    return getattr(kernel, "io_loop", None)


def on_ui_thread(fn: Callable[[], None], on_error: Callable[[Exception], None] | None = None,
                 ) -> None:
    """Call ``fn`` on the kernel's main thread (soon, in order), or now without a kernel.

    An exception in ``fn`` is logged and passed to ``on_error`` (a status line), never lost."""

    def run() -> None:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - reported to the page, not raised into tornado
            _log.exception("widget update failed")
            if on_error is not None:
                on_error(e)

    loop = _kernel_loop()
    if loop is None or threading.current_thread() is threading.main_thread():
        run()
    else:
        loop.add_callback(run)
