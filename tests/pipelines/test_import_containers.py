"""Containers import as groups (``one_of``) that draw what the original library draws.

The truth is the library itself: the original container (built by the importer's own
``instantiate``, run by Albumentations or torchvision) and the imported group (rendered by DALI)
flip a small image thousands of times, and how often each outcome appears must agree. What a
group cannot hold is refused with the reason, and the rest still imports.
"""

from __future__ import annotations

import importlib
from collections import Counter

import numpy as np
import pytest

from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.importers import import_pipeline
from dali_gallery.pipelines.importers.instantiate import build_pipeline
from dali_gallery.pipelines.importers.reference import to_hwc, to_tensor
from dali_gallery.pipelines.importers.reverse import to_library_code
from dali_gallery.pipelines.preset import Group, PresetError, load
from tests.support import preset_dict

IMG = np.random.default_rng(3).integers(0, 256, (6, 5, 3), dtype=np.uint8)
OUTCOMES = {"none": IMG, "h": IMG[:, ::-1], "v": IMG[::-1], "hv": IMG[::-1, ::-1]}
N = 2048
ALB = "import albumentations as A\nA.Compose([{}])"
TV = ("import torch\nimport torchvision.transforms as T\nfrom torchvision.transforms import v2\n"
      "v2.Compose([{}])")


@pytest.fixture(scope="module")
def engine():
    eng = PreviewEngine("cpu", num_threads=2)
    eng.set_arrays([IMG])
    yield eng
    eng.close()


def outcome(out: np.ndarray) -> str:
    found = [name for name, img in OUTCOMES.items() if np.array_equal(out, img)]
    assert len(found) == 1, "a flip of the image, and only one"
    return found[0]


def library_counts(source: str) -> Counter:
    result = import_pipeline(source)
    compose, left_out = build_pipeline(result.parsed.root)
    assert left_out == []
    if result.library == "albumentations":
        compose.set_random_seed(0)
        return Counter(outcome(compose(image=IMG)["image"]) for _ in range(N))
    import torch

    torch.manual_seed(0)
    return Counter(outcome(to_hwc(compose(to_tensor(IMG)))) for _ in range(N))


