"""Reading pasted pipelines safely: only the syntax tree is read, nothing runs; malicious or
broken input is refused with the line and column; saved Albumentations files are data."""

from __future__ import annotations

import importlib
import json
import re
import sys

import pytest

from dali_gallery.pipelines.importers import ImportRefused, import_pipeline
from dali_gallery.pipelines.importers.serialized import (
    MAX_SERIALIZED,
    SerializedRefused,
    parse_serialized,
)
from dali_gallery.pipelines.importers.source import (
    MAX_DEPTH,
    MAX_ITEMS,
    MAX_SOURCE,
    Call,
    Opaque,
    SourceRefused,
    Symbol,
    parse_source,
)


@pytest.fixture
def canary(tmp_path, monkeypatch):
    """A file the malicious snippets would create if any of their code ran."""
    path = tmp_path / "pwned"
    monkeypatch.setenv("DG_CANARY", str(path))
    return path


ATTACKS = {
    "import os": ("import os\nos.system('touch $DG_CANARY')", "import of 'os'"),
    "__import__": ("T.Compose([__import__('os').system('touch $DG_CANARY')])",
                   "'__import__'"),
    "eval": ("T.Compose([eval(\"open('x','w')\")])", "'eval'"),
    "open in an argument": ("T.Compose([T.Resize(open('/etc/passwd').read())])", "'open'"),
    "os via alias": ("T.Compose([os.system('touch $DG_CANARY')])", "'os.system'"),
    "subprocess import": ("from subprocess import run\nrun(['touch', 'x'])",
                          "import of 'subprocess'"),
    "torch.load": ("T.Compose([torch.load('model.pt')])", "'torch.load'"),
    "numpy call": ("T.Compose([T.Normalize(np.array([1]), [1])])", "'np.array'"),
    "attribute of a call": ("T.Compose([T.Resize(256).__class__])", "result of"),
    "function definition": ("def f():\n    pass\nT.Compose([])", "function definition"),
    "class definition": ("class X:\n    pass", "class definition"),
    "for loop": ("for i in range(3):\n    pass", "for loop"),
    "comprehension": ("T.Compose([T.Resize(s) for s in [1]])", "list comprehension"),
    "f-string": ("T.Compose([T.Resize(f'{1}')])", "f-string"),
    "subscript": ("T.Compose([T.Resize(x[0])])", "subscript"),
    "lambda outside Lambda": ("T.Compose([T.Resize(lambda: 1)])", "lambda"),
    "star args": ("T.Compose(*[[T.Resize(1)]])", "*args"),
    "kwargs unpacking": ("T.Compose([T.Resize(**{'size': 1})])", "**kwargs"),
    "power": ("T.Compose([T.Resize(10 ** 100000)])", "BinOp"),
    "huge number": ("T.Compose([T.Resize(1e300)])", "outside"),
    "huge list": ("T.Compose([T.Normalize([0.5] * 100000, [1])])", "repeated list"),
    "long string": ("T.Compose([T.Resize('" + "a" * 500 + "')])", "string of 500"),
    "walrus": ("T.Compose([(x := 1)])", "assignment expression"),
    "unknown variable": ("T.Compose([T.Resize(size)])", "neither assigned above nor a known"),
    "variable assigned later": ("T.Compose([T.Resize(size)])\nsize = 1", "neither assigned"),
}


@pytest.mark.parametrize("name", list(ATTACKS))
def test_malicious_input_is_refused_with_its_place_and_nothing_runs(name, canary):
    text, needle = ATTACKS[name]
    with pytest.raises(SourceRefused) as e:
        import_pipeline(text)
    assert needle in str(e.value), str(e.value)
    assert e.value.line is not None and str(e.value).startswith(f"line {e.value.line}, column")
    assert not canary.exists()


def test_broken_input_is_refused_clearly():
    with pytest.raises(SourceRefused, match=r"line 2, column \d+: not valid Python"):
        import_pipeline("import torchvision.transforms as T\nT.Compose([T.Resize(256)")
    with pytest.raises(SourceRefused, match="no transform pipeline found"):
        import_pipeline("x = 1\n'just a string'")
    with pytest.raises(SourceRefused, match="nested too deeply|too many nested"):
        import_pipeline("T.Compose(" + "[" * 300 + "]" * 300 + ")")
    with pytest.raises(SourceRefused, match=f"at most {MAX_SOURCE}"):
        import_pipeline("#" * (MAX_SOURCE + 1))
    with pytest.raises(SourceRefused, match="Exceeds the limit|not valid Python"):
        import_pipeline("T.Compose([T.Resize(" + "9" * 5000 + ")])")
    deep = "T.Compose([" + "T.RandomApply([" * (MAX_DEPTH + 2) + "T.Resize(1)" \
        + "])" * (MAX_DEPTH + 2) + "])"
    with pytest.raises(SourceRefused, match="levels deep"):
        import_pipeline(deep)


