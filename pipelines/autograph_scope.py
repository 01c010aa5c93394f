"""DALI's autograph left to convert only the ``auto_aug`` code that branches on data.

A pipeline with ``enable_conditionals`` is traced through DALI's autograph, which rewrites every
function the pipeline calls, and DALI asks it to rewrite all of ``nvidia.dali.auto_aug``. Most
of that package only builds operators: each augmentation, the ``Augmentation`` wrapper that maps
a magnitude bin to a parameter, the policy record and the argument helpers branch on Python
values (numbers, types, names), never on a ``DataNode``. Rewriting them gives the same graph and
costs most of a policy's first trace in a process: on 2 cores 1.2 of the 1.7 s autograph spent
in the first traces of two policies (49 functions, each parsed and rewritten once per process),
and every trace-ahead worker is a new process (:mod:`.trace_ahead`). With the rule the first of
those traces took 0.55 s instead of 1.7 s, and a cold gallery on 2 cores 4.7-4.9 s instead of
6.8-6.9 s.

:func:`convert_only_branching` tells autograph to call :data:`PLAIN_MODULES` as they are. The
code that branches on data (``auto_aug.core._select``, which splits a batch among operations,
``core._utils``, which calls it, and the policies' apply functions, one of which runs a stage
when its coin says so) is still rewritten, so DALI's own policy functions keep working in the
same process (tested, with the same images as without this rule). Were a later DALI to branch on a
``DataNode`` in one of these modules, the trace fails loudly: a ``DataNode`` used as a bool
raises ``TypeError``.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

PLAIN_MODULES = (
    "nvidia.dali.auto_aug.augmentations",
    "nvidia.dali.auto_aug.core._augmentation",
    "nvidia.dali.auto_aug.core._args",
    "nvidia.dali.auto_aug.core.decorator",
    "nvidia.dali.auto_aug.core.policy",
)
"""``auto_aug`` modules whose control flow reads Python values only and that call nothing that
branches on data (read in DALI 2.4). Not ``core._utils``: its ``pretty_select`` calls the batch
split, which must be rewritten."""

_LOCK = threading.Lock()


def _action(config: Any, module: str) -> Any:
    """What autograph's rules decide for ``module``, read as autograph reads them: the first
    rule that says convert or do not convert."""
    named = SimpleNamespace(__name__=module)
    for rule in config.CONVERSION_RULES:
        action = rule.get_action(named)
        if action != config.Action.NONE:
            return action
    return config.Action.NONE


def plain_modules_skipped() -> bool:
    """Whether this process's autograph calls every one of :data:`PLAIN_MODULES` as it is."""
    import nvidia.dali._conditionals  # noqa: F401 (sets DALI's rules)
    from nvidia.dali._autograph.core import config

    return all(_action(config, name) == config.Action.DO_NOT_CONVERT for name in PLAIN_MODULES)


def convert_only_branching() -> bool:
    """Put a do-not-convert rule for each of :data:`PLAIN_MODULES` ahead of DALI's own rules
    (once per process; DALI sets its rules when ``nvidia.dali._conditionals`` is imported).
    Returns True when this call added them."""
    import nvidia.dali._conditionals  # noqa: F401 (sets DALI's rules, which ours must precede)
    from nvidia.dali._autograph.core import config

    with _LOCK:
        if plain_modules_skipped():
            return False
        rules = tuple(config.DoNotConvert(name) for name in PLAIN_MODULES)
        config.CONVERSION_RULES = rules + tuple(config.CONVERSION_RULES)
        return True