def dali_counts(engine: PreviewEngine, source: str) -> Counter:
    preset = import_pipeline(source).preset
    counts: Counter = Counter()
    for seed in range(N // 256):
        preset.seed = seed
        counts.update(outcome(img) for img in engine.render(preset, draws=256).images)
    return counts


def assert_same_distribution(engine: PreviewEngine, source: str) -> None:
    ours, theirs = dali_counts(engine, source), library_counts(source)
    for name in OUTCOMES:
        a, b = ours[name] / N, theirs[name] / N
        p = (a + b) / 2
        assert abs(a - b) <= 4.5 * np.sqrt(p * (1 - p) * 2 / N) + 1e-9, (name, ours, theirs)


@pytest.mark.parametrize("source", [
    # OneOf: the transforms' p are weights, the picked one is applied whatever its p
    ALB.format("A.OneOf([A.HorizontalFlip(p=0.2), A.VerticalFlip(p=0.6)], p=0.7)"),
    # SomeOf: n picked uniformly (in list order), each then applies with its own p
    ALB.format("A.SomeOf([A.HorizontalFlip(p=0.5), A.VerticalFlip(p=1), "
               "A.HorizontalFlip(p=1)], n=2, p=0.9)"),
    # Sequential: all of them, in order, on one coin; each with its own p
    ALB.format("A.Sequential([A.HorizontalFlip(p=0.5), A.VerticalFlip(p=1)], p=0.6)"),
    # a nested Compose: all of them, in order, on its own coin (once: one of them, picked)
    ALB.format("A.Compose([A.HorizontalFlip(p=0.5), A.VerticalFlip(p=1)], p=0.6)"),
    # a nested ReplayCompose: a Compose that also records what it applied
    ALB.format("A.ReplayCompose([A.HorizontalFlip(p=0.5), A.VerticalFlip(p=1)], p=0.6)"),
    # a OneOf whose transform is a Sequential of one: its p is a weight, the inner p stays
    ALB.format("A.OneOf([A.Sequential([A.HorizontalFlip(p=0.3)], p=0.5), "
               "A.VerticalFlip(p=0.5)], p=1)"),
    TV.format("v2.RandomChoice([v2.RandomHorizontalFlip(p=1), v2.RandomVerticalFlip(p=0.5)], "
              "p=[1, 3])"),
    TV.format("v2.RandomApply([v2.RandomHorizontalFlip(p=1), v2.RandomVerticalFlip(p=0.5)], "
              "p=0.4)"),
    # scriptable code hands RandomApply its transforms as a torch.nn.ModuleList
    TV.format("v2.RandomApply(torch.nn.ModuleList([v2.RandomHorizontalFlip(p=1), "
              "v2.RandomVerticalFlip(p=0.5)]), p=0.4)"),
    # v1's RandomApply iterates a torch.nn.Sequential as well
    TV.format("T.RandomApply(torch.nn.Sequential(T.RandomHorizontalFlip(p=1), "
              "T.RandomVerticalFlip(p=0.5)), p=0.4)"),
], ids=["OneOf", "SomeOf", "Sequential", "nested-Compose", "nested-ReplayCompose",
        "OneOf-of-Sequential",
        "RandomChoice", "RandomApply", "RandomApply-ModuleList", "RandomApply-nn.Sequential"])
def test_an_imported_container_draws_what_the_library_draws(engine, source):
    importlib.import_module("albumentations" if source.startswith("import alb") else "torchvision")
    group = import_pipeline(source).preset.steps[0]
    assert isinstance(group, Group)
    assert_same_distribution(engine, source)


def test_a_replay_compose_imports_as_the_compose_it_is():
    """Albumentations' ReplayCompose is a Compose that also records, under ``save_key``, what
    each transform drew: the same chain as a Compose, compared with the real ReplayCompose,
    from its source and from its saved ``to_dict`` (labels' settings and ``save_key``
    included)."""
    import json

    import albumentations as A

    body = "[A.HorizontalFlip(p=0.5), A.VerticalFlip(p=0.25)]"
    replay = f"import albumentations as A\nA.ReplayCompose({body}, save_key='applied')"
    plain = import_pipeline(f"import albumentations as A\nA.Compose({body})")
    ours = import_pipeline(replay)
    assert ours.not_imported == []
    assert ours.preset.to_dict() == plain.preset.to_dict()
    original, left_out = build_pipeline(ours.parsed.root)
    assert type(original) is A.ReplayCompose and left_out == []
    assert "applied" in original(image=IMG)  # the real one, recording under its save_key
    # (its draws against the group's: the nested-ReplayCompose case above; at the top level a
    # seeded Albumentations 2.0.8 Compose gives its children one stream: tied flips)
    saved = A.ReplayCompose([A.HorizontalFlip(p=0.5), A.VerticalFlip(p=0.25)],
                            bbox_params=A.BboxParams(format="pascal_voc", min_visibility=0.3))
    from_dict = import_pipeline(json.dumps(A.to_dict(saved)))
    assert from_dict.not_imported == []
    assert [s.op for s in from_dict.preset.steps] == [s.op for s in plain.preset.steps]
    assert any("min_visibility" in note for note in from_dict.notes)


def test_torch_nn_sequential_takes_its_transforms_as_separate_arguments(engine):
    """torch.nn.Sequential(t1, t2, ...), the scriptable form of torchvision's docs, is the
    chain in order; a list inside is refused as torch refuses it (not a module)."""
    source = ("import torch\nfrom torchvision.transforms import v2\ntransforms = "
              "torch.nn.Sequential(v2.RandomHorizontalFlip(p=0.3), v2.RandomVerticalFlip(p=0.6))")
    result = import_pipeline(source)
    assert [(s.op, s.probability) for s in result.preset.steps] == [("flip", 0.3), ("flip", 0.6)]
    assert_same_distribution(engine, source)
    with pytest.raises(PresetError, match=r"Sequential \(line 3\): torch.nn.Sequential\(\[v2\..*"
                       r"holds a list.*write the transforms as separate arguments"):
        import_pipeline(source.replace("Sequential(", "Sequential([").replace("))", ")])"))


@pytest.mark.parametrize(("inner", "needle"), [
    ("v2.RandomApply(v2.RandomHorizontalFlip(), p=0.3)",
     "RandomApply(transforms=v2.RandomHorizontalFlip()): expected a list of transforms or "
     "torch.nn.ModuleList(...) or torch.nn.Sequential(...)"),
    ("v2.RandomApply('flip')", "RandomApply(transforms='flip'): expected a list"),
    ("v2.RandomChoice(torch.nn.ModuleList([v2.RandomHorizontalFlip()]))",
     "RandomChoice(transforms=torch.nn.ModuleList([v2.RandomHorizontalFlip()])): expected a "
     "list of transforms"),
    ("v2.RandomApply(torch.nn.ModuleList([v2.RandomHorizontalFlip()], 2))",
     "torch.nn.ModuleList takes one list of modules"),
])
def test_transforms_that_are_no_list_are_refused_and_the_rest_imports(inner, needle):
    """Never a traceback: the container is listed as not imported, with its line."""
    result = import_pipeline(TV.format(inner + ", v2.RandomVerticalFlip()"))
    refused, flip = result.transforms
    assert refused.status == "not imported" and refused.call.line == 4
    assert needle in refused.verdict.reason, refused.verdict.reason
    assert flip.status == "imported" and [s.op for s in result.preset.steps] == ["flip"]


def test_a_one_pick_group_without_one_transform_keeps_every_other_rate(engine):
    """GridDistortion has no mapping: the OneOf then fires less often, by its weight, so the
    flips keep the rates they have in Albumentations."""
    source = ALB.format("A.OneOf([A.HorizontalFlip(p=0.2), A.GridDistortion(p=0.2), "
                        "A.VerticalFlip(p=0.6)], p=0.5)")
    result = import_pipeline(source)
    group = result.preset.steps[0]
    assert isinstance(group, Group) and group.probability == 0.4
    assert group.weights == [0.2, 0.6]
    assert any("fires with p=0.4 instead of 0.5" in n for n in result.notes)
    grid = next(t for t in result.transforms if t.call.name == "GridDistortion")
    assert grid.status == "not imported"
    counts = dali_counts(engine, source)
    for name, rate in (("h", 0.5 * 0.2), ("v", 0.5 * 0.6)):
        assert abs(counts[name] / N - rate) <= 4.5 * np.sqrt(rate * (1 - rate) / N)


def test_a_one_pick_group_left_with_one_transform_is_a_step():
    result = import_pipeline(ALB.format("A.OneOf([A.HorizontalFlip(p=0.3), "
                                        "A.GridDistortion(p=0.1)], p=0.8)"))
    (step,) = result.preset.steps
    assert step.op == "flip" and step.probability == pytest.approx(0.8 * 0.75)


@pytest.mark.parametrize(("source", "needle"), [
    (ALB.format("A.SomeOf([A.HorizontalFlip(), A.VerticalFlip(), A.GridDistortion()], n=2)"),
     "inside SomeOf(n=2) with GridDistortion, which is not imported: the others would be "
     "picked more often"),
    (ALB.format("A.SomeOf([A.HorizontalFlip(), A.VerticalFlip()], n=2, replace=True)"),
     "may apply a transform twice; a group picks distinct transforms"),
    (ALB.format("A.OneOf([A.Sequential([A.HorizontalFlip(), A.VerticalFlip()]), "
                "A.Blur(blur_limit=3)])"),
     "it becomes a group; a picked transform must be one step"),
    (TV.format("v2.RandomChoice([v2.RandomHorizontalFlip(), v2.RandomVerticalFlip()], "
               "p=[1])"), "RandomChoice: p must list one weight per transform (2)"),
])
def test_what_a_group_cannot_hold_is_refused_with_the_reason(source, needle):
    result = import_pipeline(source)
    refused = [t for t in result.transforms if t.status == "not imported"]
    assert any(needle in t.verdict.reason for t in refused), [
        t.verdict.reason for t in refused]
    covered = sorted({i for t in result.transforms for i in t.steps})
    assert covered == list(range(len(result.preset.steps)))


@pytest.mark.parametrize("library", ["torchvision", "albumentations"])
def test_groups_are_written_back_as_containers_that_import_to_the_same_groups(library):
    importlib.import_module(library)
    rotate = {"op": "rotate", "params": {"angle": {"uniform": [-20, 20]}, "keep_size": True,
                                         "fill_value": 0, "interp_type": "linear"}}
    flip = {"op": "flip", "probability": 0.5, "params": {"horizontal": True,
                                                         "vertical": False}}
    vflip = {"op": "flip", "probability": 0.25, "params": {"horizontal": False,
                                                           "vertical": True}}
    weights = [2, 1, 1] if library == "torchvision" else [0.2, 0.1, 0.1]
    steps = [{"one_of": [rotate, flip, vflip], "probability": 0.5, "weights": weights},
             {"one_of": [rotate, vflip]},
             {"one_of": [rotate, flip], "probability": 0.4, "pick": 2}]
    if library == "albumentations":
        steps.append({"one_of": [rotate, flip, vflip], "probability": 0.8, "pick": 2})
    preset = load(preset_dict(steps))
    code = to_library_code(preset, library)
    assert "no " + library + " equivalent" not in code.split('"""', 2)[2], code
    back = import_pipeline(code)
    assert [s.to_dict() for s in back.preset.steps] == [s.to_dict() for s in preset.steps]


def test_a_group_with_no_library_equivalent_stays_a_comment():
    flips = [{"op": "flip"}, {"op": "flip", "params": {"vertical": True}}, {"op": "flip"}]
    preset = load(preset_dict([{"one_of": flips, "pick": 2}]))
    assert "# step 0 (one_of): no torchvision equivalent" in to_library_code(preset,
                                                                               "torchvision")
    weighted = load(preset_dict([{"one_of": flips, "pick": 2, "weights": [1, 2, 3]}]))
    assert "# step 0 (one_of): no albumentations equivalent" in to_library_code(
        weighted, "albumentations")


def test_a_transform_of_several_steps_fires_them_on_its_one_coin():
    """A.Resize(p=0.5) is resize + crop: on a coin each, a quarter of the images came out
    resized without their crop and a quarter cropped without the resize, which Albumentations
    never does (its output is the image or the 8x8 one). One group on the transform's coin."""
    source = ALB.format("A.Resize(8, 8, p=0.5)")
    preset = import_pipeline(source).preset
    (group,) = preset.steps
    assert isinstance(group, Group) and group.probability == 0.5 and group.picks_all()
    assert [(c.op, c.probability) for c in group.children] == [("resize", 1.0), ("crop", 1.0)]
    shapes: Counter = Counter()
    eng = PreviewEngine("cpu", num_threads=2)
    try:
        eng.set_arrays([np.zeros((20, 16, 3), np.uint8)])
        for seed in range(4):
            preset.seed = seed
            shapes.update(img.shape[:2] for img in eng.render(preset, draws=256).images)
    finally:
        eng.close()
    assert set(shapes) == {(20, 16), (8, 8)}, shapes
    assert abs(shapes[(8, 8)] / 1024 - 0.5) <= 4.5 * np.sqrt(0.25 / 1024)


@pytest.mark.parametrize(("code", "probability"), [
    ("A.Affine(rotate=(-10, 10), scale=(0.9, 1.1), keep_ratio=True, p=0.3)", 0.3),
    # CoarseDropout: its first 2 holes always and the 2 extra ones half the time, on its coin
    ("A.CoarseDropout(num_holes_range=(2, 4), p=0.5)", 0.5),
    # a container of that one transform: its coin, then the transform's
    ("A.Sequential([A.Affine(rotate=(-10, 10), scale=(0.9, 1.1), keep_ratio=True, p=0.3)], "
     "p=0.5)", 0.15),
])
def test_the_steps_of_one_transform_share_its_coin(code, probability):
    result = import_pipeline(ALB.format(code))
    (group,) = result.preset.steps
    assert isinstance(group, Group) and group.picks_all()
    assert group.probability == pytest.approx(probability)
    assert group.children[0].probability == 1.0
    item = result.transforms[0]
    assert "independently" not in item.verdict.reason and not item.notes


def test_the_steps_of_one_transform_among_others_in_a_container_say_they_fire_apart():
    """A group does not nest: inside a Sequential with another transform the Affine's two
    steps keep a coin each, and its account says so."""
    result = import_pipeline(ALB.format(
        "A.Sequential([A.Affine(rotate=(-10, 10), scale=(0.9, 1.1), keep_ratio=True, p=0.3), "
        "A.Blur(p=1)], p=0.5)"))
    (group,) = result.preset.steps
    assert [c.probability for c in group.children] == [0.3, 0.3, 1.0]
    affine = result.transforms[0]
    assert affine.notes == ["inside Sequential, its 2 steps fire on separate coins of its p "
                            "(groups do not nest)"]


def test_the_account_names_each_transforms_container_and_each_step_once():
    """A Compose inside a RandomApply: its second transform was reported at the top level
    (inside ''), and RandomAffine's two steps in one group listed that group twice."""
    result = import_pipeline(TV.format(
        "v2.RandomApply([v2.Compose([v2.RandomHorizontalFlip(p=1), v2.RandomVerticalFlip(p=1)])],"
        " p=0.3), v2.RandomApply([v2.RandomAffine(degrees=10, scale=(0.9, 1.1))], p=0.5)"))
    hflip, vflip, affine = result.transforms
    assert hflip.inside == vflip.inside == "RandomApply p=0.3"
    assert (hflip.steps, vflip.steps, affine.steps) == ([0], [0], [1])


def test_a_conversion_inside_a_container_keeps_its_place_or_is_refused():
    """A Normalize nested in a Compose after a top-level ToTensor was reported as the tail but
    the ToTensor's mean 0 / std 1 overwrote it (the output was not normalised); inside
    RandomApply(p=0.5) it was applied to every sample, with only a note."""
    result = import_pipeline(TV.format(
        "T.ToTensor(), T.RandomApply([T.Normalize([0.5], [0.5])], p=0.5), "
        "T.Compose([T.Normalize([0.4], [0.2])])"))
    _, coin, nested = result.transforms
    assert (result.preset.output.mean, result.preset.output.std) == ((0.4,), (0.2,))
    assert nested.status == "tail"
    assert coin.status == "not imported" and coin.nearest == "Normalize outside the container"
    assert coin.verdict.reason == ("inside RandomApply p=0.5, which applies it to some samples "
                                   "only: the output tail converts every sample")
