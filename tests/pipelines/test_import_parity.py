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
