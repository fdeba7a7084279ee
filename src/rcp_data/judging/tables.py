"""A store's windows as the builder inputs ``judge/tournament.parquet`` and
``judge/criteria.parquet`` (the contract :mod:`rcp_data.building.build` and ``calibrate`` read),
plus ``judge/judge.json`` and ``judge/judging.json`` (prompts' and rubric's sha256, schedule,
usage per stage in Table 4's columns, invalid windows by category, the cut census).

Stage A rows: one per document shown; ``score`` is the judge's score when in [-5, 5] (null
otherwise), ``judge_rank`` the place by score (ties: the earlier place first) when the answer
scored every document, so the ``hard-fallback`` rule can read an answer whose scores are all
out of range; ``finish_reason`` the server's (or the failure's category when no answer came).
Stage B rows: one per document, ``C1..CK`` 0/1, null where the answer gave none.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa

from rcp_data.core.io import write_json
from rcp_data.core.outputs import own_folder
from rcp_data.judging.answers import CATEGORIES, read_answer
from rcp_data.judging.store import identity_digest, planned_records, read_identity, read_runs
from rcp_data.model.schemas import SCHEMAS, judge_criteria_schema
from rcp_data.model.tables import write_parquet

TOURNAMENT = "tournament.parquet"
CRITERIA = "criteria.parquet"
JUDGING = "judging.json"


def _ranks(values: list) -> list:
    if any(v is None for v in values):
        return [None] * len(values)
    order = np.argsort(-np.asarray(values, dtype=float), kind="stable")
    rank = np.empty(len(values), dtype=np.int64)
    rank[order] = np.arange(1, len(values) + 1)
    return rank.tolist()


def _ordered(records: list[dict], stage: str, query_order: dict[str, int]) -> list[dict]:
    mine = [r for r in records if r["stage"] == stage]
    return sorted(mine, key=lambda r: (query_order.get(r["query"], 1 << 30), r["seq"]))


def tournament_table(records: list[dict], query_order: dict[str, int], *,
                     with_split: bool = False) -> pa.Table:
    cols: dict[str, list] = {k: [] for k in SCHEMAS["judge_tournament"].names}
    split = []
    for r in _ordered(records, "A", query_order):
        values = r["values"] or [None] * len(r["docs"])
        ranks = r.get("ranks") or _ranks(values)  # an imported store states its ranking
        finish = r["finish_reason"] or r["category"] or "none"
        for pos, (doc, v, k) in enumerate(zip(r["docs"], values, ranks, strict=True)):
            cols["query-id"].append(r["query_id"])
            cols["call_index"].append(r["seq"])
            cols["phase"].append(r["phase"])
            cols["position"].append(pos)
            cols["corpus-id"].append(doc)
            cols["judge_rank"].append(k)
            cols["score"].append(v if v is not None and -5 <= v <= 5 else None)
            cols["finish_reason"].append(finish)
            split.append(r["split"])
    table = pa.table(cols, schema=SCHEMAS["judge_tournament"])
    return table.append_column("split", pa.array(split, pa.string())) if with_split else table


def criteria_table(records: list[dict], query_order: dict[str, int], criteria: list[str], *,
                   with_split: bool = False) -> pa.Table:
    schema = judge_criteria_schema(len(criteria))
    cols: dict[str, list] = {k: [] for k in schema.names}
    split = []
    for r in _ordered(records, "B", query_order):
        values = r["values"] or [None] * len(r["docs"])
        finish = r["finish_reason"] or r["category"] or "none"
        for doc, row in zip(r["docs"], values, strict=True):
            cols["query-id"].append(r["query_id"])
            cols["call_index"].append(r["seq"])
            cols["corpus-id"].append(doc)
            for i, c in enumerate(criteria):
                cols[c].append(None if row is None else int(row[i]))
            cols["finish_reason"].append(finish)
            split.append(r["split"])
    table = pa.table(cols, schema=schema)
    return table.append_column("split", pa.array(split, pa.string())) if with_split else table


def usage_by_stage(records: list[dict]) -> dict:
    """Table 4's columns per stage, and the calls and tokens the server's ``usage`` gave."""
    out = {}
    for stage in ("A", "B"):
        mine = [r for r in records if r["stage"] == stage]
        queries = {r["query"] for r in mine}
        docs = {(r["query"], d) for r in mine for d in r["docs"]}
        cats = Counter(r["category"] for r in mine if r["status"] != "ok")
        out[stage] = {
            "windows": len(mine), "queries": len(queries),
            "windows_per_query": len(mine) / len(queries) if queries else 0.0,
            "placements_per_document": sum(len(r["docs"]) for r in mine) / len(docs)
            if docs else 0.0,
            "reversed": any(r.get("twin") is not None for r in mine),
            "calls": sum(r["usage"]["calls"] for r in mine),
            "input_tokens": sum(r["usage"]["prompt_tokens"] for r in mine),
            "output_tokens": sum(r["usage"]["completion_tokens"] for r in mine),
            "seconds_in_calls": round(sum(r["seconds"] for r in mine), 3),
            "invalid_windows": sum(cats.values()),
            "invalid_by_category": {c: cats.get(c, 0) for c in CATEGORIES},
            "documents_cut": sum(r.get("cuts", 0) for r in mine),
            "tokens_cut": sum(r.get("tokens_cut", 0) for r in mine),
        }
    return out


def export_tables(store: Path, out: Path, query_order: list[str], *, with_split: bool = False,
                  judge: dict | None = None, extra: dict | None = None) -> dict:
    """Write ``out/judge/{tournament,criteria}.parquet``, ``judge.json`` and ``judging.json``
    from the store; return the judging record."""
    runs = read_runs(store)
    wall = {"runs": len(runs), "wall_seconds": round(sum(r["seconds"] for r in runs), 3)}
    identity = read_identity(store)
    return write_tables(planned_records(store, identity_digest(identity)), identity, out,
                        query_order,
                        with_split=with_split, judge=judge, extra={**wall, **(extra or {})})


def write_tables(records: list[dict], identity: dict, out: Path, query_order: list[str], *,
                 with_split: bool = False, judge: dict | None = None,
                 extra: dict | None = None) -> dict:
    """The builder inputs of ``records`` (store records, or an imported store's converted to
    them) under ``identity``; return the judging record."""
    order = {k: i for i, k in enumerate(query_order)}
    judge_dir = own_folder(Path(out) / "judge")  # a symbolic link there is never followed
    criteria = identity["prompts"]["criteria"]
    files = {}
    if any(r["stage"] == "A" for r in records):
        write_parquet(tournament_table(records, order, with_split=with_split),
                      judge_dir / TOURNAMENT)
        files["tournament"] = TOURNAMENT
    if any(r["stage"] == "B" for r in records):
        write_parquet(criteria_table(records, order, criteria, with_split=with_split),
                      judge_dir / CRITERIA)
        files["criteria"] = CRITERIA
    record = {"schema": "rcp-data.judging/1", "identity": identity, "files": files,
              "usage": usage_by_stage(records), **(extra or {})}
    write_json(record, judge_dir / JUDGING)
    model = identity["judge"]["model"]
    info = judge or {"model": model, "revision": identity["judge"]["revision"],
                     "short": model.split("/")[-1][:24]}
    write_json(info, judge_dir / "judge.json")
    return record


def reparse_records(records: list[dict], criteria: list[str]) -> tuple[list[dict], Counter]:
    """Stored raw answers read again with the current parser (no judge call): the records
    with new values and status, and the changes (``recovered``, ``lost``, ``same``)."""
    out, changes = [], Counter()
    for r in records:
        if r["raw"] is None:
            out.append(r)
            changes["no-answer"] += 1
            continue
        reading = read_answer(r["stage"], r["raw"], len(r["docs"]), criteria,
                              finish_reason=r["finish_reason"])
        new = dict(r, values=reading.values, status="ok" if reading.ok else "invalid",
                   category=reading.category, detail=reading.detail)
        changes["same" if (new["status"] == r["status"]) else
                ("recovered" if reading.ok else "lost")] += 1
        out.append(new)
    return out, changes


USAGE_COLUMNS = ("windows", "windows_per_query", "placements_per_document", "reversed", "calls",
                 "input_tokens", "output_tokens", "seconds_in_calls", "invalid_windows",
                 "invalid_by_category", "documents_cut", "tokens_cut")


def judging_record(judging: dict) -> dict:
    """What a build manifest keeps of a judge run's ``judging.json``: the prompts' and the
    rubric's sha256, the schedule preset and seed, the wall time of the runs, and per stage
    Table 4's columns, the usage and the cut census."""
    ident = judging.get("identity", {})
    prompts = ident.get("prompts", {})
    schedule = ident.get("schedule", {})
    return {
        "judge_model": ident.get("judge", {}).get("model"),
        "prompt_a_sha256": prompts.get("prompt_a_sha256"),
        "prompt_b_sha256": prompts.get("prompt_b_sha256"),
        "rubric_sha256": prompts.get("rubric_sha256"),
        "criteria": prompts.get("criteria"),
        "schedule": {"preset": schedule.get("preset"), "seed": schedule.get("seed")},
        "token_counts": judging.get("tokens"),
        "wall_seconds": judging.get("wall_seconds"),
        "runs": judging.get("runs"),
        "stages": {s: {k: u.get(k) for k in USAGE_COLUMNS}
                   for s, u in judging.get("usage", {}).items()},
    }


__all__ = ["criteria_table", "export_tables", "judging_record", "reparse_records",
           "tournament_table", "usage_by_stage", "write_tables"]
