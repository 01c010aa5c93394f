"""The parity report against the real libraries: what a rule claims identical is bit-identical
on the sample images, what it claims equivalent stays within its stated bound, the timings
come from one run of both, and a missing library is said, not fatal."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.importers import import_pipeline
from dali_gallery.pipelines.importers.instantiate import build_pipeline
from dali_gallery.pipelines.importers.parity import parity_report
from dali_gallery.pipelines.importers.table import all_rules
from tests.pipelines.import_examples import (
    ALB_COVERAGE,
    ALB_KAGGLE,
    DOC_PIPELINES,
    TV_COVERAGE,
    TV_DOCS_V2,
)
from tests.support import SAMPLES

torchvision = importlib.import_module("torchvision")
A = importlib.import_module("albumentations")


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("cpu")
    eng.set_images(SAMPLES, max_side=256)
    yield eng
    eng.close()


def check_claims(text: str, engine: PreviewEngine) -> list:
    result = import_pipeline(text)
    report = parity_report(result, engine.images, engines={"cpu": engine}, timing=False)
    failures = [f"{c.item.call.text}: claims {c.verdict.line()!r}, measured {c.measured()}"
                for c in report.comparisons if c.holds is False]
    assert not failures, "\n".join(failures)
    return report.comparisons


@pytest.mark.slow
@pytest.mark.parametrize("text", [TV_COVERAGE, ALB_COVERAGE], ids=["torchvision", "albu"])
def test_every_claim_of_the_coverage_pipelines_holds(text, engine):
    comparisons = check_claims(text, engine)
    compared = [c for c in comparisons if not c.skipped]
    assert len(compared) >= 24
    identical = [c for c in compared if c.verdict.kind == "identical"]
    assert identical and all(c.max_diff == 0 for c in identical)
    for c in compared:
        if c.verdict.kind == "equivalent" and c.verdict.measure == "pixels":
            assert c.within >= c.verdict.share and c.mean_diff < 8, c.item.call.text


@pytest.mark.slow
@pytest.mark.parametrize("name", list(DOC_PIPELINES))
def test_claims_hold_on_the_documentation_pipelines(name, engine):
    check_claims(DOC_PIPELINES[name], engine)


def test_the_report_shows_both_outputs_the_difference_and_the_time(engine):
    result = import_pipeline(TV_DOCS_V2)
    report = parity_report(result, engine.images[:3], engines={"cpu": engine}, repeats=1)
    flip = next(c for c in report.comparisons if c.item.call.name == "RandomHorizontalFlip")
    assert flip.holds is True and flip.measured() == "bit-identical"
    original, reference, dali, diff = flip.samples[0]
    assert np.array_equal(reference, original[:, ::-1]) and np.array_equal(dali, reference)
    assert diff.max() == 0
    norm = next(c for c in report.comparisons if c.item.call.name == "Normalize")
    assert norm.holds is True and norm.max_diff < 0.01
    names = [t.name for t in report.timings]
    assert names[:2] == ["RandomResizedCrop", "RandomHorizontalFlip"]
    assert report.timings[0].original_ms > 0 and report.timings[0].dali_cpu_ms > 0
    assert report.pipeline.original_ms > 0 and report.pipeline.dali_cpu_ms > 0
    data = json.loads(report.to_json())
    assert data["comparisons"][0]["holds"] is True and data["images"] == 3


@pytest.mark.parametrize("normalize", [
    "A.Normalize(mean=(0.5, 0.5, 0.5), std=(0.25, 0.25, 0.25), max_pixel_value=127.5)",
    "A.Normalize(mean=(123.675, 116.28, 103.53), std=(58.395, 57.12, 57.375), "
    "max_pixel_value=1.0)"], ids=["127.5", "mmdet"])
def test_normalize_with_another_max_pixel_value_matches_albumentations_in_dali(normalize,
                                                                               engine):
    result = import_pipeline(f"import albumentations as A\nA.Compose([{normalize}])")
    report = parity_report(result, engine.images[:2], engines={"cpu": engine}, timing=False)
    (norm,) = report.comparisons
    assert norm.holds is True and norm.max_diff < 0.01, norm.measured()


def test_a_claim_that_does_not_hold_is_reported_as_such(engine):
    """The check is real: a rule claiming identity for a transform DALI does differently is
    caught (torchvision's equalize follows PIL, DALI's OpenCV)."""
    from dataclasses import replace

    from dali_gallery.pipelines.importers.rules import IDENTICAL

    result = import_pipeline("import torchvision.transforms as T\n"
                             "T.Compose([T.RandomEqualize(p=1)])")
    result.transforms[0].verdict = replace(IDENTICAL)
    report = parity_report(result, engine.images[:2], engines={"cpu": engine}, timing=False)
    assert report.comparisons[0].holds is False and not report.all_hold


def _centroid(img: np.ndarray) -> tuple[float, float]:
    ys, xs = np.nonzero(img[..., 0] > 127)
    return float(xs.mean()), float(ys.mean())


@pytest.mark.parametrize("module", ["torchvision.transforms", "torchvision.transforms.v2"])
def test_random_affine_turns_the_way_torchvision_does(module):
    """A bar pointing right from the centre, turned by RandomAffine(degrees=(30, 30)): torchvision
    turns it clockwise (down, y grows); the imported rotate must put it in the same place."""
    import torch

    bar = np.zeros((101, 101, 3), np.uint8)
    bar[50, 60:100] = 255
    tv = importlib.import_module(module)
    theirs = tv.RandomAffine(degrees=(30, 30))(torch.from_numpy(bar).permute(2, 0, 1))
    result = import_pipeline(f"import {module} as T\nT.Compose([T.RandomAffine(degrees=(30, "
                             "30))])")
    eng = PreviewEngine("cpu", num_threads=1)
    try:
        eng.set_arrays([bar])
        ours = eng.render(result.preset).images[0]
    finally:
        eng.close()
    (x, y), (tx, ty) = _centroid(ours), _centroid(theirs.permute(1, 2, 0).numpy())
    assert ty > 50 + 10 and abs(x - tx) < 1 and abs(y - ty) < 1


def test_random_affine_shears_a_point_before_it_turns_it(engine):
    """torchvision's affine matrix is R(angle) Sh(shear) S: a point is sheared, then turned.
    RandomAffine(degrees=30, shear=20) imported as rotate then warp_affine turned first: on a
    sample image 18% of the pixels matched torchvision's and the mean difference was 63 levels."""
    import torch

    img = engine.images[0]
    theirs = importlib.import_module("torchvision.transforms.v2").RandomAffine(
        degrees=(30, 30), shear=(20, 20))(torch.from_numpy(img).permute(2, 0, 1))
    result = import_pipeline("from torchvision.transforms import v2\nv2.Compose(["
                             "v2.RandomAffine(degrees=(30, 30), shear=(20, 20))])")
    assert [s.op for s in result.preset.steps] == ["warp_affine", "rotate"]
    ours = engine.render(result.preset, images=[0]).images[0]
    diff = np.abs(ours.astype(int) - theirs.permute(1, 2, 0).numpy().astype(int)).max(-1)
    assert (diff == 0).mean() > 0.75 and diff.mean() < 8  # two nearest-neighbour passes
    zoom = import_pipeline("from torchvision.transforms import v2\nv2.Compose(["
                           "v2.RandomAffine(degrees=30, scale=(1.1, 1.2))])")
    assert [s.op for s in zoom.preset.steps] == ["rotate", "warp_affine"]  # commute: a zoom-in
    # after the turn keeps the corners the turn brings into view, as torchvision's one pass


