"""Read an Albumentations pipeline saved with ``A.to_dict`` / ``A.save`` (JSON or YAML).

The file is data: JSON is parsed with the standard parser (NaN and Infinity refused), YAML
with ``yaml.safe_load`` (no Python objects), both within size, depth and node budgets, and
every transform dict becomes the same :class:`~.source.Call` a pasted ``A.Compose`` gives.
Shared YAML anchors are walked (and counted) every time they are used, so an alias bomb
runs into the node budget instead of the memory.
"""

from __future__ import annotations

import json
from typing import Any

from .source import MAX_DEPTH, MAX_ITEMS, MAX_NODES, MAX_STRING, Call, Parsed, number_problem

MAX_SERIALIZED = 256_000
"""Characters of a saved pipeline (to_dict output is verbose: ~400 characters a transform)."""

_IGNORED = {"__class_fullname__", "additional_targets", "is_check_shapes", "seed",
            "save_applied_params", "mask_interpolation", "__version__", "id"}
"""Keys that say nothing about the image pixels (targets, bookkeeping). Compose's ``strict``
is passed on: inside it the 1.x arguments are refused, as Albumentations raises on them;
``bbox_params`` / ``keypoint_params`` too, for the import to say what becomes of them."""
_UNSET = {"always_apply": False}
"""Keys a 1.x file writes on every transform, left out at this value (it changes nothing);
``always_apply: true`` is passed on, for the rule to say how Albumentations 2 reads it."""


class SerializedRefused(ValueError):
    """The saved pipeline cannot be read; nothing of it was run."""


def looks_serialized(text: str) -> bool:
    """Whether the text is an ``A.to_dict`` JSON/YAML dump rather than Python source."""
    head = text.lstrip()
    return head.startswith("{") or ("__class_fullname__" in text and "(" not in head[:1])


def parse_serialized(text: str) -> Parsed:
    if len(text) > MAX_SERIALIZED:
        raise SerializedRefused(f"the saved pipeline has {len(text)} characters; at most "
                                f"{MAX_SERIALIZED} are read")
    head = text.lstrip()
    if head.startswith("{"):
        try:
            data = json.loads(text, parse_constant=_no_constant)
        except (ValueError, RecursionError) as e:
            raise SerializedRefused(f"not valid JSON ({_short(e)})") from e
        kind = "JSON"
    else:
        import yaml

        try:
            data = yaml.safe_load(text)
        except (yaml.YAMLError, RecursionError, ValueError) as e:  # ValueError: an integer of
            # more than 4300 digits, which Python's int() refuses
            raise SerializedRefused(f"not valid YAML ({_short(e)})") from e
        kind = "YAML"
    if not isinstance(data, dict):
        raise SerializedRefused(f"the {kind} holds a {type(data).__name__}; expected the dict "
                                "A.to_dict writes ({'__version__': ..., 'transform': {...}})")
    walker = _Walker()
    root = data.get("transform", data)
    if not isinstance(root, dict) or "__class_fullname__" not in root:
        raise SerializedRefused("no 'transform' with a '__class_fullname__' found; is this a "
                                "file written by A.to_dict / A.save?")
    call = walker.call(root, 0, "transform")
    version = data.get("__version__")
    notes = [f"Albumentations {kind} saved by version {version}"] if isinstance(version, str) \
        else []
    return Parsed(call, "the saved pipeline", notes)


class _Walker:
    def __init__(self) -> None:
        self.nodes = 0

    def call(self, d: dict[str, Any], depth: int, where: str) -> Call:
        name = d["__class_fullname__"]
        if not isinstance(name, str) or not name or len(name) > MAX_STRING:
            raise SerializedRefused(f"{where}: '__class_fullname__' must be a class name")
        short = name.rsplit(".", 1)[-1]
        module = name.rsplit(".", 1)[0] if "." in name else "albumentations"
        kwargs = {}
        for key, value in d.items():
            if key in _IGNORED or (key in _UNSET and value is _UNSET[key]):
                continue
            if not isinstance(key, str):
                raise SerializedRefused(f"{where} ({short}): keys must be strings")
            kwargs[key] = self.value(value, depth + 1, f"{where} ({short}).{key}")
        return Call("albumentations", module, short, (), kwargs, 0, 0, f"{short}(...)")

    def value(self, v: Any, depth: int, where: str) -> Any:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SerializedRefused(f"the saved pipeline has more than {MAX_NODES} values")
        if depth > MAX_DEPTH:
            raise SerializedRefused(f"{where}: nested more than {MAX_DEPTH} levels deep")
        if v is None or isinstance(v, bool):
            return v
        if isinstance(v, (int, float)):
            why = number_problem(v)
            if why:
                raise SerializedRefused(f"{where}: {why}")
            return v
        if isinstance(v, str):
            if len(v) > MAX_STRING:
                raise SerializedRefused(f"{where}: a string of {len(v)} characters; at most "
                                        f"{MAX_STRING}")
            return v
        if isinstance(v, (list, tuple)):
            if len(v) > MAX_ITEMS:
                raise SerializedRefused(f"{where}: a list of {len(v)} items; at most "
                                        f"{MAX_ITEMS}")
            return [self.value(x, depth + 1, f"{where}[{i}]") for i, x in enumerate(v)]
        if isinstance(v, dict):
            if "__class_fullname__" in v:
                return self.call(v, depth, where)
            if len(v) > MAX_ITEMS:
                raise SerializedRefused(f"{where}: a dict of {len(v)} items; at most "
                                        f"{MAX_ITEMS}")
            return {str(k): self.value(x, depth + 1, f"{where}.{k}") for k, x in v.items()}
        raise SerializedRefused(f"{where}: a {type(v).__name__} value is not read")


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not allowed; numbers must be finite")


def _short(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return text[:200] or type(e).__name__
