"""The served app's kernels: no TCP port races, and a page that says so when a kernel dies.

Every page load starts a kernel. Over TCP, jupyter_client picks free ports in the server and
the kernel binds them a moment later; kernels starting together race for them (twelve pages
opened at once: one kernel died with "ZMQError: Address already in use"). ``dali-gallery
serve`` therefore runs kernels with ``--KernelManager.transport=ipc`` (``serve.voila_command``):
Unix sockets beside the connection files in the private folder Voilà makes for them with
``mkdtemp`` (mode 0700, removed when the server stops), so there are no ports to race for.

A kernel that dies while starting used to leave its page spinning for good: Voilà 0.5.13 waits
for the kernel inside the page's generator, the failure ends that task, and the handler keeps
sending heartbeats forever. :class:`GalleryKernelManager` waits for the kernel's first
kernel_info reply before Voilà starts the page; a kernel that dies (or stays silent) is shut
down and started once more, and when that one fails too the page is an HTTP 503 that says what
happened (reason below) instead of a spinner.

With a pool of kernels started ahead (``serve.voila_command(pool_size=...)``, Voilà's
``preheat_kernel``), Voilà builds its pooling manager on top of this class, so pooled kernels go
through the same checks: a pooled kernel that dies while starting is replaced once, and a page
given a pool entry that failed twice gets the same 503 page (the next page is served by the
rest of the pool, or by a kernel started for it). A page's request that Voilà keeps for a
pooled kernel until the kernel asks for it is dropped when that kernel shuts down.

Imported by the Voilà server process only (``--VoilaConfiguration.multi_kernel_manager_class``).
"""

from __future__ import annotations

import asyncio
import contextlib
from concurrent.futures import Future as CFuture
from typing import Any

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from tornado import web
from traitlets import Float, Int

__all__ = ["KERNELS_FULL_REASON", "KERNEL_FAILED_REASON", "GalleryKernelManager"]

#: What the page shows (HTTP reason phrase of the 503) when no kernel could be started.
KERNEL_FAILED_REASON = (
    "The gallery's Python kernel stopped while starting. Reload the page to try again; "
    "if it keeps happening, the server's log says why"
)


#: What the page shows (HTTP reason phrase of the 503) when the server runs its most kernels.
KERNELS_FULL_REASON = (
    "The gallery server has as many pages open as it allows (each page runs a Python kernel "
    "of its own). Close a gallery tab, or try again in a few minutes"
)


class GalleryKernelManager(AsyncMappingKernelManager):
    """Starts a kernel only once it answers; retries a kernel that died, then fails loudly.
    At most ``max_kernels`` run or start at once (the pool's included): every page load starts
    one, so without a cap one client reloading a page could start kernels (0.3-0.5 GB each)
    until the machine ran out of memory for every page."""

    max_kernels = Int(
        32, config=True, help="kernels running or starting at once, the pool's included; a "
        "page beyond them gets an error page (HTTP 503) instead of a kernel"
    )
    _starting = 0

    start_attempts = Int(
        2, config=True, help="kernels started for one page before it gets an error page"
    )
    ready_timeout = Float(
        120.0,
        config=True,
        help="seconds a new kernel may take to answer its first kernel_info request (many "
        "pages opened together on a small machine start slowly)",
    )

    async def start_kernel(  # type: ignore[override]
        self, *, kernel_id: str | None = None, path: Any = None, **kwargs: Any
    ) -> str:
        if kernel_id is not None and kernel_id in self:  # an existing kernel: nothing to start
            return await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs)
        problem = ""
        for attempt in range(1, self.start_attempts + 1):
            new_id = await self._start_within_cap(kernel_id, path, kwargs)
            problem = await self._first_reply(new_id)
            if not problem:
                return new_id
            self.log.warning(
                "kernel %s failed while starting (attempt %d of %d): %s",
                new_id, attempt, self.start_attempts, problem,
            )
            await self._discard(new_id)
        raise web.HTTPError(
            503, "no kernel could be started: %s", problem, reason=KERNEL_FAILED_REASON
        )

    async def _start_within_cap(self, kernel_id: str | None, path: Any,
                                kwargs: dict[str, Any]) -> str:
        """One kernel started, counted from before it exists (kernels starting together are
        not in the map yet); a 503 when ``max_kernels`` run or start already."""
        if len(self) + self._starting >= self.max_kernels:
            self.log.warning("refusing a kernel: %d running or starting (max_kernels)",
                             len(self) + self._starting)
            raise web.HTTPError(503, "at most %d kernels", self.max_kernels,
                                reason=KERNELS_FULL_REASON)
        self._starting += 1
        try:
            return await super().start_kernel(kernel_id=kernel_id, path=path, **kwargs)
        finally:
            self._starting -= 1

    async def _first_reply(self, kernel_id: str) -> str:
        """'' once the kernel answered kernel_info, else why not (also when the restarter
        already gave up on it and removed it from the map: under load a kernel that dies at
        once can be gone before this asks, and the KeyError was a 500 for its page)."""
        try:
            km = self.get_kernel(kernel_id)
        except KeyError:
            return "the kernel stopped before it could be asked (removed by its restarter)"
        kc = km.client()
        kc.start_channels()
        try:
            await kc.wait_for_ready(timeout=self.ready_timeout)
        except RuntimeError as err:  # jupyter_client: the kernel died, or did not answer
            return str(err) or type(err).__name__
        finally:
            kc.stop_channels()
        return ""

    async def shutdown_kernel(  # type: ignore[override]
        self, kernel_id: str, *args: Any, **kwargs: Any
    ) -> None:
        await super().shutdown_kernel(kernel_id, *args, **kwargs)
        _forget_request(kernel_id)

    async def _discard(self, kernel_id: str) -> None:
        """Shut down a kernel that failed to start. Its restarter is stopped first (it would
        start the dead kernel again), and a restart already under way is waited for:
        jupyter_client's shutdown reads the kernel's ``ready`` future, and while a restart
        runs that future is pending (InvalidStateError: the page got a 500, not its 503)."""
        try:
            km = self.get_kernel(kernel_id)
        except KeyError:  # the restarter already gave up on it and removed it from the map
            return
        km.stop_restarter()
        ready = km.ready
        if not ready.done():
            await asyncio.wait([asyncio.wrap_future(ready) if isinstance(ready, CFuture)
                                else ready], timeout=self.ready_timeout)
        with contextlib.suppress(KeyError):  # removed meanwhile by the restarter
            await self.shutdown_kernel(kernel_id, now=True)


def _forget_request(kernel_id: str) -> None:
    """Voilà keeps a claimed pooled kernel's request (query string included) in a class-level
    dict until the server stops; once the kernel is gone nobody can ask for it."""
    from voila.request_info_handler import RequestInfoSocketHandler

    RequestInfoSocketHandler._cache.pop(kernel_id, None)
