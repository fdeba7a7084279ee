"""A judge run as a library call (``rcp_data.judge``; ``rcp-data judge run`` parses, calls this
and prints): every window of a pool's schedule asked of an OpenAI-compatible endpoint, into an
append-only store, then the builder inputs ``judge/tournament.parquet``,
``judge/criteria.parquet``, ``judge/judge.json`` and ``judge/judging.json`` written into
``out``.

A rerun with the same store asks only for the windows it does not hold yet. ``out`` may be the
pool itself when that is a folder of pools only (``build --until pools``, ``suite
first-stage``): the judge tables then sit beside the pools, the run's reranker and first-stage
runs, so the folder goes on to ``calibrate --inputs`` and ``build --inputs`` as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rcp_data.core.errors import UsageError
from rcp_data.release.pools_only import POOLS_ONLY

if TYPE_CHECKING:
    from rcp_data.core.hub_client import HubClient
    from rcp_data.judging.pool_input import JudgePool
    from rcp_data.judging.settings import Schedule
    from rcp_data.model.release import Release


@dataclass(frozen=True)
class JudgeResult:
    """What :func:`judge` did: the windows asked now and stored before, the calls, and the
    tables written (``out / "judge"``); ``usage`` is ``judging.json``'s per-stage usage."""

    out: Path
    judge: str
    windows_new: int
    windows_stored: int
    calls: int
    invalid_new: int
    usage: dict = field(repr=False)

    @property
    def tables(self) -> Path:
        return self.out / "judge"

    def to_json(self) -> dict:
        return {"out": str(self.out), "judge": self.judge, "windows_new": self.windows_new,
                "windows_stored": self.windows_stored, "calls": self.calls,
                "invalid_new": self.invalid_new, "usage": self.usage}


def overrides(items: Sequence[str]) -> dict[str, str]:
    """``--set KEY=VALUE`` items as a mapping."""
    out = {}
    for item in items:
        if "=" not in item:
            raise UsageError(f"--set {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def make_schedule(spec, preset: str | None, settings: Mapping[str, str] | None,
                  seed: int) -> Schedule:
    """The judging schedule: ``preset`` (default the suite spec's) with ``settings``."""
    from rcp_data.judging.settings import make_schedule as schedule_of
    from rcp_data.judging.settings import suite_preset

    return schedule_of(preset or suite_preset(spec), dict(settings or {}), seed=seed)


def open_pool(ref: str | Path, suite: str | None = None,
              client: HubClient | None = None) -> tuple[Release, JudgePool]:
    """The release (or folder of pools only) at ``ref`` and the pool a judge is shown."""
    from rcp_data.judging.pool_input import read_pool
    from rcp_data.model.release import open_release

    marker = Path(ref) / POOLS_ONLY
    if suite is None and not str(ref).startswith("hf://") and marker.exists():
        suite = json.loads(marker.read_text(encoding="utf-8"))["suite"]  # a pools-only build
    release = open_release(ref, suite=suite, client=client)
    return release, read_pool(release)