@pytest.mark.slow
def test_random_affine_claims_hold_for_rotations_and_each_interpolation(engine):
    """The fixed case runs torchvision's own RandomAffine with the strongest draw, so a wrong
    sign or a wrong interpolation bound is caught."""
    comparisons = check_claims(
        "import torchvision.transforms as T\nfrom torchvision.transforms import v2\n"
        "T.Compose([v2.RandomAffine(degrees=15), T.RandomAffine(degrees=(30, 30)),"
        " v2.RandomAffine((5, 25), interpolation=v2.InterpolationMode.BILINEAR),"
        " v2.RandomAffine(0, shear=(8, 12)), v2.RandomAffine(0, scale=(0.9, 1.1),"
        " interpolation=v2.InterpolationMode.BILINEAR), v2.RandomAffine(0, scale=(0.9, 1.1))])",
        engine)
    assert [c.holds for c in comparisons] == [True] * 5 + [None]
    assert [c.item.verdict.levels for c in comparisons[:5]] == [0, 0, 8, 0, 8]
    assert comparisons[0].label.startswith("angle 15,") and comparisons[0].max_diff > 0


@pytest.mark.parametrize(("mean", "std"), [([0.5] * 3, [0.5] * 3),
                                           ([123.675, 116.28, 103.53], [58.395, 57.12, 57.375])])
