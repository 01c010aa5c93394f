"""Hold heavy widget work back until a Voilà page has loaded the app's widgets.

A Voilà page runs the notebook first, then loads in the browser and asks the kernel for the
state of every widget over the "jupyter.widget.control" comm; the page gives the kernel 4 s to
answer, or it shows "Error displaying widget: model not found" for good. With several pages
opening at once on a small server, a kernel that is already rendering the gallery (hundreds of
image widgets arriving) answered too late: one page in six stayed blank. So under Voilà the
gallery starts once its page has its state (or after ``timeout_s``, e.g. for a page that never
connects); in JupyterLab, a script or a test it starts right away.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from .ui_thread import kernel_loop

VOILA_ENV = "VOILA_KERNEL_ID"
"""Set by Voilà in each kernel it starts, before the notebook runs."""
PAGE_PATIENCE_S = 4.0
"""How long the page's widget manager waits for the answer (ipywidgets' control comm)."""
LATE_LOG = "dali-gallery: a page's request for the widgets' state waited"
"""Start of the server-log line written when a kernel answers past half the page's patience."""
_log = logging.getLogger(__name__)
_waiting: list[Callable[[], None]] = []
_installed = False


def after_page_load(fn: Callable[[], None], timeout_s: float = 20.0) -> bool:
    """Run ``fn`` (on the kernel's main thread) once the Voilà page has loaded the widgets'
    state; right away outside Voilà. Returns whether it was deferred."""
    loop = kernel_loop()
    if loop is None or not os.environ.get(VOILA_ENV):
        fn()
        return False
    _install()
    done = False

    def once() -> None:
        nonlocal done
        if done:
            return
        done = True
        try:
            fn()
        except Exception:  # noqa: BLE001 - logged: the page shows the view's own status
            _log.exception("deferred widget work failed")

    _waiting.append(once)
    loop.call_later(timeout_s, once)
    return True


def page_loaded() -> None:
    """The page has the widgets' state: start what waited for it (after the reply is out)."""
    loop = kernel_loop()
    pending, _waiting[:] = list(_waiting), []
    for fn in pending:
        if loop is not None:
            loop.add_callback(fn)
        else:
            fn()


def _install() -> None:
    """Wrap ipywidgets' handler of the control comm so that it tells us when the page has
    asked for (and been sent) every widget's state."""
    global _installed
    if _installed:
        return
    from ipywidgets import Widget

    original = Widget._handle_control_comm_msg.__func__

    def handle(cls: Any, msg: dict[str, Any]) -> None:
        original(cls, msg)
        if msg.get("content", {}).get("data", {}).get("method") == "request_states":
            _log_if_late(msg)
            page_loaded()

    Widget._handle_control_comm_msg = classmethod(handle)
    _installed = True


def waited_s(msg: dict[str, Any], now: datetime | None = None) -> float | None:
    """Seconds since the page sent ``msg`` by its header's date (the browser's clock: right
    when page and server share a machine, off by their clocks' skew otherwise); None without
    a date."""
    sent = msg.get("header", {}).get("date")
    if isinstance(sent, str):
        try:
            sent = datetime.fromisoformat(sent.replace("Z", "+00:00"))
        except ValueError:
            return None
    if not isinstance(sent, datetime):
        return None
    if sent.tzinfo is None:
        sent = sent.replace(tzinfo=timezone.utc)
    return ((now or datetime.now(timezone.utc)) - sent).total_seconds()


def _log_if_late(msg: dict[str, Any]) -> None:
    """Say in the server's log when the answer came past half the page's patience: past all
    of it the page has given up on this answer (see the module)."""
    waited = waited_s(msg)
    if waited is not None and waited > PAGE_PATIENCE_S / 2:
        print(f"{LATE_LOG} {waited:.1f} s (by the page's clock; it waits "
              f"{PAGE_PATIENCE_S:.0f} s) in kernel {os.environ.get(VOILA_ENV, '?')}",
              file=sys.__stderr__, flush=True)
