"""Closing a served page shuts its kernel down (gallery/serve_identity.py).

Voilà's page posts its kernel's shutdown as it unloads, with the ``_xsrf`` value of its
cookie; without the cookie (Voilà 0.5.13 never set it) the post was refused and each closed or
reloaded page's kernel ran on, rendering its gallery, until culled ten minutes later.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request

import pytest

from tests.browser.conftest import kernel_pids, wait_for_voila

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

_KERNEL_ID_JS = ("() => JSON.parse(document.getElementById('jupyter-config-data').textContent)"
                 ".kernelId")


def post_status(url: str, body: bytes, cookie: str | None = None) -> int:
    request = urllib.request.Request(url, data=body, method="POST")
    if cookie is not None:
        request.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(request, timeout=30) as resp:
            return resp.status
    except urllib.error.HTTPError as err:
        return err.code


@pytest.mark.parametrize("token", [None, "a-token-for-this-test"])
def test_closing_the_page_shuts_its_kernel_down_and_nothing_else_can(voila_server, page, token):
    # a kernel started for each page: the page's own; with a token the page's later requests
    # (the unload post among them) are authenticated by the cookie the token login set
    server = voila_server(pool_size=0, token=token)
    wait_for_voila(page, server.page_url())
    kernel_id = page.evaluate(_KERNEL_ID_JS)
    (pid,) = kernel_pids(server)
    xsrf = {c["name"]: c["value"] for c in page.context.cookies()}.get("_xsrf")
    assert xsrf, page.context.cookies()  # the page has the cookie its unload post needs
    # a post from elsewhere (no cookie, or a value that does not match it) is still refused
    shutdown = f"{server.url}voila/api/shutdown/{kernel_id}"
    assert post_status(shutdown, b"") == 403
    assert post_status(shutdown, b"_xsrf=2|00|00|0", cookie=f"_xsrf={xsrf}") == 403
    assert kernel_pids(server) == [pid]
    page.close(run_before_unload=True)  # as a browser closes a tab
    deadline = time.monotonic() + 60
    while kernel_pids(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert kernel_pids(server) == [], server.log_tail()
    assert f"Kernel shutdown: {kernel_id}" in server.log_tail(200_000)
