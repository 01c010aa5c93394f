"""The app wires one image source to the gallery and the builder, and gallery clicks to steps;
served, it keeps the pipeline in the page's link (issue 13).

Real Builder, real GalleryView, real DALI renders; the gallery is narrowed to one category
right after start so each test renders a few rows only.
"""

from __future__ import annotations

import html
import math
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator

import IPython.display
import ipywidgets as W
import pytest
import voila.utils

from dali_gallery.gallery import app as app_module
from dali_gallery.gallery import page_request
from dali_gallery.gallery.app import (
    PAGE_LOAD_TIMEOUT_S,
    UNCLAIMED_TIMEOUT_S,
    App,
    quiet_dali_deprecations,
)
from dali_gallery.gallery.card_queue import FIRST_SCREEN_PX, PAGE_PAINT_S
from dali_gallery.gallery.page_request import PREHEAT_ENV, QUERY_ENV, READY_LOG
from dali_gallery.gallery.poster import POSTER_KEY, poster_cards
from dali_gallery.gallery.row import card_px, tile_px
from dali_gallery.gallery.serve import ALLOWED_ROOT_ENV, IMAGES_ENV
from dali_gallery.pipelines.preset import load
from dali_gallery.widgets import page_ready, page_watchdog, ui_thread
from dali_gallery.widgets.autosave import AUTOSAVE_ENV
from dali_gallery.widgets.share_link import MAX_LINK_CHARS, PARAM, decode, encode, sync_script
from tests.gallery.test_page_request import FakeLoop
from tests.gallery.test_poster import CARD_RE
from tests.support import SAMPLES, preset_dict

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def folders(tmp_path):
    """An allowed root holding an image folder of two photos and a folder outside it."""
    root = tmp_path / "root"
    images = root / "photos"
    images.mkdir(parents=True)
    for name in ("cat.jpg", "coffee.jpg"):
        shutil.copy(SAMPLES / name, images / name)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    shutil.copy(SAMPLES / "gravel.jpg", outside / "gravel.jpg")
    return root, images, outside


@pytest.fixture
def make_app():
    apps: list[App] = []

    def make(**kwargs) -> App:
        app = App(device="cpu", size=128, **kwargs)
        app.gallery.category.value = "color"
        apps.append(app)
        return app

    yield make
    for app in apps:
        app.close()


def gallery_names(app: App) -> list[str]:
    assert app.gallery.wait_idle(120), app.gallery.status.value
    return list(app.gallery.engine.names)


def widget_texts(widget: W.Widget, seen: set[int] | None = None) -> Iterator[str]:
    """Every string in the synced state of ``widget`` and of the widgets it holds: what the
    kernel sends to the page (values, placeholders, tooltips, options, titles)."""
    seen = set() if seen is None else seen
    if id(widget) in seen:
        return
    seen.add(id(widget))
    stack = [getattr(widget, key, None) for key in widget.keys]
    while stack:
        value = stack.pop()
        if isinstance(value, W.Widget):
            yield from widget_texts(value, seen)
        elif isinstance(value, str):
            yield value
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())


def test_tabs_and_a_shared_image_source(make_app):
    app = make_app()
    assert app.tabs.titles == ("Gallery", "Builder", "Export")
    assert app.tabs.children[0] is app.gallery.widget
    # the other tabs get their widgets when first shown (the page makes no view of them before)
    assert app.tabs.children[1].children == app.tabs.children[2].children == ()
    assert app.images.children[0] is app.builder.images_panel.widget
    # the Images section starts collapsed, its title saying what the views show
    assert app.images.selected_index is None
    assert app.images.titles == ("Images: 6 from bundled samples", "Labels")
    assert app.tabs.selected_index == 0
    app.tabs.selected_index = 2
    assert app.tabs.children[2].children == (app.builder.export_panel,)
    assert app.tabs.children[1].children == ()
    app.tabs.selected_index = 1
    assert app.tabs.children[1].children == (app.builder.widget,)
    app.tabs.selected_index = 0
    assert app.tabs.children[1].children == (app.builder.widget,)  # kept once made
    assert app.wait_idle(120)
    assert gallery_names(app) == app.builder.renderer.names[:4]
    assert all(app.gallery.results[op].ok for op in app.gallery.visible)
    bundle = app._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle


