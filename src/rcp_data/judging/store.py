"""The judge run's store: append-only, one record per finished window, and an identity file.

``STORE/identity.json`` records what produced the store (the judge model, the prompts' and the
rubric's sha256, the answer format, the schedule, the pool's digest, the parse version); a run
with another identity is refused, naming the fields that differ. ``STORE/windows.jsonl`` holds
one JSON record per window, written to the file as each finishes (a kill loses no answer
received, and never leaves a record kept twice or in part); a record's
``id`` is the sha256 of the identity digest, the query, the stage, the phase, the sequence number and the
documents in order, so a resumed run finds what it already has and never records a window
twice. A torn last line (a killed writer) is dropped when the store is opened for writing.
A line that does not read as a record (bad JSON, NUL bytes, a list, a record without ``id``
or with fields of the wrong type) is named (file, line) in one warning and never ends the
read; when the store is opened for writing such lines are appended to
``STORE/quarantine.jsonl`` (kept, never lost) and taken out of ``windows.jsonl``.
``STORE/.lock`` keeps a second writer out. ``STORE/runs.jsonl`` has a line per run that ended
(finished, or stopped at ``--max-calls``): its wall time and calls (a killed run has none).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import math
import os
from pathlib import Path

from rcp_data.core.errors import InputError, RefusedError, UsageError
from rcp_data.core.outputs import own_file

log = logging.getLogger(__name__)

IDENTITY = "identity.json"
WINDOWS = "windows.jsonl"
LOCK = ".lock"
RUNS = "runs.jsonl"
QUARANTINE = "quarantine.jsonl"
STORE_SCHEMA = "rcp-data.judge-store/1"


try:  # orjson (the judge extra): the same JSON line, UTF-8, several times faster
    import orjson

    def _line(record: dict) -> bytes:
        return orjson.dumps(record) + b"\n"
except ImportError:  # pragma: no cover - json is the fallback
    def _line(record: dict) -> bytes:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _finite_json(value: object, where: str) -> str:
    """``value`` as JSON text; NaN and infinities are refused (they never equal themselves)."""
    try:
        return json.dumps(value, sort_keys=True, allow_nan=False)
    except ValueError as exc:
        raise UsageError(f"{where}: a value is not a finite number ({exc}); give finite "
                         "settings") from None


def identity_digest(identity: dict) -> str:
    return hashlib.sha256(_finite_json(identity, "identity").encode()).hexdigest()


def window_id(digest: str, query_key: str, stage: str, phase: str, seq: int,
              doc_ids: list[str]) -> str:
    text = json.dumps([digest, query_key, stage, phase, seq, doc_ids], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def _diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    out = []
    for k in sorted(set(a) | set(b)):
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            out += _diff(x, y, f"{prefix}{k}.")
        elif x != y:
            out.append(f"{prefix}{k}")
    return out


# a record's fields and their types (what the tables and a resume read)
_FIELDS = {"id": str, "query": str, "stage": str, "phase": str, "seq": int, "docs": list,
           "status": str, "usage": dict}


def _problem(rec: object) -> str:
    """What is wrong with a decoded line as a record ('' when nothing)."""
    if not isinstance(rec, dict):
        return f"a JSON {type(rec).__name__}, not a record"
    for name, kind in _FIELDS.items():
        v = rec.get(name)
        if not isinstance(v, kind) or isinstance(v, bool):
            return f"field '{name}' is {'missing' if v is None else type(v).__name__}"
    if not all(isinstance(d, str) for d in rec["docs"]):
        return "field 'docs' holds a non-string"
    if rec["status"] not in ("ok", "invalid"):
        return f"field 'status' is {str(rec['status'])[:20]!r}, not ok or invalid"
    if rec["status"] == "ok" and not (isinstance(rec.get("values"), list)
                                      and len(rec["values"]) == len(rec["docs"])):
        return "field 'values' is not one value per document"
    return ""


def _decode(line: bytes) -> tuple[object, str]:
    if b"\0" in line:
        return None, "NUL bytes"
    try:
        return json.loads(line), ""
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bad UTF-8, deep nesting
        return None, f"not JSON ({type(exc).__name__})"


def scan_lines(path: Path) -> tuple[list[tuple[int, dict]], list[tuple[int, bytes, str]]]:
    """Every line of a JSON-lines file: (line number, record) for those that read, and
    (line number, bytes, why) for those that do not. A torn last line (no newline: a killed
    writer) is neither."""
    good: list[tuple[int, dict]] = []
    bad: list[tuple[int, bytes, str]] = []
    if not path.exists():
        return good, bad
    with path.open("rb") as f:
        for n, line in enumerate(f, start=1):
            if not line.endswith(b"\n"):
                break
            if not line.strip():
                continue
            rec, why = _decode(line)
            why = why or _problem(rec)
            if why:
                bad.append((n, line, why))
            else:
                good.append((n, rec))
    return good, bad


def _warn(path: Path, bad: list[tuple[int, bytes, str]], action: str,
          what: str = "that are not records") -> None:
    if bad:
        named = "; ".join(f"line {n}: {why}" for n, _, why in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        log.warning("%s: %d line(s) %s %s (%s%s)", path, len(bad), what, action, named, more)


def read_numbered(root: Path) -> list[tuple[int, dict]]:
    """(line number, record) for every line of the store that reads as a record; the others
    are named in one warning and skipped."""
    path = Path(root) / WINDOWS
    good, bad = scan_lines(path)
    _warn(path, bad, "skipped")
    return good


def read_records(root: Path) -> list[dict]:
    """Every record of a store (a torn last line and lines that are not records skipped)."""
    return [r for _, r in read_numbered(root)]


def read_runs(root: Path) -> list[dict]:
    """The store's run lines (a torn last line and lines that do not read skipped)."""
    path = Path(root) / RUNS
    out, bad = [], []
    if not path.exists():
        return out
    for n, line in enumerate(path.read_bytes().splitlines(keepends=True), start=1):
        if not line.endswith(b"\n"):
            continue
        rec, why = _decode(line)
        if not why and not (isinstance(rec, dict) and isinstance(rec.get("seconds"), int | float)
                            and not isinstance(rec.get("seconds"), bool)
                            and math.isfinite(rec["seconds"])):
            why = "not a run record with finite 'seconds'"
        if why:
            bad.append((n, line, why))
        else:
            out.append(rec)
    _warn(path, bad, "skipped")
    return out


