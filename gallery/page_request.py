"""The page's request (its query string) as a Voilà kernel learns it, started for it or ahead.

Voilà starts a kernel for a page with the page's request in its environment (``QUERY_STRING``).
``dali-gallery serve`` also keeps a pool of kernels that have already run the app before any
page asked for them (``gallery.serve``: Voilà's ``preheat_kernel``), so a page opens without
waiting for Python, DALI and the widgets to start. Such a kernel (``VOILA_PREHEAT=True``) learns
which page claimed it, and that page's query string, only later: Voilà sends the request to the
kernel over the server's ``/voila/query/<kernel id>`` websocket (``voila.utils.wait_for_request``).
That wait runs on a thread of its own, so a pooled kernel stays responsive; the app hears of
the claim on the kernel's main thread (:func:`when_claimed`).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from dali_gallery.widgets.ui_thread import kernel_loop, on_ui_thread

PREHEAT_ENV = "VOILA_PREHEAT"
"""``True`` in a kernel Voilà started ahead of any page (its pool), ``False`` otherwise."""
QUERY_ENV = "QUERY_STRING"
READY_LOG = "dali-gallery: a kernel started ahead has run the app and made its first screen"
"""What the app writes to the server's log (the kernel's stderr) once a pooled kernel's
gallery has made the cards of its first screen of rows."""
_log = logging.getLogger(__name__)

Claimed = Callable[[str | None], None]
"""Called with the page's query string, or None when the server could not tell it."""


def prestarted() -> bool:
    """Whether this kernel was started ahead of its page (and has not heard from it yet)."""
    return os.environ.get(PREHEAT_ENV) == "True" and kernel_loop() is not None


def when_claimed(fn: Claimed, wait: Callable[[], None] | None = None) -> bool:
    """Call ``fn(query)`` on the kernel's main thread once the page is known: right away in a
    kernel started for its page (or outside Voilà: the query is then ''), else when a page
    claims this pre-started kernel. ``wait`` blocks until Voilà has put the request in the
    environment (default: ``voila.utils.wait_for_request``). Returns whether it was deferred."""
    if not prestarted():
        fn(os.environ.get(QUERY_ENV, ""))
        return False
    if wait is None:
        from voila.utils import wait_for_request as wait

    def claimed() -> None:
        os.environ.pop(QUERY_ENV, None)  # set again by the request, and only by it
        try:
            wait()
        except Exception:  # noqa: BLE001 - reported: the app goes on without the query
            _log.exception("the page's request did not reach this pre-started kernel")
        query = os.environ.get(QUERY_ENV)
        os.environ[PREHEAT_ENV] = "False"  # claimed: from now on a kernel like any other
        on_ui_thread(lambda: fn(query))

    threading.Thread(target=claimed, name="dali-gallery-page-claim", daemon=True).start()
    return True
