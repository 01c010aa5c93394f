"""How the distribution view draws what many draws said: the firing-rate table, the histograms
of every sampled value (matplotlib, as PNG) and the policies' pick counts.

Display only: every number shown is counted from the engine's records
(:mod:`dali_gallery.pipelines.distribution_stats`); user-visible strings are escaped.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from html import escape

import numpy as np

from dali_gallery.pipelines.distribution_stats import ALPHA, Picks, Rate, Sampled

MAX_HISTOGRAMS = 24
"""Histograms drawn in one figure (a chain of 64 steps could ask for hundreds)."""
COLUMNS = 3
_OK, _BAD, _MUTED = "#2e7d32", "#c62828", "#666"
_TABLE = '<table style="font-size:12px;border-collapse:collapse" cellpadding="3">'


def _where(step: int, child: int | None) -> str:
    return f"{step}" if child is None else f"{step}.{child}"


def rates_html(rates: Sequence[Rate], draws: int) -> str:
    """Observed firing rate against the configured probability, one row per step, with the
    binomial range and a note on what it means."""
    if not rates:
        return "<i>no enabled steps</i>"
    rows = []
    for r in rates:
        op = escape(r.op) if r.child is None else f"&#8627; {escape(r.op)}"
        if r.fired is None:
            rows.append(f"<tr><td>{_where(r.step, r.child)}</td><td>{op}</td>"
                        f"<td>{r.configured:.3g}</td><td colspan=3 style='color:{_MUTED}'>"
                        "every sample (no coin to count)</td></tr>")
            continue
        ok = r.within
        verdict = (f"<span style='color:{_OK}'>within</span>" if ok else
                   f"<b style='color:{_BAD}'>outside</b>")
        rows.append(f"<tr><td>{_where(r.step, r.child)}</td><td>{op}</td>"
                    f"<td>{r.configured:.3g}</td><td>{r.fired} / {r.draws} = "
                    f"<b>{r.observed:.3f}</b></td><td>{r.lo} to {r.hi}</td><td>{verdict}"
                    "</td></tr>")
    note = (f"<div style='font-size:11px;color:{_MUTED}'>Counts are the pipeline's own coin "
            f"records over {draws} draws. The range is the exact binomial range of {draws} "
            f"coins at the configured probability: a step that fires as configured lands in it "
            f"{1 - ALPHA:.1%} of the time, so <i>outside</i> means a real deviation or a "
            f"1-in-{round(1 / ALPHA)} fluke. A group's child is expected to run with the "
            "group's p &times; its chance to be picked &times; its own p.</div>")
    return (_TABLE + "<tr><th>#</th><th>step</th><th>configured p</th><th>fired</th>"
            f"<th>binomial range ({1 - ALPHA:.1%})</th><th></th></tr>" + "".join(rows)
            + "</table>" + note)


def histograms_png(sampled: Sequence[Sampled], *, panel_in: float = 3.0) -> bytes:
    """One histogram per sampled value (the first :data:`MAX_HISTOGRAMS`), values where the
    step ran stacked on those drawn for samples where it did not, the configured range
    dashed. Uses matplotlib's object API (no pyplot state): safe off the main thread."""
    from matplotlib.figure import Figure

    shown = list(sampled)[:MAX_HISTOGRAMS]
    if not shown:
        return b""
    cols = min(COLUMNS, len(shown))
    rows = -(-len(shown) // cols)
    fig = Figure(figsize=(panel_in * cols, 2.2 * rows), dpi=80)
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    for ax, s in zip(axes, shown, strict=False):
        values = s.values.astype(np.float64)
        ran, skipped = values[s.applied], values[~s.applied]
        ax.hist([ran, skipped], bins=_bins(values, s.bounds), stacked=True,
                color=["#1f77b4", "#c7c7c7"], label=["step ran", "drawn, step skipped"])
        for edge in s.bounds or ():
            ax.axvline(edge, color="#d62728", lw=1, ls="--")
        ax.set_title(f"{_where(s.step, s.child)} {s.op}: {s.param}", fontsize=8)
        ax.set_xlabel(s.configured[:60], fontsize=7)
        ax.tick_params(labelsize=7)
    for ax in axes[len(shown):]:
        ax.set_visible(False)
    axes[0].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    return buf.getvalue()


def _bins(values: np.ndarray, bounds: tuple[float, float] | None) -> np.ndarray | int:
    """One bin per integer for whole-number values (bins, choices), else 30 over the range."""
    if values.size and np.all(values == np.round(values)):
        lo, hi = values.min(), values.max()
        if bounds is not None:
            lo, hi = min(lo, bounds[0]), max(hi, bounds[1])
        if hi - lo <= 64:
            return np.arange(lo - 0.5, hi + 1.5)
    return 30


def picks_html(picks: Sequence[Picks]) -> str:
    """Per policy step: how often each augmentation (or sub-policy) was picked where the step
    ran, per level, against the binomial range of a uniform pick, and the range of the
    step's other draws for each pick."""
    if not picks:
        return ("<i>no auto-augment policy in the chain (a policy shows here which operation "
                "each sample got)</i>")
    return "".join(_pick_table(p) for p in picks)


def _pick_table(p: Picks) -> str:
    counts = p.counts
    ran = int(p.applied.sum())
    lo, hi = p.expected_range()
    levels = counts.shape[0]
    head = "".join(f"<th>level {k + 1}</th>" for k in range(levels)) if levels > 1 else \
        "<th>picked</th>"
    extra = "".join(f"<th>{escape(name)} drawn</th>" for name in p.numeric)
    rows = []
    for k, label in enumerate(p.labels):
        cells = "".join(_count_cell(int(c), lo, hi) for c in counts[:, k])
        ranges = "".join(f"<td>{_value_range(v[(p.pick_of(name) == k) & p.applied])}</td>"
                         for name, v in p.numeric.items())
        rows.append(f"<tr><td>{k}</td><td>{escape(label)}</td>{cells}{ranges}</tr>")
    title = (f"<b>step {_where(p.step, p.child)} {escape(p.op)}</b>: {escape(p.doc)}; "
             f"{ran} samples where it ran; a uniform pick of {len(p.labels)} lands in "
             f"{lo} to {hi} per row ({1 - ALPHA:.1%})")
    return (f"<div style='margin:6px 0 2px 0;font-size:12px'>{title}</div>" + _TABLE
            + f"<tr><th>#</th><th>picked</th>{head}{extra}</tr>" + "".join(rows) + "</table>")


def _count_cell(count: int, lo: int, hi: int) -> str:
    colour = "inherit" if lo <= count <= hi else _BAD
    return f"<td style='color:{colour}'>{count}</td>"


def _value_range(values: np.ndarray) -> str:
    if values.size == 0:
        return "&ndash;"
    lo, hi = values.min(), values.max()
    return f"{lo:g}" if lo == hi else f"{lo:g} to {hi:g}"
