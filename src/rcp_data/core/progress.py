"""Progress bars that stay out of logs: only on a terminal, never when the toolkit is quiet.

A bar shows when stderr is a terminal (tqdm's ``disable=None``) and the ``rcp_data`` loggers
log at INFO (the CLI's default; ``-q`` raises the level, so no bar). Piped or redirected
output, ``-q``, and library use without logging configured get no bar frames.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from tqdm.auto import tqdm


def bars_wanted() -> bool:
    """Whether the toolkit is chatty enough for bars (INFO enabled for ``rcp_data``)."""
    return logging.getLogger("rcp_data").isEnabledFor(logging.INFO)


def progress(iterable: Iterable | None = None, *, disable: bool = False, **kwargs) -> tqdm:
    """A tqdm bar (``kwargs`` as tqdm's) under the rules above; ``disable`` forces it off."""
    off = True if disable or not bars_wanted() else None   # None: off unless a terminal
    return tqdm(iterable, disable=off, **kwargs)


__all__ = ["bars_wanted", "progress"]
