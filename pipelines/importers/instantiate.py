"""Build the original library's pipeline from the parsed calls, to time it beside DALI.

Only classes that have an import rule are constructed, with the literal arguments read from
the syntax tree; custom transforms and ``Lambda`` (code) are left out and said so. Nothing of
the pasted text runs.
"""

from __future__ import annotations

import importlib
from typing import Any

from .containers import transforms_of
from .rules import Refused, Rule
from .source import CHAINS, Call, Opaque, Symbol
from .table import rule_for


class NotBuilt(Exception):
    """The transform cannot be constructed (custom code, missing library)."""


def build(call: Call) -> Any:
    """The library object for a transform or container call."""
    rule = rule_for(call.library, call.name)
    if call.library == "custom" or rule is None or call.name == "Lambda":
        raise NotBuilt(f"{call.name} is not constructed (custom code is never run)")
    cls = _class(call)
    if rule.kind == "container":
        return _container(call, rule, cls)
    args = [_value(a, call) for a in call.args]
    kwargs = {rule.aliases.get(k, k): _value(v, call) for k, v in call.kwargs.items()}
    return cls(*args, **kwargs)


def _container(call: Call, rule: Rule, cls: Any) -> Any:
    """A container with its transforms as a list, the form every container of both libraries
    takes (torch.nn.Sequential(t1, t2) and a ModuleList argument are read as the importer
    reads them)."""
    try:
        items = transforms_of(call, rule, rule.bind(call))
    except Refused as e:
        raise NotBuilt(e.reason) from e
    rest = () if rule.varargs else call.args[1:]
    kwargs = {rule.aliases.get(k, k): _value(v, call) for k, v in call.kwargs.items()
              if k != "transforms"}
    return cls([build(c) for c in items if isinstance(c, Call)],
               *[_value(a, call) for a in rest], **kwargs)


def build_pipeline(root: Any) -> tuple[Any, list[str]]:
    """The original Compose with every constructible transform, and what was left out."""
    left_out: list[str] = []
    if isinstance(root, list):
        children = _children(root, left_out)
        lib = next((c.library for c in root if isinstance(c, Call)), "torchvision")
        return _compose(lib, children), left_out
    if root.name in CHAINS and root.library in ("torchvision", "albumentations"):
        rule = rule_for(root.library, root.name)
        try:
            items = transforms_of(root, rule, rule.bind(root)) if rule else []
        except Refused as e:
            items = []
            left_out.append(f"{root.name}: {e.reason}")
        children = _children(items, left_out)
        kw = {k: _value(v, root) for k, v in root.kwargs.items()
              if k in ("p", "save_key") and root.library == "albumentations"}
        name = root.name if root.library == "albumentations" else "Compose"
        return _compose(root.library, children, name, **kw), left_out
    return _compose(root.library, _children([root], left_out)), left_out


def _children(items: list[Any], left_out: list[str]) -> list[Any]:
    out = []
    for c in items:
        if not isinstance(c, Call):
            continue
        try:
            out.append(build(c))
        except (NotBuilt, TypeError, ValueError) as e:
            left_out.append(f"{c.name}: {e}")
    return out


def _compose(library: str, children: list[Any], name: str = "Compose", **kw: Any) -> Any:
    """The original's container: Albumentations' own class (``Compose``, ``Sequential``,
    ``ReplayCompose``), or torchvision's ``Compose``."""
    if library == "albumentations":
        import albumentations as A

        return getattr(A, name)(children, **kw)
    from torchvision.transforms import v2

    return v2.Compose(children)


def _class(call: Call) -> Any:
    if call.library == "albumentations":
        if call.name == "ToTensorV2":
            from albumentations.pytorch import ToTensorV2

            return ToTensorV2
        import albumentations as A

        return getattr(A, call.name)
    if call.name == "Sequential":
        from torchvision.transforms import v2

        return v2.Compose
    module = "torchvision.transforms.v2" if ".v2" in f"{call.module}." or \
        call.module.endswith("v2") else "torchvision.transforms"
    return getattr(importlib.import_module(module), call.name)


def _value(v: Any, call: Call) -> Any:
    if isinstance(v, Call):
        return build(v)
    if isinstance(v, Opaque):
        raise NotBuilt(f"{call.name}: code arguments are never run")
    if isinstance(v, Symbol):
        return _symbol(v)
    if isinstance(v, list):
        return [_value(x, call) for x in v]
    if isinstance(v, tuple):
        return tuple(_value(x, call) for x in v)
    if isinstance(v, dict):
        return {k: _value(x, call) for k, x in v.items()}
    return v


def _symbol(s: Symbol) -> Any:
    last = s.path.rsplit(".", 1)[-1]
    if ".InterpolationMode." in f".{s.path}":
        from torchvision.transforms import InterpolationMode

        return InterpolationMode[last]
    if ".AutoAugmentPolicy." in f".{s.path}":
        from torchvision.transforms import AutoAugmentPolicy

        return AutoAugmentPolicy[last]
    if s.path.startswith("torch."):
        import torch

        return getattr(torch, last)
    return s.value
