"""Heavy widget work waits for a Voilà page to load the widgets' state; elsewhere it runs now."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from ipywidgets import Widget
from ipywidgets.widgets import widget as widget_module

from dali_gallery.widgets import page_ready, ui_thread


class FakeLoop:
    def __init__(self) -> None:
        self.callbacks: list = []
        self.timers: list = []

    def add_callback(self, fn) -> None:
        self.callbacks.append(fn)

    def call_later(self, delay, fn) -> None:
        self.timers.append((delay, fn))

    def run_callbacks(self) -> None:
        pending, self.callbacks = self.callbacks, []
        for fn in pending:
            fn()


class FakeComm:
    def __init__(self) -> None:
        self.sent: list = []

    def send(self, data, buffers=None) -> None:
        self.sent.append(data["method"])


@pytest.fixture
def voila(monkeypatch) -> FakeLoop:
    loop = FakeLoop()
    monkeypatch.setattr(ui_thread, "kernel_loop", lambda: loop)
    monkeypatch.setattr(page_ready, "kernel_loop", lambda: loop)
    monkeypatch.setenv(page_ready.VOILA_ENV, "kernel-id")
    monkeypatch.setattr(page_ready, "_waiting", [])
    return loop


def request_states() -> None:
    """What the page's widget manager sends once it is connected."""
    Widget._handle_control_comm_msg({"content": {"data": {"method": "request_states"}}})


def test_outside_voila_it_runs_right_away(monkeypatch):
    monkeypatch.delenv(page_ready.VOILA_ENV, raising=False)
    ran: list[int] = []
    assert page_ready.after_page_load(lambda: ran.append(1)) is False
    assert ran == [1]


def test_under_voila_it_waits_for_the_page_then_runs_once(voila, monkeypatch):
    comm = FakeComm()
    monkeypatch.setattr(Widget, "_control_comm", comm)
    # the real handler walks every live widget: give it none (other tests leave some behind)
    monkeypatch.setattr(widget_module, "_instances", {})
    ran: list[int] = []
    assert page_ready.after_page_load(lambda: ran.append(1), timeout_s=20) is True
    assert ran == [] and [d for d, _ in voila.timers] == [20]
    request_states()
    assert comm.sent == ["update_states"]  # the page got its state first ...
    assert ran == []
    voila.run_callbacks()  # ... and the deferred work runs after that reply
    assert ran == [1]
    voila.timers[0][1]()  # the time limit passing later does not run it again
    request_states()
    voila.run_callbacks()
    assert ran == [1]


def test_a_page_that_never_connects_still_gets_its_work_done(voila):
    ran: list[int] = []
    page_ready.after_page_load(lambda: ran.append(1), timeout_s=5)
    delay, fire = voila.timers[0]
    fire()
    assert delay == 5 and ran == [1]


def test_a_failure_in_the_deferred_work_is_logged_not_raised(voila, caplog):
    def boom() -> None:
        raise RuntimeError("gallery failed")

    page_ready.after_page_load(boom)
    voila.timers[0][1]()
    assert "deferred widget work failed" in caplog.text


def test_the_wait_is_read_from_the_page_s_date_as_a_string_or_a_datetime():
    now = datetime(2026, 11, 28, 12, 0, 10, tzinfo=timezone.utc)
    sent = datetime(2026, 11, 28, 12, 0, 4, 500_000, tzinfo=timezone.utc)
    assert page_ready.waited_s({"header": {"date": sent}}, now) == pytest.approx(5.5)
    iso = "2026-11-28T12:00:04.500Z"  # as the page's JavaScript writes it
    assert page_ready.waited_s({"header": {"date": iso}}, now) == pytest.approx(5.5)
    naive = sent.replace(tzinfo=None)  # a date without a zone is UTC (Jupyter's convention)
    assert page_ready.waited_s({"header": {"date": naive}}, now) == pytest.approx(5.5)
    assert page_ready.waited_s({"header": {}}, now) is None
    assert page_ready.waited_s({"header": {"date": "not a date"}}, now) is None
    assert page_ready.waited_s({}, now) is None


def test_a_late_answer_is_said_in_the_server_log_and_a_prompt_one_is_not(voila, monkeypatch,
                                                                         capfd):
    monkeypatch.setattr(Widget, "_control_comm", FakeComm())
    monkeypatch.setattr(widget_module, "_instances", {})
    page_ready.after_page_load(lambda: None)

    def ask(waited: float) -> None:
        sent = datetime.now(timezone.utc) - timedelta(seconds=waited)
        Widget._handle_control_comm_msg({"header": {"date": sent},
                                         "content": {"data": {"method": "request_states"}}})

    ask(0.3)
    assert page_ready.LATE_LOG not in capfd.readouterr().err
    ask(5.0)
    err = capfd.readouterr().err
    assert page_ready.LATE_LOG in err and "kernel-id" in err, err
    waited = float(err.split(page_ready.LATE_LOG)[1].split()[0])
    assert 5.0 <= waited < 6.0
