"""The column schemas of a release's tables (the layout's types, in Arrow)."""

from __future__ import annotations

import pyarrow as pa

STR = pa.string()
LIST_STR = pa.list_(pa.string())

SCHEMAS: dict[str, pa.Schema] = {
    "corpus": pa.schema([("id", STR), ("title", STR), ("text", STR)]),
    "queries": pa.schema([("id", STR), ("text", STR)]),
    "qrels": pa.schema(
        [
            ("query-id", STR),
            ("corpus-id", STR),
            ("score", pa.int64()),
            ("gain", pa.float64()),
            ("theta", pa.float64()),
        ]
    ),
    # the qrels' gains alone, as mteb's float-gain support reads them (its ``gains`` config)
    "gains": pa.schema([("query-id", STR), ("corpus-id", STR), ("gain", pa.float64())]),
    "top_ranked": pa.schema([("query-id", STR), ("corpus-ids", LIST_STR)]),
    "excluded": pa.schema([("query-id", STR), ("excluded-corpus-ids", LIST_STR)]),
    "pool": pa.schema(
        [
            ("query-id", STR),
            ("corpus-id", STR),
            ("pool_rank", pa.int64()),
            ("rrf_score", pa.float64()),
            ("gt_injected", pa.bool_()),
            ("excluded", pa.bool_()),
            ("judged", pa.bool_()),
        ]
    ),
    "first_stage": pa.schema(
        [
            ("retriever", STR),
            ("query-id", STR),
            ("corpus-id", STR),
            ("rank", pa.int64()),
            ("score", pa.float64()),
        ]
    ),
    "runs": pa.schema(
        [
            ("model", STR),
            ("is_judge", pa.bool_()),
            ("query-id", STR),
            ("corpus-id", STR),
            ("score", pa.float64()),
            ("rank_by_score", pa.int64()),
            ("stored_position", pa.int64()),
        ]
    ),
    # C1..Cn int8 columns are added per release (any number of criteria).
    "judge_criteria": pa.schema(
        [("query-id", STR), ("call_index", pa.int64()), ("corpus-id", STR), ("finish_reason", STR)]
    ),
    # Stage A: one row per document shown in a window (one window = one call_index per query)
    "judge_tournament": pa.schema(
        [
            ("query-id", STR),
            ("call_index", pa.int64()),
            ("phase", STR),  # random | stratified | adaptive | other
            ("position", pa.int64()),  # 0-based place as shown
            ("corpus-id", STR),
            ("judge_rank", pa.int64()),  # 1-based place in the answer, null if absent
            ("score", pa.float64()),  # the judge's score in [-5, 5], null if absent
            ("finish_reason", STR),
        ]
    ),
    # Stage A Bradley-Terry scores, centred per query (0: no observation under the rule)
    "judge_bt": pa.schema([("query-id", STR), ("corpus-id", STR), ("theta_bt", pa.float64())]),
}

# Columns a published release may lack (the published repos differ; the verifier reports them).
OPTIONAL_COLUMNS: dict[str, tuple[str, ...]] = {
    "pool": ("excluded", "judged"),
    "runs": ("is_judge",),
    "queries": ("instruction",),
    "corpus": ("title",),
}


def criteria_columns(columns: list[str]) -> list[str]:
    """The C1..Cn columns of a verdict table, in criterion order."""
    crit = [c for c in columns if c.startswith("C") and c[1:].isdigit()]
    return sorted(crit, key=lambda c: int(c[1:]))


def judge_criteria_schema(n_criteria: int) -> pa.Schema:
    base = SCHEMAS["judge_criteria"]
    fields = [base.field("query-id"), base.field("call_index"), base.field("corpus-id")]
    fields += [pa.field(f"C{i + 1}", pa.int8()) for i in range(n_criteria)]
    fields.append(base.field("finish_reason"))
    return pa.schema(fields)


