"""The builder in a real Chromium (Voilà): the training output, an export that trains as it is,
the preset JSON and CLI command copied from the page, the search, folders and uploads.

One Voilà server on a small notebook that shows a Builder (CPU, no thumbnails) with an allowed
root holding a folder of three classes; one page for the module, the tests run in file order
the way a user goes through the builder.
"""

from __future__ import annotations

import importlib
import io
import json
import shutil
from types import SimpleNamespace

import pytest
from PIL import Image
from playwright.sync_api import expect

from dali_gallery.pipelines.generated_module import import_source
from tests.support import REPO, SAMPLES, write_notebook
from tests.widgets.test_export_panel import pytorch_example

pytestmark = [pytest.mark.browser, pytest.mark.timeout(420)]

B = ".dg-builder"
TILE = f"{B} img.dg-preview-tile"
NOTEBOOK = """import os
from dali_gallery.widgets import Builder

builder = Builder(device="cpu", thumbnails=False, draws=2, max_images=4, size=128,
                  allowed_root=os.environ["DALI_GALLERY_ALLOWED_ROOT"])
builder"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """root/ (the allowed root) with pets/{cats,dogs,owls} of 10 photos each, a mixed-size
    training folder and the builder notebook in a folder of its own."""
    base = tmp_path_factory.mktemp("builder-export")
    root = base / "root"
    samples = sorted(SAMPLES.glob("*.jpg"))
    for cls in ("cats", "dogs", "owls"):
        (root / "pets" / cls).mkdir(parents=True)
        for k in range(10):
            shutil.copy(samples[k % len(samples)], root / "pets" / cls / f"{cls}_{k:02d}.jpg")
    train = base / "train"
    for k, path in enumerate(samples):  # 384x384, 384x255, 384x256 ...: mixed sizes
        folder = train / ("a" if k % 2 == 0 else "b")
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)
    app = base / "app"
    app.mkdir()
    write_notebook(app / "builder.ipynb", NOTEBOOK)
    return SimpleNamespace(root=root, train=train, notebook=app / "builder.ipynb", base=base)


@pytest.fixture(scope="module")
def app(site, browser, tmp_path_factory):
    from tests.browser.conftest import start_voila

    server = start_voila(site.notebook, tmp_path_factory.mktemp("voila"),
                         images_dir=site.root, allowed_root=site.root)
    context = browser.new_context(viewport={"width": 1400, "height": 1000},
                                  accept_downloads=True)
    context.grant_permissions(["clipboard-read", "clipboard-write"])
    context.set_default_timeout(60_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(server.page_url(), wait_until="domcontentloaded")
    page.locator(TILE).first.wait_for(state="visible", timeout=180_000)
    yield SimpleNamespace(page=page, errors=errors, server=server)
    context.close()
    server.stop()


def text_of(page, selector: str) -> str:
    return page.locator(selector).first.inner_text()


def test_search_finds_aliases_and_says_when_nothing_matches(app):
    page = app.page
    search = page.locator(f"{B} .dg-picker-search input").first
    search.fill("gray")
    page.locator(f"{B} .dg-picker", has_text="Enter adds saturation").first.wait_for()
    search.fill("zzqx")
    page.locator(f"{B} .dg-picker", has_text="no operator matches 'zzqx'").first.wait_for()
    search.fill("RandomRotation")
    page.locator(f"{B} .dg-picker", has_text="Enter adds rotate").first.wait_for()
    search.press("Enter")
    page.locator(f"{B} .dg-step-card .dg-step-title", has_text="rotate").first.wait_for()
    search.fill("")
    assert not app.errors, app.errors


def test_training_output_is_on_previewed_and_exported_with_copyable_json_and_command(
        app, site, ui, tmp_path):
    page = app.page
    enabled = page.locator(f"{B} .dg-output-enabled input")
    assert enabled.is_checked(), "a new pipeline starts with the ImageNet training output"
    assert page.locator(f"{B} .dg-output input[type=number]").first.input_value() == "256"
    tile = page.locator(TILE).first
    before = ui.img_bytes(page, tile)
    page.locator(f"{B} .dg-output-show input").check()
    after = ui.wait_img_changed(page, before, tile, timeout_ms=90_000)
    assert Image.open(io.BytesIO(after)).size == (224, 224)  # the tail's crop
    shots = REPO / "docs" / "screenshots"
    shots.mkdir(parents=True, exist_ok=True)
    page.locator(f"{B} .dg-output").first.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "output.png"))  # for the README

    export = page.locator(f"{B} .dg-export").first
    export.locator(".dg-cli pre", has_text="--tail").wait_for()
    assert export.locator(".dg-batch-warning .dg-error").count() == 0
    preset_text = export.locator(".dg-preset-json pre").inner_text()
    preset = json.loads(preset_text)
    assert preset["output"]["crop"] == [224, 224] and preset["steps"][0]["op"] == "rotate"
    for button, shown in ((".dg-copy-cli", export.locator(".dg-cli pre").inner_text()),
                          (".dg-copy-preset", preset_text)):
        export.locator(f"button{button}").click()
        export.locator(f"button{button}", has_text="copied").wait_for()
        assert page.evaluate("navigator.clipboard.readText()").strip() == shown.strip()

    with page.expect_download() as info:
        export.locator("a.dg-download-py").click()
    script = tmp_path / info.value.suggested_filename
    info.value.save_as(script)
    code = script.read_text()
    torch = importlib.import_module("torch")
    namespace = dict(vars(import_source(code, tmp_path, "downloaded_from_the_page")))
    exec(pytorch_example(code, site.train), namespace)  # the module's example, as written
    images = namespace["images"]
    assert tuple(images.shape) == (6, 3, 224, 224) and images.dtype == torch.float32
    assert not app.errors, app.errors


def test_turning_the_training_output_off_warns_in_the_export(app):
    page = app.page
    page.locator(f"{B} .dg-output-enabled input").uncheck()
    warning = page.locator(f"{B} .dg-export .dg-batch-warning .dg-error").first
    warning.wait_for()
    assert "Batches will mix image sizes" in warning.inner_text()
    assert "representable as a tensor" in warning.inner_text()
    page.locator(f"{B} .dg-output-enabled input").check()
    warning.wait_for(state="detached")
    assert not app.errors, app.errors


def test_a_class_folder_shows_every_class_and_files_can_be_chosen(app, ui):
    page = app.page
    page.locator(f"{B} .lm-TabBar-tab", has_text="Images").first.click()
    page.locator(f"{B} .dg-folder input").fill("pets")
    page.locator(f"{B} .dg-folder-load").click()
    images = page.locator(f"{B} .dg-images").first
    images.locator(".widget-html", has_text="of 30 images in 3 class folders").first.wait_for()
    names = page.locator(f"{B} .dg-preview-original")
    page.wait_for_function("() => document.querySelectorAll('.dg-builder "
                           "img.dg-preview-original').length === 4")
    listing = images.locator(".dg-image-files select")
    expect(listing.locator("option")).to_have_count(30)  # the list may arrive after the text
    assert images.locator(".dg-image-problems").inner_text().strip() == ""
    listing.select_option(["dogs/dogs_07.jpg", "owls/owls_03.jpg"])
    images.locator(".dg-image-files-load").click()
    page.wait_for_function("() => document.querySelectorAll('.dg-builder "
                           "img.dg-preview-original').length === 2")
    assert names.count() == 2
    assert not app.errors, app.errors


def test_the_upload_button_counts_and_a_loaded_preset_is_confirmed(app):
    page = app.page
    images = page.locator(f"{B} .dg-images").first
    cat = (SAMPLES / "cat.jpg").read_bytes()
    with page.expect_file_chooser() as chooser:
        images.locator(".dg-upload").click()
    chooser.value.set_files([{"name": "one.jpg", "mimeType": "image/jpeg", "buffer": cat},
                             {"name": "two.jpg", "mimeType": "image/jpeg", "buffer": cat}])
    images.locator(".dg-upload", has_text="(2)").wait_for()
    preset = {"format": "dali-gallery/preset", "version": 1, "name": "mine", "seed": 3,
              "steps": [{"op": "hue", "params": {"hue": 20.0}},
                        {"op": "flip", "params": {"horizontal": True}}]}
    with page.expect_file_chooser() as chooser:
        page.locator(f"{B} .dg-preset-upload").first.click()
    chooser.value.set_files([{"name": "mine.json", "mimeType": "application/json",
                              "buffer": json.dumps(preset).encode()}])
    notice = page.locator(f"{B} .dg-export-notice", has_text="loaded mine.json").first
    notice.wait_for()
    assert "2 steps" in notice.inner_text()
    assert not app.errors, app.errors
