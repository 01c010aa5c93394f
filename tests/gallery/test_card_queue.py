"""The gallery's cards thread, and the cards and rows a held gallery keeps back."""

from __future__ import annotations

import threading
import time

from dali_gallery.gallery.card_queue import FIRST_SCREEN_PX, CardQueue

ROW = 100
"""A card's CSS height in these tests (the queue pauses once the rows fill its screen)."""


def test_cards_are_made_at_once_unless_held_then_in_order_on_release():
    queue = CardQueue()
    made: list[int] = []
    queue.deliver(lambda: made.append(0))
    assert made == [0] and not queue.held
    queue.hold()
    assert queue.held
    for k in (1, 2, 3):
        queue.deliver(lambda k=k: made.append(k))
    assert made == [0] and queue.kept == 3
    queue.release()
    assert made == [0, 1, 2, 3] and not queue.held and queue.kept == 0
    queue.release()  # idempotent: nothing is made twice
    assert made == [0, 1, 2, 3]
    queue.close()


def test_a_failing_card_is_reported_to_its_error_sink():
    queue = CardQueue()
    errors: list[Exception] = []
    queue.hold()
    queue.deliver(lambda: 1 / 0, errors.append)
    queue.release()
    assert [type(e) for e in errors] == [ZeroDivisionError]
    queue.close()


def test_the_worker_pauses_after_the_first_screen_until_released():
    queue = CardQueue()
    queue.hold(screen_px=2 * ROW)
    passed: list[int] = []

    def worker() -> None:
        for row in range(4):
            queue.wait_turn(row, lambda: False, ROW)
            passed.append(row)

    thread = threading.Thread(target=worker)
    thread.start()
    time.sleep(0.5)
    assert passed == [0, 1]
    queue.release()
    thread.join(5)
    assert passed == [0, 1, 2, 3]
    queue.close()


def test_an_outdated_job_stops_waiting_and_close_wakes_a_paused_worker():
    queue = CardQueue()
    queue.hold()
    stop = threading.Event()
    t0 = time.monotonic()
    threading.Timer(0.3, stop.set).start()
    queue.wait_turn(1, stop.is_set, FIRST_SCREEN_PX)
    assert 0.25 < time.monotonic() - t0 < 2.0 and queue.held
    done = threading.Event()
    thread = threading.Thread(target=lambda: (
        queue.wait_turn(1, lambda: False, FIRST_SCREEN_PX), done.set()))
    thread.start()
    queue.deliver(lambda: None)
    queue.close()
    thread.join(5)
    assert done.is_set() and not queue.held


def test_work_runs_on_one_cards_thread_in_order():
    queue = CardQueue()
    seen: list[tuple[int, str]] = []
    futures = [queue.submit(lambda k=k: seen.append((k, threading.current_thread().name)))
               for k in range(5)]
    for f in futures:
        f.result(5)
    assert [k for k, _ in seen] == list(range(5))
    assert {name for _, name in seen} == {"dali-gallery-cards_0"}
    queue.close()


def test_a_queue_held_without_keeping_makes_cards_at_once_and_says_when_its_screen_is_done():
    """A pooled kernel (no page yet) makes its first screen's cards as they come, so its page
    gets them with its widgets; ``on_ready`` comes after those cards, once, when the worker
    pauses; from ``keep()`` on (a page claimed it) cards wait for the release."""
    queue = CardQueue()
    made: list[object] = []
    queue.hold(screen_px=2 * ROW, keep=False, on_ready=lambda: made.append("ready"))
    passed: list[int] = []

    def worker() -> None:
        for row in range(4):
            queue.wait_turn(row, lambda: False, ROW)
            passed.append(row)
            # as the view does: the card is encoded on the cards thread, then delivered
            queue.submit(lambda row=row: (time.sleep(0.1), queue.deliver(
                lambda: made.append(row))))

    thread = threading.Thread(target=worker)
    thread.start()
    deadline = time.monotonic() + 5
    while "ready" not in made and time.monotonic() < deadline:
        time.sleep(0.02)
    assert passed == [0, 1] and made == [0, 1, "ready"] and queue.held and queue.kept == 0
    queue.keep()
    queue.release()
    thread.join(5)
    assert passed == [0, 1, 2, 3]
    queue.submit(lambda: None).result(5)  # the last cards' encodes
    assert made == [0, 1, "ready", 2, 3]
    queue.close()


def test_after_keep_the_cards_wait_for_the_release():
    queue = CardQueue()
    made: list[int] = []
    queue.hold(screen_px=4 * ROW, keep=False)
    queue.deliver(lambda: made.append(0))
    queue.keep()  # a page claimed the kernel
    queue.deliver(lambda: made.append(1))
    assert made == [0] and queue.kept == 1
    queue.release()
    assert made == [0, 1] and not queue.held
    queue.close()


