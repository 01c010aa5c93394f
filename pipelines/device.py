"""Which device previews run on: ask DALI itself, never torch or cupy."""

from __future__ import annotations

from typing import Literal

Device = Literal["cpu", "gpu"]


def gpu_count() -> int:
    """GPUs DALI can use (0 without a driver; DALI's probe does not raise)."""
    from nvidia.dali import backend

    return int(backend.GetCUDADeviceCount())


def resolve(device: str) -> Device:
    """``auto`` picks the GPU when DALI sees one; asking for a missing GPU is an error."""
    if device not in ("auto", "cpu", "gpu"):
        raise ValueError(f"device {device!r} is not allowed; expected 'auto', 'cpu' or 'gpu'")
    if device == "cpu":
        return "cpu"
    n = gpu_count()
    if device == "gpu" and n == 0:
        raise ValueError("device 'gpu' was asked for, but DALI sees no GPU on this machine "
                         "(use 'cpu' or 'auto')")
    return "gpu" if n > 0 else "cpu"


def describe(device: Device) -> str:
    """A short label for the UI: which device rendered the preview."""
    if device == "cpu":
        return "CPU (DALI CPU operators)"
    try:
        from nvidia.dali import backend

        name = backend.GetCUDADeviceName(0) if hasattr(backend, "GetCUDADeviceName") else "GPU 0"
    except RuntimeError:
        name = "GPU 0"
    return f"GPU: {name} (mixed decoding, DALI GPU operators)"


HW_DECODER_LOAD = 1.0
"""The share of each batch the GPU ("mixed") decoder gives to the hardware JPEG decoder, in the
preview and in the exported pipeline alike. nvJPEG's hardware and CUDA decoders differ by up to 4
grey levels, and DALI's default (0.65) splits every batch between them, so the same file decoded in
a batch of 8 and alone could differ. With 1.0 every file the hardware decoder accepts goes to it
whatever the batch size (the others go to the CUDA decoder in both), so preview == training. The
exported module takes ``hw_decoder_load`` to trade that exactness for the split's throughput."""
