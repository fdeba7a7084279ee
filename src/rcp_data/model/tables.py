"""Reading and writing the tables of a release, their columns checked against the layout."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from rcp_data.core.io import atomic_path, check_schema, read_parquet
from rcp_data.model.layout import subset_file
from rcp_data.model.manifest import CorpusFileRecord
from rcp_data.model.schemas import OPTIONAL_COLUMNS, SCHEMAS

if TYPE_CHECKING:  # pandas is imported where a table becomes a DataFrame
    import pandas as pd


# -- reading -----------------------------------------------------------------------------------
def check_columns(schema: pa.Schema, kind: str, path: str | Path) -> None:
    """Raise :class:`SchemaError` naming the file and column when ``schema`` lacks a column of
    ``kind`` or has one of the wrong type."""
    check_schema(schema, SCHEMAS[kind], path, OPTIONAL_COLUMNS.get(kind, ()))


def read_release_table(path: str | Path, kind: str, columns: list[str] | None = None, *,
                       read_dictionary: tuple[str, ...] | list[str] = ()) -> pa.Table:
    """Read a release table of ``kind`` (arrow), its columns checked against the layout."""
    return read_parquet(path, columns, schema=SCHEMAS[kind],
                        optional=OPTIONAL_COLUMNS.get(kind, ()), what=f"the {kind} table",
                        read_dictionary=read_dictionary)


def read_table(root: Path, rel: str, kind: str, columns: list[str] | None = None) -> pd.DataFrame:
    """Read ``root/rel`` as a DataFrame, checking the columns of ``kind``."""
    return read_release_table(Path(root) / rel, kind, columns).to_pandas()


# -- writing -----------------------------------------------------------------------------------
def write_parquet(table: pa.Table | pd.DataFrame, path: Path, schema: pa.Schema | None = None,
                  *, row_group_size: int | None = None) -> None:
    """Write a table deterministically (same input, same bytes)."""
    if not isinstance(table, pa.Table):  # a DataFrame
        table = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
    elif schema is not None:
        table = table.select(schema.names).cast(schema)
    table = table.replace_schema_metadata(None)
    # atomically: a reader never sees half a table, and a symbolic link at ``path`` is
    # replaced, never written through (a full disk names the table being written)
    with atomic_path(path, suffix=".parquet") as tmp:
        pq.write_table(table, tmp, compression="zstd", row_group_size=row_group_size)


def corpus_record(root: Path) -> dict[str, CorpusFileRecord]:
    """Rows and columns of every corpus file in a release directory, by path (the build
    manifest's ``corpus_files``: what a card states about a corpus it has not downloaded)."""
    root = Path(root)
    paths = sorted({*root.glob(subset_file("*", "corpus")), *root.glob("corpus/*/corpus-*.parquet")})
    out = {}
    for p in paths:
        meta = pq.read_metadata(p)
        out[p.relative_to(root).as_posix()] = CorpusFileRecord(
            meta.num_rows, tuple(meta.schema.to_arrow_schema().names))
    return out


def gains_table(qrels: pa.Table | pd.DataFrame) -> pa.Table:
    """The ``gains`` table of a qrels table: its ``query-id``, ``corpus-id`` and ``gain``, row
    for row (a null gain is 0.0), typed as the layout says."""
    import pyarrow.compute as pc

    table = qrels if isinstance(qrels, pa.Table) else pa.Table.from_pandas(qrels,
                                                                          preserve_index=False)
    gain = pc.fill_null(table.column("gain").cast(pa.float64()), 0.0)
    return pa.table({"query-id": table.column("query-id").cast(pa.string()),
                     "corpus-id": table.column("corpus-id").cast(pa.string()),
                     "gain": gain}, schema=SCHEMAS["gains"])


def write_gains(qrels: pa.Table | pd.DataFrame, root: Path, subset: str) -> None:
    """Write ``{subset}/gains.parquet`` of ``root`` from the subset's qrels."""
    write_parquet(gains_table(qrels), Path(root) / subset_file(subset, "gains"),
                  SCHEMAS["gains"])
