"""The error of a failed render, and which step of the chain caused it.

A render fails in the generated preview module, while tracing (Python exceptions raised in
``augment``) or while DALI runs it (DALI's error quotes where the failing operator was defined,
as Python traceback entries). Either way the failure points at lines of that module, and the
chain knows which step wrote each line (:attr:`pipelines.codegen.Chain.module_lines`).
"""

from __future__ import annotations

import re
import traceback
from pathlib import Path

from .codegen import Chain
from .preset import Preset

MESSAGE_MAX = 600
_NOISE = re.compile(r"(Current pipeline object is no longer valid\.|C\+\+ context: \[[^\]]*\]\s*)")


class StepError(RuntimeError):
    """A render failed; ``step``/``op`` name the step that caused it when that is known."""

    def __init__(self, message: str, step: int | None = None, op: str | None = None) -> None:
        self.step = step
        self.op = op
        self.detail = message
        where = f"step {step} ({op}): " if step is not None else ""
        super().__init__(where + message)


def name_step(error: BaseException, module: Path, chain: Chain, preset: Preset) -> StepError:
    """``error`` as a :class:`StepError` naming the step behind the last line of ``module``
    it passed through: the exception's own frames first, then the definition site DALI
    quotes for a failed operator (``File "<module>", line <n>``)."""
    lines = [f.lineno for f in traceback.extract_tb(error.__traceback__)
             if Path(f.filename).name == module.name and f.lineno is not None]
    quoted = re.escape(module.name) + r'", line (\d+)'
    lines += [int(n) for n in re.findall(quoted, str(error))]
    steps = [s for s in (chain.step_at(line) for line in lines) if s is not None]
    step = steps[-1] if steps else None
    op = preset.steps[step].op if step is not None else None
    message = clean_message(str(error))
    children = [c for c in (chain.child_at(line) for line in lines) if c is not None]
    if children and children[-1][0] == step:  # a group's child: named after the group
        group = preset.steps[children[-1][0]]
        child = getattr(group, "children", [])[children[-1][1]]
        message = f"child {children[-1][1]} ({child.op}): {message}"
    return StepError(message, step, op)


def clean_message(text: str) -> str:
    """DALI's message without the C++ context and the generated file's traceback."""
    m = re.search(r"encountered:\s*(.*)", text, re.S)
    msg = m.group(1) if m else text
    msg = _NOISE.sub("", msg)
    msg = re.sub(r"\s+", " ", msg).strip()
    return msg[:MESSAGE_MAX]