def test_a_job_that_ends_before_the_pause_finishes_its_screen_with_its_last_work():
    """Fewer rows than a screen: the render never pauses; ``finish`` delivers the job's last
    work and then ``on_ready``; a later job does not call it again."""
    queue = CardQueue()
    made: list[str] = []
    queue.hold(screen_px=6 * ROW, keep=False, on_ready=lambda: made.append("ready"))
    queue.wait_turn(0, lambda: False, ROW)
    queue.submit(lambda: queue.deliver(lambda: made.append("card"))).result(5)
    queue.finish(lambda: made.append("summary"))
    queue.submit(lambda: None).result(5)
    assert made == ["card", "summary", "ready"]
    queue.finish(lambda: made.append("summary"))
    queue.submit(lambda: None).result(5)
    assert made == ["card", "summary", "ready", "summary"]
    queue.close()


def test_a_kept_queue_keeps_on_ready_with_its_cards_and_close_forgets_it():
    queue = CardQueue()
    made: list[str] = []
    queue.hold(screen_px=0, on_ready=lambda: made.append("ready"))
    done = threading.Event()
    threading.Thread(target=lambda: (queue.wait_turn(0, done.is_set, ROW), None)).start()
    queue.submit(lambda: None).result(5)
    time.sleep(0.1)
    queue.submit(lambda: None).result(5)
    assert made == [] and queue.kept == 1  # kept like a card: no page has the widgets yet
    queue.release()
    assert made == ["ready"]
    done.set()
    queue.hold(screen_px=0, on_ready=lambda: made.append("again"))
    queue.close()
    assert made == ["ready"]


def test_the_first_screen_is_measured_in_pixels_of_cards():
    """Tall cards (six images) fill the first screen in two rows, short ones (one image) in
    six; a card is let through while the rows before it are shorter than the screen."""
    for row_px, rows in ((850, 2), (220, 6), (FIRST_SCREEN_PX, 1)):
        queue = CardQueue()
        queue.hold(keep=False)
        passed: list[int] = []
        thread = threading.Thread(target=lambda q=queue, px=row_px, seen=passed: [
            (q.wait_turn(k, lambda: False, px), seen.append(k)) for k in range(8)])
        thread.start()
        time.sleep(0.3)
        assert passed == list(range(rows)), row_px
        queue.release()
        thread.join(5)
        assert passed == list(range(8))
        queue.close()


def test_a_release_with_a_pause_makes_the_kept_cards_at_once_and_the_next_rows_later():
    """A pooled page that has its widgets is still painting its first screen: the kept cards
    are made now, the render goes on after the pause; a later release does not add to it,
    and an outdated job stops waiting."""
    queue = CardQueue()
    made: list[int] = []
    queue.hold(screen_px=ROW)
    queue.deliver(lambda: made.append(0))
    passed = threading.Event()
    thread = threading.Thread(target=lambda: (queue.wait_turn(1, lambda: False, ROW),
                                              passed.set()))
    thread.start()
    t0 = time.monotonic()
    queue.release(0.6)
    assert made == [0] and not queue.held
    queue.release(5.0)  # idempotent: the pause is the first release's
    assert passed.wait(5)
    assert 0.5 < time.monotonic() - t0 < 2.0
    thread.join(5)
    queue.wait_turn(1, lambda: False, ROW)  # the pause is over: no wait
    stop = threading.Event()
    queue.hold(screen_px=0)
    queue.release(30.0)
    threading.Timer(0.3, stop.set).start()
    t0 = time.monotonic()
    queue.wait_turn(0, stop.is_set, ROW)
    assert time.monotonic() - t0 < 2.0
    queue.close()


def test_the_time_the_render_waited_is_counted_from_a_given_moment():
    """``waited_s(since)`` is the time ``wait_turn`` blocked after ``since`` (held, then the
    release's pause); ``busy_s(since)`` the rest: a gallery's own time, not its page's."""
    queue = CardQueue()
    queue.hold(screen_px=ROW)
    since = time.perf_counter()
    queue.wait_turn(0, lambda: False, ROW)  # the first screen: no wait
    assert queue.waited_s(since) == 0.0
    threading.Timer(0.4, lambda: queue.release(0.3)).start()
    queue.wait_turn(1, lambda: False, ROW)  # held 0.4 s, then the 0.3 s pause
    assert 0.6 < queue.waited_s(since) < 1.5
    assert 0 <= queue.busy_s(since) < 0.3
    later = time.perf_counter()
    queue.wait_turn(2, lambda: False, ROW)  # released, the pause over: no wait
    assert queue.waited_s(later) == 0.0
    queue.hold(screen_px=0)  # a new hold forgets the waits before it
    assert queue.waited_s(since) == 0.0
    queue.close()