def test_normalize_after_an_unscaled_to_dtype_gives_torchvisions_values(engine, mean, std):
    """ToImage, ToDtype(float32) (unscaled) and Normalize, run by torchvision and by DALI's
    output tail on the same image: the same floats (pixel 200 -> 399 for mean = std = 0.5)."""
    import torch

    source = ("import torch\nfrom torchvision.transforms import v2\nv2.Compose([v2.ToImage(), "
              f"v2.ToDtype(torch.float32), v2.Normalize({mean}, {std})])")
    result = import_pipeline(source)
    theirs, left_out = build_pipeline(result.parsed.root)
    assert left_out == []
    img = engine.images[0]
    expected = theirs(torch.from_numpy(img).permute(2, 0, 1).contiguous()).numpy()
    ours = engine.render(result.preset, images=[0], tail=True).images[0]
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=1e-5, atol=1e-4)
    if mean == [0.5] * 3:
        assert expected[img.transpose(2, 0, 1) == 200] == pytest.approx(399)


def test_the_fill_suggested_after_normalize_is_one_grey_level_in_torchvision():
    """The nearest of a refused per-channel fill, run by torchvision: the erased box comes out
    grey 114 in every channel once the normalisation is undone."""
    import torch

    result = import_pipeline(
        "import torchvision.transforms as T\nT.Compose([T.ToTensor(), T.Normalize([0.485, "
        "0.456, 0.406], [0.229, 0.224, 0.225]), T.RandomErasing(p=1)])")
    value = result.transforms[-1].nearest.split(" (")[0].removeprefix("value=")
    theirs, _ = build_pipeline(import_pipeline(
        "import torchvision.transforms as T\nT.Compose([T.ToTensor(), T.Normalize([0.485, "
        f"0.456, 0.406], [0.229, 0.224, 0.225]), T.RandomErasing(p=1, value={value})])"
    ).parsed.root)
    torch.manual_seed(0)
    out = theirs(np.zeros((32, 32, 3), np.uint8)).numpy()
    grey = (out * np.array([0.229, 0.224, 0.225])[:, None, None]
            + np.array([0.485, 0.456, 0.406])[:, None, None]) * 255
    erased = grey[:, grey[0] > 1]
    assert erased.size and np.abs(erased - 114).max() < 0.01


def _plain(value):
    """A library default as the rules write it: enums by value, torch dtypes by name."""
    import torch

    if isinstance(value, torch.dtype):
        return str(value).rsplit(".", 1)[-1]
    return getattr(value, "value", value)