def test_serve_environment_picks_images_and_allowed_root(folders, monkeypatch, make_app):
    root, images, outside = folders
    monkeypatch.setenv(IMAGES_ENV, str(images))
    monkeypatch.setenv(ALLOWED_ROOT_ENV, str(root))
    app = make_app()
    assert app.builder.allowed_root == root.resolve()
    assert sorted(app.builder.renderer.names) == ["cat.jpg", "coffee.jpg"]
    assert sorted(gallery_names(app)) == ["cat.jpg", "coffee.jpg"]
    # a folder outside the allowed root is refused and nothing changes
    problems = app.builder.images_panel.load_folder(str(outside))
    assert problems and "absolute paths are not allowed" in problems[0].reason
    problems = app.builder.images_panel.load_folder("../elsewhere")
    assert problems and "'..' is not allowed" in problems[0].reason
    assert sorted(gallery_names(app)) == ["cat.jpg", "coffee.jpg"]
    # a folder inside it loads into both views
    (root / "more").mkdir()
    shutil.copy(SAMPLES / "gravel.jpg", root / "more" / "gravel.jpg")
    assert app.builder.images_panel.load_folder("more") == []
    assert app.builder.renderer.names == ["gravel.jpg"]
    assert gallery_names(app) == ["gravel.jpg"]


def test_a_symlink_in_the_start_up_folder_leading_outside_the_root_is_skipped(
        folders, monkeypatch, make_app):
    """The served app's start-up folder passes the same allowed-root check as a folder typed
    in the app: before, its symlink to a file outside the root was read and shown to every
    visitor, in the builder (the gallery happened to check)."""
    root, images, outside = folders
    os.symlink(outside / "gravel.jpg", images / "link.jpg")
    monkeypatch.setenv(IMAGES_ENV, str(images))
    monkeypatch.setenv(ALLOWED_ROOT_ENV, str(root))
    app = make_app()
    assert sorted(app.builder.renderer.names) == ["cat.jpg", "coffee.jpg"]
    assert sorted(gallery_names(app)) == ["cat.jpg", "coffee.jpg"]
    reasons = {p.name: p.reason for p in app.builder.image_problems}
    assert reasons == {"link.jpg": "outside the allowed folder"}
    assert "link.jpg: outside the allowed folder" in app.builder.images_panel.problems.value


def test_a_start_up_folder_that_is_a_symlink_out_of_the_root_is_refused(
        folders, monkeypatch, make_app):
    root, images, outside = folders
    os.symlink(outside, root / "escape")
    monkeypatch.setenv(IMAGES_ENV, str(root / "escape"))
    monkeypatch.setenv(ALLOWED_ROOT_ENV, str(root))
    app = make_app()
    assert "gravel.jpg" not in app.builder.renderer.names
    assert [(p.name, p.reason) for p in app.builder.image_problems] == [
        ("escape", "outside the allowed folder")]
    assert "no usable image" in app.builder.images_panel.summary.value


def test_the_samples_button_of_a_served_app_loads_both_views(folders, monkeypatch, make_app):
    """Served with its own images folder, the bundled samples (outside the allowed root) are
    checked inside their own folder: before, the gallery checked them against the allowed
    root, refused every one and kept showing nothing new."""
    root, images, _ = folders
    monkeypatch.setenv(IMAGES_ENV, str(images))
    monkeypatch.setenv(ALLOWED_ROOT_ENV, str(root))
    app = make_app()
    assert app.builder.images_panel.load_samples() == []
    assert "cat.jpg" in app.builder.renderer.names and "gravel.jpg" in app.builder.renderer.names
    assert gallery_names(app) == app.builder.renderer.names[:4]
    assert app.gallery.problems == []


