"""Find a suite's source reader from its spec (``[source] read = "module:function"``)."""

from __future__ import annotations

import importlib
from collections.abc import Callable

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources.base import SuiteSource

Reader = Callable[[SuiteSpec, dict], SuiteSource]


def get_reader(spec: SuiteSpec) -> Reader:
    target = spec.source.read
    if not target or ":" not in target:
        raise UsageError(f"suite {spec.name!r} declares no source reader ([source] read) in "
                         f"{spec.path}")
    module_name, func = target.split(":", 1)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UsageError(f"the reader of suite {spec.name!r} ({target}) is not available: "
                         f"{exc}") from exc
    return getattr(module, func)


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    return get_reader(spec)(spec, dict(options or {}))
