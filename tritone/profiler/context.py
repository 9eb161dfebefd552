"""Where a session records now, as Proton's `context.depth`."""

from __future__ import annotations

from ._recorder import recorder


def depth(session: int | None = 0) -> int | None:
    """How many frames deep a node recorded now would sit in `session`'s tree
    (the open scopes, or the Python frames with context="python"); None when
    no session exists."""
    if not recorder.sessions:
        return None
    return recorder.depth(0 if session is None else session)
