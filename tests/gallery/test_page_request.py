"""A kernel learns its page's query string: at once when Voilà started it for the page, later
(on a thread of its own, then on the kernel's main thread) when it was started ahead in the
served app's pool. The real Voilà round trip runs in tests/gallery/test_serve_kernels.py and
the browser tests."""

from __future__ import annotations

import os
import threading
import time

import pytest

from dali_gallery.gallery import page_request
from dali_gallery.gallery.page_request import PREHEAT_ENV, QUERY_ENV, when_claimed
from dali_gallery.widgets import ui_thread
from tests.widgets.test_page_ready import FakeLoop as PageReadyLoop


class FakeLoop(PageReadyLoop):
    """The kernel's io_loop as far as these modules use it, run until a condition holds."""

    def run_until(self, done, timeout: float = 10.0) -> None:
        """Run the callbacks threads hand to the main thread until ``done()``."""
        deadline = time.monotonic() + timeout
        while not done():
            assert time.monotonic() < deadline, "nothing reached the kernel's main thread"
            pending, self.callbacks = self.callbacks, []
            for fn in pending:
                fn()
            time.sleep(0.01)


@pytest.fixture
def pooled(monkeypatch) -> FakeLoop:
    """A kernel Voilà started ahead of its page (a stale query string in its environment)."""
    loop = FakeLoop()
    monkeypatch.setattr(ui_thread, "kernel_loop", lambda: loop)
    monkeypatch.setattr(page_request, "kernel_loop", lambda: loop)
    monkeypatch.setenv(PREHEAT_ENV, "True")
    monkeypatch.setenv(QUERY_ENV, "stale=1")
    return loop


def test_a_kernel_started_for_its_page_knows_the_query_at_once(monkeypatch):
    monkeypatch.setenv(PREHEAT_ENV, "False")
    monkeypatch.setenv(QUERY_ENV, "preset=abc")
    got: list = []
    assert when_claimed(got.append) is False and got == ["preset=abc"]
    monkeypatch.delenv(QUERY_ENV)
    assert when_claimed(got.append) is False and got[-1] == ""  # outside Voilà: no query


def test_a_pooled_kernel_hears_of_its_page_later_on_its_main_thread(pooled):
    claimed = threading.Event()
    threads: list[str] = []

    def wait() -> None:  # what voila.utils.wait_for_request does once a page claims us
        assert os.environ.get(QUERY_ENV) is None  # the stale value is gone first
        claimed.wait(30)
        os.environ[QUERY_ENV] = "token=t&preset=xyz"

    got: list = []

    def heard(query) -> None:
        threads.append(threading.current_thread().name)
        got.append(query)

    assert when_claimed(heard, wait) is True
    time.sleep(0.2)
    assert got == []  # the kernel is free while it waits
    claimed.set()
    pooled.run_until(lambda: got)
    assert got == ["token=t&preset=xyz"] and threads == [threading.main_thread().name]
    assert os.environ[PREHEAT_ENV] == "False"  # from now on a kernel like any other


@pytest.mark.parametrize("failure", ["raises", "returns without the request"])
def test_a_request_that_never_arrives_is_reported_as_none(pooled, failure):
    def wait() -> None:
        if failure == "raises":
            raise ConnectionResetError("the server went away")

    got: list = []
    assert when_claimed(got.append, wait) is True
    pooled.run_until(lambda: got)
    assert got == [None]
