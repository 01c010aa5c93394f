"""The render scheduler: one render in flight, newest request wins, stale results flagged."""

from __future__ import annotations

import threading
import time

import pytest

from dali_gallery.widgets.scheduler import Outcome, Scheduler


class Recorder:
    """A real work function that can be held mid-render, and what was delivered."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.started = threading.Event()
        self.active = 0
        self.max_active = 0
        self.lock = threading.Lock()
        self.rendered: list[int] = []
        self.delivered: list[Outcome[int, int]] = []

    def work(self, request: int) -> int:
        with self.lock:
            self.active += 1
            self.max_active = max(self.max_active, self.active)
        self.started.set()
        self.gate.wait(10)
        with self.lock:
            self.active -= 1
        if request < 0:
            raise ValueError(f"request {request} is negative")
        self.rendered.append(request)
        return request * 10

    def deliver(self, outcome: Outcome[int, int]) -> None:
        self.delivered.append(outcome)


def test_requests_during_a_render_collapse_to_the_newest():
    r = Recorder()
    s = Scheduler(r.work, r.deliver)
    r.gate.clear()
    s.submit(1)
    assert r.started.wait(5)
    for k in range(2, 8):
        s.submit(k)
    r.gate.set()
    assert s.wait_idle(10)
    assert r.rendered == [1, 7]
    assert r.max_active == 1
    assert s.stats.superseded == 5 and s.stats.submitted == 7
    first, last = r.delivered
    assert not first.latest and last.latest and last.result == 70
    assert s.stats.stale == 1
    s.close()


def test_errors_are_outcomes_and_the_worker_keeps_going():
    r = Recorder()
    s = Scheduler(r.work, r.deliver)
    s.submit(-1)
    assert s.wait_idle(10)
    assert isinstance(r.delivered[-1].error, ValueError)
    assert "request -1" in str(r.delivered[-1].error)
    s.submit(3)
    assert s.wait_idle(10)
    assert r.delivered[-1].result == 30 and r.delivered[-1].error is None
    assert s.stats.failed == 1
    s.close()


def test_a_failing_deliver_is_reported_not_fatal():
    errors: list[Exception] = []

    def deliver(outcome: Outcome[int, int]) -> None:
        if outcome.request == 1:
            raise KeyError("display broke")

    s = Scheduler(lambda x: x, deliver, on_error=errors.append)
    s.submit(1)
    assert s.wait_idle(10)
    s.submit(2)
    assert s.wait_idle(10)
    assert len(errors) == 1 and isinstance(errors[0], KeyError)
    assert s.stats.rendered == 2
    s.close()


def test_background_tasks_wait_for_renders():
    r = Recorder()
    order: list[str] = []
    s = Scheduler(lambda x: order.append(f"render {x}") or x, r.deliver,
                  on_idle=lambda: order.append("idle"))
    r.gate.clear()
    s.background(lambda: r.gate.wait(10) and order.append("bg 1"))
    s.background(lambda: order.append("bg 2"))
    time.sleep(0.05)
    s.submit(5)
    r.gate.set()
    assert s.wait_idle(10, background=True)
    assert order == ["bg 1", "render 5", "idle", "bg 2"]
    assert s.stats.background == 2
    s.close()


def test_clear_background_drops_queued_tasks():
    ran: list[int] = []
    gate = threading.Event()
    s = Scheduler(lambda x: x, lambda o: None)
    s.background(lambda: gate.wait(10))
    for k in range(5):
        s.background(lambda k=k: ran.append(k))
    s.clear_background()
    gate.set()
    assert s.wait_idle(10, background=True)
    assert ran == []
    s.close()


def test_sync_mode_runs_in_the_callers_thread():
    threads: list[str] = []
    s = Scheduler(lambda x: threads.append(threading.current_thread().name) or x,
                  lambda o: None, sync=True)
    s.submit(1)
    assert threads == [threading.current_thread().name]
    assert s.idle()
    s.close()


def test_wait_idle_times_out_while_busy():
    r = Recorder()
    r.gate.clear()
    s = Scheduler(r.work, r.deliver)
    s.submit(1)
    assert not s.wait_idle(0.1)
    r.gate.set()
    assert s.wait_idle(10)
    s.close()


def test_closed_scheduler_refuses_work():
    s = Scheduler(lambda x: x, lambda o: None)
    s.close()
    with pytest.raises(RuntimeError, match="closed"):
        s.submit(1)