def test_a_served_page_names_no_server_path(folders, monkeypatch, make_app):
    """Placeholders, summaries, refusals, problem lists and the export's command name folders
    relative to the allowed root; neither the root's absolute path, nor the Python prefix, nor
    the temp folder appears anywhere in the state the page receives."""
    root, images, outside = folders
    os.symlink(outside / "gravel.jpg", images / "link.jpg")
    os.symlink(outside, root / "escape")
    (images / "notes.txt").write_text("not an image")
    monkeypatch.setenv(IMAGES_ENV, str(images))
    monkeypatch.setenv(ALLOWED_ROOT_ENV, str(root))
    app = make_app()
    panel = app.builder.images_panel
    needles = {str(root), str(root.resolve()), str(outside), sys.prefix, tempfile.gettempdir()}

    def assert_no_server_path(when: str) -> None:
        app.builder._on_idle()  # the export tab's texts are refreshed when the preview is idle
        texts = list(widget_texts(app.widget))
        leaks = [(n, t[:160]) for t in texts for n in needles if n in t]
        assert not leaks, f"{when}: {leaks}"

    assert app.wait_idle(120)
    assert panel.folder.placeholder == "folder (relative to the allowed root)"
    assert "--images photos " in app.builder.cli_command
    assert_no_server_path("start-up folder with a symlink out")
    for typed, why in [("/etc", "absolute paths are not allowed"), ("../elsewhere", "'..'"),
                       ("escape", "leads outside the allowed root"), ("nope", "does not exist"),
                       ("", "enter a folder inside the allowed root")]:
        problems = panel.load_folder(typed)
        assert problems and why in problems[0].reason, problems
        assert_no_server_path(f"folder {typed!r}")
    cat = (SAMPLES / "cat.jpg").read_bytes()
    broken = cat[:300] + bytes(64) + cat[300:600]  # headers fine, then DALI fails to decode
    problems = panel.load_uploads([{"name": "x.jpg", "size": 3, "content": b"bad"},
                                   {"name": "broken.jpg", "size": len(broken),
                                    "content": broken}])
    assert {p.name for p in problems} == {"x.jpg", "broken.jpg"}, problems
    assert app.wait_idle(120)
    assert_no_server_path("bad uploads")
    assert panel.load_samples() == []
    assert app.wait_idle(120)
    assert_no_server_path("samples")
    problems = panel.load_folder(".")  # the root itself: a file linked out, named as linked
    assert {p.name: p.reason for p in problems if "outside" in p.reason} == {
        "photos/link.jpg": "outside the allowed folder"}, problems
    # a class folder linked out: the names of the files there never reach the page
    assert not [n for n in list(widget_texts(app.widget)) if "escape/" in n]
    assert app.wait_idle(120)
    assert_no_server_path("the allowed root itself")


def test_a_missing_images_folder_falls_back_to_the_samples(tmp_path, monkeypatch, make_app):
    monkeypatch.setenv(IMAGES_ENV, str(tmp_path / "nope"))
    monkeypatch.delenv(ALLOWED_ROOT_ENV, raising=False)
    app = make_app()
    assert "is not a folder; showing the bundled samples" in app.message.value
    assert "cat.jpg" in app.builder.renderer.names
    assert app.images.selected_index == 0  # open: what it shows is not what was asked for


def test_clicking_a_gallery_value_adds_the_step_and_opens_the_builder(make_app):
    app = make_app()
    app.gallery.search.value = "hue"
    assert app.gallery.wait_idle(120)
    row = app.gallery.row("hue")
    assert row is not None
    row.click(2)
    assert app.tabs.selected_index == 1
    assert app.tabs.children[1].children == (app.builder.widget,)
    step = app.builder.preset.steps[-1]
    assert step.op == "hue" and step.params["hue"] == 120.0
    assert app.builder.wait_idle(60)
    assert app.builder.last_result is not None
    assert "added hue (hue=120 deg)" in app.gallery.status.value