def test_rule_defaults_are_the_libraries_own():
    from albumentations.pytorch import ToTensorV2
    from torchvision.transforms import v2

    checked = 0
    for (library, name), rule in all_rules().items():
        if library == "torchvision":
            cls = getattr(v2, name, None) or (v2.Compose if name == "Sequential" else None)
        else:
            cls = ToTensorV2 if name == "ToTensorV2" else getattr(A, name, None)
        assert cls is not None, f"{library}.{name} does not exist"
        sig = inspect.signature(cls)
        params = [p for p in sig.parameters.values() if p.kind is not p.VAR_POSITIONAL]
        if name == "Sequential" and library == "torchvision":
            continue
        assert tuple(p.name for p in params) == rule.params, f"{library}.{name}"
        for p in params:
            if p.default is p.empty:
                continue
            default = _plain(p.default)
            ours = rule.defaults.get(p.name)
            if isinstance(default, tuple) or isinstance(ours, tuple):
                assert tuple(default) == pytest.approx(tuple(ours)), f"{name}.{p.name}"
            else:
                assert default == ours, f"{name}.{p.name}: {default!r} != {ours!r}"
        checked += 1
    assert checked >= 90


def test_the_issue_coverage_list_has_a_rule_each():
    tv = ["RandomResizedCrop", "Resize", "CenterCrop", "RandomCrop", "Pad",
           "RandomHorizontalFlip", "RandomVerticalFlip", "RandomRotation", "RandomAffine",
           "RandomPerspective", "ColorJitter", "Grayscale", "RandomGrayscale", "GaussianBlur",
           "RandomErasing", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
           "RandomAutocontrast", "RandomEqualize", "RandomInvert", "Normalize", "RandAugment",
           "TrivialAugmentWide", "AutoAugment"]
    alb = ["RandomResizedCrop", "SmallestMaxSize", "CenterCrop", "RandomCrop", "HorizontalFlip",
           "VerticalFlip", "Rotate", "Affine", "ShiftScaleRotate", "Perspective", "ColorJitter",
           "ToGray", "GaussianBlur", "CoarseDropout", "Posterize", "Solarize", "Equalize",
           "InvertImg", "AutoContrast", "Normalize", "HueSaturationValue",
           "RandomBrightnessContrast", "CLAHE", "GaussNoise", "ISONoise", "MotionBlur",
           "MedianBlur", "GridDropout", "ElasticTransform", "ImageCompression"]
    rules = all_rules()
    assert [n for n in tv if ("torchvision", n) not in rules] == []
    assert [n for n in alb if ("albumentations", n) not in rules] == []
    for rule in rules.values():
        assert rule.verdict.line() and rule.mapping
        if rule.kind == "unsupported":
            assert rule.nearest, rule.name


def test_without_the_original_library_the_pipeline_still_imports_and_says_how_to_install(
        tmp_path):
    code = f"""
import sys
sys.modules["albumentations"] = None
sys.modules["torchvision"] = None
from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.importers import import_pipeline
from dali_gallery.pipelines.importers.parity import parity_report
result = import_pipeline({ALB_KAGGLE!r})
eng = PreviewEngine("cpu")
eng.set_images({str(SAMPLES)!r}, max_side=128)
report = parity_report(result, eng.images[:2], engines={{"cpu": eng}}, repeats=1)
print(len(result.preset.steps), report.install)
print(sorted({{c.skipped.split(" (")[0] for c in report.comparisons}}))
print(report.pipeline.dali_cpu_ms is not None, report.notes)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert lines[0] == "7 pip install albumentations"
    assert lines[1] == "['albumentations is not installed']"
    assert lines[2].startswith("True") and "original library not timed" in lines[2]


def test_importing_never_lets_albumentations_call_the_network():
    """Albumentations looks for a newer release on import (an outbound request from a served
    kernel) unless NO_ALBUMENTATIONS_UPDATE is set; the importers set it."""
    import os

    import dali_gallery.pipelines.importers  # noqa: F401

    assert os.environ.get("NO_ALBUMENTATIONS_UPDATE") == "1"
