"""DALI's autograph skips the auto_aug helpers that branch on Python values only, and nothing
rendered changes.

Each check renders in two fresh processes, one with DALI's own autograph rules and one after
:func:`convert_only_branching`, and compares every pixel and record: the preview's three
policies (every catalog entry that needs conditionals) over the bundled photos at their native,
odd sizes, and DALI's own policy functions called as its documentation says, which must still
trace in a process where the rule is on (their batch split is still rewritten).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import numpy as np
import pytest

from dali_gallery.pipelines.autograph_scope import PLAIN_MODULES
from dali_gallery.pipelines.catalog import CATALOG
from tests.support import SAMPLES, run_python

POLICIES = sorted(op for op, spec in CATALOG.items() if spec.conditionals)

_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    from dali_gallery.pipelines import autograph_scope, preview_pipeline
    from dali_gallery.pipelines.engine import PreviewEngine
    from dali_gallery.pipelines.pipeline_cache import PipelineCache
    from dali_gallery.pipelines.catalog import CATALOG

    rule, out, samples, policies = sys.argv[1] == "rule", sys.argv[2], sys.argv[3], sys.argv[4:]
    if not rule:  # DALI's own rules: the preview must not add ours
        preview_pipeline.convert_only_branching = lambda: False
    saved = {}
    engine = PreviewEngine("cpu", cache=PipelineCache(None))
    engine.set_images(samples)
    for op in policies:
        preset = {"format": "dali-gallery/preset", "version": 1, "seed": 11,
                  "steps": [{"op": op, "params": {}}], "output": None}
        result = engine.render(preset, draws=3)
        for k, img in enumerate(result.images):
            saved[f"{op}_{k}"] = img
        saved[f"{op}_records"] = np.array(json.dumps(
            [r.values for r in result.records], sort_keys=True, default=str))
    engine.close()

    # DALI's own policies, as its documentation calls them
    from nvidia.dali import fn, pipeline_def, types
    from nvidia.dali.auto_aug import auto_augment, rand_augment, trivial_augment
    images = [saved[f"{policies[0]}_{k}"] for k in range(2)]

    @pipeline_def(enable_conditionals=True, batch_size=2, num_threads=1, device_id=None,
                  seed=5)
    def own():
        data = fn.external_source(source=lambda: images, layout="HWC", dtype=types.UINT8,
                                  batch=True)
        return (rand_augment.rand_augment(data, n=2, m=9),
                trivial_augment.trivial_augment_wide(data),
                auto_augment.auto_augment(data))

    pipe = own()
    pipe.build()
    for name, batch in zip(("rand", "trivial", "auto"), pipe.run()):
        for k in range(len(batch)):
            saved[f"dali_{name}_{k}"] = np.array(batch[k])
    saved["skipped"] = np.array(autograph_scope.plain_modules_skipped())
    np.savez(out, **saved)
""")


def _render(tmp_path: Path, rule: bool) -> dict[str, np.ndarray]:
    out = tmp_path / f"{'rule' if rule else 'dali'}.npz"
    script = tmp_path / "render_policies.py"  # a file: autograph reads the source it rewrites
    script.write_text(_SCRIPT)
    done = run_python("-W", "ignore", str(script), "rule" if rule else "dali", str(out),
                      str(SAMPLES), *POLICIES)
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out) as data:
        return {k: data[k] for k in data.files}


@pytest.fixture(scope="module")
def both(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    tmp = tmp_path_factory.mktemp("autograph")
    return _render(tmp, rule=False), _render(tmp, rule=True)


def test_the_policies_are_the_catalog_entries_that_need_conditionals():
    assert len(POLICIES) >= 3  # the three auto_aug policies today
    assert all(CATALOG[op].conditionals for op in POLICIES)


def test_the_rule_is_on_only_where_it_was_asked_for(both):
    dali, rule = both
    assert not bool(dali["skipped"])
    assert bool(rule["skipped"])


def test_every_policy_renders_the_same_pixels_and_records_with_the_rule(both):
    dali, rule = both
    assert sorted(dali) == sorted(rule)
    tiles = [k for k in dali if k.split("_")[-1].isdigit() and not k.startswith("dali_")]
    assert len(tiles) == 3 * len(POLICIES) * len(list(SAMPLES.glob("*.jpg")))
    for key in dali:
        if key == "skipped":
            continue
        assert dali[key].shape == rule[key].shape, key
        assert np.array_equal(dali[key], rule[key]), key
    for op in POLICIES:  # the records are there to compare: one per tile
        assert len(json.loads(str(dali[f"{op}_records"]))) == 3 * len(list(SAMPLES.glob("*.jpg")))


def test_dali_s_own_policy_functions_still_trace_and_change_the_images(both):
    """Their batch split (``auto_aug.core._select``) still goes through autograph: with it
    called as it is, the trace would fail on a ``DataNode`` used as a bool."""
    _, rule = both
    for name in ("rand", "trivial", "auto"):
        outs = [rule[f"dali_{name}_{k}"] for k in range(2)]
        assert all(o.dtype == np.uint8 and o.ndim == 3 for o in outs)
    changed = sum(not np.array_equal(rule[f"dali_rand_{k}"], rule[f"{POLICIES[0]}_{k}"])
                  for k in range(2))
    assert changed >= 1


def test_the_skipped_modules_exist_branch_on_no_data_node_and_call_no_batch_split():
    """Each skipped module is a real DALI module; its source has no ``while``, no ``if`` on
    a name DALI's policies bind to a ``DataNode`` (``data``, ``sample``, ``op_idx``) and no
    call of the batch split (``select``) or of a policy's apply: code called from a skipped
    module is not rewritten either. The premise of the rule, read from DALI."""
    import importlib
    import inspect

    for name in PLAIN_MODULES:
        source = inspect.getsource(importlib.import_module(name))
        code = [line.split("#")[0] for line in source.splitlines()]
        assert not any(line.strip().startswith("while ") for line in code), name
        for line in code:
            text = line.strip()
            if text.startswith(("if ", "elif ")):
                assert not any(f"{var} " in text or f"{var}:" in text
                               for var in ("data", "sample", "op_idx", "selected_op_idx")), \
                    (name, text)
        calls = [line for line in code if "select(" in line or "apply_" in line]
        assert not calls, (name, calls)