def test_the_reader_returns_literals_constants_and_calls_only():
    parsed = parse_source(
        "import torchvision.transforms as TT\nfrom albumentations.pytorch import ToTensorV2\n"
        "t = TT.Compose([TT.RandomResizedCrop(224, ratio=(3 / 4, 4 / 3), "
        "interpolation=TT.InterpolationMode.BICUBIC), TT.Normalize([0.5] * 3, std=(-(-1),) * 3)"
        ", TT.Lambda(lambda x: x.flip(0))])")
    root = parsed.root
    assert isinstance(root, Call) and root.library == "torchvision" and root.name == "Compose"
    rrc, norm, lam = root.args[0]
    assert rrc.module == "torchvision.transforms" and rrc.args == (224,)
    assert rrc.kwargs["ratio"] == (0.75, 4 / 3)
    assert rrc.kwargs["interpolation"] == Symbol(
        "torchvision.transforms.InterpolationMode.BICUBIC", "bicubic")
    assert norm.args == ([0.5, 0.5, 0.5],) and norm.kwargs["std"] == (1, 1, 1)
    assert isinstance(lam.args[0], Opaque) and lam.args[0].text == "lambda x: x.flip(0)"
    assert rrc.line == 3 and "RandomResizedCrop(224" in rrc.text


# facebookresearch/dino main_dino.py, DataAugmentationDINO's first global crop (its variables
# written in); DeiT and MAE also give torchvision PIL's filters as the interpolation
DINO_GLOBAL_CROP = """
from torchvision import transforms
from PIL import Image
global_transfo1 = transforms.Compose([
    transforms.RandomResizedCrop(224, scale=(0.4, 1.), interpolation=Image.BICUBIC),
    transforms.Compose([
        transforms.RandomHorizontalFlip(p=0.5),
        transforms.RandomApply(
            [transforms.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.2, hue=0.1)],
            p=0.8
        ),
        transforms.RandomGrayscale(p=0.2),
    ]),
    transforms.RandomApply([transforms.GaussianBlur(kernel_size=23, sigma=(0.1, 2.0))], p=1.0),
    transforms.Compose([
        transforms.ToTensor(),
        transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225)),
    ]),
])
"""


def test_pil_resampling_filters_are_read_as_torchvision_reads_them():
    """`from PIL import Image` refused the whole paste ("import of 'PIL' is not allowed"), and
    Image.BICUBIC was no known constant; torchvision takes PIL's codes as interpolation."""
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.functional import _interpolation_modes_from_int

    result = import_pipeline(DINO_GLOBAL_CROP)
    assert all(t.status != "not imported" for t in result.transforms)
    rrc = result.transforms[0]
    assert rrc.call.kwargs["interpolation"] == Symbol("PIL.Image.BICUBIC", 3)
    assert _interpolation_modes_from_int(3) == InterpolationMode.BICUBIC
    assert "torchvision uses bicubic" in rrc.verdict.reason
    resized = import_pipeline("import PIL\nimport torchvision.transforms as T\nT.Compose(["
                              "T.Resize(256, interpolation=PIL.Image.Resampling.NEAREST)])")
    assert resized.preset.steps[0].to_dict()["params"]["interp_type"] == "nn"
    with pytest.raises(SourceRefused, match="a call to 'PIL.Image.open' is not allowed"):
        import_pipeline("from PIL import Image\nimport torchvision.transforms as T\n"
                        "T.Compose([T.Resize(Image.open('x'))])")


# torchvision's "Transforms v2: End-to-end object detection/segmentation example"
TV_DETECTION_E2E = """
import torch
from torchvision import tv_tensors
from torchvision.transforms import v2

transforms = v2.Compose(
    [
        v2.ToImage(),
        v2.RandomPhotometricDistort(p=1),
        v2.RandomZoomOut(fill={tv_tensors.Image: (123, 117, 104), "others": 0}),
        v2.RandomIoUCrop(),
        v2.RandomHorizontalFlip(p=1),
        v2.SanitizeBoundingBoxes(),
        v2.ToDtype(torch.float32, scale=True),
    ]
)
"""


