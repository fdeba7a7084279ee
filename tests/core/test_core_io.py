"""core.io: atomic writes leave no partial file or temporary; reads name the file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rcp_data.checks.reports import MAX_DETAILS, Check, CheckReport
from rcp_data.core.errors import InputError, SchemaError
from rcp_data.core.io import (
    atomic_dir,
    atomic_path,
    atomic_write_bytes,
    atomic_write_text,
    float_values,
    read_json,
    read_parquet,
    write_json,
)


def _leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


def test_atomic_write_replaces_the_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "sub" / "card.md"
    atomic_write_text(target, "first\n")
    atomic_write_text(target, "second ü\n")
    assert target.read_text(encoding="utf-8") == "second ü\n"
    atomic_write_bytes(tmp_path / "blob.bin", b"\x00\x01")
    assert (tmp_path / "blob.bin").read_bytes() == b"\x00\x01"
    assert _leftovers(target.parent, {"card.md"}) == []


def test_atomic_write_on_error_keeps_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "releases.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a fi", encoding="utf-8")
        raise RuntimeError("the writer died")
    with pytest.raises(TypeError):
        atomic_write_bytes(target, "not bytes")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        write_json({"not": {1, 2}}, target)       # a set is not JSON: fails before writing
    assert target.read_text(encoding="utf-8") == "old"
    assert _leftovers(tmp_path, {"releases.json"}) == []


def test_atomic_dir_on_error_keeps_the_old_folder_and_no_temporary(tmp_path):
    target = tmp_path / "release"
    with atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("v1")
    with pytest.raises(RuntimeError), atomic_dir(target) as tmp:
        (tmp / "a.txt").write_text("v2, half written")
        raise RuntimeError("the build died")
    assert (target / "a.txt").read_text() == "v1"
    assert _leftovers(tmp_path, {"release"}) == []


def test_read_json_errors_name_the_file(tmp_path):
    good = tmp_path / "good.json"
    write_json({"a": [1, "é"]}, good)
    assert read_json(good) == {"a": [1, "é"]}
    assert good.read_text(encoding="utf-8") == json.dumps({"a": [1, "é"]}, indent=2,
                                                          ensure_ascii=False) + "\n"
    with pytest.raises(InputError, match="missing.json: file not found"):
        read_json(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON"):
        read_json(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"a": "\xe9"}')
    with pytest.raises(InputError, match=r"latin\.json: not UTF-8"):
        read_json(latin)


SCHEMA = pa.schema([("query-id", pa.string()), ("score", pa.int64()), ("note", pa.string())])


def test_read_parquet_checks_the_schema_and_names_file_and_column(tmp_path):
    path = tmp_path / "qrels.parquet"
    pq.write_table(pa.table({"query-id": ["q1"], "score": pa.array([1], pa.int32())}), path)
    table = read_parquet(path, schema=SCHEMA, optional=("note",))
    assert table.column_names == ["query-id", "score"]
    # an optional column the file lacks is left out of a selection
    assert read_parquet(path, ["score", "note"], schema=SCHEMA,
                        optional=("note",)).column_names == ["score"]
    with pytest.raises(SchemaError, match=r"qrels\.parquet, field 'note': missing column 'note'"
                                          r" \(has query-id, score\)") as exc:
        read_parquet(path, schema=SCHEMA)
    assert exc.value.path == str(path) and exc.value.field == "note"
    with pytest.raises(SchemaError, match=r"qrels\.parquet, field 'gain': missing column"):
        read_parquet(path, ["gain"])
    wrong = pa.schema([("query-id", pa.string()), ("score", pa.float64())])
    with pytest.raises(SchemaError, match=r"qrels\.parquet, field 'score': column 'score' has "
                                          r"type int32, expected double"):
        read_parquet(path, schema=wrong)
    with pytest.raises(InputError, match=r"nope\.parquet: missing file \(expected the qrels"):
        read_parquet(tmp_path / "nope.parquet", what="the qrels table")
    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"not parquet")
    with pytest.raises(InputError, match=r"junk\.parquet: cannot read parquet"):
        read_parquet(junk)


def test_check_records_are_frozen_and_keep_their_json_shape():
    c = Check.failed("gains", "gain = link(theta)", "0", "30 mismatches", "alpha-qrels",
                     [f"row {i}" for i in range(MAX_DETAILS + 10)])
    assert c.status == "failed" and len(c.details) == MAX_DETAILS
    assert Check("x", True, "y", status="absent").status == "absent"
    assert set(c.to_dict()) == {"name", "ok", "what", "expected", "found", "where", "status",
                                "details"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.where = "elsewhere"  # type: ignore[misc]
    report = CheckReport(root=Path("r"), problems=["a problem"])
    assert not report.ok
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.suite = "demo"  # type: ignore[misc]


@pytest.mark.parametrize("kind", ["float64", "float32", "int64", "chunked", "sliced",
                                  "no nulls", "all null", "empty"])
def test_float_values_equal_pyarrows_own_conversion(kind):
    """Read from the Arrow buffers (validity bits, offsets, chunks): the same floats, and NaN
    where pyarrow's own to_numpy (through pandas) puts it."""
    rng = np.random.default_rng(7)
    values = rng.normal(size=1003)
    nulls = rng.random(1003) < 0.3
    if kind == "no nulls":
        nulls[:] = False
    if kind == "all null":
        nulls[:] = True
    typ = {"float32": pa.float32(), "int64": pa.int64()}.get(kind, pa.float64())
    data = (values * 1000).round() if kind == "int64" else values
    arr = pa.array(data, mask=nulls).cast(typ)
    column = {"chunked": pa.chunked_array([arr.slice(0, 10), arr.slice(10, 0), arr.slice(10)]),
              "sliced": arr.slice(13, 777), "empty": arr.slice(0, 0)}.get(kind, arr)
    expected = column.to_numpy(zero_copy_only=False).astype(np.float64)
    got = float_values(column)
    assert got.dtype == np.float64 and got.shape == expected.shape
    assert np.array_equal(got, expected, equal_nan=True)
    if kind not in ("no nulls", "empty"):
        assert np.isnan(got).sum() == column.null_count > 0


