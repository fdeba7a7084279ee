"""Reading and writing files: JSON and parquet with errors that name the file, atomic writes.

Every write here is atomic: the content goes to a temporary file (or folder) beside the target
and is renamed into place only when complete, so a reader never sees half a file and an error
leaves the target as it was and no temporary behind. A temporary carries its writer's pid, so
what a killed writer left is removed by the next writer of the same target.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rcp_data.core.errors import InputError, NotFoundError, RcpDataError, SchemaError

if TYPE_CHECKING:  # the data libraries are imported where a table is read
    import numpy as np
    import pyarrow as pa

log = logging.getLogger(__name__)


# -- text --------------------------------------------------------------------------------------
# A user's text file may begin with a UTF-8 byte-order mark (some editors and Windows tools
# write one). Every reader of text input goes through these, which drop it, so that the first
# row is never lost or misread; a BOM anywhere else is kept as the character it is.
TEXT_ENCODING = "utf-8-sig"
BOM = b"\xef\xbb\xbf"


def without_bom(raw: bytes) -> bytes:
    """``raw`` without a leading UTF-8 byte-order mark (the first line of a file read as bytes)."""
    return raw[len(BOM):] if raw.startswith(BOM) else raw


def open_text(path: str | Path) -> TextIO:
    """A text file opened for reading as UTF-8, a leading byte-order mark dropped, newlines as
    written (for the csv module)."""
    return Path(path).open(encoding=TEXT_ENCODING, newline="")


def read_text(path: str | Path) -> str:
    """A text file's content as UTF-8, a leading byte-order mark dropped."""
    return Path(path).read_text(encoding=TEXT_ENCODING)


# -- JSON ----------------------------------------------------------------------------------------
def loads_json(text: str | bytes, *, source: str) -> object:
    """Parse JSON text; malformed text is an :class:`InputError` naming ``source``."""
    if isinstance(text, str) and text.startswith("\ufeff"):
        text = text[1:]                       # a byte-order mark (see TEXT_ENCODING)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc})", path=source) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc})", path=source) from exc


def read_json(path: str | Path) -> object:
    """Parse a JSON file; a missing or malformed file is an :class:`InputError` naming it."""
    path = Path(path)
    try:
        text = read_text(path)
    except FileNotFoundError as exc:
        raise NotFoundError("file not found", path=str(path)) from exc
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text ({exc})", path=str(path)) from exc
    return loads_json(text, source=str(path))


def dumps_json(data: object) -> str:
    """The project's JSON text: indented, UTF-8 as is, one trailing newline."""
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def write_json(data: object, path: str | Path) -> None:
    """Write ``data`` as JSON (:func:`dumps_json`), atomically."""
    atomic_write_text(path, dumps_json(data))


# -- atomic writes -------------------------------------------------------------------------------
# A temporary beside ``target`` is named ``.<target name>.tmp-<pid>-<random>[suffix]``; a target
# being replaced is parked as ``.<target name>.old-<pid>-<random>`` for the instant of the swap.
# The writer's pid in the name lets the next writer of the same target tell what a killed run
# left behind (:func:`clean_stale_temporaries`).
def _beside(target: Path, kind: str, suffix: str = "") -> Path:
    return target.with_name(f".{target.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}{suffix}")


def _leftover_pattern(target: Path) -> re.Pattern[str]:
    return re.compile(rf"^\.{re.escape(target.name)}\.(tmp|old)-(\d+)-[0-9a-f]{{8}}")


_TEMPORARY_NAME = re.compile(r"(?<![^\s/'\"(=])\.([^/\s]+?)\.tmp-\d+-[0-9a-f]{8}"
                             r"(?:\.[A-Za-z0-9]+)?(?![0-9A-Za-z_-])")


