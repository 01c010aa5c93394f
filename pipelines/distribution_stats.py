"""What many draws of a chain say: firing rates against the configured probability, the values
each step drew, and what each auto-augment policy picked.

Everything here counts the engine's per-sample records (:class:`~.render_result.SampleRecord`,
read from the pipeline's own outputs); the only numbers computed rather than counted are the
expectations they are compared with: the probability the preset configures for each step
(for a group's child, the chance it is picked too) and the binomial range a fair coin with
that probability lands in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .catalog import CATALOG, Catalog
from .preset import Choice, Group, Preset, Step, Uniform
from .render_result import SampleRecord

ALPHA = 0.001
"""Two-sided level of the binomial range: a step with the configured probability falls
outside it in 1 run of 1000."""
_GRID = 4096


@dataclass(frozen=True)
class Rate:
    """How often one step (or a group's child) ran, against how often it should.

    ``fired`` is None for a step without a coin (probability 1, not in a group that picks):
    it runs on every sample by construction, so there is nothing to count."""

    step: int
    child: int | None
    op: str
    configured: float
    fired: int | None
    draws: int
    lo: int
    hi: int

    @property
    def observed(self) -> float | None:
        return None if self.fired is None else self.fired / max(1, self.draws)

    @property
    def within(self) -> bool | None:
        """Whether the count lies in the binomial range (None: nothing counted)."""
        return None if self.fired is None else self.lo <= self.fired <= self.hi


@dataclass
class Sampled:
    """The values one step drew for one parameter (or a numeric policy draw), one per sample.

    Values are drawn for every sample, applied where the step ran (``applied``)."""

    step: int
    child: int | None
    op: str
    param: str
    values: np.ndarray
    applied: np.ndarray
    configured: str
    bounds: tuple[float, float] | None = None
    """The configured range (uniform) or the smallest and largest choice; None for a draw the
    operator makes (a policy's magnitude bin)."""


@dataclass
class Picks:
    """What a policy step picked: ``counts[level][k]`` samples where it ran and picked
    ``labels[k]`` at that level (RandAugment applies ``n`` levels one after the other).
    ``numeric`` holds the step's numeric draws, per sample, to break down by pick."""

    step: int
    child: int | None
    op: str
    draw: str
    doc: str
    labels: tuple[str, ...]
    picked: np.ndarray
    """Per level, per sample: the index of the label picked."""
    applied: np.ndarray
    numeric: dict[str, np.ndarray] = field(default_factory=dict)
    numeric_levels: dict[str, int] = field(default_factory=dict)
    """Numeric draw -> its level (0-based) where it has one per level (RandAugment's sign)."""

    def pick_of(self, name: str) -> np.ndarray:
        """Per sample, the label picked at the level numeric draw ``name`` belongs to: level k
        of a draw made per level (RandAugment's ``negated_2`` goes with ``op_2``), else the
        first level (AutoAugment's stages all belong to the one sub-policy)."""
        level = self.numeric_levels.get(name, 0)
        return self.picked[level if level < self.picked.shape[0] else 0]

    @property
    def counts(self) -> np.ndarray:
        """[level, label] counts over the samples where the step ran."""
        out = np.zeros((self.picked.shape[0], len(self.labels)), dtype=np.int64)
        for level, row in enumerate(self.picked):
            out[level] = np.bincount(row[self.applied], minlength=len(self.labels))
        return out

    def expected_range(self) -> tuple[int, int]:
        """The binomial range of one label's count at one level (a labelled draw is uniform
        over its labels, :class:`~.draws.Draw`)."""
        return binomial_range(int(self.applied.sum()), 1.0 / len(self.labels))


def binomial_range(n: int, p: float, alpha: float = ALPHA) -> tuple[int, int]:
    """The counts ``[lo, hi]`` that ``n`` coins of probability ``p`` land in with probability
    at least ``1 - alpha`` (each tail at most ``alpha / 2``), from the exact binomial law."""
    if n <= 0 or p <= 0:
        return 0, 0
    if p >= 1:
        return n, n
    k = np.arange(n + 1)
    log_pmf = (math.lgamma(n + 1) - np.array([math.lgamma(x + 1) for x in k])
               - np.array([math.lgamma(n - x + 1) for x in k])
               + k * math.log(p) + (n - k) * math.log1p(-p))
    cdf = np.cumsum(np.exp(log_pmf - log_pmf.max()))
    cdf /= cdf[-1]
    lo = int(np.searchsorted(cdf, alpha / 2, side="right"))
    hi = int(np.searchsorted(cdf, 1 - alpha / 2, side="left"))
    return lo, min(hi, n)


def pick_probabilities(group: Group) -> dict[int, float]:
    """The chance that each enabled child of ``group`` is picked on a sample (before its
    own coin), for the draw the generated code makes: all of them, one by ``fn.random.choice``
    with the normalised weights, or ``pick`` of them by the largest keys ``log(u) / w``
    (equal weights: ``pick / m``; else integrated numerically)."""
    active = group.active_children()
    if group.picks_all():
        return {j: 1.0 for j, _ in active}
    weights = group.normalised_weights()
    if group.pick == 1:
        return {j: w for (j, _), w in zip(active, weights, strict=True)}
    if group.weights is None:
        return {j: group.pick / len(active) for j, _ in active}
    return {j: _inclusion(weights, m, group.pick) for m, (j, _) in enumerate(active)}


def _inclusion(weights: Sequence[float], j: int, k: int) -> float:
    """P(key j is among the k largest) for independent keys ``log(u_i) / w_i`` (ranked as
    ``u_i ** (1 / w_i)``): with ``u = u_j`` uniform, key i exceeds key j with probability
    ``1 - u ** (w_i / w_j)``, so average, over a midpoint grid of u, the chance that fewer
    than k others exceed it."""
    u = (np.arange(_GRID) + 0.5) / _GRID
    fewer = np.zeros((_GRID, k))  # fewer[:, c]: P(exactly c others exceed so far)
    fewer[:, 0] = 1.0
    for i, w in enumerate(weights):
        if i == j:
            continue
        above = 1.0 - u ** (w / weights[j])
        shifted = np.zeros_like(fewer)
        shifted[:, 1:] = fewer[:, :-1] * above[:, None]
        fewer = fewer * (1.0 - above)[:, None] + shifted
    return float(fewer.sum(axis=1).mean())


def _describe(value: object) -> tuple[str, tuple[float, float] | None]:
    if isinstance(value, Uniform):
        return f"uniform({value.lo:g}, {value.hi:g})", (float(value.lo), float(value.hi))
    if isinstance(value, Choice):
        nums = [float(v) for v in value.values]
        shown = ", ".join(str(v) if isinstance(v, bool) else f"{v:g}" for v in value.values[:6])
        more = ", ..." if len(value.values) > 6 else ""
        return f"choice({shown}{more})", (min(nums), max(nums))
    return "", None


def _operators(preset: Preset) -> list[tuple[int, int | None, Step, float]]:
    """Every enabled operator as (step, child, step, configured probability of running)."""
    out: list[tuple[int, int | None, Step, float]] = []
    for i, s in preset.active_steps():
        if isinstance(s, Group):
            picks = pick_probabilities(s)
            out += [(i, j, c, s.probability * picks[j] * c.probability)
                    for j, c in s.active_children()]
        else:
            out.append((i, None, s, s.probability))
    return out


def _ran(records: Sequence[SampleRecord], step: int, child: int | None) -> np.ndarray:
    if child is None:
        return np.array([r.fired.get(step, True) for r in records], dtype=bool)
    return np.array([r.child_ran(step, child) for r in records], dtype=bool)


def _drawn(records: Sequence[SampleRecord], step: int, child: int | None,
           name: str) -> np.ndarray:
    if child is None:
        return np.array([r.values[step][name] for r in records])
    return np.array([r.child_values[step][child][name] for r in records])


def rates(preset: Preset, records: Sequence[SampleRecord]) -> list[Rate]:
    """One row per step with a coin (and per group, and per child of a group): how often it
    ran over ``records`` against the probability the preset configures."""
    n = len(records)
    counted = {(i, None) for r in records[:1] for i in r.fired}
    counted |= {(i, j) for r in records[:1] for i, c in r.children.items() for j in c}
    out = []
    for i, s in preset.active_steps():
        if isinstance(s, Group):  # the group's own coin, before its children
            fired = int(_ran(records, i, None).sum()) if (i, None) in counted else None
            out.append(Rate(i, None, s.op, s.probability, fired, n,
                            *binomial_range(n, s.probability)))
    for i, j, s, p in _operators(preset):
        fired = int(_ran(records, i, j).sum()) if (i, j) in counted else None
        out.append(Rate(i, j, s.op, p, fired, n, *binomial_range(n, p)))
    return sorted(out, key=lambda r: (r.step, -1 if r.child is None else r.child))


def sampled(preset: Preset, records: Sequence[SampleRecord],
            catalog: Catalog = CATALOG) -> list[Sampled]:
    """The values every step drew per sample: parameters drawn from a range or a list, and
    the numbers a policy draws itself (its magnitude bin)."""
    out = []
    for i, j, s, _ in _operators(preset):
        spec = catalog[s.op]
        applied = _ran(records, i, j)
        for p in spec.params:
            configured, bounds = _describe(s.params[p.name])
            if configured:
                out.append(Sampled(i, j, s.op, p.name, _drawn(records, i, j, p.name), applied,
                                   configured, bounds))
        for d in spec.draws:
            if d.labels is None:
                for name, _ in d.records(s.params):
                    out.append(Sampled(i, j, s.op, name, _drawn(records, i, j, name), applied,
                                       f"drawn by {s.op}"))
    return out


def picks(preset: Preset, records: Sequence[SampleRecord],
          catalog: Catalog = CATALOG) -> list[Picks]:
    """What each policy step picked per sample, with its labels and its numeric draws."""
    out = []
    for i, j, s, _ in _operators(preset):
        spec = catalog[s.op]
        numeric = {name: _drawn(records, i, j, name) for d in spec.draws if d.labels is None
                   for name, _ in d.records(s.params)}
        per_level = {name: k for d in spec.draws if d.labels is None
                     for name, k in d.records(s.params) if k is not None}
        for d in spec.draws:
            if d.labels is None:
                continue
            levels = [_drawn(records, i, j, name) for name, _ in d.records(s.params)]
            picked = np.array(levels, dtype=np.int64).reshape(len(levels), len(records))
            out.append(Picks(i, j, s.op, d.name, d.doc, d.labels(s.params), picked,
                             _ran(records, i, j), numeric, per_level))
    return out
