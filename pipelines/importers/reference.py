"""Run the original libraries on one HWC uint8 image, for the parity report's fixed cases.

torchvision and Albumentations are optional: they are imported only when a reference runs,
and :func:`missing` says how to install the one that is absent.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import numpy as np

INSTALL = {
    "torchvision": "pip install torchvision (the release matching your torch, e.g. "
                   "torchvision==0.29.1 for torch 2.14)",
    "albumentations": "pip install albumentations",
}


def missing(library: str) -> str | None:
    """How to install ``library`` when it cannot be imported, else None."""
    module = {"torchvision": "torchvision.transforms.v2", "albumentations": "albumentations"}
    try:
        importlib.import_module(module[library])
    except ImportError:
        return INSTALL[library]
    return None


def to_tensor(img: np.ndarray) -> Any:
    import torch

    return torch.from_numpy(np.ascontiguousarray(img)).permute(2, 0, 1).contiguous()


def to_hwc(t: Any) -> np.ndarray:
    arr = t.permute(1, 2, 0).numpy() if t.ndim == 3 else t.numpy()
    return np.ascontiguousarray(arr)


def tv(function: str, *args: Any, **kwargs: Any) -> Callable[[np.ndarray], np.ndarray]:
    """torchvision.transforms.v2.functional.<function>(image, *args, **kwargs) on a uint8
    CHW tensor, back to HWC (``interpolation`` given as a string)."""

    def run(img: np.ndarray) -> np.ndarray:
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms.v2 import functional as F

        kw = dict(kwargs)
        if isinstance(kw.get("interpolation"), str):
            kw["interpolation"] = InterpolationMode(kw["interpolation"])
        return to_hwc(getattr(F, function)(to_tensor(img), *args, **kw))

    return run


def tv_chain(*functions: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    def run(img: np.ndarray) -> np.ndarray:
        for f in functions:
            img = f(img)
        return img

    return run


def tv_seeded(cls: str, seed: int = 0, **kwargs: Any) -> Callable[[np.ndarray], np.ndarray]:
    """A torchvision v2 transform class with its own random draw fixed by ``seed`` (for the
    transforms whose semantics differ: the report shows the library's own output)."""

    def run(img: np.ndarray) -> np.ndarray:
        import torch
        from torchvision.transforms import InterpolationMode, v2

        kw = dict(kwargs)
        if isinstance(kw.get("interpolation"), str):
            kw["interpolation"] = InterpolationMode(kw["interpolation"])
        torch.manual_seed(seed)
        return to_hwc(getattr(v2, cls)(**kw)(to_tensor(img)))

    return run


def alb(cls: str, seed: int = 0, **kwargs: Any) -> Callable[[np.ndarray], np.ndarray]:
    """An Albumentations transform applied with p=1 (and a fixed seed for what stays random)."""

    def run(img: np.ndarray) -> np.ndarray:
        import albumentations as A

        t = A.Compose([getattr(A, cls)(p=1.0, **kwargs)], seed=seed)
        return np.ascontiguousarray(t(image=np.ascontiguousarray(img))["image"])

    return run


def alb_function(module: str, function: str, *args: Any,
                 **kwargs: Any) -> Callable[[np.ndarray], np.ndarray]:
    """A functional of Albumentations (``augmentations.dropout.functional.cutout``...)."""

    def run(img: np.ndarray) -> np.ndarray:
        mod = importlib.import_module(f"albumentations.{module}")
        return np.ascontiguousarray(getattr(mod, function)(np.ascontiguousarray(img), *args,
                                                           **kwargs))

    return run