def planned_records(root: Path, digest: str) -> list[dict]:
    """The store's records for export: a line whose id repeats an earlier one, or whose id is
    not this identity's id of its window (a record of another store), is set aside and named
    (store line) in one warning."""
    path = Path(root) / WINDOWS
    seen: set[str] = set()
    out, aside = [], []
    for n, r in read_numbered(root):
        if r["id"] in seen:
            aside.append((n, b"", f"duplicate of window {r['id'][:12]}"))
            continue
        if window_id(digest, r["query"], r["stage"], r["phase"], r["seq"], r["docs"]) != r["id"]:
            aside.append((n, b"", "a record of another identity"))
            continue
        seen.add(r["id"])
        out.append(r)
    _warn(path, aside, "set aside from the tables", what="of records")
    return out


def read_identity(root: Path) -> dict:
    path = Path(root) / IDENTITY
    if not path.exists():
        raise UsageError(f"{root} is not a judge store (no {IDENTITY})")
    return _load_identity(path)


def _reject(token: str) -> float:
    raise ValueError(f"{token} is not a finite number")


def _load_identity(path: Path) -> dict:
    try:
        data = json.loads(path.read_bytes(), parse_constant=_reject)
    except (ValueError, RecursionError) as exc:
        raise InputError(f"{path}: not a JSON identity ({type(exc).__name__}: "
                         f"{str(exc)[:120]})") from None
    if not isinstance(data, dict) or not isinstance(data.get("judge"), dict):
        raise InputError(f"{path}: field 'judge': not a judge store identity")
    return data


