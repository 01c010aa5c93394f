"""Undo / redo of the user's pipeline, as snapshots of the preset JSON.

Snapshots (not inverse operations) make undo exact whatever the edit was: a step added, a
slider moved, a preset loaded. A slider drag sends dozens of values; edits with the same
``key`` (e.g. one parameter of one step) that follow each other within ``window_s`` seconds
are merged into one undo entry, so one undo reverts one drag.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass

MAX_ENTRIES = 200


@dataclass
class _Entry:
    state: str
    key: Hashable | None
    at: float


class History:
    """A linear undo stack of states (JSON strings); ``record`` after every committed edit."""

    def __init__(self, initial: str, *, window_s: float = 1.5, limit: int = MAX_ENTRIES,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._entries = [_Entry(initial, None, clock())]
        self._index = 0
        self._window = window_s
        self._limit = limit
        self._clock = clock

    @property
    def current(self) -> str:
        return self._entries[self._index].state

    @property
    def can_undo(self) -> bool:
        return self._index > 0

    @property
    def can_redo(self) -> bool:
        return self._index < len(self._entries) - 1

    def __len__(self) -> int:
        return len(self._entries)

    def record(self, state: str, key: Hashable | None = None) -> bool:
        """Add ``state`` as the newest entry (dropping the redo branch); returns False when
        nothing changed. Merges into the newest entry when ``key`` repeats within the window."""
        if state == self.current:
            return False
        now = self._clock()
        top = self._entries[self._index]
        del self._entries[self._index + 1:]
        mergeable = (key is not None and top.key == key and now - top.at <= self._window
                     and self._index > 0)
        if mergeable:
            top.state, top.at = state, now
            if top.state == self._entries[self._index - 1].state:  # dragged back to the start
                self._entries.pop()
                self._index -= 1
            return True
        self._entries.append(_Entry(state, key, now))
        self._index += 1
        if len(self._entries) > self._limit:
            del self._entries[0]
            self._index -= 1
        return True

    def undo(self) -> str | None:
        """The previous state, or None at the oldest one."""
        if not self.can_undo:
            return None
        self._index -= 1
        self._entries[self._index].key = None  # the next edit starts a new entry
        return self.current

    def redo(self) -> str | None:
        """The next state, or None at the newest one."""
        if not self.can_redo:
            return None
        self._index += 1
        self._entries[self._index].key = None
        return self.current
