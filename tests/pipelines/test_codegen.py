"""The preview module: its source is the pipeline's structure key, so it must change with
every build-time value and never with a fed one, and memoising it must not serve stale code."""

from __future__ import annotations

import numpy as np

from dali_gallery.pipelines.catalog import CATALOG, unregister
from dali_gallery.pipelines.codegen import preview_module
from dali_gallery.pipelines.custom import custom_op
from dali_gallery.pipelines.params import Param
from dali_gallery.pipelines.preset import Uniform, load
from tests.support import preset_dict


def module(steps, **kw) -> str:
    return preview_module(load(preset_dict(steps)), **kw)[0]


def test_fed_values_do_not_change_the_source():
    a = module([{"op": "rotate", "probability": 0.3, "params": {"angle": 10.0}}])
    b = module([{"op": "rotate", "probability": 0.8, "params": {"angle": -40.0}}])
    c = module([{"op": "rotate", "probability": 0.3,
                 "params": {"angle": {"uniform": [-5, 5]}}}])
    d = module([{"op": "rotate", "probability": 0.3,
                 "params": {"angle": {"uniform": [-50, 50]}}}])
    assert a == b and c == d and a != c


def test_build_time_values_and_structure_change_the_source():
    base = module([{"op": "water", "params": {"ampl_x": 5.0}}])
    assert module([{"op": "water", "params": {"ampl_x": 6.0}}]) != base
    assert "6.0" in module([{"op": "water", "params": {"ampl_x": 6.0}}])
    assert module([{"op": "water", "probability": 0.5, "params": {"ampl_x": 5.0}}]) != base
    assert module([{"op": "water", "params": {"ampl_x": 5.0}}, {"op": "flip"}]) != base
    assert module([{"op": "water", "params": {"ampl_x": 5.0}}]) == base  # memoised, equal


def test_the_training_tail_is_part_of_the_key():
    steps = [{"op": "flip"}]
    out = {"resize_shorter": 160, "crop": [128, 128]}
    plain = preview_module(load(preset_dict(steps, output=out)))[0]
    tailed = preview_module(load(preset_dict(steps, output=out)), tail=True)[0]
    other = preview_module(load(preset_dict(steps, output={**out, "crop": [96, 96]})),
                           tail=True)[0]
    assert "def finish" not in plain and "def finish" in tailed
    assert "(128, 128)" in tailed and "(96, 96)" in other


def _shift_by_one():
    def shift(image, amount):
        return np.clip(image.astype(np.int16) + 1, 0, 255).astype(np.uint8)

    return shift


def _shift_by_two():
    def shift(image, amount):
        return np.clip(image.astype(np.int16) + 2, 0, 255).astype(np.uint8)

    return shift


def test_redefining_a_custom_operator_gives_its_new_source():
    """Same name, same function name, new body: the module must carry the new body."""
    p = (Param("amount", "float", 0.5, "How much", bounds=(0, 1), slider=(0, 1), step=0.01,
               runtime=True),)
    try:
        custom_op("custom.test_redefined", "A test operator.", params=p)(_shift_by_one())
        before = module([{"op": "custom.test_redefined"}])
        custom_op("custom.test_redefined", "A test operator.", params=p,
                  replace=True)(_shift_by_two())
        after = module([{"op": "custom.test_redefined"}])
    finally:
        unregister(CATALOG, "custom.test_redefined")
    assert "+ 1, 0, 255" in before and "+ 2, 0, 255" in after


