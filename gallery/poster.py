"""A served page's first picture before its widgets: the pooled kernel's first gallery cards as
plain HTML in the page Voilà sends, shown over the page until the live gallery has a tile.

A kernel of ``dali-gallery serve``'s pool has run the app and rendered the gallery's first
screen before any page asked for it (:mod:`.card_queue`), yet a page could show those pictures
only once Voilà's frontend had loaded (~190 scripts), connected to the kernel and made the
widgets: ~2.2 s on the 2-core machine, most of it the browser's own work on Voilà's scripts.
Those cards exist as pictures in the kernel already, so the kernel also writes them as HTML
(:func:`poster_html`: the cards' header, their DALI-rendered strips, the column labels) into an
output the page's template puts into the page itself (``dali-gallery`` Voilà template): the
browser paints them as it parses the page. The poster lies over the page (the app builds
beneath it) and goes as soon as the live gallery shows its first tile, or the page says that
its widgets failed, or at most :data:`LIVE_GRACE_S` after the app's widgets came. The poster
is pictures only: nothing on it can be clicked; its note says the live gallery is coming.
"""

from __future__ import annotations

import base64
import html
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image

from dali_gallery.pipelines.display import encode_image

from .row import card_px

POSTER_KEY = "dali-gallery/poster"
"""Output metadata key: the ``dali-gallery`` template writes this output's HTML into the page
as it is (every other output goes to Voilà's frontend as usual)."""
POSTER_CLASS = "dg-poster"
POSTER_TILE = "dg-poster-tile"
POSTER_PX = 1000
"""CSS pixels of cards on the poster: about what a window shows (more is bytes for nothing)."""
POSTER_QUALITY = 80
LIVE_GRACE_S = 4.0
"""Longest the poster stays once the app's widgets are on the page (a gallery that shows no
tile at all, e.g. every image refused, must not stay hidden under it)."""
WAIT_S = 30.0
"""Longest a pooled kernel waits for its first screen before it gives up on the poster (no
page is waiting then; the pool only fills later)."""


@dataclass(frozen=True)
class PosterCard:
    """What the poster shows of one card: its header and its column pictures (JPEG bytes as
    the live card has them) with their labels, each ``px`` CSS pixels wide."""

    op: str
    category: str
    doc: str
    labels: list[str]
    jpegs: list[bytes]
    px: int
    count: int


def poster_cards(view: Any, budget_px: int = POSTER_PX) -> list[PosterCard]:
    """The gallery's cards on the page now, in order, until they fill ``budget_px`` (at
    least one): those with pictures only (a refused or GPU-only card has none)."""
    cards: list[PosterCard] = []
    used = 0
    for op in view.shown():
        row = view.row(op)
        spec = view.catalog.get(op)
        if row is None or spec is None or not row.strips.jpegs:
            continue
        if cards and used >= budget_px:
            break
        strips = row.strips
        # under each picture what the live card has there: "original", then its add buttons
        labels = [row.column_label(0), *(c.button for c in row.result.plan.columns)]
        cards.append(PosterCard(op, spec.category, spec.doc, labels[:len(strips.jpegs)],
                                list(strips.jpegs), strips.px, strips.count))
        used += card_px(strips.px, strips.count)
    return cards


def shrunk_jpeg(jpeg: bytes, px: int, quality: int = POSTER_QUALITY) -> bytes:
    """``jpeg`` at ``px`` pixels wide (the live strips are sent at twice their CSS width for
    sharp screens: for a picture shown a second, one pixel per CSS pixel is enough)."""
    with Image.open(io.BytesIO(jpeg)) as img:
        pixels = np.asarray(img.convert("RGB"))
    return encode_image(pixels, "jpeg", quality=quality, fit=(px, pixels.shape[0]))


def poster_html(cards: Sequence[PosterCard], head_html: str = "") -> str:
    """The poster: ``head_html`` (the app's own first line, trusted HTML), then the cards.
    Empty without cards (nothing to show: the page keeps Voilà's spinner)."""
    if not cards:
        return ""
    body = "".join(_card_html(card) for card in cards)
    return (f'<div class="{POSTER_CLASS}" aria-busy="true">{_CSS}{head_html}'
            '<div class="dg-poster-note">Connecting to the live gallery&hellip;</div>'
            f'{body}</div><script>{_SCRIPT % json.dumps(LIVE_GRACE_S * 1000)}</script>')


def _card_html(card: PosterCard) -> str:
    imgs = "".join(
        f'<img class="{POSTER_TILE}" width="{card.px}" alt="{html.escape(label)}" '
        f'src="data:image/jpeg;base64,{base64.b64encode(shrunk_jpeg(data, card.px)).decode()}">'
        for label, data in zip(card.labels, card.jpegs, strict=True))
    labels = "".join(f'<span style="width:{card.px}px">{html.escape(label)}</span>'
                     for label in card.labels)
    return (f'<div class="dg-poster-card"><b>{html.escape(card.op)}</b> '
            f'<small>{html.escape(card.category)}</small><br>'
            f'<small>{html.escape(card.doc)}</small>'
            f'<div class="dg-poster-strips">{imgs}</div>'
            f'<div class="dg-poster-labels">{labels}</div></div>')


_CSS = """<style>
.dg-poster { position: fixed; inset: 0; z-index: 10000; overflow: hidden; padding: 8px 16px;
  background: var(--jp-layout-color0, #fff); font-family: var(--jp-ui-font-family, sans-serif);
  font-size: 13px; cursor: progress; }
.dg-poster-note { margin: 6px 0 10px; color: #555; }
.dg-poster-card { border: 1px solid #d0d0d0; border-radius: 6px; padding: 6px;
  margin-bottom: 10px; width: fit-content; max-width: 100%; }
.dg-poster-strips, .dg-poster-labels { display: flex; }
.dg-poster-strips img { height: auto; margin: 0 2px; }
.dg-poster-labels span { font-size: 11px; text-align: center; margin: 0 2px; }
</style>"""

# Written into the page as it is parsed, inside Voilà's cells (hidden until its frontend has
# started): the poster moves itself to the top of the page at once, then goes when the live
# gallery has a tile, the page watchdog reports, or the app has been up LIVE_GRACE_S.
_SCRIPT = """(() => {
  const poster = document.currentScript.previousElementSibling;
  document.body.appendChild(poster);
  let observer = null;
  const done = () => {
    if (observer) observer.disconnect();
    document.removeEventListener("load", onLoad, true);
    poster.remove();
  };
  const onLoad = (e) => {
    const t = e.target;
    if (t.tagName === "IMG" && t.classList.contains("dg-gallery-tile")) done();
  };
  document.addEventListener("load", onLoad, true);
  let app = false;
  observer = new MutationObserver(() => {
    if (document.querySelector(".dg-page-watchdog.dg-error")) done();
    if (!app && document.querySelector(".dg-app")) {
      app = true;
      setTimeout(done, %s);
    }
  });
  observer.observe(document, {subtree: true, childList: true});
})();"""
