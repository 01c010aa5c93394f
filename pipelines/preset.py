"""The preset: the user's pipeline as versioned JSON, the one input of the preview and the export.

Loading validates everything against the catalog and reports every problem at once; each problem
names the step, the operator, the parameter, the bad value and what is allowed. Values are
literals, ``{"uniform": [lo, hi]}`` (drawn per sample) or ``{"choice": [...]}``.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .catalog import CATALOG, Catalog, OpSpec
from .params import Param

FORMAT = "dali-gallery/preset"
VERSION = 1
DEFAULT_SEED = 42
MAX_STEPS = 64
MAX_CHOICES = 32

_PRESET_KEYS = {"format", "version", "seed", "steps", "output", "name"}
_STEP_KEYS = {"op", "params", "probability", "enabled"}
_OUTPUT_KEYS = {"resize_shorter", "crop", "mean", "std", "layout", "dtype", "mirror_probability"}
_LAYOUTS = ("CHW", "HWC")
_DTYPES = ("float32", "float16", "uint8")


class PresetError(ValueError):
    """Every problem found in a preset, one per line."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


@dataclass(frozen=True)
class Uniform:
    """A value drawn per sample from [lo, hi) (floats) or [lo, hi] (integers)."""

    lo: float
    hi: float

    def to_json(self) -> dict[str, list[float]]:
        return {"uniform": [self.lo, self.hi]}


@dataclass(frozen=True)
class Choice:
    """A value drawn per sample, uniformly from a list."""

    values: tuple[Any, ...]

    def to_json(self) -> dict[str, list[Any]]:
        return {"choice": list(self.values)}


Value = Any  # literal | Uniform | Choice


def is_random(value: Value) -> bool:
    return isinstance(value, (Uniform, Choice))


def value_to_json(value: Value) -> Any:
    return value.to_json() if is_random(value) else value


@dataclass
class Step:
    """One operator in the chain."""

    op: str
    params: dict[str, Value] = field(default_factory=dict)
    probability: float = 1.0
    enabled: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {
            "op": self.op,
            "probability": self.probability,
            "enabled": self.enabled,
            "params": {k: value_to_json(v) for k, v in self.params.items()},
        }


@dataclass
class Output:
    """The training tail: resize, crop, normalisation, layout and dtype."""

    resize_shorter: float | None = None
    crop: tuple[int, int] | None = None
    mean: tuple[float, ...] | None = None
    std: tuple[float, ...] | None = None
    layout: str = "CHW"
    dtype: str = "float32"
    mirror_probability: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "resize_shorter": self.resize_shorter,
            "crop": list(self.crop) if self.crop else None,
            "mean": list(self.mean) if self.mean else None,
            "std": list(self.std) if self.std else None,
            "layout": self.layout,
            "dtype": self.dtype,
            "mirror_probability": self.mirror_probability,
        }


IMAGENET_OUTPUT = Output(
    resize_shorter=256,
    crop=(224, 224),
    mean=(0.485, 0.456, 0.406),
    std=(0.229, 0.224, 0.225),
)


@dataclass
class Preset:
    """A validated pipeline. Build with :func:`load`/:meth:`from_dict` to get validation."""

    steps: list[Step] = field(default_factory=list)
    seed: int = DEFAULT_SEED
    output: Output | None = None
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"format": FORMAT, "version": VERSION}
        if self.name:
            d["name"] = self.name
        d["seed"] = self.seed
        d["steps"] = [s.to_dict() for s in self.steps]
        d["output"] = self.output.to_dict() if self.output else None
        return d

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: Any, catalog: Catalog = CATALOG) -> Preset:
        return load(data, catalog)

    def copy(self) -> Preset:
        return copy.deepcopy(self)

    def active_steps(self) -> list[tuple[int, Step]]:
        """Enabled steps with their index in the chain (indices name steps in errors)."""
        return [(i, s) for i, s in enumerate(self.steps) if s.enabled]

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")


