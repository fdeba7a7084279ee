"""The card's text machinery: the Jinja environment of the card templates (``card.md.j2``,
and ``card_prose.md.j2`` whose macros hold the sentences that depend on one place's facts),
its filters, and :func:`card_sentence`, which renders one macro alone."""

from __future__ import annotations

import re
from functools import lru_cache

from rcp_data.documents.taskfile import template_text
from rcp_data.model.card_format import metric_label


def _n(value: int) -> str:
    """An integer as the card prints it: ``1,234``."""
    return f"{int(value):,}"


def _span(low: int, high: int) -> str:
    """``150`` when every value is the same, else ``198–585``."""
    return _n(low) if low == high else f"{_n(low)}–{_n(high)}"


def _setting(value: float) -> str:
    """A fit setting as the card prints it: ``2``, ``0.5``, ``1e-4``."""
    value = float(value)
    if value.is_integer():
        return str(int(value))
    if abs(value) < 1e-3:
        return re.sub(r"e([+-])0*(\d)", r"e\1\2", f"{value:.0e}")
    return f"{value:g}"


def _interval(bounds, queries: int | None) -> str:
    """A leaderboard interval in points (``[lo, hi]``, or ``n too small (n=K)`` from fewer
    queries than the rule allows; ``queries`` None: a record from before the count)."""
    from rcp_data.scoring.agreement.bootstrap import MIN_QUERIES, interval_text

    lo, hi = bounds
    return interval_text(lo, hi, MIN_QUERIES if queries is None else int(queries),
                         lambda v: f"{100 * v:.1f}")


def _paragraph(text: str) -> str:
    """One line of the card from a block of the template wrapped over several lines."""
    return re.sub(r"\s*\n\s*", " ", text.strip())


@lru_cache(maxsize=1)
def card_environment():
    """The Jinja environment of ``templates/card.md.j2``: strict, no escaping; the filters
    ``n`` (``1,234``), ``fmt`` (a format spec), ``setting`` (a fit setting) and
    ``paragraph`` (a wrapped block as one line), ``interval`` (a leaderboard interval or
    "n too small"), and ``span`` (``low–high``); it loads the
    packaged templates by name (``card.md.j2`` imports its sentences from
    ``card_prose.md.j2``). One environment per process, so that each template is compiled
    once (the packaged templates do not change while it runs)."""
    import jinja2

    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True,
                             autoescape=False, loader=jinja2.FunctionLoader(template_text))
    env.filters.update(n=_n, fmt=format, setting=_setting, paragraph=_paragraph,
                       interval=_interval)
    env.globals.update(span=_span, metric_label=metric_label)
    return env


def card_sentence(macro: str, *args) -> str:
    """One of the card's sentences, rendered alone by its macro in ``card_prose.md.j2``
    (``card_sentence("paper_relation", paper_relation(...))``)."""
    module = card_environment().get_template("card_prose.md.j2").module
    return str(getattr(module, macro)(*args))


__all__ = ["card_environment", "card_sentence"]