def as_user_sees(text: str) -> str:
    """``text`` with each temporary of an atomic write (``.<name>.tmp-<pid>-<random>``) named
    as the file or folder it becomes: a message never names a path gone after the command."""
    return _TEMPORARY_NAME.sub(r"\1", text)


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this machine (this process counts as alive)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True          # someone else's process
    except (OverflowError, ValueError, OSError):
        return False         # not a pid this machine can have
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def clean_stale_temporaries(target: str | Path) -> list[Path]:
    """Remove what a killed writer of ``target`` left beside it; return what was removed.

    Temporaries (``.<name>.tmp-<pid>-*``) whose writer is no longer running are deleted. A
    parked old target (``.<name>.old-<pid>-*``, the writer killed mid-swap) is moved back when
    ``target`` is missing, else deleted. Anything of a live writer is left alone.
    """
    target = Path(target)
    if not target.parent.is_dir():
        return []
    pattern = _leftover_pattern(target)
    removed = []
    for entry in sorted(target.parent.iterdir()):
        m = pattern.match(entry.name)
        if not m or pid_alive(int(m.group(2))):
            continue
        if m.group(1) == "old" and not os.path.lexists(target):
            os.replace(entry, target)
            log.warning("restored %s from %s (its writer was killed mid-swap)", target, entry)
            continue
        _remove(entry)
        removed.append(entry)
        log.info("removed %s (left by a writer that is no longer running)", entry)
    return removed


def _temp_file_beside(target: Path, suffix: str) -> Path:
    """Create an empty, unique hidden file beside ``target`` (mode as the umask allows)."""
    for _ in range(100):
        tmp = _beside(target, "tmp", suffix)
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {target}")


