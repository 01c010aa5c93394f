"""The kernel sends every widget message the app makes, however fast it makes them.

ipykernel publishes outputs and widget messages on a ZeroMQ PUB socket from its IOPub thread.
A PUB socket drops messages once its queue to a reader holds ZeroMQ's default high-water mark
of 1,000 messages, and the queue fills whenever messages are made faster than the thread sends
them. The gallery makes ~1,450 widget messages (15.7 MB of tiles) within a few seconds; on a
loaded machine the kernel dropped some, and what it drops is lost for good: a widget its page
never hears of, or the "idle" status its reader waits for (nbclient waited out its 120 s in
three full test runs). Measured with a real kernel and a reader that reads only once the kernel
is done: of 3,000 messages of 10 KB, 995-1,499 arrived with the default, all of them after
:func:`keep_widget_messages`.
"""

from __future__ import annotations

import logging
import threading

IOPUB_QUEUE = 20_000
"""Messages the kernel's PUB socket queues for a reader (ZeroMQ's send high-water mark): 14
times a whole gallery's burst, still a bound on what a reader that stopped reading can make
the kernel hold."""

_log = logging.getLogger(__name__)
_DONE: list[object] = []
_LOCK = threading.Lock()


def keep_widget_messages() -> bool:
    """Raise the running IPython kernel's iopub high-water mark to :data:`IOPUB_QUEUE`, once
    per kernel; the app's widgets call it when they are made. False outside a kernel (plain
    Python, a script: nothing is published there)."""
    try:
        from IPython import get_ipython
    except ImportError:  # IPython is what runs widgets at all: without it there is no kernel
        return False
    kernel = getattr(get_ipython(), "kernel", None)
    if kernel is None:
        return False
    thread = getattr(kernel, "iopub_thread", None)
    socket = getattr(thread, "socket", None)
    if thread is None or socket is None:  # an ipykernel without the IOPub thread we know
        _log.warning("this kernel (%s) has no IOPub thread socket: its widget messages keep "
                     "ZeroMQ's default queue of 1,000", type(kernel).__name__)
        return False
    import zmq  # a kernel runs on ZeroMQ: only imported where there is one

    with _LOCK:
        if kernel in _DONE:
            return True
        _DONE.append(kernel)
    # ZeroMQ sockets belong to one thread: the option is set on the IOPub thread's own loop
    # (libzmq applies a new high-water mark to the readers already connected)
    thread.io_loop.add_callback(socket.setsockopt, zmq.SNDHWM, IOPUB_QUEUE)
    return True
