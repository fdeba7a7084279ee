"""``rcp-data judge``: plan, run, inspect and re-read a judge run of a pool (Stage A, Stage B).

``plan`` prints the calls per stage and phase, the placements per document and estimates of
tokens and wall time, calling no one. ``run`` asks an OpenAI-compatible endpoint (replicas:
``--endpoint`` repeated) for every window of the schedule, into an append-only store
(``--store``), and writes the builder inputs ``judge/tournament.parquet``,
``judge/criteria.parquet``, ``judge/judge.json`` and ``judge/judging.json`` into ``--out``.
``status`` counts a store's windows; ``reparse`` re-reads its raw answers without calling the
judge; ``import`` turns a judgement store of the authors' toolkit into the same tables.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

from rcp_data.cli.options import out_folder
from rcp_data.cli.output import say
from rcp_data.core.errors import UsageError


def _count(text: str) -> int:
    """A count of at least 1."""
    return _int(text, 1)


def _non_negative(text: str) -> int:
    return _int(text, 0)


def _int(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{text!r}: must be at least {least}")
    return value


def _positive(text: str) -> float:
    """A finite number above 0."""
    value = _finite(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be above 0")
    return value


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"{text!r}: must be a finite number")
    return value


def _temperature(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a temperature is at least 0")
    return value


def _common(p: argparse.ArgumentParser) -> None:
    schedule_options(p)
    p.add_argument("--suite", help="the pool's suite (default: the one the release names)")


def schedule_options(p: argparse.ArgumentParser) -> None:
    """``--preset``, ``--set`` and ``--seed`` (``judge plan|run``, ``release cut``)."""
    p.add_argument("--preset", help="schedule preset: full, reduced, stage-b-only (default: the "
                   "suite spec's [judge] preset, else full)")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a schedule setting, e.g. a.window=8, b.placements=5 "
                        "(a.: Stage A, b.: Stage B; repeatable)")
    p.add_argument("--seed", type=int, default=42, help="schedule seed (default 42)")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("judge", help="judge a pool with an LLM: Stage A and Stage B",
                              description=__doc__.split("\n\n")[1].replace("\n", " "))
    sub = p.add_subparsers(dest="judge_command", metavar="SUBCOMMAND")

    plan = sub.add_parser("plan", help="print the schedule's calls, placements and estimates",
                          description="Print the judging schedule of a pool (or of pools of "
                          "--pool-size): its calls per stage, placements and time estimates; "
                          "calls no judge.")
    plan.add_argument("--pool", help="a release directory or hf://datasets/OWNER/NAME@REV")
    plan.add_argument("--pool-size", type=_count, help="plan for pools of this size instead")
    plan.add_argument("--queries", type=_count, default=1, help="with --pool-size: queries")
    plan.add_argument("--throughput", type=_positive, default=10.0,
                      help="calls per second the endpoint sustains (for the wall time)")
    plan.add_argument("--output-tokens", type=_count, nargs=2, default=(150, 400),
                      metavar=("A", "B"), help="assumed output tokens per call and stage")
    plan.add_argument("--json", action="store_true", help="the plan as JSON")
    _common(plan)
    plan.set_defaults(func=handle_plan)

    run = sub.add_parser("run", help="ask the judge for every window (resumable)",
                         description="Ask an OpenAI-compatible judge for every window of the "
                         "schedule (Stage A, then Stage B), storing each answer in --store; a "
                         "rerun resumes where it stopped. Writes the judge tables to --out.")
    run.add_argument("--pool", required=True,
                     help="a release directory or hf://datasets/OWNER/NAME@REV")
    run.add_argument("--store", required=True, type=Path, help="the run's store (append-only)")
    run.add_argument("--out", required=True, type=out_folder,
                     help="where judge/tournament.parquet etc. are written")
    run_arguments(run)
    _common(run)
    run.set_defaults(func=handle_run)

    st = sub.add_parser("status", help="count a store's windows by stage and status",
                        description="Count a judging store's windows, invalid windows, "
                        "calls and tokens by stage.")
    st.add_argument("--store", required=True, type=Path, help="the run's store")
    st.set_defaults(func=handle_status)

    rp = sub.add_parser("reparse", help="re-read a store's raw answers (no judge call)",
                        description="Parse a store's raw answers again (e.g. after a parser "
                        "fix) into a new store; calls no judge.")
    rp.add_argument("--store", required=True, type=Path, help="the run's store (read only)")
    rp.add_argument("--out", required=True, type=out_folder, help="a new store for the re-read")
    rp.set_defaults(func=handle_reparse)

    im = sub.add_parser("import", help="turn a store of the authors' toolkit into the tables",
                        description="Read a judgement store of the authors' toolkit "
                        "(cohere-ai/rcp-ndcg: identity.json, tournament.jsonl, rubric.jsonl) "
                        "and write judge/tournament.parquet, judge/criteria.parquet, "
                        "judge.json and judging.json into --out; calls no judge.")
    im.add_argument("store", type=Path, help="the rcp-ndcg judgement store folder")
    im.add_argument("--out", required=True, type=Path,
                    help="where judge/tournament.parquet etc. are written")
    im.set_defaults(func=handle_import)
    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def run_arguments(run: argparse.ArgumentParser) -> None:
    """The endpoint, model and call settings of ``judge run`` (``release cut`` shares them)."""
    run.add_argument("--endpoint", action="append", required=True, metavar="URL",
                     help="an OpenAI-compatible base URL (.../v1); repeat for replicas")
    run.add_argument("--model", required=True, help="the served model name")
    run.add_argument("--judge-name", metavar="NAME",
                     help="the judge's name in the release tag v<N>-NAME, card and history "
                     "(required when --model is a file path or not a Hub id OWNER/NAME; the "
                     "served id stays in the provenance)")
    run.add_argument("--judge-revision", default="", help="the model's checkpoint revision")
    run.add_argument("--api-key-env", metavar="NAME",
                     help="environment variable holding the API key (never printed)")
    run.add_argument("--concurrency", type=_count, default=64,
                     help="calls in flight at once (default 64)")
    run.add_argument("--max-calls", type=_count, help="stop after this many calls")
    run.add_argument("--attempts", type=_count, default=3,
                     help="asks per window before it is stored invalid (default 3)")
    run.add_argument("--retries", type=_non_negative, default=6, help="transport retries per call")
    run.add_argument("--timeout", type=_positive, default=600.0, help="seconds per call")
    run.add_argument("--outage-wait", type=_positive, default=600.0,
                     help="seconds a call waits while every replica is down")
    run.add_argument("--temperature", type=_temperature, default=1.0,
                     help="sampling temperature (default 1.0)")
    run.add_argument("--context-tokens", type=_count, default=32768,
                     help="the model's context length (default 32768)")
    run.add_argument("--max-output-tokens", type=_count, default=1024,
                     help="the most tokens one answer may have (default 1024)")
    run.add_argument("--tokenizer", help="tokenizer.json path or HF repo id (from the cache)")
    run.add_argument("--prompt-a", type=Path, help="Stage A template (default: built-in)")
    run.add_argument("--prompt-b", type=Path, help="Stage B template (default: built-in)")
    run.add_argument("--rubric", type=Path, help="rubric JSON (default: Table 1's criteria)")
    run.add_argument("--response-format", default="auto",
                     choices=("auto", "json_schema", "json_object", "none"),
                     help="how the answer's JSON is asked for (default auto: a probe call "
                          "per endpoint picks the strongest the server accepts)")
    run.add_argument("--score-values", default="bounded", choices=("bounded", "integers"),
                     help="Stage A schema items: numbers in [-5, 5] or the integers -5..5")
    run.add_argument("--stages", default="AB", choices=("A", "B", "AB"),
                     help="the stages to run (default AB)")
    run.add_argument("--limit-queries", type=_count, help="judge only the first N queries")
    run.add_argument("--no-progress", action="store_true", help="show no progress bar")


def _schedule(args, spec):
    from rcp_data.release.judge_run import make_schedule, overrides

    return make_schedule(spec, args.preset, overrides(args.set), args.seed)


def _open_pool(ref: str, args):
    from rcp_data.release.judge_run import open_pool

    return open_pool(ref, getattr(args, "suite", None), getattr(args, "hub_client", None))


def handle_plan(args: argparse.Namespace) -> int:
    from rcp_data.judging.plan import plan_report, plan_text

    if (args.pool is None) == (args.pool_size is None):
        raise UsageError("give --pool (a release) or --pool-size")
    if args.pool:
        release, pool = _open_pool(args.pool, args)
        sizes = [len(q.doc_ids) for q in pool.queries]
        schedule = _schedule(args, release.spec)
    else:
        pool, sizes = None, [args.pool_size] * args.queries
        schedule = _schedule(args, None)
    report = plan_report(sizes, schedule, pool=pool, throughput=args.throughput,
                         output_tokens=tuple(args.output_tokens))
    print(json.dumps(report, indent=1) if args.json else plan_text(report))
    return 0


def run_options(args: argparse.Namespace) -> dict:
    """The keyword arguments of :func:`rcp_data.release.judge_run.judge` that ``judge run``'s
    flags give (``release cut`` shares them)."""
    from rcp_data.release.judge_run import overrides

    return dict(endpoints=args.endpoint, model=args.model, judge_name=args.judge_name,
                judge_revision=args.judge_revision, api_key_env=args.api_key_env,
                preset=args.preset, settings=overrides(args.set), seed=args.seed,
                concurrency=args.concurrency, max_calls=args.max_calls,
                attempts=args.attempts, retries=args.retries, timeout=args.timeout,
                outage_wait=args.outage_wait, temperature=args.temperature,
                context_tokens=args.context_tokens, max_output_tokens=args.max_output_tokens,
                tokenizer=args.tokenizer, prompt_a=args.prompt_a, prompt_b=args.prompt_b,
                rubric=args.rubric, response_format=args.response_format,
                score_values=args.score_values, stages=args.stages,
                limit_queries=args.limit_queries, progress=not args.no_progress)


def judged_line(result) -> str:
    """The status line of a finished judge run."""
    u = result.usage
    return (f"judge run complete: {result.windows_new:,} windows asked now "
            f"({result.calls:,} calls, {result.invalid_new:,} invalid), "
            f"{result.windows_stored:,} already stored; Stage A {u['A']['windows']:,} windows, "
            f"Stage B {u['B']['windows']:,}; wrote {result.tables}")


def handle_run(args: argparse.Namespace) -> int:
    from rcp_data.release.judge_run import judge

    result = judge(args.pool, args.store, args.out, suite=args.suite,
                   client=getattr(args, "hub_client", None), **run_options(args))
    say(args, judged_line(result))
    return 0


def handle_status(args: argparse.Namespace) -> int:
    from rcp_data.judging.store import read_identity, read_records
    from rcp_data.judging.tables import usage_by_stage
    from rcp_data.model.card_format import escape_cell

    identity = read_identity(args.store)
    usage = usage_by_stage(read_records(args.store))
    judge, preset = (escape_cell(str(v), markdown=False) for v in (
        identity["judge"]["model"], identity["schedule"]["preset"]))
    print(f"store {escape_cell(str(args.store), markdown=False)}: judge {judge}, preset {preset}")
    for stage, u in usage.items():
        cats = ", ".join(f"{k} {v}" for k, v in u["invalid_by_category"].items() if v)
        print(f"Stage {stage}: {u['windows']:,} windows of {u['queries']:,} queries, "
              f"{u['invalid_windows']:,} invalid{f' ({cats})' if cats else ''}; "
              f"{u['calls']:,} calls, {u['input_tokens']:,} input and "
              f"{u['output_tokens']:,} output tokens")
    return 0


def handle_reparse(args: argparse.Namespace) -> int:
    from rcp_data.core.io import atomic_write_bytes, atomic_write_text
    from rcp_data.core.outputs import check_apart, own_folder
    from rcp_data.judging.store import IDENTITY, WINDOWS, read_identity, read_records
    from rcp_data.judging.tables import reparse_records

    check_apart(args.out, {"--store": args.store})
    identity = read_identity(args.store)
    if not args.out.is_symlink() and args.out.exists() and any(args.out.iterdir()):
        raise UsageError(f"--out {args.out} exists and is not empty")
    records, changes = reparse_records(read_records(args.store),
                                       identity["prompts"]["criteria"])
    own_folder(args.out)   # a symbolic link there is replaced, never written through
    atomic_write_bytes(args.out / IDENTITY, (args.store / IDENTITY).read_bytes())
    atomic_write_text(args.out / WINDOWS, "".join(json.dumps(r, ensure_ascii=False) + "\n"
                                                  for r in records))
    print(", ".join(f"{k} {v:,}" for k, v in sorted(changes.items())))
    return 0


def handle_import(args: argparse.Namespace) -> int:
    import os
    import tempfile

    from rcp_data.core.outputs import check_apart, own_path
    from rcp_data.judging.imported import read_authors_store
    from rcp_data.judging.tables import write_tables

    check_apart(args.out, {"store": args.store})
    records, identity, order = read_authors_store(args.store)
    if not records:
        raise UsageError(f"{args.store} holds no judgements")
    target = args.out / "judge"
    if not target.is_symlink() and target.exists() and any(target.iterdir()):
        raise UsageError(f"--out {args.out}: {target} exists and is not empty")
    splits: dict[str, set[str]] = {}
    for r in records:
        splits.setdefault(r["query_id"], set()).add(r["split"])
    with_split = any(len(v) > 1 for v in splits.values())  # query ids repeat across datasets
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=args.out, prefix=".import-") as tmp:
        rec = write_tables(records, identity, Path(tmp), order, with_split=with_split,
                           extra={"imported": True})
        own_path(args.out, "judge")   # a symbolic link there is replaced, never written through
        if target.exists():
            target.rmdir()
        os.replace(Path(tmp) / "judge", target)
    u = rec["usage"]
    say(args, f"imported {args.store}: Stage A {u['A']['windows']:,} windows "
        f"({u['A']['invalid_windows']:,} invalid), Stage B {u['B']['windows']:,} windows "
        f"({u['B']['invalid_windows']:,} invalid) of judge {identity['judge']['model']}; "
        f"wrote {target}")
    return 0
