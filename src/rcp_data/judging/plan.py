"""``judge plan``: the schedule's calls per stage and phase, placements per document, and
estimates of tokens and wall time, computed from the pool sizes (and texts, when given)."""

from __future__ import annotations

from collections import Counter

from rcp_data.judging.budget import TokenCounter
from rcp_data.judging.prompts import load_prompts
from rcp_data.judging.settings import Schedule, check_stage_b_coverage, plan_query


def plan_report(sizes: list[int], schedule: Schedule, *, pool=None, throughput: float = 10.0,
                output_tokens: tuple[int, int] = (150, 400)) -> dict:
    check_stage_b_coverage(sizes, schedule)
    calls: Counter = Counter()
    docs = sum(sizes)
    placements = {"A": 0, "B": 0}
    for n in sizes:
        p = plan_query(n, schedule)
        for phase, k in p.calls_a.items():
            calls[("A", phase)] += k
        for phase, k in p.calls_b.items():
            calls[("B", phase)] += k
        placements["A"] += p.total_a * p.window_a
        placements["B"] += p.total_b * p.window_b
    total = {s: sum(v for (st, _), v in calls.items() if st == s) for s in ("A", "B")}
    tokens_in = {"A": 0.0, "B": 0.0}
    source = "no texts (plan from pool sizes)"
    if pool is not None:
        counter = TokenCounter(None)
        prompts = load_prompts()
        source = counter.source
        for q in pool.queries:
            p = plan_query(len(q.doc_ids), schedule)
            mean_doc = sum(counter.count(t) for t in pool.doc_texts(q)) / len(q.doc_ids)
            for stage, k, w in (("A", p.total_a, p.window_a), ("B", p.total_b, p.window_b)):
                if k:
                    render = prompts.render_a if stage == "A" else prompts.render_b
                    tokens_in[stage] += k * (counter.count(render(q.text, [""] * w))
                                             + w * mean_doc)
    out_tok = {"A": total["A"] * output_tokens[0], "B": total["B"] * output_tokens[1]}
    n_calls = total["A"] + total["B"]
    return {
        "preset": schedule.preset, "seed": schedule.seed, "queries": len(sizes),
        "documents": docs, "pool_size": {"min": min(sizes), "max": max(sizes),
                                         "mean": docs / len(sizes)},
        "calls": {s: {ph: calls[(s, ph)] for (st, ph) in calls if st == s} | {"total": total[s]}
                  for s in ("A", "B")},
        "calls_per_query": {s: total[s] / len(sizes) for s in ("A", "B")},
        "placements_per_document": {s: placements[s] / docs for s in ("A", "B")},
        "input_tokens": {s: int(tokens_in[s]) for s in ("A", "B")} if pool is not None else None,
        "output_tokens_assumed": out_tok, "token_counts": source,
        "throughput_calls_per_s": throughput, "wall_seconds": n_calls / throughput,
    }


def plan_text(r: dict) -> str:
    lines = [f"preset {r['preset']} (seed {r['seed']}): {r['queries']:,} queries, "
             f"{r['documents']:,} documents (pool {r['pool_size']['min']}-"
             f"{r['pool_size']['max']}, mean {r['pool_size']['mean']:.1f})"]
    for s in ("A", "B"):
        c = r["calls"][s]
        phases = ", ".join(f"{k} {v:,}" for k, v in c.items() if k != "total")
        lines.append(f"Stage {s}: {c['total']:,} calls ({phases}); "
                     f"{r['calls_per_query'][s]:.2f} per query; "
                     f"{r['placements_per_document'][s]:.2f} placements per document")
    if r["input_tokens"]:
        lines.append(f"input tokens: Stage A {r['input_tokens']['A']:,}, Stage B "
                     f"{r['input_tokens']['B']:,} ({r['token_counts']})")
    lines.append(f"output tokens (assumed): Stage A {r['output_tokens_assumed']['A']:,}, "
                 f"Stage B {r['output_tokens_assumed']['B']:,}")
    lines.append(f"wall time at {r['throughput_calls_per_s']:g} calls/s: "
                 f"{r['wall_seconds'] / 3600:.2f} h")
    return "\n".join(lines)
