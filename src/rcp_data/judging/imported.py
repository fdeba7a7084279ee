"""A judgement store of the authors' toolkit (``cohere-ai/rcp-ndcg``) read as this project's
store records, so :func:`.tables.write_tables` turns it into the same builder inputs.

The layout, as that toolkit's store module and its record schemas describe it:
``STORE/identity.json`` (``{"schema": "rcp-ndcg.judgement-store.v1", "stages": {stage:
{"identity", "family", "family_key", ...}}}``, stages ``tournament`` and ``rubric``),
``STORE/{tournament,rubric}.jsonl`` (one ``rcp-ndcg.judgement.v1`` record a line:
``record_id``, ``dataset``, ``query_id``, ``stage``, ``family_key``, ``window_seq`` (0-based;
null for a window asked outside the schedule), ``phase``, ``placements`` (``position``
1-based, ``doc_id``, ``chunk_id``, ``score`` or ``criteria`` ``{"C1": 0|1, ...}``),
``ranking`` (1-based positions, best first), ``response``, ``finish_reason``, ``valid``,
``invalid_reason``, ``invalid_category``, ``input_tokens``, ``output_tokens``,
``recorded_at``) and ``STORE/prompts/<sha256>.txt``. A torn last line is skipped; of several
records of one ``record_id`` a valid one beats an invalid one, then the later ``recorded_at``.

Not in that store, so not in the import: the number of calls behind a record (each counts as
one), the time calls took, the cut census, a rubric file (the criteria are labels only; the
rubric's sha256 is null) and reversed-twin links.
"""

from __future__ import annotations

import hashlib
import json
import math
from datetime import datetime
from pathlib import Path

from rcp_data.core.errors import InputError

STORE_SCHEMA = "rcp-ndcg.judgement-store.v1"
JUDGEMENT_SCHEMA = "rcp-ndcg.judgement.v1"
STAGES = {"tournament": "A", "rubric": "B"}
# their closed set of invalid categories -> this project's (answers.CATEGORIES)
CATEGORY = {"truncated": "length", "no_json": "unparsable", "invalid_json": "unparsable",
            "schema": "unparsable", "incomplete": "wrong-count", "refused": "refusal"}


def _fail(msg: str, path: Path, row: int | None = None, field: str | None = None):
    raise InputError(msg, path=str(path), row=row, field=field)


def read_identity(root: Path) -> dict:
    path = root / "identity.json"
    if not path.is_file():
        _fail("not a judgement store of rcp-ndcg (no identity.json)", root)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, nesting too deep
        _fail(f"not JSON ({type(exc).__name__})", path)
    if not isinstance(data, dict) or data.get("schema") != STORE_SCHEMA:
        _fail(f"expected schema {STORE_SCHEMA!r}", path, field="schema")
    stages = data.get("stages")
    if not isinstance(stages, dict) or not stages or set(stages) - set(STAGES):
        _fail("'stages' must name tournament and/or rubric", path, field="stages")
    for stage, entry in stages.items():
        fam = entry.get("family") if isinstance(entry, dict) else None
        if not isinstance(fam, dict) or not isinstance(fam.get("judge_model"), str):
            _fail("a stage entry needs its family with judge_model", path,
                  field=f"stages.{stage}.family")
    return data


def _stamp(value: object, path: Path, row: int) -> datetime:
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        _fail(f"recorded_at {value!r} is not an ISO 8601 time", path, row, "recorded_at")


def _supersedes(new: dict, new_at: datetime, old: dict, old_at: datetime) -> bool:
    """A valid record beats an invalid one; then the later (a tie: the later line)."""
    valid, was = new.get("valid", True) is True, old.get("valid", True) is True
    return valid if valid != was else new_at >= old_at


