"""The Voilà app: tabs Gallery | Builder | Export over one image source shared by both views.

The image-source control is the builder's own panel (bundled samples, a server folder inside
the allowed root, uploads), shown above the tabs; whatever it loads into the builder is loaded
into the gallery too, so both always show the same images. So are the labels: the builder's
labels panel (under the images) holds the one set of annotations both tabs draw, with its
"show labels" and drop threshold. A source that yields no usable
image leaves both views on their previous images and says why. ``dali-gallery serve`` tells
the kernel its images and allowed root through environment variables (see ``gallery.serve``).
Under Voilà the gallery starts rendering once the page has loaded the app's widgets
(:mod:`widgets.page_ready`); a kernel started ahead of its page (the served app's pool, see
:mod:`.page_request`) waits for its page however long that takes, so it is idle when one comes.
Such a kernel renders the gallery's first screen first, and its display of the app also writes
those cards into the page as a poster, painted before the widgets come (:mod:`.poster`).

``App(page_link=True)`` (the served notebook) keeps the pipeline in the page's link
(:mod:`widgets.share_link`): the link's pipeline is loaded when the page opens, and the page's
address follows every edit, so a reload, or a colleague given the link, gets the same chain and
seed. Nothing is kept on the server, so nothing is shared between visitors by accident; for the
same reason the app does not autosave unless asked (``autosave=``).
"""

from __future__ import annotations

import html
import logging
import os
import sys
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import ipywidgets as W

from dali_gallery.pipelines.budget import Budget
from dali_gallery.pipelines.budget import configure as configure_budget
from dali_gallery.pipelines.device import describe
from dali_gallery.pipelines.images import ImageProblem
from dali_gallery.pipelines.preset import PresetError
from dali_gallery.widgets.builder import Builder
from dali_gallery.widgets.images_panel import SAMPLES_DIR, ImageSource, source_from
from dali_gallery.widgets.page_ready import VOILA_ENV, after_page_load
from dali_gallery.widgets.page_watchdog import APP_CLASS, watchdog_script
from dali_gallery.widgets.share_link import ShareLink, preset_from_query, sync_script
from dali_gallery.widgets.style import ERROR
from dali_gallery.widgets.ui_thread import UI, kernel_loop

from .card_queue import PAGE_PAINT_S
from .page_request import READY_LOG, prestarted, when_claimed
from .poster import POSTER_KEY, WAIT_S, poster_cards, poster_html
from .serve import ALLOWED_ROOT_ENV, IMAGES_ENV
from .view import GalleryView

TAB_TITLES = ("Gallery", "Builder", "Export")
GALLERY, BUILDER, EXPORT = range(3)
PAGE_LOAD_TIMEOUT_S = 20.0
"""How long the gallery waits for its page to load the widgets, counted from when the page
asked for this kernel (e.g. for a page that never connects)."""
UNCLAIMED_TIMEOUT_S = 7 * 24 * 3600.0
"""A pooled kernel waits for its page; the timeout above starts once a page has claimed it."""
_log = logging.getLogger(__name__)


def quiet_dali_deprecations() -> None:
    """Drop the DeprecationWarnings DALI forces out when its own auto_aug modules use the
    ``fn.experimental.filter/equalize`` aliases (DALI sets the filter itself, so
    ``filterwarnings`` cannot); in a Voilà page they would be printed under the app on every
    pipeline build, and users cannot act on them. Every other warning is shown as before."""
    shown = warnings.showwarning
    if getattr(shown, "_dali_gallery", False):
        return

    def showwarning(message: Warning | str, category: type[Warning], filename: str,
                    lineno: int, file: Any = None, line: str | None = None) -> None:
        if (issubclass(category, DeprecationWarning) and "is now deprecated" in str(message)
                and "nvidia/dali/" in filename.replace("\\", "/")):
            return
        shown(message, category, filename, lineno, file, line)

    showwarning._dali_gallery = True  # type: ignore[attr-defined]
    warnings.showwarning = showwarning


def _env_path(name: str) -> Path | None:
    value = os.environ.get(name, "").strip()
    return Path(value) if value else None


