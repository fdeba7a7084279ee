"""The judge run: every query's Stage A and Stage B schedules asked of the endpoint, stored.

Queries run concurrently, each stage of each query stepping through its scheduler
(:mod:`.schedule`): a batch's windows are asked at once, bounded overall by ``concurrency``;
the refits between batches run on a worker thread, so the event loop keeps the endpoint busy.
A window already in the store is not asked again. An answer that fails validation is asked
again (a new seed) up to ``attempts`` times in all, then stored invalid with its raw text and
category. A window whose every call failed in transport (HTTP 5xx, resets, timeouts) got no
answer: it is not stored, the run is incomplete, and the next run asks it again.
``max_calls`` stops the run after that many calls (a later run continues).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import gc
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from rcp_data.core.errors import UsageError
from rcp_data.core.progress import progress
from rcp_data.judging.answers import PARSE_VERSION, read_answer
from rcp_data.judging.budget import Census, TokenCounter, per_document_budget
from rcp_data.judging.client import FORMATS, ChatClient
from rcp_data.judging.pool_input import JudgePool, PoolQuery
from rcp_data.judging.prompts import Prompts
from rcp_data.judging.schedule import Window, query_rng, stage_a, stage_b
from rcp_data.judging.settings import Schedule, plan_query
from rcp_data.judging.store import Store, read_identity, window_id

log = logging.getLogger(__name__)
OPEN_PER_SLOT = 4  # windows under way per call slot (see Judging.__init__)
GC_YOUNG = 10_000  # the young generation's size during a run (Python's default: 700)


@dataclass
class RunSettings:
    concurrency: int = 64
    max_calls: int | None = None
    attempts: int = 3
    context_tokens: int = 32768
    max_output_tokens: int = 1024
    show_progress: bool = True
    stages: tuple[str, ...] = ("A", "B")


@dataclass
class RunSummary:
    calls: int = 0
    windows_new: int = 0
    windows_stored: int = 0
    windows_total: int = 0
    invalid_new: int = 0
    unanswered: int = 0  # windows whose every call failed in transport (asked again next run)
    complete: bool = True
    seconds: float = 0.0
    census: Census = field(default_factory=Census)


class _Budget(Exception):
    """--max-calls is spent."""


_NO_ANSWER = object()  # a window that got no answer: its query stage stops there


def judge_identity(model: str, revision: str, prompts: Prompts, schedule: Schedule,
                   pool: JudgePool, run: RunSettings, temperature: float | None) -> dict:
    """What a store's windows depend on (transport settings, URLs and which stages a run asks
    are not part of it: a store may take Stage A in one run and Stage B in the next)."""
    return {"judge": {"model": model, "revision": revision, "temperature": temperature,
                      "max_output_tokens": run.max_output_tokens,
                      "context_tokens": run.context_tokens},
            "prompts": prompts.identity(), "schedule": schedule.to_dict(),
            "pool": {"digest": pool.digest(), "queries": len(pool.queries)},
            "parse_version": PARSE_VERSION}


class Judging:
    def __init__(self, pool: JudgePool, prompts: Prompts, schedule: Schedule, store: Store,
                 client: ChatClient, counter: TokenCounter, run: RunSettings) -> None:
        self.pool, self.prompts, self.schedule = pool, prompts, schedule
        self.store, self.client, self.counter, self.run = store, client, counter, run
        self.summary = RunSummary()
        self._sem = asyncio.Semaphore(run.concurrency)
        # query stages under way at once: enough that their open windows keep every call slot
        # busy while some of them refit, few enough that the windows waiting stay few
        self._active = asyncio.Semaphore(max(32, run.concurrency))
        # windows under way (asked, or waiting for a call slot) at most OPEN_PER_SLOT per
        # slot: a query stage's next batch waits for room, so the waiting windows (tasks the
        # collector walks) stay few while enough wait to keep every slot busy through refits
        self._open, self._open_cap = 0, OPEN_PER_SLOT * run.concurrency
        self._room: collections.deque[tuple[int, asyncio.Future]] = collections.deque()
        self._budget_cache: dict[tuple[str, str, int], int] = {}
        self._cut_cache: dict[tuple[str, str, int], tuple[str, int]] = {}
        self._format_cache: dict[tuple[str, int], dict | None] = {}
        self._bar = None

    # -- prompts ---------------------------------------------------------------------------
    def _render(self, stage: str, q: PoolQuery, texts: list[str]) -> str:
        return (self.prompts.render_a if stage == "A" else self.prompts.render_b)(q.text, texts)

    def _budget(self, stage: str, q: PoolQuery, w: int) -> int:
        key = (stage, q.key, w)
        if key not in self._budget_cache:
            self._budget_cache[key] = per_document_budget(
                self.counter, self._render(stage, q, [""] * w), w,
                context=self.run.context_tokens, max_output=self.run.max_output_tokens)
        return self._budget_cache[key]

    def prompt_for(self, q: PoolQuery, win: Window) -> tuple[str, int, int]:
        """The window's prompt, the documents cut and the tokens cut."""
        limit = self._budget(win.stage, q, len(win.docs))
        texts, cut, tokens = [], 0, 0
        for d in win.docs:
            key = (q.group, q.doc_ids[d], limit)
            if key not in self._cut_cache:
                self._cut_cache[key] = self.counter.cut(self.pool.texts[q.group][q.doc_ids[d]],
                                                        limit)
            text, lost = self._cut_cache[key]
            texts.append(text)
            cut += lost > 0
            tokens += lost
        return self._render(win.stage, q, texts), cut, tokens

    def _format(self, stage: str, w: int) -> dict | None:
        key = (stage, w)
        if key not in self._format_cache:
            self._format_cache[key] = self.prompts.response_format_for(stage, w)
        return self._format_cache[key]

    # -- windows ---------------------------------------------------------------------------
    def _fits(self, n: int) -> bool:
        # a batch fits the room, or the slots would soon idle without it (a batch larger
        # than the room goes in once fewer windows are open than there are slots)
        return self._open + n <= self._open_cap or self._open < self.run.concurrency

    async def _admit(self, n: int) -> None:
        """Wait for room for a batch of ``n`` windows (first come, first served)."""
        if not self._room and self._fits(n):
            self._open += n
            return
        fut = asyncio.get_running_loop().create_future()
        self._room.append((n, fut))
        await fut

    def _closed(self) -> None:
        """A window is done: let in the batches that now fit."""
        self._open -= 1
        while self._room and self._fits(self._room[0][0]):
            n, fut = self._room.popleft()
            if not fut.done():
                self._open += n
                fut.set_result(None)

    async def _window(self, q: PoolQuery, win: Window):
        try:
            return await self._window_now(q, win)
        finally:
            self._closed()

    async def _window_now(self, q: PoolQuery, win: Window):
        doc_ids = [q.doc_ids[d] for d in win.docs]
        wid = window_id(self.store.digest, q.key, win.stage, win.phase, win.seq, doc_ids)
        rec = self.store.records.get(wid)
        if rec is not None:
            self.summary.windows_stored += 1
            self._tick(rec)
            return rec["values"] if rec["status"] == "ok" else None
        w = len(win.docs)
        fmt = self._format(win.stage, w)
        usage = {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
        busy = 0.0
        reading = res = prompt = None
        cut = tokens = 0
        for attempt in range(self.run.attempts):
            if self.run.max_calls is not None and self.summary.calls >= self.run.max_calls:
                raise _Budget
            async with self._sem:
                # the prompt is made once a call slot is free: a window waiting for one
                # costs a suspended coroutine, not a rendered prompt
                if self.run.max_calls is not None and self.summary.calls >= self.run.max_calls:
                    raise _Budget
                self.summary.calls += 1
                if prompt is None:
                    prompt, cut, tokens = self.prompt_for(q, win)
                started = time.monotonic()
                res = await self.client.chat(prompt, response_format=fmt,
                                             seed=int(wid[:8], 16) + attempt)
                busy += time.monotonic() - started
            usage["calls"] += 1
            usage["prompt_tokens"] += res.prompt_tokens
            usage["completion_tokens"] += res.completion_tokens
            if res.error:
                reading = None
                if res.error == "refusal":
                    continue  # asked again (a new seed), up to the attempts
                break  # no answer in transport: the client has retried already
            reading = read_answer(win.stage, res.text, w, self.prompts.rubric.ids,
                                  finish_reason=res.finish_reason)
            if reading.ok:
                break
        if reading is not None and reading.ok:
            status, category, detail, values = "ok", None, "", reading.values
        elif reading is not None:
            status, category, detail, values = ("invalid", reading.category,
                                                res.detail or reading.detail, reading.values)
        elif res is not None and res.error == "refusal":
            status, category, detail, values = "invalid", res.error, res.detail, None
        else:  # no answer at all: not stored, so that the next run asks it again
            self.summary.unanswered += 1
            self.summary.complete = False
            log.info("window %s got no answer (%s); the next run asks it again", wid[:12],
                     res.detail if res else "no call")
            self._tick(None)
            return _NO_ANSWER
        record = {"id": wid, "query": q.key, "split": q.split, "query_id": q.query_id,
                  "stage": win.stage, "phase": win.phase, "seq": win.seq, "batch": win.batch,
                  "twin": win.twin, "docs": doc_ids, "status": status, "category": category,
                  "detail": detail, "values": values, "raw": res.text if res else None,
                  "finish_reason": res.finish_reason if res else None,
                  "attempts": usage["calls"], "usage": usage, "cuts": cut, "tokens_cut": tokens,
                  "seconds": round(busy, 4),
                  "replica": res.replica if res else ""}
        self.store.append(record)  # on disk before the next call: a kill loses no answer
        self.summary.windows_new += 1
        self.summary.invalid_new += status != "ok"
        self._tick(record)
        return values if status == "ok" else None

    def _tick(self, rec: dict | None) -> None:
        if rec is not None:
            self.summary.census.add(rec["stage"], len(rec["docs"]), rec.get("cuts", 0),
                                    rec.get("tokens_cut", 0))
        if self._bar is not None:
            self._bar.update(1)
            done = self.summary.windows_new + self.summary.windows_stored
            if done % 50 == 0:
                share = self.summary.invalid_new / max(self.summary.windows_new, 1)
                self._bar.set_postfix_str(f"invalid {share:.1%}", refresh=False)

    async def _query_stage(self, q: PoolQuery, stage: str, executor) -> None:
        async with self._active:
            await self._query_stage_now(q, stage, executor)

    async def _query_stage_now(self, q: PoolQuery, stage: str, executor) -> None:
        n = len(q.doc_ids)
        plan = plan_query(n, self.schedule)
        rng = query_rng(self.schedule.seed, stage, q.key)
        gen = (stage_a if stage == "A" else stage_b)(n, self.schedule, rng, plan)
        loop = asyncio.get_running_loop()
        try:
            batch = next(gen)
        except StopIteration:
            return
        while True:
            await self._admit(len(batch))
            values = await asyncio.gather(*(self._window(q, win) for win in batch),
                                          return_exceptions=True)
            failed = [v for v in values if isinstance(v, BaseException)]
            if failed:
                raise failed[0]
            if any(v is _NO_ANSWER for v in values):
                return  # the next batch depends on every answer: the next run goes on here
            answers = {win.seq: v for win, v in zip(batch, values, strict=True)}
            batch = await loop.run_in_executor(executor, _step, gen, answers)
            if batch is None:
                return

    def planned_windows(self) -> int:
        total = 0
        for q in self.pool.queries:
            p = plan_query(len(q.doc_ids), self.schedule)
            total += (p.total_a if "A" in self.run.stages else 0) + (
                p.total_b if "B" in self.run.stages else 0)
        return total

    async def run_all(self) -> RunSummary:
        started = time.monotonic()
        self.summary.windows_total = self.planned_windows()
        self._bar = progress(total=self.summary.windows_total, unit="win",
                             disable=not self.run.show_progress, desc="judge")
        with ThreadPoolExecutor(max_workers=1, initializer=_one_blas_thread) as executor, \
                _long_lived_frozen():
            tasks = [asyncio.ensure_future(self._query_stage(q, s, executor))
                     for q in self.pool.queries for s in self.run.stages]
            results = await asyncio.gather(*tasks, return_exceptions=True)
        self._bar.close()
        for r in results:
            if isinstance(r, _Budget):
                self.summary.complete = False
            elif isinstance(r, BaseException):
                raise r
        self.summary.seconds = time.monotonic() - started
        self.store.log_run({"seconds": round(self.summary.seconds, 3),
                            "calls": self.summary.calls,
                            "windows_new": self.summary.windows_new,
                            "complete": self.summary.complete})
        return self.summary


def _step(gen, answers):
    """The scheduler's next batch, None when it is done (a StopIteration cannot cross an
    executor's future)."""
    try:
        return gen.send(answers)
    except StopIteration:
        return None


@contextlib.contextmanager
def _long_lived_frozen():
    """The collector set for a run: what outlives it (the pool, the store's records, the
    caches) moved out of its sight (``gc.freeze``), so a full collection, which stops every
    call in flight, walks only what the run makes; and a young generation of ``GC_YOUNG``
    objects, so that fewer of the calls in flight are caught alive and promoted (measured:
    GC CPU per call down about threefold, pauses of a few ms). Both undone at the end."""
    threshold = gc.get_threshold()
    gc.collect()
    gc.freeze()
    gc.set_threshold(max(threshold[0], GC_YOUNG), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _one_blas_thread() -> None:
    """A refit is a small problem: BLAS threads on shared cores only slow it down."""
    with contextlib.suppress(ImportError):
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)


async def judge_pool(pool: JudgePool, prompts: Prompts, schedule: Schedule, store_root,
                     identity: dict, client: ChatClient, counter: TokenCounter,
                     run: RunSettings) -> RunSummary:
    """Check the endpoint (before anything is written), open the store, judge every query.

    With the response format ``auto`` a probe call per replica picks the strongest format
    every replica accepts (a store judged before keeps its own); the store's identity names
    the format picked."""
    async with client:
        await client.check_models()
        if prompts.response_format == "auto":
            fmt = _stored_format(store_root) or await client.probe()
            prompts = dataclasses.replace(prompts, response_format=fmt)
            identity = {**identity, "prompts": prompts.identity()}
        with Store(store_root, identity) as store:
            return await Judging(pool, prompts, schedule, store, client, counter,
                                 run).run_all()


def _stored_format(store_root) -> str | None:
    """The response format a store was judged with (a rerun asks the same way, no probe)."""
    try:
        fmt = read_identity(store_root)["prompts"]["response_format"]
    except (UsageError, OSError, ValueError, KeyError, TypeError):
        return None
    if fmt in FORMATS:
        log.info("response format %s, as the store %s was judged", fmt, store_root)
        return fmt
    return None


def run_async(coro):
    """Run ``coro`` on uvloop's event loop when it is installed (the judge extra: a cheaper
    loop per call), else on asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    return uvloop.run(coro)
