"""Receipts of passed verifications: the same bytes, verified by the same code, are not verified
again.

A receipt says that every check of ``rcp-data verify`` passed on a release directory whose files
were exactly these (each path, size and sha256), run by exactly this verifier (rcp-data's own
files, the Python and the libraries whose results the checks compare, and the suite specs
wherever ``$RCP_DATA_BUILDERS`` puts them), and whether the publisher's release check
(``rcp_data.checks.release_check``) passed on them too. Its name is the sha256 of the files and
the verifier. Neither check reads anything else (a local directory, the
packaged references, specs and records), so for the same name they would give the same answer
again; the publisher uses a receipt instead of repeating the checks it records as passed, and
still hashes every file to name it. File times are never trusted: only bytes read just now name
a receipt.

Only a verification with the default references writes one (``--reference`` and ``--histories``
change what is checked). Receipts live in the user's cache, ``$RCP_DATA_CACHE`` (else
``$XDG_CACHE_HOME/rcp-data``, else ``~/.cache/rcp-data``), folder ``verified/``; one that cannot
be written or read costs a verification later, nothing else.
"""

from __future__ import annotations

import hashlib
import logging
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from functools import cache
from importlib import metadata
from pathlib import Path

from rcp_data.core import version
from rcp_data.core.errors import InputError
from rcp_data.core.files import FileEntry
from rcp_data.core.io import read_json, write_json
from rcp_data.core.outputs import tool_cache_dir
from rcp_data.core.specs import builders_dir

log = logging.getLogger(__name__)

SCHEMA = "rcp-data.verification-receipt/2"
#: Libraries whose arithmetic or reading the checks compare against recorded values.
LIBRARIES = ("numpy", "pandas", "pyarrow", "scipy", "torch", "pyyaml", "jinja2")


@dataclass(frozen=True)
class Receipt:
    """One passed verification: what it covered and when."""

    key: str
    files: int
    bytes: int
    checks: int
    suite: str | None
    tag: str | None
    verified_at: str
    rcp_data: str
    publishable: bool   # the release check passed on the same bytes


def receipts_dir() -> Path:
    """The folder of the receipts (see the module docstring)."""
    return tool_cache_dir() / "verified"


def verifier_identity() -> str:
    """sha256 over rcp-data's installed files (code, specs, references, templates), the Python
    version and the versions of :data:`LIBRARIES`; and over the files of the suite specs'
    folder when ``$RCP_DATA_BUILDERS`` puts it outside the package."""
    return _identity(str(version.PACKAGE_DIR),
                     str(builders_dir().resolve()))


@cache
def _identity(package: str, specs: str) -> str:
    h = hashlib.sha256(f"python {sys.version}\n".encode())
    for name in LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "absent"
        h.update(f"{name} {version}\n".encode())
    folders = [Path(package)]
    if not Path(specs).is_relative_to(package):
        folders.append(Path(specs))
        h.update(f"specs {specs}\n".encode())
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            rel = path.relative_to(folder).as_posix()
            if not path.is_file() or "__pycache__" in rel.split("/") or path.suffix == ".pyc":
                continue
            h.update(f"{rel}\n".encode())
            h.update(hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def receipt_key(files: Mapping[str, FileEntry]) -> str:
    """The name of the receipt of a directory holding exactly ``files``, for this verifier."""
    h = hashlib.sha256(f"{SCHEMA}\n{verifier_identity()}\n".encode())
    for path in sorted(files):
        e = files[path]
        h.update(f"{e.sha256} {e.size} {e.path}\n".encode())
    return h.hexdigest()


def find_receipt(files: Mapping[str, FileEntry]) -> Receipt | None:
    """The receipt of exactly ``files`` under this verifier, None when there is none (or it
    does not read as one)."""
    key = receipt_key(files)
    path = receipts_dir() / f"{key}.json"
    if not path.is_file():
        return None
    try:
        data = read_json(path)
        if not isinstance(data, dict) or data.get("schema") != SCHEMA or data.get("key") != key:
            raise InputError("not a receipt of these files", path=str(path))
        fields = {k: data[k] for k in Receipt.__dataclass_fields__}
        if not isinstance(fields["publishable"], bool):
            raise InputError("'publishable' is not true or false", path=str(path))
        return Receipt(**fields)
    except (InputError, KeyError, TypeError) as exc:
        log.debug("ignoring the receipt %s: %s", path, exc)
        return None


def write_receipt(files: Mapping[str, FileEntry], *, checks: int, suite: str | None,
                  tag: str | None, publishable: bool) -> Path | None:
    """Record that a verification of exactly ``files`` passed with ``checks`` checks, and
    whether the release check passed on them (``publishable``); the receipt's path, None when it
    could not be written (a warning says so)."""
    receipt = Receipt(key=receipt_key(files), files=len(files),
                      bytes=sum(e.size for e in files.values()), checks=checks, suite=suite,
                      tag=tag, verified_at=datetime.now(UTC).isoformat(timespec="seconds"),
                      rcp_data=version.__version__, publishable=publishable)
    path = receipts_dir() / f"{receipt.key}.json"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json({"schema": SCHEMA, **asdict(receipt)}, path)
    except OSError as exc:
        log.warning("could not record the passed verification in %s (%s); the next publish "
                    "of these files verifies them again", path.parent, exc.strerror or exc)
        return None
    log.info("recorded the passed verification of these %d files as %s", len(files), path)
    return path


__all__ = ["LIBRARIES", "Receipt", "SCHEMA", "find_receipt", "receipt_key", "receipts_dir",
           "verifier_identity", "write_receipt"]
