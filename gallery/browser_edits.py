"""The builder's edits as a visitor makes them in Chromium, each timed to its new preview.

Used by :mod:`.browser_bench` on a served page. Each edit is timed with the page's own clock,
from the key press or pointer press that makes it to the builder's first preview tile getting a
new picture, beside the engine's render time of that preview (the builder's status line):

* structural edits (add a step from the picker, disable and enable a step, duplicate one, move
  one, remove one) on a chain without a policy, then the same with the catalog's first policy in
  the chain (its conditionals make every new chain a new, slower pipeline);
* mode changes (a parameter switched between fixed, range and list: :func:`mode_changes`).

Targets (issue 13, the 2-core CPU machine): a structural edit <= 1 s (median) without a policy,
<= 2 s with one; a parameter or mode change <= 1.5x the engine's render time.
"""

from __future__ import annotations

import re
import statistics
import time
from collections.abc import Callable
from typing import Any

from dali_gallery.pipelines.catalog import CATALOG
from dali_gallery.pipelines.timing import p95
from dali_gallery.widgets.style import param_class

TILE = ".dg-builder img.dg-preview-tile"
CARD = ".dg-builder .dg-step-card"
STATUS = ".dg-builder .dg-status"
POLICY = next(name for name, spec in CATALOG.items() if spec.conditionals)
"""The policy the policy edits add (an auto_aug policy: DALI conditionals)."""
STRUCTURAL_TARGET_MS = {"no_policy": 1000.0, "with_policy": 2000.0}
MODE_RATIO_TARGET = 1.5
TIMEOUT_MS = 120_000

_EDIT_WATCH_JS = """(sel) => {
  const first = () => document.querySelector(sel);
  const was = first() ? first().src : null;
  window.__dgEdit = {key: null, shown: null};
  const start = () => {
    if (window.__dgEdit.key === null) window.__dgEdit.key = performance.now();
  };
  document.addEventListener("keydown", start, {capture: true, once: true});
  document.addEventListener("pointerdown", start, {capture: true, once: true});
  const check = () => {
    const img = first();
    if (window.__dgEdit.shown === null && img && img.src !== was) {
      window.__dgEdit.shown = performance.now();
    }
  };
  if (window.__dgEditObs) window.__dgEditObs.disconnect();
  window.__dgEditObs = new MutationObserver(check);
  window.__dgEditObs.observe(document.querySelector(".dg-builder"),
    {subtree: true, childList: true, attributes: true, attributeFilter: ["src"]});
}"""


def engine_ms(page: Any) -> float | None:
    """The engine's render time of the builder's last preview (its status line)."""
    text = page.locator(STATUS).first.inner_text()
    m = re.search(r"in (\d+(?:\.\d+)?) ms", text)
    return float(m.group(1)) if m else None


def settle(page: Any, quiet_ms: int = 800) -> None:
    """Until the builder's first preview tile has not changed for ``quiet_ms``."""
    last, since = None, time.monotonic()
    while time.monotonic() - since < quiet_ms / 1000:
        src = page.locator(TILE).first.get_attribute("src")
        if src != last:
            last, since = src, time.monotonic()
        page.wait_for_timeout(100)


def timed_edit(page: Any, name: str, act: Callable[[], None]) -> dict[str, Any]:
    """``act()`` (a key or pointer press on the page), timed to the new preview picture."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    settle(page)
    page.evaluate(_EDIT_WATCH_JS, TILE)
    act()
    try:
        page.wait_for_function("() => window.__dgEdit.shown !== null", timeout=TIMEOUT_MS)
    except PlaywrightTimeout as e:  # say which edit left the tile as it was
        status = page.locator(STATUS).first.inner_text()
        raise AssertionError(f"{name}: the preview did not change within {TIMEOUT_MS} ms "
                             f"(builder status: {status!r})") from e
    ms = page.evaluate("() => window.__dgEdit.shown - window.__dgEdit.key")
    page.wait_for_timeout(300)  # the status line follows the image
    return {"edit": name, "ms": round(ms, 1), "engine_ms": engine_ms(page)}


def add_step(page: Any, op: str) -> dict[str, Any]:
    """Type an operator in the picker and press Enter."""
    search = page.locator(".dg-builder .dg-picker-search input").first

    def act() -> None:
        search.fill(op)
        search.press("Enter")

    return timed_edit(page, f"add {op}", act)


def card_edits(page: Any) -> list[dict[str, Any]]:
    """On a chain of three steps or more: disable and enable the second, duplicate the first,
    move the third (the second before) up, remove the third (the copy): the chain is as it
    was."""
    def card(k: int) -> Any:
        return page.locator(CARD).nth(k)

    return [
        timed_edit(page, "disable", lambda: card(1).locator(".dg-step-enabled input").click()),
        timed_edit(page, "enable", lambda: card(1).locator(".dg-step-enabled input").click()),
        timed_edit(page, "duplicate", lambda: card(0).locator(".dg-step-duplicate").click()),
        timed_edit(page, "move up", lambda: card(2).locator(".dg-step-up").click()),
        timed_edit(page, "remove", lambda: card(2).locator(".dg-step-remove").click()),
    ]


def mode_changes(page: Any, param: str) -> list[dict[str, Any]]:
    """The first step's ``param`` switched to fixed, range, list and range again. Each switch
    changes the picture: a range draws per sample, while a switch between fixed and list does
    not (a list starts as the one fixed value: the same pipeline output)."""
    modes = page.locator(CARD).first.locator(f".{param_class(param)} .dg-param-mode")
    start = modes.locator("button.mod-active").first.inner_text().strip()
    order = ([] if start == "range" else ["range"]) + ["fixed", "range", "list", "range"]
    return [timed_edit(page, f"{param}: {label}",
                       lambda label=label: modes.locator("button", has_text=label).click())
            for label in order]


def summary(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "p95": round(p95(values), 2),
            "max": round(max(values), 2)}


def builder_edits(page: Any, ops: list[str], param: str) -> dict[str, Any]:
    """Every edit above on the page's builder (empty, its preview showing), in order: ``ops``
    added, card edits, mode changes of the first step's ``param``, then the policy added and
    the card edits again. Each group with its median against its target."""
    plain = [add_step(page, op) for op in ops] + card_edits(page)
    modes = mode_changes(page, param)
    policy = [add_step(page, POLICY)] + card_edits(page)
    out: dict[str, Any] = {}
    for name, edits in (("no_policy", plain), ("with_policy", policy)):
        stats = summary([e["ms"] for e in edits])
        out[name] = {"edits": edits, "ms": stats, "target_ms": STRUCTURAL_TARGET_MS[name],
                     "within_target": stats["median"] <= STRUCTURAL_TARGET_MS[name]}
    ratios = [e["ms"] / e["engine_ms"] for e in modes if e["engine_ms"]]
    out["mode_change"] = {"edits": modes, "ms": summary([e["ms"] for e in modes]),
                          "over_engine": round(statistics.median(ratios), 2) if ratios else None,
                          "target_ratio": MODE_RATIO_TARGET,
                          "within_target": bool(ratios) and statistics.median(ratios)
                          <= MODE_RATIO_TARGET}
    return out
