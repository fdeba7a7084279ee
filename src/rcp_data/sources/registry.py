"""A suite's source reader, found by the name its spec gives (``[source] read = "trecdl"``).

The packaged suites' readers are listed in :data:`PACKAGED` and imported only when called (the
readers need the ``build`` extra); :func:`register_reader` adds a reader under a new name (a
suite of one's own, a test). Every reader lives in the sources layer, so a spec never names a
module of a higher layer.
"""

from __future__ import annotations

from collections.abc import Callable

from rcp_data.core.errors import UsageError
from rcp_data.core.specs import SuiteSpec
from rcp_data.sources.base import SuiteSource

Reader = Callable[[SuiteSpec, dict], SuiteSource]


def _trecdl(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.trecdl import read_suite

    return read_suite(spec, options)


def _nanobeir(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.nanobeir import read_suite

    return read_suite(spec, options)


def _bright(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.bright import read_suite

    return read_suite(spec, options)


def _vidore(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.vidore import read_suite

    return read_suite(spec, options)


def _demo(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.synthetic import read_suite

    return read_suite(spec, options)


def _local(spec: SuiteSpec, options: dict) -> SuiteSource:
    from rcp_data.sources.local_files import read_suite

    return read_suite(spec, options)


# the packaged suites' readers, by the name their spec's ``[source] read`` gives
PACKAGED: dict[str, Reader] = {
    "trecdl": _trecdl,
    "nanobeir": _nanobeir,
    "bright": _bright,
    "vidore": _vidore,
    "demo": _demo,
    "local": _local,    # local files (BEIR, TREC, CSV): every suite of one's own
}
_registered: dict[str, Reader] = {}


def register_reader(name: str, reader: Reader) -> None:
    """Make ``reader`` the source reader of every spec whose ``[source] read`` is ``name``."""
    if not name or not isinstance(name, str):
        raise UsageError(f"a reader needs a name, not {name!r}")
    _registered[name] = reader


def reader_names() -> list[str]:
    """Every reader name a spec can give, sorted."""
    return sorted(set(PACKAGED) | set(_registered))


def get_reader(spec: SuiteSpec) -> Reader:
    """The reader that ``spec``'s ``[source] read`` names."""
    name = spec.source.read
    if not name:
        raise UsageError(f"suite {spec.name!r} declares no source reader ([source] read) in "
                         f"{spec.path}")
    reader = _registered.get(name) or PACKAGED.get(name)
    if reader is None:
        raise UsageError(f"suite {spec.name!r} names the source reader {name!r} ([source] read "
                         f"in {spec.path}), which is not one of {', '.join(reader_names())}")
    return reader


def read_suite(spec: SuiteSpec, options: dict | None = None) -> SuiteSource:
    """Read ``spec``'s upstream sources with its reader (``options``: ``--source-option``)."""
    return get_reader(spec)(spec, dict(options or {}))
