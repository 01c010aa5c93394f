"""Custom Python operators hold: the README's first import works in a fresh process, the names a
function reads from its module come along into the preview and the export, results that are not
RGB uint8 images of the input's size are refused at registration and at render time with the
operator's name, and a slow function's render is refused before DALI runs."""

from __future__ import annotations

import ast
import importlib
import inspect
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines import custom_budget
from dali_gallery.pipelines.catalog import CATALOG, Catalog, unregister
from dali_gallery.pipelines.codegen import preview_module
from dali_gallery.pipelines.custom import MODULE_NAMES, custom_op
from dali_gallery.pipelines.custom_budget import CUSTOM_SECONDS, CustomTimeError
from dali_gallery.pipelines.custom_code import OWN_NAMES, reserved_names
from dali_gallery.pipelines.custom_probe import _checked
from dali_gallery.pipelines.embedded_helpers import helpers, modules
from dali_gallery.pipelines.engine import PreviewEngine, StepError
from dali_gallery.pipelines.export import export_code
from dali_gallery.pipelines.label_code import LabelSet
from dali_gallery.pipelines.labels import Refuse
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import load
from tests.support import REPO, SAMPLES, import_export, preset_dict

RUFF = shutil.which("ruff")
LEVEL = (Param("level", "float", 0.5, "A value", bounds=(0, 1), slider=(0, 1), step=0.01,
               runtime=True),)


@pytest.fixture(scope="module")
def engine() -> Iterator[PreviewEngine]:
    eng = PreviewEngine("cpu", num_threads=2)
    assert eng.set_images(SAMPLES) == []
    yield eng
    eng.close()


@pytest.fixture
def catalog() -> Catalog:
    """A private catalog, so a test's operators never reach the shared one."""
    return Catalog(list(CATALOG.values()))


# ---- the README's first line, in a fresh interpreter ---------------------------------------------

FIRST_IMPORT = '''\
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.params import Param

import sys

import numpy as np


@custom_op("custom.first_import", "Inverts part of the range.", params=(
    Param("amount", "float", 0.6, "How much", bounds=(0, 1), slider=(0, 1), step=0.01,
          runtime=True),))
def invert_some(image, amount):
    return (255 - image * float(amount)).astype(np.uint8)


from dali_gallery.pipelines.engine import PreviewEngine
from dali_gallery.pipelines.preset import Preset, Step

engine = PreviewEngine("cpu", num_threads=1)
engine.set_images([sys.argv[1]])
render = engine.render(Preset([Step("custom.first_import", {"amount": 0.6})]))
np.save(sys.argv[2], render.images[0])
'''


def test_custom_op_is_the_first_import_of_a_fresh_process(tmp_path, engine):
    """The probe: as the first statement of a new interpreter, ``from
    dali_gallery.pipelines.custom import custom_op`` failed with a circular import."""
    script = tmp_path / "first.py"
    script.write_text(FIRST_IMPORT)
    image = next(p for p in sorted(SAMPLES.iterdir()) if p.suffix == ".jpg")
    out = tmp_path / "out.npy"
    proc = subprocess.run([sys.executable, str(script), str(image), str(out)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "DALI_GALLERY_CACHE": "off"})
    assert proc.returncode == 0, proc.stderr
    decoded = engine.images[engine.names.index(image.name)]
    want = (255 - decoded * float(np.float32(0.6))).astype(np.uint8)  # a float32 0-d input
    np.testing.assert_array_equal(np.load(out), want)


# ---- module-level imports and constants ----------------------------------------------------------