def test_uploads_go_to_both_views_and_bad_ones_keep_the_previous_images(make_app):
    app = make_app()
    before = gallery_names(app)
    panel = app.builder.images_panel
    version = app.gallery._version

    problems = panel.load_uploads([{"name": "notes.jpg", "size": 5, "content": b"hello"}])
    assert [p.name for p in problems] == ["notes.jpg"]
    assert "no usable image" in panel.summary.value and "dg-error" in panel.summary.value
    assert app.images.titles[0] == "Images: 6 from bundled samples"  # still what is shown
    assert app.gallery._version == version, "a bad upload must not touch the gallery"
    assert gallery_names(app) == before

    cat = (SAMPLES / "cat.jpg").read_bytes()
    problems = panel.load_uploads([
        {"name": "mine.jpg", "size": len(cat), "content": cat},
        {"name": "broken.png", "size": 9, "content": b"\x89PNG junk"},
    ])
    assert [p.name for p in problems] == ["broken.png"]
    assert app.builder.renderer.names == ["mine.jpg"]
    assert gallery_names(app) == ["mine.jpg"]
    assert app.images.titles[0] == "Images: 1 from 2 uploaded file(s)"  # one was broken
    assert all(app.gallery.results[op].ok for op in app.gallery.visible)

    assert app.set_images(SAMPLES / "gravel.jpg") == []
    names = gallery_names(app)
    assert len(names) == 1 and names[0].endswith("gravel.jpg")


def test_dali_deprecation_noise_is_dropped_and_other_warnings_kept():
    seen: list[str] = []
    with warnings.catch_warnings():  # restores warnings.showwarning afterwards
        warnings.showwarning = lambda message, *args, **kw: seen.append(str(message))
        quiet_dali_deprecations()
        quiet_dali_deprecations()  # idempotent: one hook
        warnings.showwarning("WARNING: `nvidia.dali.fn.experimental.filter` is now deprecated.",
                             DeprecationWarning, "/x/nvidia/dali/ops/__init__.py", 411)
        warnings.showwarning("mine is now deprecated", DeprecationWarning, "/x/mine.py", 1)
        warnings.showwarning("a user warning", UserWarning, "/x/nvidia/dali/ops/__init__.py", 2)
    assert seen == ["mine is now deprecated", "a user warning"]


# ---- the pipeline in the page's link, and who autosaves (issue 13) ---------------------------

LINKED = preset_dict([{"op": "rotate", "params": {"angle": 17.0}},
                      {"op": "hue", "probability": 0.5, "params": {"hue": 40.0}}], seed=31337)


def test_the_served_app_opens_the_pipeline_in_its_link(monkeypatch, make_app):
    """Before, every page load started from the default pipeline: a reload lost it."""
    value = encode(load(LINKED))
    monkeypatch.setenv(QUERY_ENV, f"token=secret&{PARAM}={value}")
    app = make_app(page_link=True)
    assert app.claimed
    assert app.builder.preset.to_dict() == load(LINKED).to_dict()
    assert app.link.value == value and app.link.widget in app.widget.children
    assert app.message.value == ""
    app.builder.set_seed(1)  # the link follows the edits
    assert decode(app.link.value).seed == 1


@pytest.mark.parametrize("query, says", [
    (f"{PARAM}=%%%", "must be base64url text"),
    (f"{PARAM}=" + "A" * (MAX_LINK_CHARS + 1), "a link holds at most"),
    (f"{PARAM}=eNpVUEFugzAQ", "cut short"),
])
def test_a_bad_link_is_reported_and_the_default_pipeline_kept(monkeypatch, make_app, query, says):
    monkeypatch.setenv(QUERY_ENV, query)
    app = make_app(page_link=True)
    shown = html.unescape(app.message.value)
    assert "was not loaded" in shown and says in shown and "dg-error" in shown
    assert app.builder.preset.steps == [] and app.link.value == ""


def test_without_page_link_the_query_is_not_read(monkeypatch, make_app):
    monkeypatch.setenv(QUERY_ENV, f"{PARAM}={encode(load(LINKED))}")
    app = make_app()
    assert app.link is None and app.builder.preset.steps == []


def test_the_page_gets_the_script_that_keeps_the_link_in_the_address_bar(monkeypatch, make_app):
    shown: list = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    make_app(page_link=True)._ipython_display_()
    assert isinstance(shown[0], W.Widget) and shown[1].data == sync_script()
    shown.clear()
    make_app()._ipython_display_()
    assert len(shown) == 1  # not in JupyterLab: its address is its own