def section_title(name: str, headline: str) -> str:
    """A section's title with what it holds, readable while it is collapsed ("Images: 6 from
    bundled samples", "Labels: instances.json, 4 of 6 images")."""
    return f"{name}: {headline}" if headline else name


def _say_ready() -> None:
    """A pooled kernel's first screen is on its widgets: say so in the server's log (the
    browser bench waits for it, so that a visitor comes to a kernel that is ready)."""
    print(READY_LOG, file=sys.__stderr__, flush=True)


def _start_source(images: Any, allowed_root: str | Path | None) -> ImageSource:
    """The images the app starts with. With an allowed root (the served app) they pass the
    same check as a folder typed in the app: every file must resolve, symlinks followed,
    inside the allowed root (the bundled samples: inside their own folder), else it is skipped
    and listed as a problem; names are shown relative to that root."""
    if images is None:
        root = SAMPLES_DIR if allowed_root is not None else None
        return ImageSource("samples", SAMPLES_DIR, "bundled samples", root)
    if allowed_root is None or isinstance(images, ImageSource):
        return source_from(images)
    return source_from(images, Path(allowed_root).resolve())


class App:
    """The whole app as one widget tree (``.widget``); usable in Voilà, Lab or a script.

    ``images``: a folder, file, paths or (name, bytes) uploads; default ``$DALI_GALLERY_IMAGES``
    or the bundled samples. ``allowed_root``: the folder the image panel may browse; default
    ``$DALI_GALLERY_ALLOWED_ROOT`` (None: any folder, for a local notebook). ``page_link``:
    keep the pipeline in the Voilà page's link (the served notebook; not for JupyterLab, whose
    own address it would change). ``autosave``: the builder's autosave (off by default: on a
    server every visitor would share the file; see :class:`~widgets.builder.Builder`).
    ``annotations``: labels for the builder's images (a COCO .json or "yolo", as the builder
    takes them); in the page they are uploaded or picked from the images folder.
    """

    def __init__(self, images: Any = None, allowed_root: str | Path | None = None,
                 device: str = "auto", *, size: int = 256, gallery_images: int = 4,
                 builder_images: int = 6, budget: Budget | None = None,
                 page_link: bool = False, autosave: str | Path | bool | None = None,
                 annotations: str | Path | None = None) -> None:
        quiet_dali_deprecations()
        if budget is not None:  # pixel budgets of this kernel (pipelines.budget)
            configure_budget(budget)
        notes: list[str] = []
        if images is None:
            images = _env_path(IMAGES_ENV)
            if images is not None and not images.is_dir():
                # the page never names a server path (the visitor may be anyone)
                notes.append(f"the server's images folder (${IMAGES_ENV}) is not a folder; "
                             "showing the bundled samples instead")
                images = None
        if allowed_root is None:
            allowed_root = _env_path(ALLOWED_ROOT_ENV)
        source = _start_source(images, allowed_root)
        self.builder = Builder(images=source, device=device, allowed_root=allowed_root,
                               max_images=builder_images, size=size, autosave=autosave,
                               annotations=annotations)
        self.device = self.builder.device
        self.gallery = GalleryView(device=self.device, allowed_root=allowed_root, size=size,
                                   max_images=gallery_images)
        self.gallery.on_add(self._add_from_gallery)
        self.builder.labels.on_labels(self._labels_changed)
        self._labels_changed()  # annotations= given: the gallery starts with them
        self.link = ShareLink(self.builder.model) if page_link else None
        # a served page reloads itself if its widgets never come (widgets.page_watchdog)
        self._watchdog = watchdog_script() if os.environ.get(VOILA_ENV) else None
        panel = self.builder.images_panel
        self._load_into_builder = panel.on_load
        panel.on_load = self._load
        self._build(panel.widget, notes)
        self._source = source
        # under Voilà the gallery's cards wait for the page to have the app's widgets
        # (page_ready; gallery.card_queue). A pooled kernel renders the first screen of rows
        # and makes their cards now, while no page is loading (its timeout starts when a page
        # claims it), so they come with the page's widgets; a kernel started for its page
        # renders nothing before the page is ready: rendering while the page loads slowed the
        # page's first picture by 0.6 s on the 2-core machine (so does rendering the rows
        # after a pooled page's first screen while it makes that screen's views: PAGE_PAINT_S)
        self._pooled = prestarted()
        self._first_screen = threading.Event()
        timeout = UNCLAIMED_TIMEOUT_S if self._pooled else PAGE_LOAD_TIMEOUT_S
        if self._pooled:  # its display waits for the first screen (the poster), then says so
            self.gallery.cards.hold(keep=False, on_ready=self._first_screen.set)
        else:
            self.gallery.cards.hold(0)
        pause = PAGE_PAINT_S if self._pooled else 0.0
        if after_page_load(lambda: self.gallery.cards.release(pause), timeout):
            self.gallery.set_status("the gallery shows its first rows as soon as the page is "
                                    "ready")
        self._first_gallery()
        self.claimed = not when_claimed(self._claimed)
        """Whether the page this app serves is known (a pooled kernel: once a page took it)."""

    def _build(self, images_panel: W.Widget, notes: list[str]) -> None:
        # the Builder and Export tabs get their widgets when first shown: a page makes a view
        # of every widget in a tab, shown or not, before its first picture (on the 2-core
        # machine, first visits 0.4-0.5 s sooner without them, reloads ~1 s)
        self._unshown = {BUILDER: self.builder.widget, EXPORT: self.builder.export_panel}
        self.tabs = W.Tab(children=[self.gallery.widget, W.VBox(), W.VBox()])
        self.tabs.titles = TAB_TITLES
        self.tabs.observe(self._tab_shown, "selected_index")
        self.tabs.add_class("dg-app-tabs")
        # collapsed: the gallery is what a visitor came for; its title says which images
        # it shows, and it opens by itself when something about them needs reading
        panel, labels = self.builder.images_panel, self.builder.labels
        opened = 0 if notes or panel.problems.value or not panel.headline.text else None
        self.images = W.Accordion(children=[images_panel, self.builder.labels.widget],
                                  titles=(section_title("Images", panel.headline.text),
                                          section_title("Labels", labels.headline.text)),
                                  selected_index=opened)
        self.images.add_class("dg-app-images")
        panel.headline.observe(
            lambda c: self.images.set_title(0, section_title("Images", c["new"])), "text")
        labels.headline.observe(
            lambda c: self.images.set_title(1, section_title("Labels", c["new"])), "text")
        self.message = W.HTML(
            "".join(f'<div class="{ERROR}">{html.escape(n)}</div>' for n in notes))
        self.message.add_class("dg-app-message")
        self.head = W.HTML(
            "<div style='opacity:.75'>Previews are rendered live by DALI on "
            f"{html.escape(describe(self.device))}. Browse every operator in <b>Gallery</b> "
            "(click a value to add it), chain them in <b>Builder</b>, take the training code "
            "from <b>Export</b>.</div>")
        top = [self.head] + ([self.link.widget] if self.link is not None else [])
        self.widget = W.VBox([*top, self.message, self.images, self.tabs])
        self.widget.add_class(APP_CLASS)

    # ---- public API ---------------------------------------------------------------------------

    def set_images(self, images: Any) -> list[ImageProblem]:
        """Show these images in both views (trusted caller: no allowed-root check); a source
        without any usable image keeps the previous images."""
        return self._load(source_from(images))

    def wait_idle(self, timeout: float = 120.0) -> bool:
        """Block until the gallery and the builder preview are up to date."""
        return self.gallery.wait_idle(timeout) and self.builder.wait_idle(timeout)

    def close(self) -> None:
        self.gallery.close()
        self.builder.close()
        self.widget.close()

    def open_link(self, query: str) -> list[str]:
        """Load the pipeline a page's query string carries (``preset=``, see
        :mod:`widgets.share_link`); returns the problems, also shown above the tabs. A link
        without one changes nothing; a bad one leaves the pipeline as it was."""
        try:
            preset = preset_from_query(query, self.builder.catalog)
            if preset is not None:
                self.builder.load_preset(preset)
        except PresetError as e:
            self._note("The pipeline in this page's link was not loaded; the builder starts "
                       "with the default pipeline.", e.problems)
            return list(e.problems)
        return []

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        """The widgets, with ``page_link`` the page script that puts the link in the address
        bar, and under Voilà the one that reloads a page whose widgets never came (a Voilà
        page runs the scripts of the notebook's outputs; see ``widgets.page_watchdog``); in a
        pooled kernel, the poster of the gallery's first screen (:mod:`.poster`)."""
        from IPython.display import HTML, display

        display(self.widget)
        if self.link is not None:
            display(HTML(sync_script()))
        if self._watchdog is not None:
            display(HTML(self._watchdog))
        if self._pooled:
            try:
                poster = self.poster()
            except Exception:  # noqa: BLE001 - logged: the page opens as before, without it
                _log.exception("the poster of the gallery's first screen failed")
                poster = ""
            if poster:
                display(HTML(poster), metadata={POSTER_KEY: True})
            _say_ready()

    def poster(self, timeout: float = WAIT_S) -> str:
        """The poster of the gallery's first screen, once rendered and on its cards (this
        blocks the main thread, so it applies the cards itself); "" if it did not come in
        ``timeout`` seconds or has no pictures. For a pooled kernel, which has no page yet."""
        deadline = time.monotonic() + timeout
        while not self._first_screen.is_set() and time.monotonic() < deadline:
            UI.drain()
            self._first_screen.wait(0.05)
        UI.drain()
        if not self._first_screen.is_set():
            _log.warning("the gallery's first screen took over %.0f s: no poster", timeout)
            return ""
        return poster_html(poster_cards(self.gallery), self.head.value)

    # ---- wiring -------------------------------------------------------------------------------

    def _first_gallery(self) -> None:
        """Start the gallery on the start-up images (once: a later call changes nothing)."""
        if not self.gallery.images_set:  # the user may have loaded other images meanwhile
            self.gallery.set_images(self._source.items, root=self._source.root)

    def _tab_shown(self, _: Any = None) -> None:
        """A tab is shown: give it its widgets if it has not had them yet."""
        content = self._unshown.pop(self.tabs.selected_index, None)
        if content is not None:
            self.tabs.children[self.tabs.selected_index].children = (content,)

    def _claimed(self, query: str | None) -> None:
        """The page is known: open its link, and (a pooled kernel) give it the usual time to
        load before the gallery starts anyway."""
        self.claimed = True
        if self.link is not None:
            if query is None:
                self._note("The server did not pass this page's link to the app; the builder "
                           "starts with the default pipeline.", [])
            else:
                self.open_link(query)
        loop = kernel_loop()
        if self._pooled and loop is not None and self.gallery.cards.held:
            self.gallery.cards.keep()  # its page is loading: no widget until it has them
            loop.call_later(PAGE_LOAD_TIMEOUT_S, self.gallery.cards.release)

    def _note(self, title: str, problems: list[str]) -> None:
        items = "".join(f"<li>{html.escape(p)}</li>" for p in problems)
        self.message.value += (f'<div class="{ERROR}">{html.escape(title)}'
                               f'{f"<ul>{items}</ul>" if items else ""}</div>')

    def _load(self, source: ImageSource) -> list[ImageProblem]:
        """The image panel's action: the builder validates and loads; the gallery follows
        only when the builder accepted at least one image."""
        before = self.builder.renderer.version
        problems = self._load_into_builder(source)
        if self.builder.renderer.version != before:
            self.gallery.set_images(source.items, root=source.root)
        return problems

    def _labels_changed(self) -> None:
        """The builder's labels, "show labels" or drop threshold changed: the gallery
        follows (the same LabelSource, matched to its own images)."""
        renderer = self.builder.renderer
        self.gallery.set_labels(renderer.labels, show=renderer.overlay,
                                min_kept=renderer.engine.min_kept)

    def _add_from_gallery(self, op: str, params: dict[str, Any]) -> None:
        """A gallery "add" click: append the step with that magnitude and show the builder
        (a refused step raises PresetError, which the gallery reports)."""
        self.builder.add_step(op, **params)
        self.tabs.selected_index = BUILDER