def test_shared_reads_serve_each_column_once_and_still_check_it(tmp_path, monkeypatch):
    """Within ``shared_reads`` a read equals the file's own read (values, types, schema
    metadata, a column read dictionary-encoded), each column is decoded from the file once
    per dictionary mode, a schema check still fails, and an excluded file is read afresh."""
    from rcp_data.core.io import shared_reads

    path, other = tmp_path / "qrels.parquet", tmp_path / "runs.parquet"
    table = pa.table({"query-id": ["q1", "q2", "q1"], "corpus-id": ["d1", "d2", "d3"],
                      "score": pa.array([1, 0, 2], pa.int32())},
                     metadata={b"note": b"kept"})
    pq.write_table(table, path)
    pq.write_table(table, other)
    asked = [(None, ()), (["score", "query-id"], ()), (["query-id", "corpus-id"], ("query-id",)),
             (None, ("corpus-id",))]
    alone = [read_parquet(path, c, read_dictionary=d) for c, d in asked]
    decoded: list[tuple[str, ...]] = []
    real_read = pq.ParquetFile.read

    def counting(self, columns=None, **kwargs):
        decoded.append(tuple(columns or ()))
        return real_read(self, columns, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "read", counting)
    with shared_reads(exclude=lambda p: p == other):
        shared = [read_parquet(path, c, read_dictionary=d) for c, d in asked]
        again = read_parquet(path, ["corpus-id"])
        with pytest.raises(SchemaError, match=r"field 'score': column 'score' has type int32"):
            read_parquet(path, schema=pa.schema([("score", pa.float64())]))
        read_parquet(other), read_parquet(other)
    for a, b in zip(alone, shared, strict=True):
        assert b.equals(a) and b.schema.equals(a.schema, check_metadata=True)
    assert shared[2].column("query-id").type == pa.dictionary(pa.int32(), pa.string())
    assert again.column("corpus-id").to_pylist() == ["d1", "d2", "d3"]
    # the file: every plain column once, then each dictionary-encoded one once; the excluded
    # file twice, whole
    assert decoded == [("query-id", "corpus-id", "score"), ("query-id",), ("corpus-id",),
                       (), ()]
    # outside the block nothing is held
    decoded.clear()
    read_parquet(path), read_parquet(path)
    assert len(decoded) == 2