def test_a_fill_keyed_by_tv_tensors_classes_is_read_and_the_rest_imports():
    """v2's per-type fill {tv_tensors.Image: ..., "others": 0} refused the whole paste ("dict
    keys must be string literals"), so nothing of torchvision's own detection example imported;
    the class is now the key "tv_tensors.Image" and only the transform that takes it is judged
    (RandomZoomOut has no mapping; a per-type fill of RandomRotation is refused by name)."""
    result = import_pipeline(TV_DETECTION_E2E)
    by = {t.call.name: t for t in result.transforms}
    assert by["RandomZoomOut"].call.kwargs["fill"] == {"tv_tensors.Image": (123, 117, 104),
                                                       "others": 0}
    assert by["RandomHorizontalFlip"].status == "imported"
    assert by["ToDtype"].status == "conversion"
    rotation = import_pipeline("from torchvision.tv_tensors import Image\nfrom torchvision."
                               "transforms import v2\nv2.Compose([v2.RandomRotation(15, "
                               "fill={Image: 0})])").transforms[0]
    assert rotation.status == "not imported" and "tv_tensors.Image" in rotation.verdict.reason
    for key in ("torch.float32", "(1, 2)", "1", "foo"):
        with pytest.raises(SourceRefused, match="dict keys must be string literals"):
            import_pipeline("import torch\nfrom torchvision.transforms import v2\n"
                            f"v2.Compose([v2.RandomRotation(15, fill={{{key}: 0}})])")


# ashleve/lightning-hydra-template, data_modules/example_datamodule/transforms.py
HYDRA = """
from torchvision import transforms

img_augmentation_transforms = [
    transforms.RandomAffine((-15, 15), translate=(0.2, 0.2)),
    transforms.RandomHorizontalFlip(p=0.65),
    transforms.RandomRotation((-15, 15)),
    transforms.ColorJitter(hue=.05, saturation=.05),
]

imagenet_train_transforms = transforms.Compose([
    transforms.Resize((256, 256)),
    transforms.RandomCrop(224),
    transforms.ToTensor(),
    transforms.RandomApply(img_augmentation_transforms, 0.8),
    transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
])
"""

# facebookresearch/moco main_moco.py, aug_plus (its moco.loader.GaussianBlur written as
# torchvision's), and SimCLR's sizes as variables (sthalles/SimCLR)
MOCO = """
import torchvision.transforms as transforms
s = 1
size = 224
normalize = transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225])
color_jitter = transforms.ColorJitter(0.4 * s, 0.4 * s, 0.4 * s, 0.1 * s)
augmentation = [
    transforms.RandomResizedCrop(size, scale=(0.2, 1.)),
    transforms.RandomApply([color_jitter], p=0.8),
    transforms.RandomGrayscale(p=0.2),
    transforms.RandomApply([transforms.GaussianBlur(23, sigma=(.1, 2.))], p=0.5),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    normalize
]
t = transforms.Compose(augmentation)
"""


def test_names_assigned_above_are_read_as_their_values():
    """Pipelines as their authors write them, with sizes, transforms and lists in variables,
    were refused ("variables are not read: write the values in")."""
    hydra = import_pipeline(HYDRA)
    assert hydra.parsed.target == "imagenet_train_transforms" and not hydra.notes
    assert [t.inside for t in hydra.transforms][3:7] == ["RandomApply p=0.8"] * 4
    moco = import_pipeline(MOCO)
    assert moco.parsed.target == "t" and not moco.notes  # the parts are no pipelines of their own
    assert [s.op for s in moco.preset.steps] == ["random_resized_crop", "color_twist",
                                                  "saturation", "gaussian_blur", "flip"]
    assert moco.preset.steps[0].to_dict()["params"]["size"] == 224
    assert moco.preset.steps[1].probability == 0.8
    assert moco.preset.output.mean == (0.485, 0.456, 0.406)
    lone = import_pipeline("import torchvision.transforms as T\nnorm = T.Normalize([0.5], [0.5])"
                           "\npipe = T.Compose([T.RandomHorizontalFlip()])")
    assert lone.parsed.target == "pipe"  # a chain before a lone transform


def test_every_use_of_a_name_counts_against_the_node_budget():
    text = ("import torchvision.transforms as T\nx = [T.Resize(1)] * 200\n"
            "y = [x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x]")
    with pytest.raises(SourceRefused, match="each use of 'x' counts"):
        import_pipeline(text)


def test_aliases_star_imports_and_the_training_pipeline_is_chosen():
    text = ("from torchvision.transforms import *\nval = Compose([Resize(256), CenterCrop(224)])"
            "\ntrain_tf = Compose([RandomResizedCrop(224), RandomHorizontalFlip()])")
    parsed = parse_source(text)
    assert parsed.target == "train_tf"
    assert [c.name for c in parsed.root.args[0]] == ["RandomResizedCrop", "RandomHorizontalFlip"]
    assert "also found val" in parsed.notes[0]
    d = parse_source("from torchvision import transforms\nd = {'train': transforms.Compose("
                     "[transforms.ToTensor()]), 'val': transforms.Compose([])}")
    assert d.target == "d['train']"


