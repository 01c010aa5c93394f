"""The page script that reloads a served page whose widgets never came: its settings (the
script's behaviour in a real page is tests/browser/test_voila_watchdog.py)."""

from __future__ import annotations

import pytest

from dali_gallery.widgets import page_watchdog as wd


def test_the_wait_defaults_and_the_server_may_set_it(monkeypatch):
    monkeypatch.delenv(wd.WATCH_ENV, raising=False)
    assert wd.watch_s() == wd.WATCH_S
    assert "30000" in wd.watchdog_script()  # milliseconds, in the page
    monkeypatch.setenv(wd.WATCH_ENV, "12.5")
    assert wd.watch_s() == 12.5
    script = wd.watchdog_script()
    assert "12500" in script and "within 12.5 s" in script


@pytest.mark.parametrize("value", ["2", "601", "soon", "nan", "inf", ""])
def test_a_bad_wait_is_an_error_that_says_what_is_allowed(monkeypatch, value):
    monkeypatch.setenv(wd.WATCH_ENV, value)
    with pytest.raises(ValueError, match=rf"\${wd.WATCH_ENV} must be 5 to 600 seconds, got"):
        wd.watch_s()


def test_the_script_watches_the_app_and_counts_reloads_per_tab():
    script = wd.watchdog_script(10)
    assert f'document.querySelector(".{wd.APP_CLASS}")' in script
    assert "sessionStorage" in script and "location.reload()" in script
    assert f"done >= {wd.RELOADS}" in script
    assert script.count("<script>") == 1 and f'class="{wd.NOTE_CLASS}"' in script