USER_MODULE = '''\
import math

import numpy as np

from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.params import Param

SCALE = 0.5
OFFSETS = (3, 7)
LABEL = "wave"


@custom_op("custom.test_wave", "Rows brighten along a sine wave.", params=(
    Param("turns", "float", 0.25, "Waves per image height", bounds=(0, 2), slider=(0, 2),
          step=0.01, runtime=True),))
def wave(image, turns):
    h = image.shape[0]
    rows = np.sin(np.arange(h, dtype=np.float32) * 2 * math.pi * float(turns) / h)
    lift = (rows[:, None, None] + 1.0) * 40.0 * SCALE + OFFSETS[len(LABEL) % 2]
    return np.clip(image.astype(np.float32) * (1.0 - SCALE / 2) + lift, 0, 255).astype(np.uint8)
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch) -> Iterator[object]:
    """The probe's module: ``import math`` and constants at the top, the operator below."""
    name = f"user_ops_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.syspath_prepend(str(folder))
    try:
        yield importlib.import_module(name)
    finally:
        unregister(CATALOG, "custom.test_wave")
        sys.modules.pop(name, None)


def test_module_level_imports_and_constants_reach_preview_and_export(user_module, engine,
                                                                      tmp_path):
    """The probe: ``math.pi`` and a module constant inside the function gave ``NameError`` in
    the preview and in the export, which copied the function's source only."""
    code = CATALOG["custom.test_wave"].custom_code
    assert code is not None
    assert code.imports == (("numpy", "np"), ("math", "math"))
    assert dict(code.constants) == {"SCALE": "0.5", "OFFSETS": "(3, 7)", "LABEL": '"wave"'}
    fixed = engine.render(load(preset_dict([{"op": "custom.test_wave",
                                             "params": {"turns": 0.8}}])))
    for got, image in zip(fixed.images, engine.images, strict=True):  # the user's own function
        np.testing.assert_array_equal(got, user_module.wave(image, np.float32(0.8)))

    preset = load(preset_dict([{"op": "custom.test_wave", "probability": 0.5,
                                "params": {"turns": {"uniform": [0.1, 1.9]}}}], seed=3))
    source = export_code(preset)
    header = source[: source.index("\nSEED = ")]
    assert "import math\n" in header and "import numpy as np\n" in header
    assert "SCALE = 0.5\nOFFSETS = (3, 7)\nLABEL = \"wave\"\n" in source
    if RUFF is not None:
        path = tmp_path / "check" / "augment.py"
        path.parent.mkdir()
        path.write_text(source)
        check = subprocess.run([RUFF, "check", "--isolated", "--select", "E,F,W,I,B,UP,SIM",
                                "--line-length", "100", str(path)], capture_output=True,
                               text=True)  # the user's own lines are up to 97 long
        assert check.returncode == 0, check.stdout
        fmt = subprocess.run([RUFF, "format", "--isolated", "--check", "--diff",
                              "--line-length", "100", str(path)], capture_output=True, text=True)
        assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    # the exported script runs where the user's module cannot be imported
    run_dir = tmp_path / "training"
    run_dir.mkdir()
    script = run_dir / "augment.py"
    script.write_text(source)
    out = run_dir / "batch.npz"
    proc = subprocess.run([sys.executable, str(script), "--images", str(SAMPLES),
                           "--batch-size", "4", "--device", "cpu", "--no-shuffle", "--out",
                           str(out)], capture_output=True, text=True, timeout=300,
                          cwd=run_dir)
    assert proc.returncode == 0, proc.stderr
    batch = np.load(out)
    preview = engine.render(preset, images=[0, 1, 2, 3])
    assert {r.fired[0] for r in preview.records} == {True, False}  # the coin mattered
    for i in range(4):
        np.testing.assert_array_equal(preview.images[i], batch[f"image_{i:04d}"])


TYPED_MODULE = '''\
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.params import Param

if TYPE_CHECKING:
    from collections.abc import Sequence

GAIN = 0.5


@custom_op("custom.test_typed", "Scaled, with type hints.", params=(
    Param("k", "float", 1.0, "Factor", bounds=(0, 4), slider=(0, 4), step=0.1, runtime=True),))
def typed(
    image: NDArray[np.uint8],  # HWC -> HWC
    k: float | Sequence[float] = 1.0,
) -> NDArray[np.uint8]:
    out: NDArray[np.float32] = image.astype(np.float32) * float(k) * GAIN
    return np.clip(out, 0, 255).astype(np.uint8)
