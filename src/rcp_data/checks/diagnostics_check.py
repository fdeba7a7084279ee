"""``verify``: the release's Diagnostics (``provenance/diagnostics.json`` and its pictures)
recomputed from the release's data.

Every number of the Diagnostics section and every array a picture plots is computed again
(:func:`rcp_data.documents.diagnostics_files.expected_record`) and compared with the stored
record to :data:`TOLERANCE`; each picture must be a PNG of the size the record states. Pixels
are not compared. A release without the file gets an ``absent`` check (not a failure).
"""

from __future__ import annotations

from pathlib import Path

from rcp_data.checks.reports import Check
from rcp_data.core.errors import InputError
from rcp_data.core.specs import SuiteSpec

TOLERANCE = 1e-9
NAME = "diagnostics"
WHAT = "the Diagnostics numbers and the pictures' data, recomputed"


def differences(stored, expected, where: str = "") -> list[str]:
    """Paths (``numbers.label.rcp.auc``) where two JSON values differ beyond TOLERANCE."""
    if isinstance(expected, dict) and isinstance(stored, dict):
        out = []
        for key in sorted(set(stored) | set(expected)):
            sub = f"{where}.{key}" if where else str(key)
            if key not in stored or key not in expected:
                out.append(f"{sub}: {'missing' if key not in stored else 'not expected'}")
            else:
                out += differences(stored[key], expected[key], sub)
        return out
    if isinstance(expected, list) and isinstance(stored, list):
        if len(stored) != len(expected):
            return [f"{where}: {len(stored)} values, expected {len(expected)}"]
        out = []
        for i, (a, b) in enumerate(zip(stored, expected, strict=True)):
            out += differences(a, b, f"{where}[{i}]")
        return out
    numbers = (int, float)
    if isinstance(stored, numbers) and isinstance(expected, numbers) and not isinstance(
            stored, bool) and not isinstance(expected, bool):
        return [] if abs(stored - expected) <= TOLERANCE else [
            f"{where}: stored {stored!r}, recomputed {expected!r}"]
    return [] if stored == expected else [f"{where}: stored {stored!r}, recomputed {expected!r}"]


def check_diagnostics(root: Path, spec: SuiteSpec) -> list[Check]:
    from rcp_data.documents.diagnostics_files import DIAGNOSTICS_FILE, expected_record, read_record
    from rcp_data.documents.pictures import png_size

    root = Path(root)
    try:
        stored = read_record(root)
    except InputError as exc:
        return [Check.failed(NAME, WHAT, "readable JSON", exc.message, DIAGNOSTICS_FILE)]
    if stored is None:
        return [Check(NAME, True, WHAT, found="absent: the release has no Diagnostics "
                      "(build writes them; card render adds them)", where=DIAGNOSTICS_FILE,
                  status="absent")]
    if not isinstance(stored, dict):
        return [Check.failed(NAME, WHAT, "a JSON object", type(stored).__name__,
                             DIAGNOSTICS_FILE)]
    checks = []
    try:
        expected = expected_record(root, spec)
    except InputError as exc:
        where = Path(exc.path) if exc.path else None
        if where is not None and where.is_relative_to(root):
            where = where.relative_to(root)
        return [Check.failed(NAME, WHAT, "the release's data readable", exc.message,
                             where.as_posix() if where is not None else DIAGNOSTICS_FILE)]
    diffs = differences(stored, expected)
    checks.append(Check.failed(NAME, WHAT, "equal to the release's data", f"{len(diffs)} "
                               "values differ", DIAGNOSTICS_FILE, diffs) if diffs else
                  Check.passed(NAME, WHAT, found="every value recomputed",
                               where=DIAGNOSTICS_FILE))
    bad = []
    for name, pic in (stored.get("pictures") or {}).items():
        path = root / str(pic.get("path", ""))
        try:
            size = list(png_size(path))
        except (OSError, ValueError) as exc:
            bad.append(f"{name}: {exc}")
            continue
        if size != list(pic.get("size", [])):
            bad.append(f"{name}: {size[0]}x{size[1]} pixels, the record states {pic.get('size')}")
    checks.append(Check.failed("pictures", "the pictures are PNGs of the stated size",
                               "every picture", f"{len(bad)} bad", DIAGNOSTICS_FILE, bad)
                  if bad else Check.passed("pictures", "the pictures are PNGs of the stated size",
                                           found=f"{len(stored.get('pictures') or {})} "
                                                 "pictures", where="provenance/pictures"))
    return checks


__all__ = ["check_diagnostics", "differences"]