def test_a_served_page_gets_the_script_that_reloads_it_if_its_widgets_never_come(
        monkeypatch, make_app):
    shown: list = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    monkeypatch.setenv(page_ready.VOILA_ENV, "kernel-id")
    monkeypatch.setenv(page_watchdog.WATCH_ENV, "12")
    make_app(page_link=True)._ipython_display_()
    assert [getattr(o, "data", None) for o in shown[1:]] == [
        sync_script(), page_watchdog.watchdog_script(12)]
    monkeypatch.setenv(page_watchdog.WATCH_ENV, "1")  # an operator's mistake: said at once
    with pytest.raises(ValueError, match=page_watchdog.WATCH_ENV):
        make_app()
    monkeypatch.delenv(page_ready.VOILA_ENV)  # JupyterLab: never (it would reload the lab)
    shown.clear()
    make_app()._ipython_display_()
    assert len(shown) == 1


def test_the_app_does_not_autosave_unless_asked(monkeypatch, tmp_path, make_app):
    """Builder() autosaves by default; the app does not: served, every visitor would share it."""
    monkeypatch.delenv(AUTOSAVE_ENV, raising=False)
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    assert make_app().builder.autosave is None
    assert make_app(autosave=tmp_path / "mine.json").builder.autosave.path == tmp_path / "mine.json"


def voila_kernel(monkeypatch) -> FakeLoop:
    """This process as a kernel Voilà started: its io_loop is a FakeLoop run by the test."""
    loop = FakeLoop()
    for module in (ui_thread, page_ready, page_request, app_module):
        monkeypatch.setattr(module, "kernel_loop", lambda: loop)
    monkeypatch.setattr(page_ready, "_waiting", [])
    monkeypatch.setenv(page_ready.VOILA_ENV, "kernel-id")
    return loop


def first_screen_rows(gallery) -> int:
    """The rows whose cards fill a held gallery's first screen (its images, at its size)."""
    row_px = card_px(tile_px(int(gallery.size.value)), len(gallery.engine.images))
    return math.ceil(FIRST_SCREEN_PX / row_px)


def test_a_pooled_kernel_makes_its_first_screen_then_waits_for_its_page(monkeypatch, make_app,
                                                                        capfd):
    """A kernel started ahead (the served app's pool) renders the gallery's first screen of
    rows at once and makes their cards while no page is loading, so its page gets them with
    its widgets, then renders no further until its page is ready; its display (the notebook's)
    waits for those cards, adds their poster to the page, and says so in the server's log (the
    browser bench waits for that). Once claimed it keeps
    any further card back until the page has its widgets (a kernel making cards while its page
    asks for the widgets answered too late: widgets "not found"), opens the page's link and
    gives the page the usual 20 s."""
    loop = voila_kernel(monkeypatch)
    monkeypatch.setenv(PREHEAT_ENV, "True")
    monkeypatch.setenv(QUERY_ENV, "")
    value = encode(load(LINKED))
    claimed = threading.Event()

    def wait_for_request() -> None:
        claimed.wait(60)
        os.environ[QUERY_ENV] = f"{PARAM}={value}"

    monkeypatch.setattr(voila.utils, "wait_for_request", wait_for_request)
    app = make_app(page_link=True)
    gallery = app.gallery
    assert not app.claimed and gallery.images_set and gallery.cards.held
    assert [delay for delay, _ in loop.timers] == [UNCLAIMED_TIMEOUT_S]
    assert READY_LOG not in capfd.readouterr().err  # nothing made yet

    def rendered() -> int:  # rows of this category (the app's first job had all of them)
        return len(set(gallery.results) & set(gallery.visible))

    # the notebook displays the app: a pooled kernel's display waits for the first screen,
    # adds its poster (gallery.poster), then says it is ready
    shown: list = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)))
    app._ipython_display_()
    assert READY_LOG in capfd.readouterr().err
    first = rendered()
    poster, meta = shown[-1]
    assert meta == {"metadata": {POSTER_KEY: True}}
    assert CARD_RE.findall(poster.data) == gallery.shown()[:len(poster_cards(gallery))]
    assert len(gallery.visible) > first_screen_rows(gallery) > 1  # the color category
    assert first == first_screen_rows(gallery) and gallery.shown() == gallery.visible[:first]
    assert gallery.cards.kept == 0  # made, not kept: they are among the page's widgets
    time.sleep(1.0)  # a worker that did not pause would render the next rows meanwhile
    loop.run_until(lambda: True)
    assert rendered() == first < len(gallery.visible)
    claimed.set()
    loop.run_until(lambda: app.claimed)
    assert app.builder.preset.to_dict() == load(LINKED).to_dict()
    (release,) = [fn for delay, fn in loop.timers if delay == PAGE_LOAD_TIMEOUT_S]
    assert gallery.cards.held and gallery.shown() == gallery.visible[:first]
    release()  # the page never asked for the widgets: the gallery goes on anyway
    assert not gallery.cards.held
    # the summary comes through the kernel's loop after the last card: wait for both
    loop.run_until(lambda: gallery.shown() == gallery.visible
                   and "operators in" in gallery.status.value, timeout=120)
    assert READY_LOG not in capfd.readouterr().err  # said once