def test_custom_and_lambda_transforms_are_listed_and_the_rest_imports():
    result = import_pipeline(
        "import torchvision.transforms as T\nT.Compose([Cutout(16), T.Lambda(lambda x: x),"
        " T.RandomHorizontalFlip()])")
    by = {t.call.name: t for t in result.transforms}
    assert by["Cutout"].status == "not imported" and "custom code" in by["Cutout"].verdict.reason
    assert "custom operator" in by["Cutout"].nearest
    assert by["Lambda"].status == "not imported" and "never imported or run" in \
        by["Lambda"].verdict.reason
    assert [s.op for s in result.preset.steps] == ["flip"]


# ---- Albumentations saved pipelines --------------------------------------------------------


def _saved() -> dict:
    return {"__version__": "2.0.8", "transform": {
        "__class_fullname__": "Compose", "p": 1.0, "bbox_params": None, "transforms": [
            {"__class_fullname__": "HorizontalFlip", "p": 0.5},
            {"__class_fullname__": "albumentations.augmentations.geometric.rotate.Rotate",
             "always_apply": False, "p": 0.3, "limit": [-20, 20], "interpolation": 1,
             "border_mode": 0, "fill": 0}]}}


def test_a_saved_pipeline_imports_from_json_and_yaml():
    yaml = importlib.import_module("yaml")
    for text in (json.dumps(_saved()), yaml.safe_dump(_saved())):
        result = import_pipeline(text)
        assert [s.op for s in result.preset.steps] == ["flip", "rotate"]
        assert result.preset.steps[1].probability == 0.3
        assert result.origin == "Albumentations serialized pipeline"


def test_a_saved_affine_or_shift_scale_rotate_without_a_shift_reports_no_translation():
    A = importlib.import_module("albumentations")
    pipeline = A.Compose([A.Affine(rotate=(-10, 30), keep_ratio=True, p=0.7),
                          A.ShiftScaleRotate(shift_limit_x=0, shift_limit_y=0, p=0.5),
                          A.ShiftScaleRotate(shift_limit_x=0.1, shift_limit_y=0, p=0.5)])
    text = json.dumps(A.to_dict(pipeline))  # as A.save writes it
    affine, still, _ = json.loads(text)["transform"]["transforms"]
    assert affine["translate_px"] == {"x": [0, 0], "y": [0, 0]}
    assert "shift_limit" not in still and still["shift_limit_x"] == [0, 0]
    result = import_pipeline(text)
    items = result.transforms
    assert [("translation" in t.verdict.reason) for t in items] == [False, False, True]
    assert [any("translation dropped" in n for n in t.notes) for t in items] == [
        False, False, True]
    assert items[0].verdict.kind == "equivalent"  # rotation alone, one resampling


def test_a_saved_always_apply_true_is_read_as_albumentations_2_reads_it():
    saved = _saved()
    saved["transform"]["transforms"][0]["always_apply"] = True  # a 1.x file
    result = import_pipeline(json.dumps(saved))
    flip, rotate = result.transforms
    assert flip.status == rotate.status == "imported"
    assert result.preset.steps[0].probability == 0.5
    assert flip.notes and flip.notes[0].startswith("always_apply=True ignored")
    assert not rotate.notes  # always_apply: false says nothing


def test_saved_pipelines_are_data_within_budgets():
    with pytest.raises(SerializedRefused, match="NaN is not allowed"):
        parse_serialized('{"transform": {"__class_fullname__": "Compose", "p": NaN}}')
    with pytest.raises(SerializedRefused, match="not valid YAML"):
        parse_serialized("__class_fullname__: !!python/object/apply:os.system ['touch x']")
    with pytest.raises(SerializedRefused, match=f"at most {MAX_SERIALIZED}"):
        parse_serialized("{" + " " * MAX_SERIALIZED + "}")
    with pytest.raises(SerializedRefused, match="no 'transform'"):
        parse_serialized('{"a": 1}')
    with pytest.raises(SerializedRefused, match=f"a list of {MAX_ITEMS + 1} items"):
        parse_serialized(json.dumps({"transform": {"__class_fullname__": "Compose",
                                                   "transforms": [1] * (MAX_ITEMS + 1)}}))


