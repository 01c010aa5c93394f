"""A served page that never gets its widgets reloads itself (a few times at most).

Voilà's page asks its kernel for every widget's state once it connects and waits 4 s for the
answer (``page_ready.PAGE_PATIENCE_S``); past that it loads them one by one, and with the app's
hundreds of widgets that fallback never finishes (seen with Voilà 0.5.13 and ipywidgets 8:
a kernel made to answer 6 s late leaves its page on "Loading widget..." for good, while a
notebook of two widgets recovers). A kernel on a busy server can be that late: six pages
opening at once on two cores left one of them blank. The page itself cannot ask again, so this
script, an output of the app's cell, reloads the page when the app has not appeared
:data:`WATCH_S` seconds after the page's outputs were shown. Voilà shuts the abandoned kernel
down as the page unloads, the reload keeps the address (and with it the share link's
pipeline), and after :data:`RELOADS` reloads in a row the page stops and says what happened.
"""

from __future__ import annotations

import os

from .style import ERROR

WATCH_ENV = "DALI_GALLERY_PAGE_WATCH_S"
"""Overrides :data:`WATCH_S` (seconds, 5 to 600): for a server known to be slow, and tests."""
WATCH_S = 30.0
"""Seconds from the page showing its outputs to reloading when the app is still missing. On
the idle 2-core machine a whole page, request to app, took 1.6 s with a pooled kernel and 6 s
with a kernel started for it; the margin is for busy servers, where a reload costs a kernel."""
RELOADS = 2
"""Reloads in a row (counted per tab and page path) before the page gives up and says so."""
APP_CLASS = "dg-app"
"""The class of the app's outermost widget (``gallery.app``): its view being on the page is
what the script waits for."""
NOTE_CLASS = "dg-page-watchdog"


def watch_s() -> float:
    """:data:`WATCH_S`, or the server's :data:`WATCH_ENV`; a bad value is an error that says
    what is allowed (never a silent default)."""
    raw = os.environ.get(WATCH_ENV)
    if raw is None:
        return WATCH_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 5 <= value <= 600:
        raise ValueError(f"${WATCH_ENV} must be 5 to 600 seconds, got {raw!r}")
    return value


_SCRIPT = """<div class="%(note)s"></div><script>
(() => {
  if (window.__dgWatchdog) return;
  window.__dgWatchdog = true;
  const KEY = "dg-page-reloads:" + location.pathname;
  const started = Date.now();
  const note = (text) => {
    const el = document.querySelector(".%(note)s");
    if (el) { el.textContent = text; el.className = "%(note)s %(error)s"; }
  };
  const check = () => {
    if (document.querySelector(".%(app)s")) {
      sessionStorage.removeItem(KEY);
      return;
    }
    if (Date.now() - started < %(wait_ms)d) { setTimeout(check, 500); return; }
    const done = Number(sessionStorage.getItem(KEY) || 0);
    if (done >= %(reloads)d) {
      sessionStorage.removeItem(KEY);
      note("The server did not send this page's widgets within %(wait_s)s s, " + done +
           " times in a row: it may be overloaded. Reload the page to try again.");
      return;
    }
    sessionStorage.setItem(KEY, String(done + 1));
    note("The server did not send this page's widgets within %(wait_s)s s: reloading (" +
         (done + 1) + " of %(reloads)d).");
    location.reload();
  };
  setTimeout(check, 500);
})();
</script>"""


def watchdog_script(wait_s: float | None = None) -> str:
    """The page script (HTML) that reloads a page whose app never appeared (see the module)."""
    wait = watch_s() if wait_s is None else wait_s
    return _SCRIPT % {"note": NOTE_CLASS, "app": APP_CLASS, "error": ERROR,
                      "wait_ms": int(wait * 1000), "wait_s": f"{wait:g}", "reloads": RELOADS}
