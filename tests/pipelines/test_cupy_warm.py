"""CuPy warmed ahead (:mod:`pipelines.cupy_warm`): once a process, never for the CPU device,
started by ``prestart``; it reports what it did or why it did nothing (no CuPy), and never
raises into the kernel. On a GPU host: tests/gpu/test_gpu_custom.py."""

from __future__ import annotations

import importlib.util
import threading

import pytest

from dali_gallery.pipelines import cupy_warm, trace_ahead


@pytest.fixture
def fresh(monkeypatch):
    """A process where nothing warmed CuPy yet."""
    monkeypatch.setattr(cupy_warm, "_STATE", dict(cupy_warm._STATE_START))


def test_not_for_the_cpu_device(fresh):
    assert cupy_warm.start("cpu") is False
    assert cupy_warm.report(1) is None  # nothing started


def test_once_a_process_and_says_what_it_did(fresh):
    assert cupy_warm.start() is True
    assert cupy_warm.start("gpu") is False  # once a process
    found = cupy_warm.report(60)
    assert found is not None
    if importlib.util.find_spec("cupy") is None:  # CI: no CuPy, nothing warmed, and why
        assert set(found) == {"skipped"}
        assert "CuPy cannot be imported" in found["skipped"]
    else:  # CuPy here: imported (no CUDA call: a machine without a GPU imports it too)
        assert set(found) == {"s"} and found["s"] >= 0


def test_a_missing_cupy_is_reported_not_raised(fresh, monkeypatch):
    import builtins

    real = builtins.__import__

    def no_cupy(name, *args, **kwargs):
        if name == "cupy":
            raise ImportError("No module named 'cupy'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    assert cupy_warm.start() is True
    found = cupy_warm.report(30)
    assert found is not None and "No module named 'cupy'" in found["skipped"]


def test_prestart_starts_it_with_its_device(monkeypatch):
    """``prestart`` (the served notebook's first line, the bench's, each gallery view's) hands
    its device on: "cpu" warms nothing."""
    asked: list[str] = []
    monkeypatch.setattr(cupy_warm, "start", asked.append)
    monkeypatch.setattr(trace_ahead, "_SPARE", dict(trace_ahead._SPARE_START))
    monkeypatch.setattr(trace_ahead, "default_workers", lambda: 0)  # no worker: just CuPy
    trace_ahead.prestart("cpu")
    trace_ahead.prestart()
    assert asked == ["cpu", "auto"]


def test_report_waits_for_the_thread(fresh, monkeypatch):
    gate = threading.Event()
    monkeypatch.setattr(cupy_warm, "_warm", lambda: (gate.wait(30),
                                                     cupy_warm._STATE.update(report={"s": 0.1})))
    assert cupy_warm.start() is True
    assert cupy_warm.report(0.05) is None  # still running
    gate.set()
    assert cupy_warm.report(10) == {"s": 0.1}
