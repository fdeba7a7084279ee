"""The optional extras a command needs, and the one message that names a missing one."""

from __future__ import annotations

import importlib.util

from rcp_data.core.errors import MissingExtra  # defined in core.errors; kept importable here

# each extra and the top-level modules it installs
EXTRAS: dict[str, tuple[str, ...]] = {
    "build": ("ir_datasets", "ftfy", "bm25s", "Stemmer", "PIL"),
    "calibrate": ("torch",),
    "dense": ("sentence_transformers", "torch"),
    "judge": ("aiohttp",),
}


def extra_of(module: str | None) -> str | None:
    """The extra that installs ``module`` (a dotted name), if it is one of ours."""
    top = (module or "").split(".")[0]
    return next((extra for extra, mods in EXTRAS.items() if top in mods), None)


def require_extra(extra: str) -> None:
    """Raise :class:`MissingExtra` unless every module of ``extra`` can be imported."""
    for module in EXTRAS[extra]:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra(extra, module)
