"""The poster of a pooled kernel's first screen (gallery.poster): what it holds, drawn from the
gallery's real cards, and that nothing on it is taken as markup."""

from __future__ import annotations

import base64
import io
import re

import numpy as np
import pytest
from PIL import Image

from dali_gallery.gallery.poster import (
    POSTER_CLASS,
    POSTER_TILE,
    PosterCard,
    poster_cards,
    poster_html,
    shrunk_jpeg,
)
from dali_gallery.gallery.row import card_px
from dali_gallery.gallery.view import GalleryView
from dali_gallery.pipelines.catalog import CATALOG, Catalog
from dali_gallery.pipelines.display import encode_image

IMG_RE = re.compile(r'<img class="dg-poster-tile" width="(\d+)" alt="([^"]*)" '
                    r'src="data:image/jpeg;base64,([^"]+)">')
"""A poster's picture: its CSS width, its label, its JPEG (base64)."""
CARD_RE = re.compile(r'<div class="dg-poster-card"><b>([^<]+)</b>')
"""A poster's card: its operator."""


def _jpeg(width: int, height: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return encode_image(rng.integers(0, 256, (height, width, 3), dtype=np.uint8), "jpeg")


def _pictures(markup: str) -> list[tuple[int, str, Image.Image]]:
    out = []
    for width, alt, data in IMG_RE.findall(markup):
        img = Image.open(io.BytesIO(base64.b64decode(data)))
        img.load()
        out.append((int(width), alt, img))
    return out


def test_a_strip_sent_at_twice_its_width_is_shrunk_to_it_and_a_small_one_kept():
    big = Image.open(io.BytesIO(shrunk_jpeg(_jpeg(256, 600), 128)))
    assert (big.format, big.size) == ("JPEG", (128, 300))
    small = Image.open(io.BytesIO(shrunk_jpeg(_jpeg(100, 90), 128)))
    assert small.size == (100, 90)


def test_the_poster_escapes_every_text_and_carries_each_picture():
    card = PosterCard(op="a<b>", category="geo&metry", doc="<script>alert(1)</script>",
                      labels=["original", 'x="1"'], jpegs=[_jpeg(256, 512), _jpeg(256, 512, 1)],
                      px=128, count=2)
    markup = poster_html([card], head_html="<div>head</div>")
    assert markup.startswith(f'<div class="{POSTER_CLASS}"')
    assert "<script>alert" not in markup and "&lt;script&gt;alert(1)&lt;/script&gt;" in markup
    assert "<b>a&lt;b&gt;</b>" in markup and "geo&amp;metry" in markup
    assert "<div>head</div>" in markup  # the app's own line, trusted
    pictures = _pictures(markup)
    assert [(w, alt) for w, alt, _ in pictures] == [(128, "original"), (128, "x=&quot;1&quot;")]
    assert all(img.format == "JPEG" and img.width == 128 for _, _, img in pictures)
    # the script that takes it away again is the last thing, after the poster's own element
    assert markup.rstrip().endswith("</script>") and markup.count("<script>") == 1


def test_no_cards_no_poster():
    assert poster_html([]) == ""


@pytest.fixture(scope="module")
def gallery(squares_module):
    ops = ("rotate", "brightness", "gaussian_blur", "flip")
    view = GalleryView(device="cpu", size=128, max_images=2,
                       catalog=Catalog([CATALOG[n] for n in ops]))
    view.set_arrays(squares_module, ["a", "b"])
    assert view.wait_idle(120)
    yield view
    view.close()


@pytest.fixture(scope="module")
def squares_module():
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, (96, 160, 3), dtype=np.uint8),
            rng.integers(0, 256, (120, 90, 3), dtype=np.uint8)]


def test_the_poster_shows_the_gallerys_own_cards_in_order(gallery):
    shown = gallery.shown()
    cards = poster_cards(gallery, budget_px=10_000)
    assert [c.op for c in cards] == shown and len(shown) == 4
    for card in cards:
        row = gallery.row(card.op)
        assert card.jpegs == row.strips.jpegs  # DALI's pictures as the live card has them
        assert card.labels == ["original", *(label for label, _ in row.add.options)]
        assert (card.px, card.count) == (row.strips.px, 2)
    markup = poster_html(cards)
    assert [c.op for c in cards] == CARD_RE.findall(markup)
    assert markup.count(f'class="{POSTER_TILE}"') == sum(len(c.jpegs) for c in cards)


def test_the_poster_stops_once_its_cards_fill_a_window(gallery):
    one = card_px(gallery.row("rotate").strips.px, 2)
    assert [c.op for c in poster_cards(gallery, budget_px=one)] == ["rotate"]
    assert [c.op for c in poster_cards(gallery, budget_px=one + 1)] == ["rotate", "brightness"]
    assert len(poster_cards(gallery, budget_px=0)) == 1  # at least the first card
