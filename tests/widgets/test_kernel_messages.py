"""widgets.kernel_messages: a real kernel sends every message of a burst the app makes, to a
reader that reads only once the burst is over (a page or nbclient that lags behind)."""

from __future__ import annotations

import asyncio
import inspect
import re
import tempfile

import pytest
from jupyter_client.manager import AsyncKernelManager

from dali_gallery.widgets.kernel_messages import keep_widget_messages

pytestmark = pytest.mark.timeout(300)
BURST = 4000
_BURST_TEXT = re.compile(rb"burst \d+ x")  # a burst message's text, not the code that sends it


def _burst_code(keep: bool) -> str:
    """Kernel code: (optionally) what the app's widgets call when made, then BURST stream
    messages of 10 KB published as fast as the kernel can (the gallery's tiles: ~1,450
    messages, 15.7 MB, within seconds)."""
    head = ("from dali_gallery.widgets.kernel_messages import keep_widget_messages\n"
            "assert keep_widget_messages() and keep_widget_messages()\n"
            "import time; time.sleep(0.3)\n") if keep else ""
    return head + (f"k = get_ipython().kernel\nfor i in range({BURST}):\n"
                   "    k.session.send(k.iopub_socket, 'stream', {'name': 'stdout', 'text': "
                   "f'burst {i} ' + 'x' * 10_000}, parent=k.get_parent('shell'))\n")


async def _maybe(value):
    return await value if inspect.isawaitable(value) else value


async def _received(keep: bool) -> int:
    """Messages of the burst a reader gets when it reads only after the kernel is done."""
    km = AsyncKernelManager(kernel_name="python3",
                            connection_file=tempfile.mktemp(suffix=".json"))
    await km.start_kernel()
    iopub = km.connect_iopub()
    client = km.client()
    client.start_channels(iopub=False)  # the shell's reply says when the burst was sent
    try:
        await client.wait_for_ready(timeout=120)
        await asyncio.sleep(0.5)  # the reader's subscription has reached the kernel
        msg_id = client.execute(_burst_code(keep))
        while True:
            reply = await client.get_shell_msg(timeout=120)
            if reply["parent_header"].get("msg_id") == msg_id:
                assert reply["content"]["status"] == "ok", reply["content"]
                break
        await asyncio.sleep(1.0)  # what the kernel could still send has arrived
        count = 0
        while await _maybe(iopub.poll(300)):
            frames = await _maybe(iopub.recv_multipart())
            count += any(_BURST_TEXT.search(f) for f in frames)
        return count
    finally:
        client.stop_channels()
        iopub.close(linger=0)
        await km.shutdown_kernel(now=True)


def test_outside_a_kernel_nothing_is_changed() -> None:
    assert keep_widget_messages() is False


def test_a_kernel_keeps_every_message_of_a_burst() -> None:
    """The control loses messages (ZeroMQ's PUB socket drops beyond its 1,000-message mark);
    with the app's call every one arrives."""
    assert 0 < asyncio.run(_received(keep=False)) < BURST  # 2,492 of 4,000 here
    assert asyncio.run(_received(keep=True)) == BURST