def _judgements(path: Path, stage: str) -> list[dict]:
    """The kept judgement of each record id, in the order ids first appear."""
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")
    lines.pop()  # b"" after a final newline, else a torn write: skipped
    kept: dict[str, tuple[dict, datetime]] = {}
    for row, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            j = json.loads(raw)
        except (ValueError, RecursionError) as exc:  # bad JSON or UTF-8, nesting too deep
            _fail(f"not a JSON record ({exc.__class__.__name__})", path, row)
        if not isinstance(j, dict) or j.get("schema") != JUDGEMENT_SCHEMA:
            _fail(f"expected schema {JUDGEMENT_SCHEMA!r}", path, row, "schema")
        if j.get("stage") != stage:
            _fail(f"a {j.get('stage')!r} record in the {stage} file", path, row, "stage")
        for key in ("record_id", "query_id", "placements", "recorded_at"):
            if key not in j:
                _fail("missing", path, row, key)
        if not isinstance(j["placements"], list) or not j["placements"]:
            _fail("must be a non-empty list", path, row, "placements")
        for p in j["placements"]:
            if not isinstance(p, dict) or not p.get("doc_id") or not isinstance(
                    p.get("position"), int):
                _fail("each placement needs doc_id and an integer position", path, row,
                      "placements")
        _check_fields(j, path, row)
        at = _stamp(j["recorded_at"], path, row)
        old = kept.get(j["record_id"])
        if old is None or _supersedes(j, at, *old):
            kept[j["record_id"]] = (j, at)
    return [j for j, _ in kept.values()]


MAX_SEQ = 2 ** 31  # a window sequence number beyond this is not a schedule's


def _is_int(v: object) -> bool:
    return type(v) is int


def _check_fields(j: dict, path: Path, row: int) -> None:
    """The types the conversion reads: one line naming the field when one is wrong."""
    if not isinstance(j["record_id"], str) or not j["record_id"]:
        _fail("must be a non-empty string", path, row, "record_id")
    if not isinstance(j["query_id"], str | int) or isinstance(j["query_id"], bool):
        _fail("must be a string", path, row, "query_id")
    seq = j.get("window_seq")
    if seq is not None and not (_is_int(seq) and 0 <= seq < MAX_SEQ):
        _fail(f"must be null or an integer in [0, {MAX_SEQ}), not {str(seq)[:40]!r}", path,
              row, "window_seq")
    for k, p in enumerate(j["placements"]):
        score = p.get("score")
        if score is not None and not (isinstance(score, int | float) and not isinstance(
                score, bool) and math.isfinite(score)):
            _fail(f"must be null or a finite number, not {str(score)[:40]!r}", path, row,
                  f"placements[{k}].score")
        crit = p.get("criteria")
        if crit is not None and not isinstance(crit, dict):
            _fail(f"must be null or an object, not a {type(crit).__name__}", path, row,
                  f"placements[{k}].criteria")
    ranking = j.get("ranking")
    if ranking is not None and not (isinstance(ranking, list) and all(
            _is_int(x) for x in ranking)):
        _fail("must be null or a list of integer positions", path, row, "ranking")
    for key in ("input_tokens", "output_tokens"):
        v = j.get(key)
        if v is not None and not (_is_int(v) and 0 <= v < 2 ** 53):
            _fail("must be null or a non-negative integer", path, row, key)
    for key in ("phase", "dataset", "response", "finish_reason"):
        v = j.get(key)
        if v is not None and not isinstance(v, str):
            _fail(f"must be null or a string, not a {type(v).__name__}", path, row, key)


def _record(j: dict, stage: str, criteria: list[str], seq: int) -> dict:
    """One judgement as a store record of this project (positions 0-based, in prompt order)."""
    places = sorted(j["placements"], key=lambda p: p["position"])
    docs = [str(p["doc_id"]) for p in places]
    valid = j.get("valid", True) is True
    if stage == "A":
        values = [p.get("score") for p in places]
        values = None if all(v is None for v in values) else values
        ranks = None
        ranking = j.get("ranking")
        if ranking and sorted(ranking) == sorted(p["position"] for p in places):
            place_of = {pos: k for k, pos in enumerate(ranking, start=1)}
            ranks = [place_of[p["position"]] for p in places]
    else:
        rows = [[(p.get("criteria") or {}).get(c) for c in criteria] for p in places]
        values = [None if any(v not in (0, 1) for v in r) else r for r in rows]
        values = None if all(v is None for v in values) else values
        ranks = None
    category = None if valid else CATEGORY.get(str(j.get("invalid_category")), "unparsable")
    return {"id": j["record_id"], "query": f"{j.get('dataset', '')}\x1f{j['query_id']}",
            "split": str(j.get("dataset", "")), "query_id": str(j["query_id"]),
            "stage": stage, "phase": j.get("phase") or "other", "seq": seq, "batch": None,
            "twin": None, "docs": docs, "status": "ok" if valid else "invalid",
            "category": category, "source_category": j.get("invalid_category"),
            "detail": j.get("invalid_reason") or "", "values": values, "ranks": ranks,
            "raw": j.get("response"), "finish_reason": j.get("finish_reason"),
            "attempts": 1, "usage": {"calls": 1,
                                     "prompt_tokens": int(j.get("input_tokens") or 0),
                                     "completion_tokens": int(j.get("output_tokens") or 0)},
            "cuts": 0, "tokens_cut": 0, "seconds": 0.0, "replica": ""}


