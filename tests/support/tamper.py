"""Tampering with a published release on the local Hub, and publishing one by hand: the
helpers the verify and publish tests share. Every change is made with the real
``huggingface_hub`` client, as an attacker with write access would make it."""

from __future__ import annotations

import io
import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import CommitOperationAdd, CommitOperationDelete, HfApi

REPO_TYPE = "dataset"


def tamper_commit(api: HfApi, repo: str, parent: str, name: str,
                  add: dict[str, bytes] | None = None, delete: tuple[str, ...] = ()) -> str:
    """ONE commit on a new branch of its own on top of ``parent``, adding or replacing the
    files of ``add`` and deleting those of ``delete``; returns its sha."""
    branch = f"tamper-{name}-{uuid.uuid4().hex[:6]}"
    api.create_branch(repo, branch=branch, revision=parent, repo_type=REPO_TYPE)
    ops = [CommitOperationAdd(path_in_repo=k, path_or_fileobj=v) for k, v in (add or {}).items()]
    ops += [CommitOperationDelete(path_in_repo=k) for k in delete]
    return api.create_commit(repo, ops, commit_message=f"SYNTHETIC tampering: {name}",
                             repo_type=REPO_TYPE, revision=branch, parent_commit=parent).oid


def publish_by_hand(api: HfApi, repo: str, root: Path, tag: str) -> str:
    """Push a folder as one commit and tag it, as the repos published before the release
    policy were (no publisher, no checks); returns the commit's sha."""
    api.create_repo(repo, repo_type=REPO_TYPE, exist_ok=True)
    ops = [CommitOperationAdd(str(p.relative_to(root)), str(p))
           for p in sorted(root.rglob("*")) if p.is_file()]
    info = api.create_commit(repo, ops, commit_message="published by hand", repo_type=REPO_TYPE)
    api.create_tag(repo, tag=tag, revision=info.oid, repo_type=REPO_TYPE)
    return info.oid


def parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    return buf.getvalue()


def read_table_bytes(data: bytes) -> pa.Table:
    return pq.read_table(io.BytesIO(data))


def _edit_value(value, dtype: pa.DataType):
    """A different value of the same type (None when the type has no generic edit)."""
    if value is None:
        return None
    if pa.types.is_string(dtype) or pa.types.is_large_string(dtype):
        return value + " (edited)"
    if pa.types.is_boolean(dtype):
        return not value
    if pa.types.is_integer(dtype):
        return 1 - value if value in (0, 1) else value + 1
    if pa.types.is_floating(dtype):
        return float(np.nextafter(value, np.inf))
    if pa.types.is_list(dtype) or pa.types.is_large_list(dtype):
        return list(reversed(value)) if len(set(value)) > 1 else [*value, "edited"]
    return None


def edit_one_cell(table: pa.Table) -> tuple[pa.Table, str]:
    """The table with ONE cell changed: the last row's last column that has a generic edit."""
    row = table.num_rows - 1
    for i in reversed(range(table.num_columns)):
        field = table.schema.field(i)
        values = table.column(i).to_pylist()
        new = _edit_value(values[row], field.type)
        if new is None or new == values[row]:
            continue
        values[row] = new
        return (table.set_column(i, field, pa.array(values, type=field.type)),
                f"row {row}, column {field.name}")
    raise AssertionError("no column with a generic edit")


def edit_json(data: bytes) -> bytes:
    """A JSON file with one key added."""
    obj = json.loads(data)
    obj["tampered"] = True
    return (json.dumps(obj, indent=2) + "\n").encode()


@contextmanager
def other_bytes_served(hub_root: Path, repo: str, commit: str, path: str) -> Iterator[bytes]:
    """The local Hub serves other bytes (one byte flipped, the size kept) for ``path`` under
    the same commit, blob id and LFS oid: the object in its store is rewritten in place (the LFS
    object, or the blob file it serves a regular file from). Yields the bytes served; the
    object is restored afterwards."""
    from rcp_data.hub.gitstore import GitStore

    store = GitStore(hub_root)
    bare = store.repo_path(REPO_TYPE, repo)
    entry = store.entry(bare, commit, path)
    assert entry is not None, path
    target = store.content_file(bare, entry)
    original = target.read_bytes()
    forged = bytearray(original)
    forged[len(forged) // 2] ^= 0x01
    target.chmod(0o644)
    target.write_bytes(bytes(forged))
    try:
        yield bytes(forged)
    finally:
        target.write_bytes(original)
