"""Widget changes made for worker threads wait for the kernel's main thread (no race with the
page's request for every widget's state), in order, and ``wait_idle`` applies them."""

from __future__ import annotations

import threading

import pytest

from dali_gallery.widgets import ui_thread
from dali_gallery.widgets.scheduler import Scheduler
from dali_gallery.widgets.ui_thread import UiQueue


class FakeLoop:
    """Stands in for the kernel's io_loop: remembers callbacks instead of running them."""

    def __init__(self) -> None:
        self.callbacks: list = []

    def add_callback(self, fn) -> None:
        self.callbacks.append(fn)

    def run_pending(self) -> None:
        pending, self.callbacks = self.callbacks, []
        for fn in pending:
            fn()


@pytest.fixture
def loop(monkeypatch) -> FakeLoop:
    fake = FakeLoop()
    monkeypatch.setattr(ui_thread, "kernel_loop", lambda: fake)
    return fake


def in_worker(fn) -> None:
    t = threading.Thread(target=fn)
    t.start()
    t.join(10)


def test_worker_changes_wait_for_the_main_thread_in_order(loop):
    queue = UiQueue()
    seen: list[tuple[int, str]] = []

    def work() -> None:
        for k in range(3):
            queue.call(lambda k=k: seen.append((k, threading.current_thread().name)))

    in_worker(work)
    assert seen == [] and queue.pending()
    assert len(loop.callbacks) == 1  # one wake-up for the batch
    loop.run_pending()
    assert seen == [(0, "MainThread"), (1, "MainThread"), (2, "MainThread")]
    assert not queue.pending()


def test_main_thread_calls_run_now_after_what_is_queued(loop):
    queue = UiQueue()
    seen: list[str] = []
    in_worker(lambda: queue.call(lambda: seen.append("from worker")))
    queue.call(lambda: seen.append("from main"))
    assert seen == ["from worker", "from main"]


def test_errors_reach_their_sink_and_later_changes_still_run(loop):
    queue = UiQueue()
    errors: list[Exception] = []
    seen: list[str] = []

    def boom() -> None:
        raise ValueError("bad update")

    def work() -> None:
        queue.call(boom, errors.append)
        queue.call(lambda: seen.append("after"))

    in_worker(work)
    loop.run_pending()
    assert [str(e) for e in errors] == ["bad update"] and seen == ["after"]


def test_without_a_kernel_changes_run_in_the_calling_thread(monkeypatch):
    monkeypatch.setattr(ui_thread, "kernel_loop", lambda: None)
    queue = UiQueue()
    seen: list[str] = []
    in_worker(lambda: queue.call(lambda: seen.append(threading.current_thread().name)))
    assert len(seen) == 1 and seen[0] != "MainThread"


def test_scheduler_delivers_on_the_main_thread_and_wait_idle_applies_it(loop):
    queue = UiQueue()
    delivered: list[tuple[int, str]] = []
    idle: list[str] = []
    sched: Scheduler[int, int] = Scheduler(
        lambda x: x * 2, lambda o: delivered.append((o.result, threading.current_thread().name)),
        on_idle=lambda: idle.append(threading.current_thread().name), ui=queue)
    try:
        sched.submit(21)
        assert sched.wait_idle(10)  # the main thread waits: it must apply the delivery itself
        assert delivered == [(42, "MainThread")]
        assert idle == ["MainThread"]
        assert not queue.pending()
    finally:
        sched.close()