def _check_prompt(root: Path, digest: str | None) -> None:
    if not digest:
        return
    path = root / "prompts" / f"{digest}.txt"
    if path.exists() and hashlib.sha256(path.read_bytes()).hexdigest() != digest:
        _fail("the prompt's text does not hash to its name", path)


def read_authors_store(root: str | Path) -> tuple[list[dict], dict, list[str]]:
    """The store's judgements as this project's records, the identity the judging record
    shows, and the query order (first appearance)."""
    root = Path(root)
    ident = read_identity(root)
    stages = ident["stages"]
    families = {s: e["family"] for s, e in stages.items()}
    models = {f["judge_model"] for f in families.values()}
    if len(models) > 1:
        _fail(f"its stages were judged by different models ({', '.join(sorted(models))}); "
              "import each stage's store on its own", root / "identity.json", field="stages")
    rubric = families.get("rubric", {})
    named = rubric.get("criteria")
    if named is not None and not (isinstance(named, list) and all(
            isinstance(c, str) for c in named)):
        _fail("must be a list of criterion names", root / "identity.json",
              field="stages.rubric.family.criteria")
    criteria = [str(c) for c in named or []] or ["C1", "C2", "C3", "C4", "C5"]
    records: list[dict] = []
    for name, stage in STAGES.items():
        if name not in stages:
            continue
        _check_prompt(root, families[name].get("prompt_hash"))
        judged = _judgements(root / f"{name}.jsonl", name)
        seqs: dict[str, int] = {}
        for j in judged:
            if j.get("window_seq") is not None:
                key = f"{j.get('dataset', '')}\x1f{j['query_id']}"
                seqs[key] = max(seqs.get(key, -1), int(j["window_seq"]))
        for j in judged:
            key = f"{j.get('dataset', '')}\x1f{j['query_id']}"
            if j.get("window_seq") is None:  # planned windows follow the schedule's
                seqs[key] = seqs.get(key, -1) + 1
                seq = seqs[key]
            else:
                seq = int(j["window_seq"])
            records.append(_record(j, stage, criteria, seq))
    order = list(dict.fromkeys(r["query"] for r in records))
    fam = next(iter(families.values()))
    first = stages.get("tournament") or stages["rubric"]
    schedule = (first.get("identity") or {}).get("schedule") or {}
    identity = {
        "judge": {"model": fam["judge_model"], "revision": fam.get("judge_revision") or "",
                  "temperature": fam.get("temperature"),
                  "max_output_tokens": fam.get("max_output_tokens"),
                  "context_tokens": fam.get("context_tokens")},
        "prompts": {"prompt_a_sha256": families.get("tournament", {}).get("prompt_hash"),
                    "prompt_b_sha256": rubric.get("prompt_hash"), "rubric_sha256": None,
                    "criteria": criteria,
                    "decoding": {s: f.get("decoding") for s, f in families.items()}},
        "schedule": {"preset": "imported", "seed": schedule.get("seed")},
        "source": {"format": STORE_SCHEMA, "store": str(root),
                   "families": {s: e.get("family_key") for s, e in stages.items()},
                   "parse_version": {s: f.get("parse_version") for s, f in families.items()}},
    }
    return records, identity, order


__all__ = ["CATEGORY", "STORE_SCHEMA", "read_authors_store"]
