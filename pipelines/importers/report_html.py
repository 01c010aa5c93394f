"""The import and parity report as one self-contained HTML page (images inlined as data URIs),
shown by the builder's Import tab and written by ``dali-gallery import --report``."""

from __future__ import annotations

import base64
from html import escape
from io import BytesIO

import numpy as np

from .convert import ImportResult
from .parity import Comparison, ParityReport, Timing

_STATUS = {"imported": "&#10003;", "tail": "&#10003;", "conversion": "&middot;",
           "not imported": "&#10007;"}
_HOLDS = {True: "<span style='color:#1a7f37'>holds</span>",
          False: "<b style='color:#c62828'>does not hold</b>", None: "no claim"}
THUMB = 160


def image_uri(a: np.ndarray, side: int = THUMB, fmt: str = "JPEG") -> str:
    """A thumbnail as a data URI (JPEG for pictures; PNG keeps a diff image exact)."""
    from PIL import Image

    img = Image.fromarray(np.ascontiguousarray(a.astype(np.uint8)))
    img.thumbnail((side, side))
    buf = BytesIO()
    if fmt == "PNG":
        img.save(buf, "PNG", compress_level=6)
    else:
        img.save(buf, "JPEG", quality=85)
    return f"data:image/{fmt.lower()};base64," + base64.b64encode(buf.getvalue()).decode()


def import_table(result: ImportResult) -> str:
    """Every transform: status, what it became, the verdict, notes and the nearest option."""
    rows = []
    for t in result.transforms:
        became = ", ".join(f"step {i} {result.preset.steps[i].op}" for i in t.steps)
        if t.tail:
            became = (became + "; " if became else "") + "output tail: " + ", ".join(t.tail)
        extra = "; ".join(t.notes)
        if t.nearest:
            extra = (extra + "; " if extra else "") + f"nearest: {t.nearest}"
        inside = f" <i>in {escape(t.inside)}</i>" if t.inside else ""
        rows.append(
            f"<tr class='dg-import-row' data-status='{escape(t.status)}'>"
            f"<td>{_STATUS[t.status]}</td><td><code>{escape(t.call.name)}</code>{inside}"
            f"<div style='opacity:.6;font-size:11px'>{escape(t.call.text)}</div></td>"
            f"<td>{escape(became or '-')}</td><td>{escape(t.verdict.line())}</td>"
            f"<td>{escape(extra)}</td></tr>")
    notes = "".join(f"<li>{escape(n)}</li>" for n in result.notes)
    return (f"<p><b>{escape(result.summary())}</b> ({escape(result.origin)})</p>"
            + (f"<ul>{notes}</ul>" if notes else "")
            + "<table class='dg-import-table' style='border-collapse:collapse;font-size:12px'>"
            "<tr><th></th><th>transform</th><th>became</th><th>verdict</th><th>notes</th></tr>"
            + "".join(rows) + "</table>")


def comparison_html(c: Comparison) -> str:
    head = (f"<div class='dg-parity-step' data-holds='{c.holds}'>"
            f"<b>{escape(c.item.call.name)}</b> <span style='opacity:.7'>"
            f"{escape(c.label)}</span><br>claim: {escape(c.verdict.line())}<br>"
            f"measured: {escape(c.measured())} &mdash; {_HOLDS[c.holds]}")
    tiles = []
    for original, ref, dali, diff in c.samples:
        cells = [("input", original), (c.item.call.library, ref), ("DALI", dali),
                 (f"|difference| x{8}", diff)]
        tiles.append("<div style='display:flex;gap:6px;margin:4px 0'>" + "".join(
            f"<figure style='margin:0'><img src='{image_uri(a, fmt=kind)}'><figcaption "
            f"style='font-size:11px'>{escape(label)}</figcaption></figure>"
            for (label, a), kind in zip(cells, ("JPEG", "JPEG", "JPEG", "PNG"), strict=True))
            + "</div>")
    return head + "".join(tiles) + "</div>"


def timing_table(report: ParityReport) -> str:
    def ms(x: float | None) -> str:
        return "-" if x is None else f"{x:.1f}"

    def row(t: Timing, bold: bool = False) -> str:
        cells = [escape(t.name), ms(t.original_ms), ms(t.dali_cpu_ms), ms(t.dali_gpu_ms),
                 escape(t.note)]
        tag = "th" if bold else "td"
        return "<tr>" + "".join(f"<{tag}>{c}</{tag}>" for c in cells) + "</tr>"

    lib = escape(report.result.library)
    return (f"<table class='dg-timing' style='font-size:12px'><tr><th>step</th><th>{lib} (CPU)"
            "</th><th>DALI CPU</th><th>DALI GPU</th><th></th></tr>"
            + "".join(row(t) for t in report.timings) + row(report.pipeline, True)
            + "</table><p style='font-size:11px;opacity:.7'>milliseconds for "
            f"{report.n_images} decoded images, median of the runs; the original library runs "
            "each transform on the previous one's output; each DALI time includes the engine's "
            "fixed cost per render (feeding values, copying outputs). On a CPU, OpenCV-based "
            "Albumentations is usually faster than DALI's CPU backend; DALI's gain is on the "
            "GPU.</p>")


def report_html(result: ImportResult, report: ParityReport | None) -> str:
    body = parity_html(report) if report is not None else ""
    return "<div class='dg-import-report'>" + import_table(result) + body + "</div>"


def parity_html(report: ParityReport) -> str:
    """The per-step comparisons and the timings."""
    parts = ["<div class='dg-parity'>"]
    if report.install:
        parts.append(f"<p class='dg-install'><b>The original library is not installed"
                     f"</b>: {escape(report.install)}. The pipeline was still imported; "
                     "install it to compare.</p>")
    sizes = ", ".join(f"{h}x{w}" for h, w in report.sizes)
    parts.append(f"<h4>Parity on {report.n_images} images ({escape(sizes)})</h4>")
    parts += [comparison_html(c) for c in report.comparisons]
    if report.timings or report.pipeline.dali_cpu_ms is not None:
        parts.append("<h4>Time</h4>" + timing_table(report))
    parts += [f"<p style='font-size:11px'>{escape(n)}</p>" for n in report.notes]
    parts.append("</div>")
    return "".join(parts)


def page(result: ImportResult, report: ParityReport | None) -> str:
    """A standalone page for the CLI's --report."""
    return ("<!doctype html><html><head><meta charset='utf-8'><title>dali-gallery import "
            "report</title><style>body{font-family:sans-serif;margin:20px}td,th{border:1px "
            "solid #ddd;padding:3px 6px;vertical-align:top}</style></head><body>"
            + report_html(result, report) + "</body></html>")