def new_step(op: str, catalog: Catalog = CATALOG, **params: Value) -> Step:
    """A step with every parameter at its default, overridden by ``params``."""
    spec = catalog[op]
    values = spec.defaults()
    values.update(params)
    return Step(op, values)


# ---- migrations -------------------------------------------------------------------------------

Migration = Callable[[dict[str, Any]], dict[str, Any]]
MIGRATIONS: dict[int, Migration] = {}
"""``MIGRATIONS[n]`` turns a version-n dict into version n+1. Version 1 is the first format."""


def _migrate(data: dict[str, Any]) -> dict[str, Any]:
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise PresetError([f"preset: 'version' must be an integer, got {version!r}"])
    if version > VERSION:
        raise PresetError(
            [f"preset: version {version} is newer than this dali-gallery understands "
             f"(up to {VERSION}); upgrade dali-gallery"]
        )
    if version < 1:
        raise PresetError([f"preset: unknown version {version}; versions start at 1"])
    while version < VERSION:
        data = MIGRATIONS[version](data)
        version += 1
        data["version"] = version
    return data


# ---- loading and validation --------------------------------------------------------------------


def load(source: Any, catalog: Catalog = CATALOG) -> Preset:
    """Load a preset from a dict, a JSON string, a path or a Preset; raise PresetError."""
    if isinstance(source, Preset):
        return load(source.to_dict(), catalog)
    is_json = isinstance(source, str) and source.lstrip().startswith("{")
    if isinstance(source, Path) or (isinstance(source, str) and not is_json):
        path = Path(source)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise PresetError([f"preset file {str(path)!r}: cannot read it ({e.strerror})"]) from e
        return loads(text, catalog, origin=str(path))
    if isinstance(source, str):
        return loads(source, catalog)
    if not isinstance(source, Mapping):
        raise PresetError([f"preset: expected a JSON object, got {type(source).__name__}"])
    return _validate(dict(source), catalog)


def loads(text: str, catalog: Catalog = CATALOG, origin: str = "preset") -> Preset:
    try:
        data = json.loads(text, parse_constant=_reject_constant)
    except (json.JSONDecodeError, ValueError) as e:
        raise PresetError([f"{origin}: not valid JSON ({e})"]) from e
    if not isinstance(data, dict):
        raise PresetError([f"{origin}: expected a JSON object, got {type(data).__name__}"])
    return _validate(data, catalog)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed; numbers must be finite")