class Store:
    """A store opened for writing (holds the lock until :meth:`close`)."""

    def __init__(self, root: str | Path, identity: dict) -> None:
        self.root = Path(root)
        self._lock = self._out = None
        text = _finite_json({"schema": STORE_SCHEMA, **identity}, "the judge settings")
        if self.root.exists() and not self.root.is_dir():
            raise UsageError(f"--store {self.root} is a file, not a folder")
        if self.root.is_dir() and any(self.root.iterdir()) and not (
                self.root / IDENTITY).exists():
            raise UsageError(f"--store {self.root} is a folder that is not a judge store; "
                             "give a new or empty folder")
        self.root.mkdir(parents=True, exist_ok=True)
        for name in (LOCK, IDENTITY, WINDOWS, QUARANTINE, RUNS):  # never written through a link
            own_file(self.root / name)
            own_file((self.root / name).with_suffix(".tmp"))
        self._lock = (self.root / LOCK).open("a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock.close()
            raise RefusedError(f"another judge run is writing {self.root}") from exc
        full = {"schema": STORE_SCHEMA, **identity}
        path = self.root / IDENTITY
        if path.exists():
            try:
                old = _load_identity(path)
            except InputError:
                self.close()
                raise
            if old != full:
                self.close()
                fields = ", ".join(_diff(old, full))
                raise RefusedError(f"{self.root} was judged with another identity (differs in "
                                   f"{fields}); use a new --store to judge again")
        else:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(json.loads(text), indent=1, sort_keys=True),
                           encoding="utf-8")
            os.replace(tmp, path)
        self.identity = full
        self.digest = identity_digest(full)
        self._repair()
        # the records the store had when opened (a resumed run reads them); a record appended
        # now keeps only its id in memory, so a long run's heap (and its GC pauses) stays small
        self.records: dict[str, dict] = {r["id"]: r for r in read_records(self.root)}
        self._ids: set[str] = set(self.records)
        self._out = (self.root / WINDOWS).open("ab", buffering=0)

    def _repair(self) -> None:
        """Drop a torn last line left by a killed writer; move the lines that are not records
        to the quarantine file (appended), named in one warning."""
        path = self.root / WINDOWS
        if not path.exists():
            return
        data = path.read_bytes()
        good = len(data)
        if data and not data.endswith(b"\n"):
            good = data.rfind(b"\n") + 1
        if good != len(data):
            with path.open("r+b") as f:
                f.truncate(good)
        _, bad = scan_lines(path)
        if not bad:
            return
        with (self.root / QUARANTINE).open("ab") as q:
            for _, line, _ in bad:
                q.write(line)
            q.flush()
            os.fsync(q.fileno())
        drop = {n for n, _, _ in bad}
        tmp = path.with_suffix(".tmp")
        with path.open("rb") as src, tmp.open("wb") as dst:
            for n, line in enumerate(src, start=1):
                if n not in drop:
                    dst.write(line)
        os.replace(tmp, path)
        _warn(path, bad, f"moved to {self.root / QUARANTINE}")

    def has(self, wid: str) -> bool:
        return wid in self._ids

    def append(self, record: dict) -> None:
        """Add ``record`` (once: an id already stored is ignored), on disk when this returns
        (one whole line: a kill leaves at most a torn last line, dropped on the next open)."""
        if record["id"] in self._ids:
            return
        self._ids.add(record["id"])
        view = memoryview(_line(record))
        while view:
            view = view[self._out.write(view):]

    def log_run(self, entry: dict) -> None:
        """One line for a run that ended (wall time, calls)."""
        with (self.root / RUNS).open("ab") as f:
            f.write((json.dumps(entry, sort_keys=True) + "\n").encode("utf-8"))

    def close(self) -> None:
        out = getattr(self, "_out", None)
        if out is not None:
            out.close()
            self._out = None
        if self._lock is not None:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()
            self._lock = None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