def test_the_module_records_the_lines_of_each_step():
    """Each step's block, split over several lines by the formatter, is recorded as the lines
    it occupies; the chain's return and the training tail belong to no step."""
    steps = [{"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-9, 9]}}},
             {"op": "custom.vignette", "params": {}},
             {"op": "hue", "params": {"hue": 10.0}, "enabled": False},
             {"op": "noise.gaussian", "params": {"stddev": 4.0}}]
    preset = load(preset_dict(steps, output={"crop": [32, 32]}))
    for _ in range(2):  # built, then served from the memo
        code, chain = preview_module(preset, tail=True)
        lines = code.splitlines()
        assert sorted(chain.module_lines) == [0, 1, 3]
        for step, block in chain.module_lines.items():
            assert lines[block[0] - 1].strip().startswith(f"# step {step}: ")
            assert len(block) > 2  # the formatter split the calls
            assert all(chain.step_at(n) == step for n in block)
            after = lines[block[-1]].strip()  # the line after the block
            assert after.startswith(("# step", "return images"))
        end = max(max(b) for b in chain.module_lines.values())
        assert all(chain.step_at(n) is None for n in range(end + 1, len(lines) + 1))
        assert all(chain.step_at(n) is None for n in range(1, min(chain.module_lines[0])))


# ---- groups (one_of) ---------------------------------------------------------------------------


def group_module(weights=(1, 2, 1), p=0.5, child_p=0.5, angle=10.0, pick=1, enabled=True) -> str:
    return module([{"one_of": [
        {"op": "rotate", "probability": child_p, "params": {"angle": angle}},
        {"op": "hue", "params": {"hue": {"uniform": [-5, 5]}}, "enabled": enabled},
        {"op": "flip"}], "probability": p, "weights": list(weights), "pick": pick}])


def test_fed_group_values_do_not_change_the_source():
    base = group_module()
    assert group_module(weights=(7, 0.5, 3), p=0.9, child_p=0.2, angle=-30.0) == base
    assert group_module(pick=2) == group_module(pick=2, weights=(3, 1, 2))
    for text in ("0.5", "7", "-30"):  # no fed value is written into the structure key
        assert text not in base.split("def augment", 1)[1].replace("_op_seed(seed", "")


def test_group_structure_changes_the_source():
    base = group_module()
    assert group_module(pick=2) != base and group_module(pick=3) != group_module(pick=2)
    assert group_module(p=1.0) != base and group_module(child_p=1.0) != base
    assert group_module(enabled=False) != base  # a disabled child is not in the graph
    unweighted = module([{"one_of": [{"op": "rotate"}, {"op": "hue"}, {"op": "flip"}]}])
    assert "p=P(" not in unweighted and "fn.random.choice(3, seed=" in unweighted


def test_every_random_node_of_a_chain_has_its_own_seed_slot():
    """The widest chain: 64 steps, each a group of 16 children that draw every parameter,
    plus the tail's mirror coin: no two nodes share a slot."""
    import re

    from dali_gallery.pipelines.codegen import chain_source
    from dali_gallery.pipelines.module_parts import TAIL_SLOT
    from dali_gallery.pipelines.preset import MAX_CHILDREN, Group, Preset, new_step

    child = new_step("noise.gaussian", stddev=Uniform(1, 5))  # a draw, a coin, its own seed
    child.probability = 0.5
    chain = Preset([Group([child] * MAX_CHILDREN, 0.5, pick=2, weights=[1.0] * MAX_CHILDREN)
                    for _ in range(64)])
    body = "\n".join(chain_source(chain, "export").body)
    slots = [int(s) for s in re.findall(r"_op_seed\(seed, (\d+)\)", body)]
    assert len(slots) == 64 * (1 + MAX_CHILDREN * (1 + 3))  # coin; a key and 3 per child
    assert len(set(slots)) == len(slots)
    assert max(slots) < TAIL_SLOT


def test_the_module_records_the_lines_of_a_group():
    preset = load(preset_dict([{"op": "flip"}, {"one_of": [
        {"op": "rotate", "probability": 0.5, "params": {"angle": {"uniform": [-9, 9]}}},
        {"op": "hue"}], "probability": 0.5}, {"op": "flip"}]))
    code, chain = preview_module(preset)
    lines = code.splitlines()
    block = chain.module_lines[1]
    assert lines[block[0] - 1].strip().startswith("# step 1: one_of (pick 1 of 2), random")
    text = "\n".join(lines[n - 1] for n in block)
    assert "# step 1, child 0: rotate, random" in text and "if ran_1_1:" in text
    assert lines[block[-1]].strip().startswith("# step 2: ")
    for j in (0, 1):  # each child's block, inside its group's
        child = chain.child_module_lines[(1, j)]
        assert lines[child[0] - 1].strip().startswith(f"# step 1, child {j}: ")
        assert set(child) <= set(block) and all(chain.child_at(n) == (1, j) for n in child)
    assert chain.child_at(block[0]) is None  # the group's own lines belong to no child
