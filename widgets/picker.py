"""The operator picker: a search box over category tabs, one row per catalog operator.

Rows show the operator's one-line description and a tiny live thumbnail of its effect
(rendered when its tab or search result is first shown: ``on_visible``). A row's widgets are
made when its tab or a search first shows it, on shared layouts: a page restores every widget
model the kernel holds before it shows anything, and all rows up front were 550 models of the
page's 1000.
Operators the preview device cannot run stay visible, disabled, with the catalog's reason.
Clicking "add" or pressing Enter in the search box (first available match) adds a step.
The search reads names, descriptions and each operator's declared aliases (torchvision and
albumentations names: :mod:`pipelines.op_search`); a search without results says so and
suggests the closest names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.catalog import CATALOG, CATEGORIES, Catalog, OpSpec
from dali_gallery.pipelines.op_search import no_match

from . import style
from .ui_thread import kernel_loop

ALL = "all"
SUBMIT_DELAY_S = 0.3


class PickerItem:
    """One operator row."""

    def __init__(self, spec: OpSpec, device: str, on_add: Callable[[str], None]) -> None:
        self.spec = spec
        self.reason = spec.unavailable_on(device) or ""
        self.thumb = style.classed(w.Image(format="jpeg", layout=style.shared_layout(
            width="48px", height="48px", min_width="48px")), style.PICKER_THUMB)
        note = (f'<div class="{style.ERROR}" style="font-size:11px">{escape(self.reason)}</div>'
                if self.reason else "")
        self.text = w.HTML(
            f"<b>{escape(spec.name)}</b> <span style='opacity:.6;font-size:11px'>"
            f"{escape(spec.category)}</span><div style='font-size:12px;line-height:1.2'>"
            f"{escape(spec.doc)}</div>{note}", tooltip=self.reason or spec.doc,
            layout=style.shared_layout(flex="1 1 auto", margin="0 4px"),
            style=style.shared_style(w.HTML))
        self.add = style.classed(w.Button(
            description="add", icon="plus", disabled=bool(self.reason),
            tooltip=self.reason or f"add a {spec.name} step to the chain",
            layout=style.shared_layout(width="70px", min_width="70px"),
            style=style.shared_style(w.Button)), style.PICKER_ADD)
        self.add.on_click(lambda _: on_add(spec.name))
        self.widget = style.classed(w.HBox([self.thumb, self.text, self.add],
                                           layout=style.shared_layout(align_items="center",
                                                                      padding="2px 0")),
                                    style.PICKER_ITEM)
        if self.reason:
            self.widget.add_class(style.PICKER_ITEM_DISABLED)

    @property
    def available(self) -> bool:
        return not self.reason


class PickerItems(Mapping[str, PickerItem]):
    """Every catalog operator's row by name, each made the first time it is asked for."""

    def __init__(self, catalog: Catalog, make: Callable[[OpSpec], PickerItem]) -> None:
        self._catalog = catalog
        self._make = make
        self._made: dict[str, PickerItem] = {}

    def __getitem__(self, name: str) -> PickerItem:
        if name not in self._made:
            self._made[name] = self._make(self._catalog[name])  # KeyError for unknown names
        return self._made[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._catalog))

    def __len__(self) -> int:
        return len(self._catalog)

    @property
    def made(self) -> int:
        """How many rows exist so far."""
        return len(self._made)


