"""What an operator's declaration answers for everyone: where it runs, its call, its checkpoints."""

from __future__ import annotations

import pytest

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.opspec import PLACEHOLDER
from tests.support import CPU_OPS, GPU_ONLY_OPS, check_checkpoints_declaration


def test_unavailable_on_names_the_operator_the_devices_and_the_reason():
    assert GPU_ONLY_OPS
    for op in GPU_ONLY_OPS:
        spec = CATALOG[op]
        why = spec.unavailable_on("cpu")
        assert why.startswith(f"{op} runs on the GPU only (")
        assert spec.gpu_reason in why and why.endswith("previews on the CPU")
        assert spec.unavailable_on("gpu") is None
    assert all(CATALOG[op].unavailable_on("cpu") is None for op in CPU_OPS)


def test_call_source_fills_every_placeholder():
    for spec in CATALOG.values():
        args = {"x": "X", "seed": "SEED", "source": "SOURCE",
                **{p.name: f"<{p.name}>" for p in spec.params},
                **{d.name: f"<{d.name}>" for d in spec.draws}}
        call = spec.call_source(args)
        assert PLACEHOLDER.search(call) is None, call
        assert all(f"<{p.name}>" in call for p in spec.params)
        assert all(f"<{d.name}>" in call for d in spec.draws)
        assert ("SEED" in call) == spec.seeded and "X" in call
    with pytest.raises(KeyError):
        CATALOG["gaussian_blur"].call_source({"x": "X"})


@pytest.mark.slow
@pytest.mark.parametrize("op", CPU_OPS)
def test_checkpoints_flag_matches_dali(op, tmp_path):
    """DALI itself says whether a pipeline with the operator can be checkpointed: building with
    ``enable_checkpointing`` fails for exactly the operators declared ``checkpoints=False``."""
    check_checkpoints_declaration(op, "cpu", tmp_path)
