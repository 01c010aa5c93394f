"""The export panel: the generated training code, downloads, the preset as JSON and the CLI.

The preset JSON and the one-line ``dali-gallery render`` command that reproduces the preview are
shown as text, each with a copy button, next to the download links; a warning says when batches
would mix image sizes (the training output section computes it), and loading a preset file
confirms what was loaded.

Everything works in plain ipywidgets: downloads are ``<a download>`` links with data URIs and
"copy" is a button whose inline handler writes to the clipboard, so no extension or file
server is needed (Voila serves no files). The displayed code is the exact text
:func:`pipelines.export.export_code` returns for the current preset.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from html import escape
from typing import Any

import ipywidgets as w

from dali_gallery.pipelines.image_files import readable
from dali_gallery.pipelines.preset import Preset

from . import style
from .style import shared_layout
from .upload_entry import UploadRefused, entry_bytes, entry_name

try:
    from pygments import highlight
    from pygments.formatters import HtmlFormatter
    from pygments.lexers import PythonLexer
except ImportError:  # optional: plain <pre> without it
    highlight = None


def code_html(code: str) -> str:
    """Syntax-highlighted HTML of Python code (inline styles; a plain <pre> without pygments)."""
    if highlight is None:
        return f"<pre>{escape(code)}</pre>"
    return highlight(code, PythonLexer(), HtmlFormatter(noclasses=True, nobackground=False))


def data_uri(text: str, mime: str) -> str:
    return f"data:{mime};charset=utf-8;base64," + base64.b64encode(text.encode()).decode()


def download_link(text: str, filename: str, mime: str, label: str, css: str) -> str:
    return (f'<a class="{css}" download="{escape(filename)}" href="{data_uri(text, mime)}" '
            'style="margin-right:14px" title="download">'
            f'<i class="fa fa-download"></i> {escape(label)}</a>')


def copy_button(text: str, label: str, css: str) -> str:
    """A button copying ``text`` to the clipboard (with a select-and-copy fallback)."""
    js = ("(function(b){var t=b.parentElement.querySelector('textarea');"
          "var done=function(){var o=b.textContent;b.textContent='copied';"
          "setTimeout(function(){b.textContent=o},1200)};"
          "if(navigator.clipboard&&window.isSecureContext){"
          "navigator.clipboard.writeText(t.value).then(done)}else{t.style.display='block';"
          "t.select();document.execCommand('copy');t.style.display='none';done()}})(this)")
    return (f'<span><textarea style="display:none" readonly>{escape(text)}</textarea>'
            f'<button class="{css} jupyter-button" onclick="{js}">{escape(label)}</button></span>')


def slug(name: str, default: str = "dali_augment") -> str:
    """A safe file stem from the preset name."""
    s = re.sub(r"[^A-Za-z0-9_]+", "_", name).strip("_").lower()
    return (s or default)[:60]


class ExportPanel:
    """Code view, download / copy actions, preset name, preset load and the CLI command."""

    def __init__(self, *, on_name: Callable[[str], None],
                 on_preset_file: Callable[[bytes, str], list[str]],
                 current: Callable[[], Preset] | None = None) -> None:
        self.on_name = on_name
        self.on_preset_file = on_preset_file
        self.current = current
        self._quiet = False
        self.name = style.classed(w.Text(
            description="name", placeholder="preset name (optional)", continuous_update=False,
            style={"description_width": "40px"}, layout=shared_layout(width="320px")),
            style.PRESET_NAME)
        self.name.observe(self._on_name, "value")
        self.load = style.classed(w.FileUpload(
            accept=".json,.py", multiple=False, description="load preset",
            tooltip="a preset JSON file, or a training module exported by dali-gallery"),
            style.PRESET_UPLOAD)
        self.load.observe(self._on_load, "value")
        self.actions = w.HTML()
        self.problems = style.classed(w.HTML(), style.ERROR)
        self.notice = style.classed(w.HTML(), style.EXPORT_NOTICE)
        self.warning = style.classed(w.HTML(), style.BATCH_WARNING)
        self.cli = style.classed(w.HTML(), style.CLI)
        self.preset_view = style.classed(w.HTML(), style.PRESET_JSON)
        self.code = style.classed(w.HTML(), style.EXPORT_CODE)
        self.stale = w.HTML()
        self.widget = style.classed(w.VBox([
            w.HBox([self.name, self.load, self.notice], layout=shared_layout(align_items="center")),
            self.problems, self.warning, self.actions, self.cli, self.preset_view, self.stale,
            self.code]), style.EXPORT)
        self.text = ""
        self.preset_json = ""
        self.cli_text = ""
        self._shown_json = ""

    def update(self, code: str, preset_json: str, name: str, cli: str, cli_note: str) -> None:
        """Show the current export (called when the pipeline is idle, never mid-drag)."""
        stem = slug(name)
        if code != self.text:
            self.code.value = code_html(code)
        self.text = code
        self.preset_json = preset_json
        self.actions.value = (
            download_link(code, f"{stem}.py", "text/x-python", f"{stem}.py",
                          style.DOWNLOAD_PY)
            + download_link(preset_json, f"{stem}_preset.json", "application/json",
                            "preset JSON", style.DOWNLOAD_PRESET)
            + copy_button(code, "copy code", style.COPY_CODE))
        note = f"<div style='opacity:.7;font-size:12px'>{escape(cli_note)}</div>" if cli_note \
            else ""
        self.cli_text = cli
        self.cli.value = (f"<div><b>Render the same grid from a shell</b> (after downloading "
                          f"the preset JSON):</div><pre style='white-space:pre-wrap'>"
                          f"{escape(cli)}</pre>{copy_button(cli, 'copy command', style.COPY_CLI)}"
                          f"{note}")
        if preset_json != self._shown_json:
            self.preset_view.value = (
                "<details open><summary><b>Preset JSON</b> (what the download holds; load it back "
                "with <i>load preset</i>)</summary><pre style='max-height:260px;overflow:auto;"
                f"font-size:12px'>{escape(preset_json)}</pre></details>"
                + copy_button(preset_json, "copy preset JSON", style.COPY_PRESET))
            self._shown_json = preset_json
        self._quiet = True
        try:
            self.name.value = name
        finally:
            self._quiet = False

    def show_problems(self, title: str, problems: list[str]) -> None:
        self.problems.value = style.error_html(problems, title) if problems else ""

    def set_warning(self, text: str) -> None:
        """A warning above the code ("" clears it): batches that would mix image sizes."""
        self.warning.value = (f'<div class="{style.ERROR}">&#9888; {escape(text)}</div>'
                              if text else "")

    def _on_name(self, change: dict[str, Any]) -> None:
        if not self._quiet:
            self.on_name(change["new"])

    def _on_load(self, change: dict[str, Any]) -> None:
        value = change["new"]
        if not value:
            return
        entry = value[0]
        name = entry_name(entry, "preset.json")
        try:  # the document's size is checked by its parser
            data = entry_bytes(entry)
        except UploadRefused as e:
            self.load.value = ()
            self.show_problems(f"could not load {readable(name)[:80]}; the pipeline was not "
                               "changed", [str(e)])
            return
        problems = self.on_preset_file(data, name)
        self.load.value = ()
        self.notice.value = "" if problems or self.current is None else \
            loaded_html(readable(name)[:80], self.current())


def loaded_html(name: str, preset: Preset) -> str:
    """The confirmation after a preset file was loaded: its name and what it holds."""
    n = len(preset.steps)
    tail = "training output on" if preset.output is not None else "no training output"
    titled = f" (preset {preset.name[:60]!r})" if preset.name else ""
    return (f"<span style='color:#2e7d32'>&#10003; loaded {escape(name)}{escape(titled)}: "
            f"{n} step{'s' if n != 1 else ''}, {tail}</span>")
