"""The pipeline in the page's link: reload keeps it, a colleague opening the link gets it.

The preset travels in the query string as ``?preset=<base64url(zlib(JSON))>``. The link is
what a browser sends, so it is an untrusted document: the parameter's length is checked
before it is decoded (:data:`MAX_LINK_CHARS`), the decompressed size is capped while it is
decompressed (a small link cannot unpack into gigabytes), and the JSON goes through the preset
loader's document entry point (:func:`~pipelines.preset.parse_document`: the same budgets and
validation as an uploaded preset file). A link carries data only: the operators it names come
from the catalog, never from the link.

:class:`ShareLink` keeps a link to the current pipeline on the page (open it in a new tab, or
copy it); :func:`sync_script` is the page script that copies it into the address bar with
``history.replaceState`` after each edit, so reloading the page restores the pipeline. Nothing
is stored on the server: a visitor without the link sees the default pipeline.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from html import escape
from urllib.parse import parse_qsl

import ipywidgets as w

from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.preset import MAX_DOCUMENT_BYTES, Preset, PresetError, parse_document

from .model import ChainModel, Change, empty_preset
from .style import ERROR

PARAM = "preset"
"""The query parameter that holds the pipeline."""
MAX_LINK_CHARS = 16 * 1024
"""Longest ``preset`` value accepted (and produced): a 40-step pipeline takes about 1.5 KB."""
MAX_QUERY_CHARS = 64 * 1024
"""Longest query string looked at (tornado already refuses request heads over 64 KiB)."""
MAX_QUERY_FIELDS = 64
ORIGIN = "the link's preset"
"""How messages name the pipeline that came in a link."""
SHARE = "dg-share-link"
"""CSS class of the link widget (the page script and the browser tests find it by it)."""

_BASE64URL = re.compile(r"[A-Za-z0-9_-]*={0,2}")


def encode(preset: Preset) -> str:
    """The ``preset`` parameter for ``preset``: compact JSON, zlib, base64url without padding."""
    text = json.dumps(preset.to_dict(), separators=(",", ":"), ensure_ascii=False)
    packed = zlib.compress(text.encode("utf-8"), 9)
    return base64.urlsafe_b64encode(packed).decode("ascii").rstrip("=")


def decode(value: str, catalog: Catalog = CATALOG) -> Preset:
    """The preset a ``preset`` parameter holds; PresetError says what is wrong and what is
    allowed. Every budget is checked before the work it bounds."""
    if len(value) > MAX_LINK_CHARS:
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter is {len(value)} characters; a "
                           f"link holds at most {MAX_LINK_CHARS}"])
    if not _BASE64URL.fullmatch(value):
        bad = next((i for i, c in enumerate(value) if not (c.isascii() and (c.isalnum() or c in
                                                                            "-_="))), None)
        if bad is None:  # only '=' out of place: "ab=cd", "abcd==="
            raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter has '=' at character "
                               f"{value.index('=')}; '=' may only pad its end, at most twice "
                               "(copy the whole link as it was)"])
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter must be base64url text "
                           f"(A-Z, a-z, 0-9, '-', '_'); character {bad} is {value[bad]!r}"])
    try:
        packed = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError) as e:
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter is not valid base64url ({e})"]
                          ) from None
    unpack = zlib.decompressobj()
    try:
        data = unpack.decompress(packed, MAX_DOCUMENT_BYTES + 1)
    except zlib.error as e:
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter is not a compressed preset "
                           f"({e})"]) from None
    if len(data) > MAX_DOCUMENT_BYTES or unpack.unconsumed_tail:
        raise PresetError([f"{ORIGIN}: unpacks to more than {MAX_DOCUMENT_BYTES // 2**20} MiB; "
                           "a preset document is at most that large"])
    if not unpack.eof:
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter is cut short (the compressed "
                           "data does not end); copy the whole link"])
    if unpack.unused_data:  # something appended, or a second stream: not a link we wrote
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter has {len(unpack.unused_data)} "
                           "byte(s) after the compressed preset; copy the link exactly as "
                           "it was"])
    return parse_document(data, catalog, origin=ORIGIN)


def preset_from_query(query: str, catalog: Catalog = CATALOG) -> Preset | None:
    """The pipeline in a page's query string (``a=1&preset=...``), None when it has none."""
    if len(query) > MAX_QUERY_CHARS:
        raise PresetError([f"{ORIGIN}: the page's query string is {len(query)} characters; at "
                           f"most {MAX_QUERY_CHARS} are read"])
    try:
        fields = parse_qsl(query, keep_blank_values=True, max_num_fields=MAX_QUERY_FIELDS)
    except ValueError:
        raise PresetError([f"{ORIGIN}: the page's query string has more than "
                           f"{MAX_QUERY_FIELDS} fields"]) from None
    values = [v for k, v in fields if k == PARAM]
    if not values:
        return None
    if len(values) > 1:
        raise PresetError([f"{ORIGIN}: the {PARAM!r} parameter appears {len(values)} times; a "
                           "link holds one pipeline"])
    return decode(values[0], catalog)


