"""Progress bars that stay out of logs and out of library calls.

A library call shows no bar: bars are off until a caller turns them on with
:func:`show_bars` (the CLI does, unless ``-q``), or for one block with :func:`bars` (a public
API function's ``progress=True``). Even then a bar shows only when stderr is a terminal
(tqdm's ``disable=None``), and, when the CLI turned them on, only while the ``rcp_data``
loggers log at INFO (the CLI's default; ``-q`` raises the level). Piped or redirected output,
``-q``, and library calls that do not ask get no bar frames.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tqdm is imported where a bar is made: turning bars on costs nothing
    from tqdm import tqdm

_shown = False        # the CLI asked (and INFO is on)
_asked = False        # a library call asked for this block


def show_bars(on: bool = True) -> None:
    """Turn the toolkit's bars on (or off) for the rest of the process."""
    global _shown
    _shown = bool(on)


@contextlib.contextmanager
def bars(on: bool) -> Iterator[None]:
    """Bars on for the block when ``on`` (else as they were); the previous setting after it."""
    global _asked
    before = _asked
    _asked = before or bool(on)
    try:
        yield
    finally:
        _asked = before


@contextlib.contextmanager
def hub_bars(on: bool) -> Iterator[None]:
    """huggingface_hub's download bars off for the block unless ``on`` (as they were after);
    with ``on`` nothing is imported or changed."""
    if on:
        yield
        return
    from huggingface_hub.utils import (
        are_progress_bars_disabled,
        disable_progress_bars,
        enable_progress_bars,
    )

    was_off = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_off:
            enable_progress_bars()


def bars_wanted() -> bool:
    """Whether bars were asked for: by a library call, or by the CLI while the toolkit is
    chatty enough (INFO for ``rcp_data``)."""
    return _asked or (_shown and logging.getLogger("rcp_data").isEnabledFor(logging.INFO))


def progress(iterable: Iterable | None = None, *, disable: bool = False, **kwargs) -> tqdm:
    """A tqdm bar (``kwargs`` as tqdm's) under the rules above; ``disable`` forces it off."""
    from tqdm.auto import tqdm

    off = True if disable or not bars_wanted() else None   # None: off unless a terminal
    return tqdm(iterable, disable=off, **kwargs)


__all__ = ["bars", "bars_wanted", "hub_bars", "progress", "show_bars"]
