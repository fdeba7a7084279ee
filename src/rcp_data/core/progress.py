"""Progress bars that stay out of logs and out of library calls.

A library call shows no bar: bars are off until a caller turns them on with
:func:`show_bars` (the CLI does, unless ``-q``), or for one block with :func:`bars` (a public
API function's ``progress=True``). Even then a bar shows only when stderr is a terminal
(:func:`bars_shown`): piped or redirected output, ``-q``, and library calls that do not ask get
no bar frames.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # tqdm is imported where a bar is made: turning bars on costs nothing
    from tqdm import tqdm

_shown = False        # the CLI asked (not -q)
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
    """Whether bars were asked for: by a library call, or by the CLI (not ``-q``)."""
    return _asked or _shown


def bars_shown() -> bool:
    """Whether a bar made now would show: asked for (:func:`bars_wanted`) and stderr is a
    terminal."""
    if not bars_wanted():
        return False
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def progress(iterable: Iterable | None = None, *, disable: bool = False, **kwargs) -> tqdm:
    """A tqdm bar (``kwargs`` as tqdm's) on stderr under the rules above; ``disable`` forces it
    off."""
    from tqdm.auto import tqdm

    return tqdm(iterable, disable=disable or not bars_shown(), file=sys.stderr, **kwargs)


__all__ = ["bars", "bars_shown", "bars_wanted", "hub_bars", "progress", "show_bars"]