def is_default(preset: Preset) -> bool:
    """The pipeline a page starts with: it needs no link."""
    return preset.to_dict() == empty_preset().to_dict()


class ShareLink:
    """A link to the current pipeline, kept up to date with every edit of ``model``.

    ``value`` is the ``preset`` parameter ('' for the default pipeline, and for one too large
    for a link: ``problem`` then says so). The page script (:func:`sync_script`) reads it from
    the widget's ``data-dg-preset`` attribute."""

    def __init__(self, model: ChainModel) -> None:
        self.model = model
        self.value = ""
        self.problem = ""
        self.widget = w.HTML()
        self.widget.add_class(SHARE)
        model.listen(self._on_change)
        self.update()

    def update(self) -> None:
        preset = self.model.preset
        value = "" if is_default(preset) else encode(preset)
        self.problem = ""
        if len(value) > MAX_LINK_CHARS:
            self.problem = (f"this pipeline is too large for a link ({len(value) / 1024:.1f} KB; "
                            f"a link holds at most {MAX_LINK_CHARS // 1024} KB): save its "
                            "preset from Export instead")
            value = ""
        self.value = value
        self.widget.value = _link_html(value, self.problem)

    def _on_change(self, change: Change) -> None:
        self.update()


def _link_html(value: str, problem: str) -> str:
    if problem:
        return (f'<span class="dg-share-anchor {ERROR}" data-dg-preset="">{escape(problem)}'
                "</span>")
    if not value:
        return ('<span class="dg-share-anchor" data-dg-preset="">The default pipeline: build '
                "one and its link appears here (the address bar keeps it too).</span>")
    href = escape(f"?{PARAM}={value}")
    return (f'Link to this pipeline: <a class="dg-share-anchor" href="{href}" '
            f'data-dg-preset="{escape(value)}" target="_blank" rel="noopener">open</a> '
            '<button class="dg-share-copy" type="button">copy link</button> '
            '<span style="opacity:.7">(the address bar keeps it too: a reload keeps your '
            "pipeline)</span>")


_SCRIPT = """<script>
(() => {
  if (window.__dgShareLink) return;
  window.__dgShareLink = true;
  const PARAM = "%(param)s";
  let shown = null, timer = null;
  const current = () => {
    const el = document.querySelector(".%(cls)s [data-dg-preset]");
    return el ? el.getAttribute("data-dg-preset") : null;
  };
  const apply = () => {
    timer = null;
    const value = current();
    if (value === null || value === shown) return;
    shown = value;
    const url = new URL(window.location.href);
    if (value) url.searchParams.set(PARAM, value); else url.searchParams.delete(PARAM);
    if (url.href !== window.location.href) history.replaceState(history.state, "", url.href);
  };
  // browsers throttle the history API: at most a few updates a second while a slider moves
  const later = () => { if (timer === null) timer = setTimeout(apply, 250); };
  new MutationObserver(later).observe(document.body, {subtree: true, childList: true,
    attributes: true, attributeFilter: ["data-dg-preset"]});
  document.addEventListener("click", (event) => {
    const button = event.target.closest && event.target.closest(".dg-share-copy");
    const link = document.querySelector(".%(cls)s a[data-dg-preset]");
    if (!button || !link) return;
    const done = (text) => { button.textContent = text; };
    if (navigator.clipboard) {
      navigator.clipboard.writeText(link.href).then(() => done("copied"),
        () => done("copy failed: right-click the link"));
    } else { done("right-click the link to copy it"); }
  });
  later();
})();
</script>"""


def sync_script() -> str:
    """The page script (HTML) that keeps the address bar on the current pipeline's link."""
    return _SCRIPT % {"param": PARAM, "cls": SHARE}