def judge(pool: str | Path, store: str | Path, out: str | Path, *,
          endpoints: str | Sequence[str], model: str, judge_name: str | None = None,
          judge_revision: str = "", api_key_env: str | None = None, suite: str | None = None,
          preset: str | None = None, settings: Mapping[str, str] | None = None,
          seed: int = 42, concurrency: int = 64, max_calls: int | None = None,
          attempts: int = 3, retries: int = 6, timeout: float = 600.0,
          outage_wait: float = 600.0, temperature: float = 1.0,
          context_tokens: int = 32768, max_output_tokens: int = 1024,
          tokenizer: str | None = None, prompt_a: str | Path | None = None,
          prompt_b: str | Path | None = None, rubric: str | Path | None = None,
          response_format: str = "auto", score_values: str = "bounded",
          stages: str = "AB", limit_queries: int | None = None,
          client: HubClient | None = None, progress: bool = False) -> JudgeResult:
    """Judge the pool of ``pool`` (a release directory, ``hf://datasets/OWNER/NAME@REV`` or a
    folder of pools only), as ``rcp-data judge run`` does: Stage A then Stage B of the
    schedule (``preset``, ``settings`` as ``--set``), each answer stored in ``store`` (a rerun
    asks only for what is missing), then the judge tables written into ``out / "judge"``.

    ``endpoints``: one or more OpenAI-compatible base URLs (replicas); ``model``: the served
    model id; ``judge_name``: the judge's name in the release tag (required when ``model`` is
    a path or not a Hub id). Raises :class:`~rcp_data.core.errors.UsageError` before any call
    for settings that cannot work, :class:`~rcp_data.core.errors.IncompleteStore` when
    windows got no answer (nothing written: run again).
    """
    from rcp_data.core.outputs import check_apart
    from rcp_data.judging.budget import TokenCounter
    from rcp_data.judging.client import ChatClient, ClientSettings
    from rcp_data.judging.driver import RunSettings, judge_identity, judge_pool, run_async
    from rcp_data.judging.prompts import load_prompts
    from rcp_data.judging.tables import export_tables
    from rcp_data.model.judge_name import judge_name as name_of

    store, out = Path(store), Path(out)
    urls = [endpoints] if isinstance(endpoints, str) else list(endpoints)
    name = name_of(model, judge_name)  # before any call: a tag is for good
    prompts = load_prompts(prompt_a, prompt_b, rubric, response_format=response_format,
                           score_values=score_values)
    release, judged = open_pool(pool, suite, client)
    # the tables never go into (or around) the store, nor into a built release (verify would
    # fail); a folder of pools only (build --until pools, suite first-stage) may take judge/
    inputs: dict[str, Path] = {"--store": store}
    if release.pin is None and release.manifest is not None:
        inputs["--pool"] = release.root
        check_apart(store, {"--pool": release.root}, flag="--store")
    check_apart(out, inputs)
    judged = judged.limit(limit_queries)
    schedule = make_schedule(release.spec, preset, settings, seed)
    if "B" in stages:
        from rcp_data.judging.settings import check_stage_b_coverage

        check_stage_b_coverage([len(q.doc_ids) for q in judged.queries], schedule)
    run = RunSettings(concurrency=concurrency, max_calls=max_calls, attempts=attempts,
                      context_tokens=context_tokens, max_output_tokens=max_output_tokens,
                      show_progress=progress, stages=tuple(stages))
    counter = TokenCounter(tokenizer)
    chat = ChatClient(ClientSettings(
        model=model, urls=urls, api_key_env=api_key_env, timeout=timeout, retries=retries,
        outage_wait=outage_wait, temperature=temperature, max_tokens=max_output_tokens))
    check_budgets(judged, prompts, schedule, counter, run)
    identity = judge_identity(model, judge_revision, prompts, schedule, judged, run,
                              temperature)
    summary = run_async(judge_pool(judged, prompts, schedule, store, identity, chat, counter,
                                   run))
    require_complete(store, summary)
    info = {"model": name, "revision": judge_revision, "short": name.split("/")[-1][:24]}
    if name != model:
        info["served_model"] = model
    if "SIMULATED" in model or release.synthetic:
        info["synthetic"] = True
    record = export_tables(store, out, [q.key for q in judged.queries],
                           with_split=judged.needs_split, judge=info,
                           extra={"tokens": counter.source, "complete": summary.complete,
                                  "pool": judged.source})
    return JudgeResult(out, name, summary.windows_new, summary.windows_stored, summary.calls,
                       summary.invalid_new, record["usage"])


def require_complete(store: Path, summary) -> None:
    """Tables come only from a store that holds every planned window."""
    from rcp_data.core.errors import IncompleteStore
    from rcp_data.judging.store import read_records

    held = len({r["id"] for r in read_records(store)})
    missing = summary.windows_total - held
    if summary.complete and missing <= 0:
        return
    why = (f"{summary.unanswered:,} got no answer from the endpoint"
           if summary.unanswered else "stopped at --max-calls")
    raise IncompleteStore(f"the store {store} holds {held:,} of {summary.windows_total:,} "
                          f"planned windows ({why}); no tables written: run again to ask "
                          "only for what is missing")


def check_budgets(pool, prompts, schedule, counter, run) -> None:
    """A context too small for one document, or an output cap too small for a window's
    answer, is refused before anything is written."""
    from rcp_data.judging.budget import min_output_tokens, per_document_budget

    q = max(pool.queries, key=lambda x: len(x.text))
    for stage, w in (("A", schedule.stage_a.window), ("B", schedule.stage_b.window)):
        if stage not in run.stages:
            continue
        need = min_output_tokens(counter, prompts.longest_answer(stage, w))
        if run.max_output_tokens < need:
            raise UsageError(f"--max-output-tokens {run.max_output_tokens} cannot hold a Stage "
                             f"{stage} answer of a window of {w}: give at least {need}")
        render = prompts.render_a if stage == "A" else prompts.render_b
        per_document_budget(counter, render(q.text, [""] * w), w,
                            context=run.context_tokens, max_output=run.max_output_tokens)


__all__ = ["JudgeResult", "check_budgets", "judge", "make_schedule", "open_pool", "overrides",
           "require_complete"]
