"""The card's result tables read back, and the same cells computed here independently of
rcp-data's engine: pytrec_eval's ``ndcg_cut_k`` for qrel-nDCG on the integer labels, a plain
loop for RCP-nDCG on the gains, both under rule (a) (trec_eval's tie order)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd


def card_tables(text: str) -> dict[str, dict[str, dict[str, float]]]:
    """``{title: {row: {column: value}}}`` of the card's bold-titled Markdown tables."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.fullmatch(r"\*\*((?:RCP|qrel)-nDCG@\d+ \(%\), rule \(a\)[^*]*)\*\*", line)
        if not m:
            continue
        header = [c.strip() for c in lines[i + 2].strip("|").split("|")]
        rows = {}
        for row in lines[i + 4:]:
            if not row.startswith("|"):
                break
            cells = [c.strip() for c in row.strip("|").split("|")]
            rows[cells[0]] = {h: float(v) for h, v in zip(header[1:], cells[1:], strict=True)}
        out[m.group(1)] = rows
    return out


def expected_tables(root: Path, spec, k: int) -> dict[str, dict[str, dict[str, float]]]:
    """``{metric: {short name: {column label: %}}}`` under rule (a) (trec_eval's: score
    descending, then corpus-id descending), computed here from the release's tables."""
    import pytrec_eval

    out: dict[str, dict[str, dict[str, float]]] = {"rcp": {}, "qrel": {}}
    for s in spec.subsets:
        qrels = pd.read_parquet(root / s.name / "qrels.parquet")
        pool = pd.read_parquet(root / s.name / "top_ranked.parquet")
        ex_path = root / s.name / "excluded.parquet"
        excluded: dict[str, set[str]] = {}
        if ex_path.exists():
            ex = pd.read_parquet(ex_path)
            excluded = {q: set(ids) for q, ids in zip(ex["query-id"], ex["excluded-corpus-ids"],
                                                      strict=True)}
        runs = pd.read_parquet(root / "provenance" / "runs" / f"{s.name}.parquet")
        runs = runs[~runs["is_judge"]]
        grades: dict[str, dict[str, int]] = {}
        gains: dict[str, dict[str, float]] = {}
        for q, d, g, gain in zip(qrels["query-id"], qrels["corpus-id"], qrels["score"],
                                 qrels["gain"], strict=True):
            if d in excluded.get(q, ()):
                continue
            grades.setdefault(q, {})[d] = int(g)
            if gain == gain:
                gains.setdefault(q, {})[d] = float(gain)
        candidates = {q: [d for d in ids if d not in excluded.get(q, ())]
                      for q, ids in zip(pool["query-id"], pool["corpus-ids"], strict=True)}
        with_positive = {q: g for q, g in grades.items()
                         if q in candidates and max(g.values()) >= spec.grade_positive}
        for model, part in runs.groupby("model"):
            short = spec.short_name(str(model))
            run: dict[str, dict[str, float]] = {}
            for q, d, score in zip(part["query-id"], part["corpus-id"], part["score"],
                                   strict=True):
                if d in candidates.get(q, ()):
                    run.setdefault(q, {})[d] = float(score)
            ref = pytrec_eval.RelevanceEvaluator(with_positive, {f"ndcg_cut_{k}"}).evaluate(
                {q: run.get(q, {}) for q in with_positive})
            qrel = np.mean([ref[q][f"ndcg_cut_{k}"] for q in with_positive])
            rcp = []
            for q in candidates:
                ranked = sorted(run.get(q, {}).items(),
                                key=lambda kv: (-kv[1], [-b for b in kv[0].encode()]))
                g = gains.get(q, {})
                dcg = sum(g.get(d, 0.0) / math.log2(i + 2) for i, (d, _) in
                          enumerate(ranked[:k]))
                ideal = sum(v / math.log2(i + 2) for i, v in
                            enumerate(sorted(g.values(), reverse=True)[:k]))
                rcp.append(dcg / ideal if ideal > 0 else 0.0)
            out["qrel"].setdefault(short, {})[s.label] = 100 * qrel
            out["rcp"].setdefault(short, {})[s.label] = 100 * float(np.mean(rcp))
    for by_model in out.values():
        for cols in by_model.values():
            cols["Mean"] = float(np.mean(list(cols.values())))
    return out