def test_a_yaml_alias_bomb_runs_into_the_node_budget():
    levels = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for k in range(1, 9):
        levels.append(f"{chr(97 + k)}: &{chr(97 + k)} [" + ", ".join([f"*{chr(96 + k)}"] * 9)
                      + "]")
    text = "\n".join(levels) + "\ntransform: {__class_fullname__: Compose, transforms: *i}\n"
    with pytest.raises(SerializedRefused, match="more than"):
        parse_serialized(text)


def test_refusals_are_one_exception_family():
    assert all(issubclass(cls, ValueError) for cls in ImportRefused)
    with pytest.raises(ImportRefused):
        import_pipeline("}{")
    assert sys.getrecursionlimit() > 0  # the reader raised, the interpreter is fine


# ---- budgets that hold for every spelling of a number and every repetition ---------------------

_ROTATE = "import torchvision.transforms as T\nt = T.Compose([T.RandomRotation({})])"


@pytest.mark.parametrize(("literal", "needle"), [
    ("9" * 400, r"an integer of about 40\d digits is outside"),  # float() of it overflowed
    ("0x" + "f" * 20_000, r"an integer of about 2408\d digits is outside"),  # no 4300-digit cap
    ("-" + "9" * 400, r"an integer of about 40\d digits is outside"),
    ("10000000000", r"the number 10000000000 is outside"),
], ids=["400 digits", "hex", "negative", "11 digits"])
def test_a_huge_integer_literal_is_refused_by_its_size(literal, needle):
    with pytest.raises(SourceRefused) as e:
        import_pipeline(_ROTATE.format(literal))
    assert re.search(needle, str(e.value)) and str(e.value).startswith("line 2, column")


@pytest.mark.parametrize("text", [
    '{"transform": {"__class_fullname__": "Compose", "transforms": [{"__class_fullname__": '
    '"Rotate", "limit": %s, "p": 1}]}}' % ("9" * 400),
    "transform:\n  __class_fullname__: Compose\n  transforms:\n  - __class_fullname__: "
    "Rotate\n    limit: %s\n" % ("9" * 400),
    "transform:\n  __class_fullname__: Compose\n  transforms:\n  - __class_fullname__: "
    "Rotate\n    limit: %s\n" % ("0b" + "1" * 20_000),
], ids=["json", "yaml", "yaml binary"])
def test_a_saved_pipeline_with_a_huge_integer_is_refused_where_it_is(text):
    with pytest.raises(SerializedRefused, match=r"\(Rotate\)\.limit: an integer of about \d+ "
                                                r"digits is outside"):
        import_pipeline(text, kind="serialized")


def test_a_yaml_integer_python_cannot_convert_is_refused_as_yaml():
    text = ("transform:\n  __class_fullname__: Compose\n  transforms:\n  - __class_fullname__: "
            "Rotate\n    limit: %s\n" % ("9" * 5000))  # int() raises ValueError past 4300 digits
    with pytest.raises(SerializedRefused, match="not valid YAML"):
        import_pipeline(text, kind="serialized")


@pytest.mark.parametrize("text", [
    # 256 ** 3 transforms from a few hundred characters: the import ran for minutes
    "T.Compose([T.RandomApply([T.RandomApply([T.RandomHorizontalFlip()] * 256)] * 256)] * 256)",
    "A.Compose([A.OneOf([A.OneOf([A.HorizontalFlip()] * 256)] * 256)] * 256)",
    # a Normalize of 256 ** 3 numbers: seconds of conversion
    "T.Compose([T.Normalize(mean=[[[0.5] * 256] * 256] * 256, std=[0.2] * 3)])",
], ids=["torchvision", "albumentations", "numbers"])
def test_a_repeated_list_counts_every_copy_against_the_node_budget(text):
    import time

    start = time.monotonic()
    with pytest.raises(SourceRefused, match="repeated list makes the pipeline more than 5000"):
        import_pipeline(text)
    assert time.monotonic() - start < 1.0


def test_a_short_repeated_list_still_reads():
    parsed = parse_source("T.Compose([T.Normalize([0.5] * 3, [0.25] * 3), "
                          "T.RandomChoice([T.RandomHorizontalFlip()] * 2)])")
    normalize, choice = parsed.root.args[0]
    assert normalize.args == ([0.5] * 3, [0.25] * 3)
    assert len(choice.args[0]) == 2


def test_a_lone_surrogate_is_named_not_called_deep_nesting():
    with pytest.raises(SourceRefused) as e:
        import_pipeline("T.Compose([T.RandomRotation(5, fill='\ud800')])")
    assert "lone surrogate" in str(e.value) and "nested" not in str(e.value)