'''


def test_a_function_with_type_hints_is_copied_without_them(tmp_path, monkeypatch, engine):
    """Annotations naming a typing alias (NDArray, refused: 'a GenericAlias') or a
    TYPE_CHECKING import (refused: 'not defined when the operator is registered') stopped a
    typed function from registering, though nothing evaluates them in the user's module; the
    copy in the generated modules, which would evaluate them, now leaves them out."""
    name = f"typed_ops_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(TYPED_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        module = importlib.import_module(name)
        code = CATALOG["custom.test_typed"].custom_code
        assert code is not None and "NDArray" not in code.source
        assert code.source.splitlines()[:4] == ["def typed(", "    image,  # HWC -> HWC",
                                                "    k=1.0,", "):"]
        assert "    out = image.astype(np.float32)" in code.source
        preset = load(preset_dict([{"op": "custom.test_typed", "params": {"k": 1.5}}]))
        render = engine.render(preset, images=[0, 1])
        for got, image in zip(render.images, engine.images[:2], strict=True):
            np.testing.assert_array_equal(got, module.typed(image, np.float32(1.5)))
        exported = import_export(preset, tmp_path)
        assert "NDArray" not in inspect.getsource(exported)
    finally:
        unregister(CATALOG, "custom.test_typed")
        sys.modules.pop(name, None)


def _helper(image):
    return image


def _calls_a_module_function(image, level):
    return _helper(image)


class _Box:
    factor = 2


_BOX = _Box()
_TABLE = [1, 2, 3]


def _reads_an_object(image, level):
    return image // _BOX.factor


def _reads_a_list(image, level):
    return image + _TABLE[0]


def _reads_a_missing_name(image, level):
    return image + NOT_DEFINED_ANYWHERE  # noqa: F821


@pytest.mark.parametrize(("function", "name", "what"), [
    (_calls_a_module_function, "_helper", "a function"),
    (_reads_an_object, "_BOX", "a _Box"),
    (_reads_a_list, "_TABLE", "a list"),
    (_reads_a_missing_name, "NOT_DEFINED_ANYWHERE", "not defined when the operator is registered"),
])
def test_globals_that_cannot_be_copied_are_refused_at_registration(catalog, function, name,
                                                                    what):
    with pytest.raises(ValueError) as err:
        custom_op("custom.test_global", "Reads a global.", params=LEVEL,
                  catalog=catalog)(function)
    message = str(err.value)
    assert message.startswith("custom.test_global: ")
    assert f"{function.__name__} reads {name!r}" in message and what in message
    assert "inside" in message  # says what to do
    assert "custom.test_global" not in catalog


def _closure(scale: float):
    def shade(image, level):
        return (image * scale).astype(np.uint8)

    return shade


def test_closure_constants_are_copied_and_two_values_of_one_name_cannot_share_a_module(catalog):
    custom_op("custom.test_half", "Half.", params=LEVEL, catalog=catalog)(_closure(0.5))
    code = catalog["custom.test_half"].custom_code
    assert code is not None and code.constants == (("scale", "0.5"),)
    with pytest.raises(ValueError, match=r"custom\.test_third: shade needs 'scale' to be "
                                         r"`scale = 0\.25`, but custom\.test_half needs it"):
        custom_op("custom.test_third", "Third.", params=LEVEL, catalog=catalog)(_closure(0.25))
    custom_op("custom.test_half", "Half again.", params=LEVEL, catalog=catalog,
              replace=True)(_closure(0.25))  # replacing itself is fine


def _shift_by_one():
    def shift(image, level):
        return image + 1

    return shift


def _shift_by_two():
    def shift(image, level):
        return image + 2

    return shift


def test_two_different_functions_of_one_name_are_refused(catalog):
    """Before, a module holding both operators silently ran the first one's source for both."""
    custom_op("custom.test_shift_a", "A.", params=LEVEL, catalog=catalog)(_shift_by_one())
    with pytest.raises(ValueError, match=r"custom\.test_shift_b: its function shift is not the "
                                         r"function custom\.test_shift_a runs by that name"):
        custom_op("custom.test_shift_b", "B.", params=LEVEL, catalog=catalog)(_shift_by_two())


def augment(image, level):
    return image


def test_names_the_generated_module_uses_are_refused(catalog):
    with pytest.raises(ValueError, match=r"custom\.test_named: a custom function cannot be "
                                         r"named 'augment'"):
        custom_op("custom.test_named", "Named badly.", params=LEVEL, catalog=catalog)(augment)

    def reads_types(image, level):
        return image if types.SimpleNamespace else image

    import types

    with pytest.raises(ValueError, match=r"reads 'types', a name the generated module uses"):
        custom_op("custom.test_types", "Reads types.", params=LEVEL,
                  catalog=catalog)(reads_types)

    def reads_a_policy_module_name(image, level):
        return image if augmentations else image

    import math as augmentations  # a name the exported module binds to DALI's own module

    with pytest.raises(ValueError, match=r"reads 'augmentations', a name the generated"):
        custom_op("custom.test_policy_name", "Reads a policy module name.", params=LEVEL,
                  catalog=catalog)(reads_a_policy_module_name)

    from nvidia.dali import fn

    def reads_dali_fn(image, level):
        return image if fn.python_function else image

    custom_op("custom.test_fn", "Reads DALI's fn.", params=LEVEL, catalog=catalog)(reads_dali_fn)
    code = catalog["custom.test_fn"].custom_code
    assert code is not None and code.imports == (("nvidia.dali.fn", "fn"),)
    preset = load(preset_dict([{"op": "custom.test_fn", "params": {}}]), catalog)
    assert "import nvidia" not in export_code(preset, catalog)  # the header's own import serves


def test_reserved_names_cover_every_top_level_name_of_the_generated_modules():
    """A custom function or global by any other name cannot replace the module's own."""
    steps = [{"op": name, "probability": 0.5, "params": {}} for name in CATALOG]
    preset = load(preset_dict(steps, output={"resize_shorter": 256, "crop": [224, 224],
                                             "mean": [0.5] * 3, "std": [0.2] * 3,
                                             "mirror_probability": 0.5}))
    custom = {CATALOG[n].custom_code.function_name for n in CATALOG  # type: ignore[union-attr]
              if CATALOG[n].custom}
    movable = [s for s in steps if not isinstance(CATALOG[s["op"]].labels, (Refuse, type(None)))]
    labelled = load(preset_dict(movable, output={"resize_shorter": 256, "crop": [224, 224],
                                                 "mirror_probability": 0.5}))
    for source in (export_code(preset), preview_module(preset, tail=True)[0],
                   export_code(labelled, labels=LabelSet(masks=True))):
        names = _top_level_names(ast.parse(source)) - custom
        assert names <= reserved_names() | set(MODULE_NAMES), names - reserved_names()


def test_every_graph_helper_a_module_declares_is_embedded_and_reserved():
    """A helper added to any module's HELPERS is one the generated modules can carry and a
    custom function cannot be named: every module that declares HELPERS is gathered, and
    no list repeats their names."""
    declaring = {p.resolve() for p in (REPO / "pipelines").rglob("*.py")
                 if re.search(r"^HELPERS = ", p.read_text(encoding="utf-8"), re.M)}
    assert declaring == {Path(m.__file__).resolve() for m in modules()}
    declared = [name for m in modules() for name in m.HELPERS]
    assert declared == list(helpers()) and set(declared) <= reserved_names()
    assert not set(declared) & OWN_NAMES


# ---- results that are not images -----------------------------------------------------------------

def _float64(image, level):
    return image.astype(np.float64)


def _grey(image, level):
    return image[:, :, 0]


def _rgba(image, level):
    return np.concatenate([image, image[:, :, :1]], axis=2)


def _transposed(image, level):
    return np.ascontiguousarray(image.transpose(1, 0, 2))


@pytest.mark.parametrize(("function", "got"), [
    (_float64, "float64 (17, 13, 3)"),
    (_grey, "uint8 (17, 13)"),
    (_rgba, "uint8 (17, 13, 4)"),
    (_transposed, "uint8 (13, 17, 3)"),
])
def test_results_that_are_not_rgb_uint8_images_are_refused_at_registration(catalog, function,
                                                                            got):
    """The probe: float64 and RGBA results were taken silently, a 2-D one failed in a later
    step, far from the custom one."""
    with pytest.raises(ValueError) as err:
        custom_op("custom.test_result", "Bad result.", params=LEVEL, catalog=catalog)(function)
    message = str(err.value)
    assert message.startswith(f"custom.test_result: {function.__name__} returned {got}; ")
    assert "height x width x 3 in uint8, (17, 13, 3) here" in message
    assert "custom.test_result" not in catalog


def _grey_when_strong(image, level):
    return image[:, :, 0].copy() if float(level) > 0.8 else image


def test_a_result_that_goes_wrong_on_some_inputs_fails_at_its_step(engine, tmp_path):
    """Registration's trial run passes (level 0.5); at level 0.9 the preview and the exported
    module name the custom step, not the flip after it."""
    custom_op("custom.test_sometimes", "Grey when strong.", params=LEVEL)(_grey_when_strong)
    try:
        preset = load(preset_dict([{"op": "custom.test_sometimes", "params": {"level": 0.9}},
                                   {"op": "flip", "params": {}}]))
        with pytest.raises(StepError) as err:
            engine.render(preset)
        assert (err.value.step, err.value.op) == (0, "custom.test_sometimes")
        assert "custom.test_sometimes: _grey_when_strong returned uint8 (" in str(err.value)
        module = import_export(preset, tmp_path)
        pipe = module.create_pipeline(str(SAMPLES), 2, num_threads=1, device_id=None,
                                      random_shuffle=False)
        pipe.build()
        with pytest.raises(Exception, match=r"custom\.test_sometimes: _grey_when_strong "
                                            r"returned uint8"):
            pipe.run()
        preset.steps[0].params["level"] = 0.3
        assert len(engine.render(preset).images) == len(engine.images)
    finally:
        unregister(CATALOG, "custom.test_sometimes")


class _DeviceImage(np.ndarray):
    """Stands for a CuPy array: what marks one is ``__cuda_array_interface__``."""

    __cuda_array_interface__: dict = {}


def test_on_the_gpu_a_failure_is_raised_when_dali_reads_the_result():
    """DALI 2.4 crashes the process when a GPU function raises inside its CuPy stream (see
    tests/gpu/test_gpu_custom.py); the wrapper hands the error over for DALI to raise when it
    converts the result, outside the stream."""
    image = np.zeros((4, 6, 3), np.uint8).view(_DeviceImage)
    failed = _checked(_grey, "custom.test_grey")(image, np.float32(0.5))
    with pytest.raises(ValueError, match=r"custom\.test_grey: _grey returned uint8 \(4, 6\)"):
        failed.__dlpack__()
    failed = _checked(_fails_on_small_tiles, "custom.test_small")(image, np.float32(0.5))
    with pytest.raises(ValueError, match="needs at least 32 rows"):
        failed.__dlpack__()
    with pytest.raises(ValueError, match="needs at least 32 rows"):  # on the CPU: at once
        _checked(_fails_on_small_tiles, "custom.test_small")(np.zeros((4, 6, 3), np.uint8), 0.5)
    assert _checked(augment, "custom.test_same")(image, 0.5) is image  # a good result passes


def _fails_on_small_tiles(image, level):
    if image.shape[0] < 32:
        raise ValueError("needs at least 32 rows")
    return image


def test_a_function_that_fails_on_the_test_image_is_refused_with_its_error(catalog):
    with pytest.raises(ValueError, match=r"custom\.test_small: _fails_on_small_tiles failed on "
                                         r"a 17x13x3 uint8 RGB test image with the defaults "
                                         r"\(level=0\.5\) at registration \(ValueError: needs "
                                         r"at least 32 rows\)"):
        custom_op("custom.test_small", "Fails small.", params=LEVEL,
                  catalog=catalog)(_fails_on_small_tiles)


def _inverts_in_place(image, level):
    image[:4] = 255 - image[:4]
    return image


def _inverts_in_place_when_strong(image, level):
    if float(level) > 0.8:
        image[:4] = 255 - image[:4]
    return image


def test_a_function_that_writes_into_its_input_cannot_change_the_preview_s_images(catalog):
    """The probe: a function that inverted rows of its input in place and returned it wrote
    into the engine's fed images (``no_copy``), so every later render, of any chain, started
    from the inverted photo. Registration refuses it; one that writes only at some values
    fails at its step, and the engine's images stay as they were."""
    with pytest.raises(ValueError, match=r"custom\.test_in_place: _inverts_in_place wrote into "
                                         r"its input image \(on a 17x13x3 uint8 RGB test image"):
        custom_op("custom.test_in_place", "Writes its input.", params=LEVEL,
                  catalog=catalog)(_inverts_in_place)
    assert "custom.test_in_place" not in catalog
    custom_op("custom.test_strong", "Writes its input when strong.", params=LEVEL,
              catalog=catalog)(_inverts_in_place_when_strong)
    photo = (np.arange(24 * 32 * 3) % 251).astype(np.uint8).reshape(24, 32, 3)
    eng = PreviewEngine("cpu", num_threads=1, catalog=catalog)
    eng.set_arrays([photo.copy()])
    strong = load(preset_dict([{"op": "custom.test_strong", "params": {"level": 0.9}}]), catalog)
    with pytest.raises(StepError) as err:
        eng.render(strong)
    assert (err.value.step, err.value.op) == (0, "custom.test_strong")
    weak = load(preset_dict([{"op": "custom.test_strong", "params": {"level": 0.3}}]), catalog)
    np.testing.assert_array_equal(eng.render(weak).images[0], photo)
    eng.close()
    with pytest.raises(ValueError, match="read-only"):  # the exported module's wrapper too
        _checked(_inverts_in_place, "custom.test_in_place")(photo.copy(), np.float32(0.5))


def test_a_function_named_like_a_python_builtin_is_refused(catalog):
    """The probe: ``def open(image, size)`` (a morphological opening) replaced the builtin in
    the exported module, whose checkpoint code then failed with ``TypeError: open() got an
    unexpected keyword argument 'encoding'``."""
    def open(image, level):
        return image

    with pytest.raises(ValueError, match=r"custom\.test_open: a custom function cannot be named "
                                         r"'open', a Python builtin"):
        custom_op("custom.test_open", "Named open.", params=LEVEL,
                  catalog=catalog)(open)


# ---- slow functions ------------------------------------------------------------------------------

PAUSE = (Param("pause", "float", 0.05, "Seconds per call", bounds=(0, 1), slider=(0, 1),
               step=0.01, runtime=True),)


def _sleepy(image, pause):
    time.sleep(float(pause))
    return image


def test_a_slow_function_is_refused_before_dali_runs(catalog):
    """The probe: a function that sleeps froze the preview with no sign of life."""
    custom_op("custom.test_sleepy", "Sleeps.", params=PAUSE, catalog=catalog)(_sleepy)
    cost = catalog["custom.test_sleepy"].custom_code.cost  # type: ignore[union-attr]
    assert cost is not None and 0.05 <= cost.per_call < 0.5
    eng = PreviewEngine("cpu", num_threads=1, catalog=catalog)
    eng.set_arrays([np.full((24, 32, 3), 9 * i, np.uint8) for i in range(8)])
    preset = load(preset_dict([{"op": "custom.test_sleepy", "params": {}}]), catalog)
    t0 = time.perf_counter()
    with pytest.raises(CustomTimeError) as err:
        eng.render(preset, draws=32)  # 256 samples x 0.05 s
    assert time.perf_counter() - t0 < 1.0 and eng.builds == 0  # nothing was built or run
    e = err.value
    assert (e.step, e.op, e.limit) == (0, "custom.test_sleepy", CUSTOM_SECONDS)
    assert e.seconds > CUSTOM_SECONDS
    assert f"the Python function _sleepy would take about {e.seconds:.1f} s" in str(e)
    assert f"256 sample(s) of 8 image(s) x 32 draw(s), at {cost.describe()}" in str(e)
    assert "at most 10 s of Python operators per render is allowed" in str(e)
    render = eng.render(preset, draws=2)  # 16 x 0.05 s: allowed
    assert len(render.images) == 16
    eng.close()


def test_the_budget_is_read_at_render_time(catalog, monkeypatch):
    custom_op("custom.test_sleepy", "Sleeps.", params=PAUSE, catalog=catalog)(_sleepy)
    eng = PreviewEngine("cpu", num_threads=1, catalog=catalog)
    eng.set_arrays([np.zeros((8, 8, 3), np.uint8)] * 4)
    monkeypatch.setattr(custom_budget, "CUSTOM_SECONDS", 0.1)
    preset = load(preset_dict([{"op": "custom.test_sleepy", "params": {}}]), catalog)
    with pytest.raises(CustomTimeError, match=r"at most 0\.1 s of Python operators"):
        eng.render(preset)
    eng.close()


# ---- helpers -------------------------------------------------------------------------------------

def _top_level_names(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names



def test_custom_kernels_are_warmed_on_the_gpu_only(engine):
    """On the CPU the functions run NumPy: nothing to compile, nothing warmed, no thread (the
    GPU twin: tests/gpu/test_gpu_custom.py)."""
    assert engine.warm_custom(["custom.vignette", "rotate"]) == []