def _validate(data: dict[str, Any], catalog: Catalog) -> Preset:
    problems: list[str] = []
    if data.get("format") != FORMAT:
        problems.append(f"preset: 'format' must be {FORMAT!r}, got {data.get('format')!r}")
        raise PresetError(problems)
    data = _migrate(copy.deepcopy(data))
    for key in sorted(set(data) - _PRESET_KEYS):
        problems.append(f"preset: unknown key {key!r} (allowed: {', '.join(sorted(_PRESET_KEYS))})")

    seed = data.get("seed", DEFAULT_SEED)
    if not _is_int(seed) or not 0 <= seed < 2**31:
        problems.append(f"preset: 'seed' must be an integer in [0, 2147483647], got {seed!r}")
        seed = DEFAULT_SEED
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > 200:
        problems.append("preset: 'name' must be a string of at most 200 characters")
        name = ""

    raw_steps = data.get("steps", [])
    steps: list[Step] = []
    if not isinstance(raw_steps, list):
        problems.append(f"preset: 'steps' must be a list, got {type(raw_steps).__name__}")
        raw_steps = []
    if len(raw_steps) > MAX_STEPS:
        problems.append(f"preset: {len(raw_steps)} steps; at most {MAX_STEPS} are allowed")
    for i, raw in enumerate(raw_steps):
        step = _validate_step(i, raw, catalog, problems)
        if step is not None:
            steps.append(step)

    output = _validate_output(data.get("output"), problems)
    if problems:
        raise PresetError(problems)
    return Preset(steps=steps, seed=int(seed), output=output, name=name)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _validate_step(i: int, raw: Any, catalog: Catalog, problems: list[str]) -> Step | None:
    where = f"step {i}"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected an object with 'op' and 'params', got {raw!r:.60}")
        return None
    op = raw.get("op")
    if not isinstance(op, str) or op not in catalog:
        near = [n for n in catalog if isinstance(op, str) and op.split(".")[-1] in n][:5]
        hint = f" (did you mean {', '.join(near)}?)" if near else " (see `dali-gallery ops`)"
        problems.append(f"{where}: unknown operator {op!r}{hint}")
        return None
    spec = catalog[op]
    where = f"step {i} ({op})"
    for key in sorted(set(raw) - _STEP_KEYS):
        problems.append(f"{where}: unknown key {key!r} (allowed: {', '.join(sorted(_STEP_KEYS))})")
    probability = raw.get("probability", 1.0)
    if not _is_num(probability) or not math.isfinite(probability) or not 0 <= probability <= 1:
        problems.append(f"{where}: probability {probability!r} is not allowed; expected [0, 1]")
        probability = 1.0
    enabled = raw.get("enabled", True)
    if not isinstance(enabled, bool):
        problems.append(f"{where}: 'enabled' must be true or false, got {enabled!r}")
        enabled = True
    raw_params = raw.get("params", {})
    if not isinstance(raw_params, dict):
        problems.append(f"{where}: 'params' must be an object, got {raw_params!r:.60}")
        raw_params = {}
    params = spec.defaults()
    for name in raw_params:
        if name not in params:
            allowed = ", ".join(p.name for p in spec.params) or "none"
            problems.append(f"{where}: unknown parameter {name!r} (parameters: {allowed})")
    n_before = len(problems)
    for p in spec.params:
        if p.name in raw_params:
            value = _validate_value(where, p, raw_params[p.name], problems)
            if value is not None:
                params[p.name] = value
    if len(problems) == n_before:
        _check_constraints(where, spec, params, problems)
    return Step(op, params, float(probability), enabled)


