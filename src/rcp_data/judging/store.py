"""The judge run's store: append-only, one record per finished window, and an identity file.

``STORE/identity.json`` records what produced the store (the judge model, the prompts' and the
rubric's sha256, the answer format, the schedule, the pool's digest, the parse version); a run
with another identity is refused, naming the fields that differ. ``STORE/windows.jsonl`` holds
one JSON record per window, written to the file as each finishes (a kill loses no answer
received, and never leaves a record kept twice or in part); a record's
``id`` is the sha256 of the identity digest, the query, the stage, the phase, the sequence number and the
documents in order, so a resumed run finds what it already has and never records a window
twice. A torn last line (a killed writer) is dropped when the store is opened for writing.
``STORE/.lock`` keeps a second writer out. ``STORE/runs.jsonl`` has a line per run that ended
(finished, or stopped at ``--max-calls``): its wall time and calls (a killed run has none).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

from rcp_data.core.errors import RefusedError, UsageError

IDENTITY = "identity.json"
WINDOWS = "windows.jsonl"
LOCK = ".lock"
RUNS = "runs.jsonl"
STORE_SCHEMA = "rcp-data.judge-store/1"


try:  # orjson (the judge extra): the same JSON line, UTF-8, several times faster
    import orjson

    def _line(record: dict) -> bytes:
        return orjson.dumps(record) + b"\n"
except ImportError:  # pragma: no cover - json is the fallback
    def _line(record: dict) -> bytes:
        return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def identity_digest(identity: dict) -> str:
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()


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


def read_records(root: Path) -> list[dict]:
    """Every complete record of a store (a torn last line is skipped)."""
    path = Path(root) / WINDOWS
    if not path.exists():
        return []
    out = []
    with path.open("rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                break
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                break
    return out


def read_runs(root: Path) -> list[dict]:
    """The store's run lines (a torn last line is skipped)."""
    path = Path(root) / RUNS
    if not path.exists():
        return []
    out = []
    for line in path.read_bytes().splitlines(keepends=True):
        if line.endswith(b"\n"):
            out.append(json.loads(line))
    return out


def read_identity(root: Path) -> dict:
    path = Path(root) / IDENTITY
    if not path.exists():
        raise UsageError(f"{root} is not a judge store (no {IDENTITY})")
    return json.loads(path.read_text(encoding="utf-8"))


class Store:
    """A store opened for writing (holds the lock until :meth:`close`)."""

    def __init__(self, root: str | Path, identity: dict) -> None:
        self.root = Path(root)
        if self.root.exists() and not self.root.is_dir():
            raise UsageError(f"--store {self.root} is a file, not a folder")
        if self.root.is_dir() and any(self.root.iterdir()) and not (
                self.root / IDENTITY).exists():
            raise UsageError(f"--store {self.root} is a folder that is not a judge store; "
                             "give a new or empty folder")
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = (self.root / LOCK).open("a")
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            self._lock.close()
            raise RefusedError(f"another judge run is writing {self.root}") from exc
        full = {"schema": STORE_SCHEMA, **identity}
        path = self.root / IDENTITY
        if path.exists():
            old = json.loads(path.read_text(encoding="utf-8"))
            if old != full:
                self.close()
                fields = ", ".join(_diff(old, full))
                raise RefusedError(f"{self.root} was judged with another identity (differs in "
                                   f"{fields}); use a new --store to judge again")
        else:
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(full, indent=1, sort_keys=True), encoding="utf-8")
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
        """Drop a torn last line left by a killed writer."""
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
