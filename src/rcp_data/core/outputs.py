"""Where a command may write: outputs never destroy user data.

Every command that writes a folder (``build``, ``calibrate``, ``recalibrate``, ``demo``) goes
through :func:`output_dir`, and every command that writes a named file (``text repair``,
``card render --out``) through :func:`check_output_file`:

- an output folder must not exist, or be empty, or be a folder of the same kind this tool wrote
  earlier (recognised by its manifest, :class:`OutputKind`) and ``force`` given; a kind that
  names the files it writes (``OutputKind.files``) is replaced only while the folder holds
  nothing else (a user's file put there is never deleted);
- an output file must not be a folder, and an existing file is replaced only with ``force``;
- an output may never be, contain, or sit inside one of the command's inputs
  (:func:`check_apart`, the one rule every writing command goes through: ``build``,
  ``calibrate``, ``recalibrate``, ``demo``, ``card render``, ``judge run|reparse|import``,
  ``suite init|first-stage``, ``text repair``, ``release render-md``, ``release publish
  --record-to``, ``agree --pictures``); a symbolic link counts where it points and where it is;
- a symbolic link at a path a command writes is replaced, never written through: an output
  folder or file replaces the link (:func:`rcp_data.core.io.atomic_dir`,
  :func:`rcp_data.core.io.atomic_path`), and a folder or file written inside a folder the
  user named goes through :func:`own_folder` / :func:`own_path`;
- a generated file written into a folder the user also edits (the card and task file of a
  release) is remembered by its sha256 in rcp-data's cache (:func:`record_written`); it is
  rewritten without ``force`` only while it is bytes this tool wrote, or those it would write
  now (:func:`check_rewritable`), so hand edits are never overwritten silently.

These checks run before anything is written. The folder is then written to a temporary
``.<name>.tmp-<pid>-<random>`` beside it and moved into place in one rename at the very end
(:func:`rcp_data.core.io.atomic_dir`): on any error the temporary is deleted, and if the process
is killed, the next run writing the same output deletes every temporary whose pid is no longer
running (and puts back an old output parked mid-swap).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import atomic_dir, clean_stale_temporaries, read_json

Inputs = Mapping[str, str | Path | None]
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class OutputKind:
    """A kind of folder this tool writes, recognised by the ``schema`` of its JSON manifest."""

    what: str          # e.g. "release folder"
    manifest: str      # path of the manifest inside the folder
    schema: str        # the manifest's "schema" value
    files: frozenset[str] | None = None   # every file (path inside) it may write; None: any

    def foreign_files(self, folder: Path) -> list[str]:
        """The files in ``folder`` that a folder of this kind does not hold (none when the
        kind does not name its files)."""
        if self.files is None:
            return []
        found = (p.relative_to(folder).as_posix() for p in sorted(Path(folder).rglob("*"))
                 if not p.is_dir())
        return [rel for rel in found if rel not in self.files]

    def written_here(self, folder: Path) -> bool:
        """Whether ``folder`` is a folder of this kind that rcp-data wrote."""
        path = Path(folder) / self.manifest
        if not path.is_file():
            return False
        try:
            data = read_json(path)
        except InputError:
            return False
        return isinstance(data, dict) and data.get("schema") == self.schema


CALIBRATION = OutputKind(
    "calibration folder", "diagnostics.json", "rcp-data.calibration/1",
    files=frozenset({"diagnostics.json", "item_params.json", "thetas.parquet", "queries.parquet",
                     "stage_a_queries.parquet"}))
DEMO = OutputKind("demo folder", "demo.json", "rcp-data.demo/1")


def _real(path: str | Path) -> Path:
    return Path(os.path.realpath(path))


def _places(path: str | Path) -> tuple[Path, ...]:
    """Where ``path`` is on disk: its real path and, when its last part is a symbolic link,
    the link itself (in its real folder), which is where an output replacing the link goes."""
    absolute = Path(os.path.abspath(path))
    if not absolute.name:
        return (_real(absolute),)
    return tuple(dict.fromkeys((_real(absolute), _real(absolute.parent) / absolute.name)))


def _inside(inner: Path, outer: Path) -> bool:
    return inner != outer and outer in inner.parents


def _relation(out: str | Path, path: str | Path) -> str | None:
    """How ``out`` lies to ``path``: "is", "sits inside", "contains", or None (apart)."""
    pairs = [(m, t) for m in _places(out) for t in _places(path)]
    if any(m == t for m, t in pairs):
        return "is"
    if any(_inside(m, t) for m, t in pairs):
        return "sits inside"
    if any(_inside(t, m) for m, t in pairs):
        return "contains"
    return None


def _check_apart(out: Path, flag: str, inputs: Inputs) -> None:
    """Refuse an output that is, contains or sits inside an input."""
    for label, path in inputs.items():
        if path is None or str(path).startswith("hf://"):
            continue
        how = _relation(out, path)
        if how is not None:
            raise UsageError(f"{flag} {out} {how} the input {label} {path}; write the output "
                             "somewhere apart from the inputs (nothing was written)")


def check_apart(out: str | Path, inputs: Inputs, *, flag: str = "--out") -> Path:
    """Raise :class:`UsageError` when ``out`` is, contains or sits inside one of ``inputs``
    (label -> path; None and ``hf://`` names are skipped); return ``out``. The one rule of
    every command that writes: each output goes through this (directly, or through
    :func:`check_output_dir`, :func:`output_dir` and :func:`check_output_file`)."""
    out = Path(out)
    _check_apart(out, flag, inputs)
    return out


def own_folder(path: str | Path) -> Path:
    """Make ``path`` a folder of its own: a symbolic link there is removed (a write never goes
    through it to somewhere else), then the folder is made; return it."""
    path = Path(path)
    if path.is_symlink():
        log.info("replacing the symbolic link %s with a folder", path)
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)
    return path


def own_file(path: str | Path) -> Path:
    """Make ``path`` a file of its own when it is a symbolic link: a file written in place
    (appended to, as a judge store's) never goes through a link. The link is replaced by a
    copy of the bytes it points at (nothing, when it points nowhere or at a folder), in one
    rename; where it points is left as it was. Return the path."""
    from rcp_data.core.io import atomic_path

    path = Path(path)
    if not path.is_symlink():
        return path
    log.info("replacing the symbolic link %s with a file of its own", path)
    with atomic_path(path) as tmp:
        if path.is_file():
            shutil.copyfile(path, tmp)
    return path


def own_path(root: str | Path, rel: str | Path) -> Path:
    """``root/rel``, ready to be written without going through a symbolic link: each folder
    between ``root`` and the file that is a link is replaced by a folder of its own
    (:func:`own_folder`), and a link at the file itself is removed; return the path. ``root``
    is the folder the user named (a link there is theirs to follow)."""
    root, rel = Path(root), Path(rel)
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"not a path inside {root}: {rel}")
    folder = root
    for part in rel.parts[:-1]:
        folder = own_folder(folder / part)
    path = root / rel
    if path.is_symlink():
        log.info("replacing the symbolic link %s", path)
        path.unlink()
    return path


def check_output_dir(out: str | Path, kind: OutputKind, *, flag: str = "--out",
                     inputs: Inputs | None = None, force: bool = False) -> Path:
    """Raise :class:`UsageError` unless ``out`` may be written as a ``kind`` folder (see the
    module docstring); return it."""
    out = Path(out)
    _check_apart(out, flag, inputs or {})
    clean_stale_temporaries(out)  # first: it may put back an output parked by a killed run
    if not os.path.lexists(out):
        return out
    if out.is_symlink():  # the folder replaces the link; where it points is never written
        log.info("%s %s is a symbolic link: the %s replaces the link", flag, out, kind.what)
        return out
    if not out.is_dir():
        raise UsageError(f"{flag} {out} exists and is not a folder; nothing was written")
    if not any(out.iterdir()):
        return out
    if not kind.written_here(out):
        raise UsageError(f"{flag} {out} is a folder with files that rcp-data did not write "
                         f"(no {kind.manifest} of a {kind.what}); choose a new or empty folder "
                         "(nothing was written)")
    if not force:
        raise UsageError(f"{flag} {out} holds a {kind.what} written earlier; pass --force to "
                         "replace it (nothing was written)")
    foreign = kind.foreign_files(out)
    if foreign:
        more = f" and {len(foreign) - 5} more" if len(foreign) > 5 else ""
        raise UsageError(f"{flag} {out} holds a {kind.what} written earlier, but also files "
                         f"rcp-data did not write ({', '.join(foreign[:5])}{more}); --force "
                         "replaces only what rcp-data wrote: move them out or choose another "
                         "folder (nothing was written)")
    return out


@contextlib.contextmanager
def output_dir(out: str | Path, kind: OutputKind, *, flag: str = "--out",
               inputs: Inputs | None = None, force: bool = False) -> Iterator[Path]:
    """Check ``out`` (:func:`check_output_dir`), then yield a temporary folder beside it that
    replaces ``out`` in one rename when the block succeeds (deleted when it fails)."""
    out = check_output_dir(out, kind, flag=flag, inputs=inputs, force=force)
    with writable(out), atomic_dir(out) as tmp:
        yield tmp


def check_output_file(out: str | Path, *, flag: str = "--out", inputs: Inputs | None = None,
                      force: bool = False) -> Path:
    """Raise :class:`UsageError` unless file ``out`` may be written; return it."""
    out = Path(out)
    _check_apart(out, flag, inputs or {})
    if out.is_dir():
        raise UsageError(f"{flag} {out} is a folder; name the file to write (nothing was "
                         "written)")
    if os.path.lexists(out) and not force:
        raise UsageError(f"{flag} {out} exists; pass --force to replace it (nothing was "
                         "written)")
    clean_stale_temporaries(out)
    return out


def tool_cache_dir() -> Path:
    """rcp-data's own cache: ``$RCP_DATA_CACHE``, else ``$XDG_CACHE_HOME/rcp-data`` (default
    ``~/.cache/rcp-data``)."""
    own = os.environ.get("RCP_DATA_CACHE")
    if own:
        return Path(own)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rcp-data"


def _written_mark(sha256: str) -> Path:
    return tool_cache_dir() / "written" / sha256


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def record_written(paths: list[Path]) -> None:
    """Remember that this tool wrote these files, as they are now (their sha256, in
    :func:`tool_cache_dir`; nothing is written beside them). A cache that cannot be written
    only costs a ``--force`` later."""
    for path in paths:
        mark = _written_mark(_sha256(Path(path)))
        try:
            mark.parent.mkdir(parents=True, exist_ok=True)
            mark.touch()
        except OSError as exc:
            log.warning("could not record %s as written by rcp-data in %s: %s", path,
                        mark.parent, exc.strerror)


def check_rewritable(folder: str | Path, texts: Mapping[str, str], *, force: bool = False,
                     what: str = "") -> None:
    """Raise :class:`UsageError` unless every file ``texts`` names (a path inside ``folder``
    -> the text about to be written) may be rewritten: absent, already that text, or bytes this
    tool recorded writing (:func:`record_written`); ``force`` allows anything."""
    if force:
        return
    for rel, text in texts.items():
        path = Path(folder) / rel
        if not path.is_file():
            continue
        sha = _sha256(path)
        if sha == hashlib.sha256(text.encode("utf-8")).hexdigest() or _written_mark(sha).is_file():
            continue
        raise UsageError(f"{path} is not the {what or 'file'} rcp-data wrote there (it was "
                         "edited by hand, or written by something else); pass --force to "
                         "replace it (nothing was written)")


def _concerns(exc: OSError, out: Path) -> bool:
    """Whether an OS error names ``out``, its temporaries or something inside them."""
    real = _real(out)
    for name in (exc.filename, exc.filename2):
        if not name:
            continue
        path = _real(name)
        top = next((p for p in (path, *path.parents) if p.parent == real.parent), None)
        if top is not None and (top.name == real.name or top.name.startswith(f".{real.name}.")):
            return True
    return False


@contextlib.contextmanager
def writable(out: str | Path) -> Iterator[None]:
    """Turn the operating system's refusal to write ``out`` (or its temporaries) into one clear
    UsageError; other OS errors pass through."""
    out = Path(out)
    try:
        yield
    except OSError as exc:
        if exc.errno not in _REFUSALS or not _concerns(exc, out):
            raise
        raise UsageError(f"cannot write {out}: {exc.strerror} ({_shown(exc.filename, out)}); "
                         "nothing was written") from exc


def _shown(filename: str | os.PathLike, out: Path) -> str:
    """``filename`` as the user knows it: inside ``out``, not inside its hidden temporary."""
    path, real = Path(os.fspath(filename)), _real(out)
    for parent in (path, *path.parents):
        if parent.parent == real.parent and parent.name.startswith(f".{real.name}.tmp-"):
            return str(out / path.relative_to(parent))
    return str(path)


_REFUSALS = (errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR,
             errno.EISDIR)


__all__ = ["CALIBRATION", "DEMO", "Inputs", "OutputKind", "check_apart", "check_output_dir",
           "check_output_file", "own_file", "own_folder", "own_path", "check_rewritable", "output_dir", "record_written", "tool_cache_dir",
           "writable"]