def _validate_value(where: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    at = f"{where}: parameter {p.name!r}"
    if isinstance(raw, dict):
        keys = set(raw)
        if keys == {"uniform"}:
            return _validate_uniform(at, p, raw["uniform"], problems)
        if keys == {"choice"}:
            return _validate_choice(at, p, raw["choice"], problems)
        problems.append(f"{at}: {raw!r:.80} is not allowed; a value is a literal, "
                        "{'uniform': [lo, hi]} or {'choice': [...]}")
        return None
    why = p.check(raw)
    if why:
        problems.append(f"{at}: value {raw!r:.60} is not allowed; {why}")
        return None
    return p.coerce(raw)


def _validate_uniform(at: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    if not p.runtime or p.kind not in ("float", "int") or p.odd:
        problems.append(f"{at}: cannot be drawn per sample ('uniform'); "
                        f"{_why_not_random(p)}")
        return None
    if not (isinstance(raw, list) and len(raw) == 2 and all(_is_num(v) for v in raw)):
        problems.append(f"{at}: uniform {raw!r:.60} is not allowed; expected [lo, hi]")
        return None
    lo, hi = raw
    for v in (lo, hi):
        why = p.check(v)
        if why:
            problems.append(f"{at}: uniform bound {v!r} is not allowed; {why}")
            return None
    if not lo < hi:
        problems.append(f"{at}: uniform [{lo!r}, {hi!r}] is empty; lo must be below hi "
                        "(use a literal for a fixed value)")
        return None
    if p.kind == "float" and not np.float32(lo) < np.float32(hi):
        problems.append(f"{at}: uniform [{lo!r}, {hi!r}] is empty once DALI stores it as "
                        "float32; widen the range or use a literal")
        return None
    return Uniform(p.coerce(lo), p.coerce(hi))


def _validate_choice(at: str, p: Param, raw: Any, problems: list[str]) -> Value | None:
    if not p.runtime or p.kind not in ("float", "int", "bool") or (p.kind == "bool"
                                                                   and not p.dali_int):
        problems.append(f"{at}: cannot be drawn per sample ('choice'); {_why_not_random(p)}")
        return None
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_CHOICES:
        problems.append(f"{at}: choice {raw!r:.60} is not allowed; expected a list of 1 to "
                        f"{MAX_CHOICES} values")
        return None
    values = []
    for v in raw:
        why = p.check(v)
        if why:
            problems.append(f"{at}: choice value {v!r:.40} is not allowed; {why}")
            return None
        values.append(p.coerce(v))
    return Choice(tuple(values))


def _why_not_random(p: Param) -> str:
    if not p.runtime:
        return "DALI fixes it when the pipeline is built; use a literal"
    if p.odd:
        return "it must be odd; use a literal or a 'choice' of odd values"
    return f"a {p.kind} parameter takes a literal"


def _check_constraints(where: str, spec: OpSpec, params: dict[str, Value],
                       problems: list[str]) -> None:
    for c in spec.constraints:
        vals = {n: params[n] for n in c.params}
        if any(is_random(v) for v in vals.values()):
            continue
        if not c.check(vals):
            shown = ", ".join(f"{k}={v!r}" for k, v in vals.items())
            problems.append(f"{where}: {shown} is not allowed; {c.message}")


def _validate_output(raw: Any, problems: list[str]) -> Output | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(f"output: expected an object or null, got {raw!r:.60}")
        return None
    for key in sorted(set(raw) - _OUTPUT_KEYS):
        problems.append(f"output: unknown key {key!r} (allowed: {', '.join(sorted(_OUTPUT_KEYS))})")
    out = Output()
    rs = raw.get("resize_shorter")
    if rs is not None:
        if not _is_num(rs) or not 8 <= rs <= 4096:
            problems.append(f"output: resize_shorter {rs!r} is not allowed; expected [8, 4096] px")
        else:
            out.resize_shorter = float(rs)
    crop = raw.get("crop")
    if crop is not None:
        if (not isinstance(crop, list) or len(crop) != 2
                or not all(_is_int(v) and 8 <= v <= 4096 for v in crop)):
            problems.append(f"output: crop {crop!r:.60} is not allowed; expected [height, width], "
                            "integers in [8, 4096]")
        else:
            out.crop = (crop[0], crop[1])
    for key in ("mean", "std"):
        v = raw.get(key)
        if v is None:
            continue
        ok = (isinstance(v, list) and len(v) in (1, 3)
              and all(_is_num(x) and math.isfinite(x) for x in v))
        if ok and key == "std" and not all(x > 0 for x in v):
            ok = False
        if ok and key == "mean" and not all(-1e4 < x < 1e4 for x in v):
            ok = False
        if not ok:
            problems.append(f"output: {key} {v!r:.60} is not allowed; expected 1 or 3 finite "
                            f"numbers{' > 0' if key == 'std' else ''} (fractions of 255)")
        else:
            setattr(out, key, tuple(float(x) for x in v))
    layout = raw.get("layout", "CHW")
    if layout not in _LAYOUTS:
        problems.append(f"output: layout {layout!r} is not allowed; expected one of {_LAYOUTS}")
    else:
        out.layout = layout
    dtype = raw.get("dtype", "float32")
    if dtype not in _DTYPES:
        problems.append(f"output: dtype {dtype!r} is not allowed; expected one of {_DTYPES}")
    else:
        out.dtype = dtype
    mp = raw.get("mirror_probability", 0.0)
    if not _is_num(mp) or not 0 <= mp <= 1:
        problems.append(f"output: mirror_probability {mp!r} is not allowed; expected [0, 1]")
    else:
        out.mirror_probability = float(mp)
    return out
