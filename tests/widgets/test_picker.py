"""The operator picker: every catalog operator, search, Enter, GPU-only reasons, thumbnails."""

from __future__ import annotations

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import Uniform
from dali_gallery.widgets.thumbnails import showcase_value
from tests.widgets.conftest import make_builder, settle

GPU_ONLY = [n for n, s in CATALOG.items() if not s.cpu]


def test_every_operator_is_listed_in_its_category_tab(builder):
    picker = builder.picker
    assert set(picker.items) == set(CATALOG)
    for k, (tab, category) in enumerate(zip(picker.tabs.children, picker.categories,
                                            strict=True)):
        picker.tabs.selected_index = k  # a tab's rows are made when it is first shown
        shown = [item for item in tab.children]
        assert shown == [picker.items[s.name].widget for s in CATALOG.by_category(category)]
    assert list(picker.tabs.titles) == picker.categories
    for name, item in picker.items.items():
        assert "dg-picker-item" in item.widget._dom_classes
        assert CATALOG[name].doc in item.text.value


def test_rows_are_made_when_first_shown_on_shared_layouts(builder):
    """The page restores every model the kernel holds before it shows anything: the picker
    makes only the first tab's rows, the others when shown, and its rows share layouts."""
    picker = builder.picker
    first = CATALOG.by_category(picker.categories[0])
    assert picker.items.made == len(first)
    assert all(not tab.children for tab in picker.tabs.children[1:])
    picker.search.value = "blur"  # a search makes the rows it shows
    assert picker.items.made > len(first)
    a, b = (picker.items[s.name] for s in first[:2])
    assert a.widget.layout is b.widget.layout and a.add.style is b.add.style
    assert a.thumb is not b.thumb and a.add is not b.add


def test_gpu_only_operators_are_visible_but_disabled_with_the_reason_on_cpu(builder):
    assert GPU_ONLY, "the catalog declares GPU-only operators"
    for name in GPU_ONLY:
        item = builder.picker.items[name]
        assert item.add.disabled and not item.available
        assert "dg-picker-item-disabled" in item.widget._dom_classes
        reason = CATALOG[name].gpu_reason
        assert reason and reason in item.add.tooltip and reason in item.text.value
        assert item.reason == CATALOG[name].unavailable_on("cpu")  # the engine's words too
    assert not builder.picker.items["rotate"].add.disabled


def test_add_button_adds_a_step_drawn_per_sample(builder):
    builder.picker.items["rotate"].add.click()
    step = builder.preset.steps[0]
    assert step.op == "rotate" and step.params["angle"] == Uniform(-15.0, 15.0)
    builder.picker.items["equalize"].add.click()  # no magnitude: catalog defaults
    assert builder.preset.steps[1].op == "equalize"
    settle(builder)
    assert builder.last_error is None


def test_search_filters_and_enter_adds_the_first_available_match(builder):
    picker = builder.picker
    picker.search.value = "blur"
    names = [c for c in picker.results.children]
    assert picker.results.layout.display is None and picker.tabs.layout.display == "none"
    assert picker.items["gaussian_blur"].widget in names
    assert picker.items["experimental.median_blur"].widget in names
    # Enter in the browser sends {"event": "submit"} on the text widget's comm
    first = next(n for n in picker.matches() if CATALOG[n].cpu)
    assert first in picker.hint.value
    picker.search._handle_custom_msg({"event": "submit"}, [])
    assert builder.preset.steps[-1].op == first
    picker.search.value = "median"
    n = len(builder.preset.steps)
    assert picker.submit() is None  # only a GPU-only match: nothing added, and why
    assert len(builder.preset.steps) == n
    assert "no available operator matches" in picker.hint.value
    picker.search.value = ""
    assert picker.tabs.layout.display is None


def test_thumbnails_render_the_operators_effect_on_the_first_image():
    small = Catalog([CATALOG[n] for n in ("rotate", "hsv", "flip", "experimental.erode")])
    b = make_builder(catalog=small, thumbnails=True)
    try:
        assert b.wait_idle(120, thumbnails=True)
        thumbs = {n: bytes(i.thumb.value) for n, i in b.picker.items.items()}
        assert thumbs["rotate"].startswith(b"\xff\xd8") and thumbs["rotate"] != thumbs["flip"]
        assert thumbs["experimental.erode"] == b""  # GPU-only on CPU: no thumbnail
        assert thumbs["hsv"] == b""  # its tab was never shown
        b.picker.tabs.selected_index = b.picker.categories.index("color")
        assert b.wait_idle(120, thumbnails=True)
        assert bytes(b.picker.items["hsv"].thumb.value).startswith(b"\xff\xd8")
        assert b.live.thumbnail_errors == {}
    finally:
        b.close()


def test_showcase_values_come_from_the_catalog():
    assert showcase_value(CATALOG["rotate"]) == 45.0  # halfway to the slider end
    assert showcase_value(CATALOG["equalize"]) is None
    for spec in CATALOG.values():
        v = showcase_value(spec)
        if v is not None:
            assert spec.param(spec.magnitude).check(v) is None, spec.name


def test_enter_on_an_empty_search_adds_nothing(builder):
    n = len(builder.preset.steps)
    builder.picker.search.value = ""
    assert builder.picker.submit() is None
    assert len(builder.preset.steps) == n
    assert "type part of a name" in builder.picker.hint.value


def test_in_a_kernel_enter_waits_for_the_typed_text(builder, monkeypatch):
    """The browser sends Enter at once but may hold the typed text back while the kernel is
    busy: the choice is made a moment later, with the text that arrived meanwhile."""
    from dali_gallery.widgets import picker as picker_module

    timers: list = []

    class Loop:
        def call_later(self, delay, fn):
            timers.append((delay, fn))

    monkeypatch.setattr(picker_module, "kernel_loop", lambda: Loop())
    picker = builder.picker
    picker.search.value = ""
    picker.search._handle_custom_msg({"event": "submit"}, [])  # Enter arrives first ...
    picker.search.value = "grid_mask"  # ... then the text the user typed before it
    assert [d for d, _ in timers] == [picker_module.SUBMIT_DELAY_S]
    timers[0][1]()
    assert builder.preset.steps[-1].op == "grid_mask"


def test_common_names_find_their_operator(builder):
    """Words people type, from torchvision / albumentations and plain English."""
    picker = builder.picker
    for text, op in [("gray", "saturation"), ("grayscale", "saturation"), ("grey", "saturation"),
                     ("ToGray", "saturation"), ("color jitter", "color_twist"),
                     ("Colour-Jitter", "color_twist"), ("RandomErasing", "erase"),
                     ("cutout", "erase"), ("GaussNoise", "noise.gaussian"),
                     ("random resized crop", "random_resized_crop"), ("fisheye", "sphere")]:
        picker.search.value = text
        assert picker.matches()[0] == op, (text, picker.matches())
        assert picker.items[op].widget in picker.results.children
        assert f"Enter adds <b>{op}</b>" in picker.hint.value, text


def test_a_search_without_match_says_so_and_suggests(builder):
    """It used to say nothing useful ("0 operators ...")."""
    picker = builder.picker
    picker.search.value = "colorjiter"
    assert picker.results.children == ()
    assert "no operator matches &#x27;colorjiter&#x27;; did you mean color_twist" in \
        picker.hint.value
    picker.search.value = "zzqx"
    assert "no operator matches &#x27;zzqx&#x27;; try a transform name" in picker.hint.value
    n = len(builder.preset.steps)
    assert picker.submit() is None and len(builder.preset.steps) == n
    assert "no operator matches" in picker.hint.value