@contextlib.contextmanager
def naming_the_file(target: str | Path) -> Iterator[None]:
    """An OS error that names no file (a ``write`` on a full disk: "No space left on device")
    is raised again naming ``target``, the file or folder being written."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or isinstance(exc, RcpDataError):  # ours name their input
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(target)) from exc


@contextlib.contextmanager
def atomic_path(target: str | Path, *, suffix: str = "") -> Iterator[Path]:
    """Yield a temporary path beside ``target``; rename it onto ``target`` only on success.

    Whatever the block writes to the path (any writer: text, bytes, parquet, a copy) replaces
    ``target`` in one rename; on any error the temporary is removed and ``target`` is untouched.
    A symbolic link at ``target`` is replaced by the file (the rename replaces the link), so
    nothing is ever written through it.
    ``suffix`` ends the temporary name (for writers that go by the extension). Temporaries a
    killed writer left beside ``target`` are removed first (:func:`clean_stale_temporaries`).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(target)
    tmp = _temp_file_beside(target, suffix)
    try:
        with naming_the_file(target):
            yield tmp
            os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_bytes(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_dir(target: str | Path) -> Iterator[Path]:
    """Yield a temporary directory beside ``target``; move it into place only on success.

    The temporary is ``.<name>.tmp-<pid>-<random>``: on any error (also an error of the final
    move) it is removed and ``target`` is left as it was; after a kill, the next writer of
    ``target`` removes it (:func:`clean_stale_temporaries`). An existing ``target`` is replaced:
    callers decide whether it may be (:mod:`rcp_data.core.outputs`). A symbolic link at
    ``target`` is replaced by the folder; where it points is never written or deleted.
    """
    target = Path(target)
    target = Path(os.path.realpath(target.parent)) / target.name  # not through a link there
    target.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(target)
    tmp = _beside(target, "tmp")
    tmp.mkdir()
    try:
        with naming_the_file(target):
            yield tmp
            _swap_into_place(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    log.info("wrote %s", target)


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Rename ``tmp`` onto ``target``; an existing target is parked, then deleted."""
    old = None
    if os.path.lexists(target):
        old = _beside(target, "old")
        os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        if old is not None:
            os.replace(old, target)
        raise
    if old is not None:
        _remove(old)


def int_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """An integer column without nulls as an int64 array, read from its Arrow buffers (as
    :func:`float_values`: no pandas)."""
    import numpy as np
    import pyarrow as pa

    a = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    a = a.cast(pa.int64())
    if len(a) == 0:
        return np.zeros(0, dtype=np.int64)
    return np.frombuffer(a.buffers()[1], dtype=np.int64, count=a.offset + len(a))[a.offset:].copy()


# -- parquet -------------------------------------------------------------------------------------
def types_compatible(actual: pa.DataType, expected: pa.DataType) -> bool:
    """Whether a column of type ``actual`` serves where the layout expects ``expected``."""
    import pyarrow as pa

    if actual == expected:
        return True
    if pa.types.is_string(expected) and (pa.types.is_large_string(actual)
                                          or pa.types.is_string(actual)):
        return True
    if pa.types.is_list(expected) and (pa.types.is_list(actual) or pa.types.is_large_list(actual)):
        return True
    if pa.types.is_integer(expected) and pa.types.is_integer(actual):
        return True
    return pa.types.is_floating(expected) and (
        pa.types.is_floating(actual) or pa.types.is_null(actual)
    )


@dataclass(frozen=True)
class SchemaDiff:
    """How a file's schema differs from the expected one."""

    missing: tuple[str, ...] = ()                          # required columns it lacks
    mistyped: tuple[tuple[str, pa.DataType, pa.DataType], ...] = ()   # (column, has, expected)
    absent: tuple[str, ...] = ()                           # optional columns it lacks

    @property
    def ok(self) -> bool:
        return not self.missing and not self.mistyped


def schema_diff(actual: pa.Schema, expected: pa.Schema, optional: Sequence[str] = ()
                ) -> SchemaDiff:
    """Compare a file's schema with the expected one (types by :func:`types_compatible`)."""
    names = set(actual.names)
    missing = tuple(f.name for f in expected if f.name not in names and f.name not in optional)
    absent = tuple(f.name for f in expected if f.name not in names and f.name in optional)
    mistyped = tuple((f.name, actual.field(f.name).type, f.type) for f in expected
                     if f.name in names and not types_compatible(actual.field(f.name).type,
                                                                 f.type))
    return SchemaDiff(missing, mistyped, absent)


def check_schema(actual: pa.Schema, expected: pa.Schema, path: str | Path,
                 optional: Sequence[str] = ()) -> None:
    """Raise :class:`SchemaError` naming the file and a missing (else mistyped) column."""
    diff = schema_diff(actual, expected, optional)
    if diff.missing:
        name = diff.missing[0]
        raise SchemaError(f"missing column {name!r} (has {', '.join(actual.names)})",
                          path=str(path), field=name)
    if diff.mistyped:
        name, have, want = diff.mistyped[0]
        raise SchemaError(f"column {name!r} has type {have}, expected {want}",
                          path=str(path), field=name)


def float_values(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A numeric column as a float64 array, nulls as NaN, read from its Arrow buffers.

    pyarrow's own ``to_numpy`` of a column with nulls goes through pandas, whose import costs a
    command that reads a few floats more than all its reading."""
    import numpy as np
    import pyarrow as pa

    a = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    a = a.cast(pa.float64())
    n = a.offset + len(a)
    if len(a) == 0 or a.null_count == len(a):
        return np.full(len(a), np.nan)
    validity, data = a.buffers()[:2]
    values = np.frombuffer(data, dtype=np.float64, count=n)[a.offset:]
    if a.null_count == 0 or validity is None:
        return values.copy()
    valid = np.unpackbits(np.frombuffer(validity, dtype=np.uint8), count=n,
                          bitorder="little")[a.offset:].astype(bool)
    return np.where(valid, values, np.nan)


# -- parquet -----------------------------------------------------------------------------------
class _SharedReads:
    """What :func:`shared_reads` holds: each file's schema, and each column of it as read
    (per dictionary mode: plain, or dictionary-encoded as ``read_dictionary`` asks)."""

    def __init__(self, exclude: Callable[[Path], bool] | None) -> None:
        self.exclude = exclude
        self.schemas: dict[Path, pa.Schema] = {}
        self.columns: dict[tuple[Path, str, bool], pa.ChunkedArray] = {}

    def holds(self, path: Path) -> bool:
        return self.exclude is None or not self.exclude(path)

    def read(self, path: Path, names: list[str], keep: list[str]) -> pa.Table:
        """The columns ``names`` of ``path``, reading from the file only those not read yet."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        wanted = [(c, c in keep) for c in names]
        missing = [c for c, d in wanted if (path, c, d) not in self.columns]
        if missing:
            dictionary = [c for c in missing if c in keep]
            table = pq.ParquetFile(path, read_dictionary=dictionary or None).read(
                columns=missing)
            for c in missing:
                self.columns[(path, c, c in keep)] = table.column(c)
        metadata = self.schemas[path].metadata
        return pa.table({c: self.columns[(path, c, d)] for c, d in wanted}).replace_schema_metadata(
            metadata)


_SHARED: contextvars.ContextVar[_SharedReads | None] = contextvars.ContextVar(
    "rcp_data_shared_reads", default=None)


@contextlib.contextmanager
def shared_reads(exclude: Callable[[Path], bool] | None = None) -> Iterator[None]:
    """Within the block, :func:`read_parquet` reads each column of a file once (per
    dictionary mode) and :func:`read_parquet_schema` each schema once: every later read is
    served the same arrow arrays (immutable), its columns and types still checked. For a
    command that reads one release in several stages (``verify``) and writes none of its
    files meanwhile. ``exclude``: files never held (large tables read once)."""
    token = _SHARED.set(_SharedReads(exclude))
    try:
        yield
    finally:
        _SHARED.reset(token)


def read_parquet_schema(path: str | Path, *, what: str = "a parquet table") -> pa.Schema:
    """The schema of a parquet file; a missing or unreadable file is an InputError naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    shared = _SHARED.get()
    if shared is not None and path in shared.schemas:
        return shared.schemas[path]
    if not path.exists():
        raise InputError(f"missing file (expected {what})", path=str(path))
    try:
        schema = pq.read_schema(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc
    if shared is not None and shared.holds(path):
        shared.schemas[path] = schema
    return schema


def read_parquet(path: str | Path, columns: Sequence[str] | None = None, *,
                 schema: pa.Schema | None = None, optional: Sequence[str] = (),
                 required: Sequence[str] = (), what: str = "a parquet table",
                 read_dictionary: Sequence[str] = ()) -> pa.Table:
    """Read a parquet file, its columns checked first.

    ``schema``: the columns and types the file must have (an ``optional`` one may be absent);
    ``required``: further columns it must have, of any type; ``columns``: the columns to read
    (each must be there, except an ``optional`` one, which is left out). A missing or
    unreadable file is an :class:`InputError`, a missing or mistyped column a
    :class:`SchemaError`, each naming the file (``what`` says which table was expected).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    found = read_parquet_schema(path, what=what)
    if schema is not None:
        check_schema(found, schema, path, optional)
    wanted = [*required, *(c for c in columns or () if c not in optional)]
    lacking = [c for c in wanted if c not in found.names]
    if lacking:
        raise SchemaError(f"missing column {lacking[0]!r} (has {', '.join(found.names)})",
                          path=str(path), field=lacking[0])
    if columns is not None:
        columns = [c for c in columns if c in found.names]
    keep = [c for c in read_dictionary if columns is None or c in columns]
    shared = _SHARED.get()
    try:  # the one file as such (pq.read_table goes through pyarrow.dataset, importing pandas)
        if shared is not None and path in shared.schemas:
            return shared.read(path, list(found.names) if columns is None else columns, keep)
        return pq.ParquetFile(path, read_dictionary=keep or None).read(columns=columns)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, OSError) as exc:
        raise InputError(f"cannot read parquet ({exc})", path=str(path)) from exc


__all__ = [
    "as_user_sees", "atomic_dir", "atomic_path", "atomic_write_bytes", "atomic_write_text",
    "check_schema",
    "naming_the_file",
    "clean_stale_temporaries", "pid_alive",
    "BOM", "TEXT_ENCODING", "open_text", "read_text", "without_bom",
    "dumps_json", "loads_json", "read_json", "read_parquet", "read_parquet_schema",
    "shared_reads",
    "SchemaDiff", "schema_diff",
    "types_compatible", "write_json",
]
