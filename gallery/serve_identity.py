"""A served page gets Jupyter's ``_xsrf`` cookie, so that closing it shuts its kernel down.

As Voilà's page unloads (tab closed, reload, navigation) it posts ``/voila/api/shutdown/<kernel
id>`` with the ``_xsrf`` value it reads from its cookies (``navigator.sendBeacon``). Voilà
0.5.13 never sets that cookie, so the post was refused (403, "'_xsrf' argument missing from
POST") and every closed or reloaded page left its kernel running: rendering the rest of its
gallery on the server's cores, then holding 0.3-0.5 GB until culled (``cull_idle_s``, 600 s),
and counting against ``max_kernels`` all along. :class:`PageCookieIdentityProvider` (the
server's identity provider, ``serve.voila_command``) gives the page the cookie with the page.
The cross-site check is Tornado's, unchanged: a post whose ``_xsrf`` does not match the cookie
is refused, and only a page of this server can read the cookie.

Imported by the Voilà server process only (``--Voila.identity_provider_class``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from jupyter_server.auth.identity import PasswordIdentityProvider
from voila.handler import VoilaHandler


class PageCookieIdentityProvider(PasswordIdentityProvider):
    """Voilà's default identity provider that also sets the ``_xsrf`` cookie on the page."""

    async def get_user(self, handler: Any) -> Any:  # type: ignore[override]
        user = super().get_user(handler)
        if isinstance(user, Awaitable):
            user = await user
        if user is not None and isinstance(handler, VoilaHandler) and (
                handler.request.method == "GET"):
            handler.current_user = user  # what the server sets next; Tornado reads it here
            handler.xsrf_token  # noqa: B018 - read for its effect: Tornado sets the cookie
        return user