class Picker:
    """Search box, results list and category tabs over every catalog operator."""

    def __init__(self, device: str, on_add: Callable[[str], None],
                 catalog: Catalog = CATALOG,
                 on_visible: Callable[[list[str]], None] | None = None) -> None:
        self.catalog = catalog
        self.on_add = on_add
        self.on_visible = on_visible
        self.items = PickerItems(catalog, lambda spec: PickerItem(spec, device, on_add))
        self.search = style.classed(w.Text(
            placeholder="search operators (Enter adds the first match)",
            continuous_update=True, layout=w.Layout(width="100%")), style.PICKER_SEARCH)
        self.search.observe(lambda _: self._filter(), "value")
        self.search.on_msg(self._on_msg)
        self.results = w.VBox(layout=w.Layout(display="none", max_height="360px",
                                              overflow="auto"))
        self.hint = w.HTML()
        categories = [c for c in CATEGORIES if catalog_has(catalog, c)]
        self.tabs = w.Tab(children=[
            w.VBox(layout=style.shared_layout(max_height="360px", overflow="auto"))
            for _ in categories])
        self.tabs.titles = tuple(categories)
        self.categories = categories
        self._fill()
        self.tabs.observe(lambda _: self._announce(), "selected_index")
        self.widget = style.classed(w.VBox([self.search, self.hint, self.results, self.tabs]),
                                    style.PICKER)

    def matches(self, text: str | None = None) -> list[str]:
        """Operators matching ``text`` by name, description or alias, best first (all when
        empty)."""
        t = self.search.value if text is None else text
        if not t.strip():
            return list(self.items)
        return [s.name for s in self.catalog.search(t)]

    def visible(self) -> list[str]:
        """Operators on screen: the search results, else the selected category tab."""
        if self.search.value.strip():
            return self.matches()
        index = self.tabs.selected_index or 0
        if not self.categories:
            return []
        return [s.name for s in self.catalog.by_category(self.categories[index])]

    def submit(self) -> str | None:
        """Enter in the search box: add the first available match; returns its name. An empty
        search adds nothing (Enter on an empty box is not a choice)."""
        if not self.search.value.strip():
            self.hint.value = "<span style='font-size:12px'>type part of a name, then Enter</span>"
            return None
        for name in self.matches():
            if self.items[name].available:
                self.on_add(name)
                return name
        self.hint.value = f'<span class="{style.ERROR}">{escape(self._none_text())}</span>'
        return None

    def set_thumbnail(self, op: str, data: bytes) -> None:
        self.items[op].thumb.value = data

    def _fill(self) -> None:
        """Put the selected category's rows in its tab (made the first time it is shown)."""
        if not self.categories:
            return
        index = self.tabs.selected_index or 0
        tab = self.tabs.children[index]
        if not tab.children:
            tab.children = [self.items[s.name].widget
                            for s in self.catalog.by_category(self.categories[index])]

    def _announce(self) -> None:
        self._fill()
        if self.on_visible is not None:
            self.on_visible(self.visible())

    def _filter(self) -> None:
        self._announce()
        text = self.search.value.strip()
        if not text:
            self.results.layout.display = "none"
            self.tabs.layout.display = None
            self.hint.value = ""
            return
        names = self.matches(text)
        self.results.children = [self.items[n].widget for n in names]
        self.results.layout.display = None
        self.tabs.layout.display = "none"
        first = next((n for n in names if self.items[n].available), None)
        self.hint.value = (f"<span style='font-size:12px'>{len(names)} match(es); Enter adds "
                           f"<b>{escape(first)}</b></span>" if first else
                           f"<span class='{style.ERROR}'>{escape(self._none_text())}</span>")

    def _none_text(self) -> str:
        """Why Enter adds nothing: no operator matches at all (with suggestions), or only
        operators this device cannot run."""
        text = self.search.value.strip()
        names = self.matches(text)
        if not names:
            return no_match(self.catalog.values(), text)
        return (f"no available operator matches {text[:40]!r}: {', '.join(names[:4])} "
                f"cannot run on this device ({self.items[names[0]].reason})")

    def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        if content.get("event") != "submit":
            return
        loop = kernel_loop()
        if loop is None:
            self.submit()
        else:
            # The browser sends Enter at once but holds the typed text back while the kernel is
            # busy (ipywidgets throttles value updates): wait for the text before choosing.
            loop.call_later(SUBMIT_DELAY_S, self.submit)


def catalog_has(catalog: Catalog, category: str) -> bool:
    return bool(catalog.by_category(category))
