"""A result table's cells as every output writes them (re-exported by
:mod:`rcp_data.model.card_format`; here so that ``score --qrels`` imports no card machinery)."""

from __future__ import annotations

import re

CARD_K = 10   # a card's main cutoff when its spec names none (core.specs.DEFAULT_CARD_K[0])
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def escape_cell(text: str, *, markdown: bool = True) -> str:
    """``text`` as one table cell that cannot end its row or add one: every control character
    as its Python escape (``\\n``, ``\\t``, ``\\x1b``) and, in Markdown, a bar as ``\\|``."""
    out = _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)
    return out.replace("|", "\\|") if markdown else out


__all__ = ["CARD_K", "escape_cell"]