def test_a_failing_poster_is_logged_and_the_pooled_page_opens_without_it(monkeypatch, make_app,
                                                                        capfd, caplog):
    """The poster is a picture ahead of the page: if making it fails, the server's log says
    why, the app is displayed all the same and the kernel still says it is ready."""
    voila_kernel(monkeypatch)
    monkeypatch.setenv(PREHEAT_ENV, "True")
    monkeypatch.setattr(voila.utils, "wait_for_request", lambda: threading.Event().wait(60))

    def broken(view, *args):
        raise OSError("cannot encode the poster")

    monkeypatch.setattr(app_module, "poster_cards", broken)
    shown: list = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)))
    app = make_app()
    with caplog.at_level("ERROR", logger=app_module.__name__):
        app._ipython_display_()
    assert READY_LOG in capfd.readouterr().err
    assert shown[0][0] is app.widget and not any(kw for _, kw in shown)  # no poster output
    assert "the poster of the gallery's first screen failed" in caplog.text
    assert "cannot encode the poster" in caplog.text


def test_a_claimed_pooled_kernel_keeps_the_cards_of_rows_still_rendering(monkeypatch, make_app):
    """A page that claims a pooled kernel before its first screen is made: the cards not yet
    made wait for the page's widgets like any other; once it has them, they are made at once
    and the rows after them render only after the page's pause to paint them."""
    loop = voila_kernel(monkeypatch)
    monkeypatch.setenv(PREHEAT_ENV, "True")
    monkeypatch.setattr(voila.utils, "wait_for_request", lambda: None)
    app = make_app()
    loop.run_until(lambda: app.claimed)  # before any row was rendered and encoded
    gallery = app.gallery
    assert gallery.cards.held and gallery.shown() == []
    loop.run_until(lambda: len(gallery.engine.images) > 0
                   and gallery.cards.kept >= first_screen_rows(gallery), timeout=120)
    assert gallery.shown() == []
    first = len(gallery.results)
    page_ready.page_loaded()
    t0 = time.monotonic()
    # the kept cards are made at once; the next rows wait while the page paints them
    loop.run_until(lambda: len(gallery.shown()) >= first, timeout=120)
    loop.run_until(lambda: len(gallery.results) > first, timeout=120)
    assert time.monotonic() - t0 >= PAGE_PAINT_S
    loop.run_until(lambda: gallery.shown() == gallery.visible
                   and "operators in" in gallery.status.value, timeout=120)


def test_a_kernel_started_for_its_page_renders_nothing_before_the_page_is_ready(monkeypatch,
                                                                                make_app):
    """Its page is loading while the notebook runs: rendering then would compete with the
    kernel's answer to the page (its first picture came 0.6 s later on 2 cores), so the
    gallery only decodes its images, then waits for the page (or its 20 s)."""
    loop = voila_kernel(monkeypatch)
    monkeypatch.setenv(PREHEAT_ENV, "False")
    app = make_app()
    gallery = app.gallery
    assert gallery.images_set and gallery.cards.held
    assert [delay for delay, _ in loop.timers] == [PAGE_LOAD_TIMEOUT_S]
    time.sleep(1.5)
    loop.run_until(lambda: True)
    assert gallery.results == {} and gallery.shown() == []
    page_ready.page_loaded()  # the page has the widgets' state
    loop.run_until(lambda: gallery.shown() == gallery.visible
                   and "operators in" in gallery.status.value, timeout=120)
    assert not gallery.cards.held
