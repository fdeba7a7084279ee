"""Benchmark: the judge driver's throughput against the SIMULATED server (not a test).

The SIMULATED server runs in its own process (answers after a fixed latency); the driver
judges a generated pool of ``--queries`` queries of 150 documents with ViDoRe's per-query plan
(preset ``stage-b-only``: 100 Stage B windows of 10) for ``--seconds``, at each
``--concurrency``. Reported per run: calls/s over the steady state (after ``--warmup`` s), the
share of the ideal ``concurrency / latency``, the share of sampled time with fewer calls in
flight than allowed, the driver's and the server's CPU per call (load-independent, unlike the
rate on a shared machine), the mean time a call took as the driver saw it and the share of
call slots busy (Little's law), and the driver's peak RSS. Where a call's time beyond the
server's latency goes: the driver's event-loop lag (how late a 10 ms timer fires: mean, p99)
and its garbage collector's pauses (CPU time per generation) over the steady state. Then the
same against an instant server (latency 0): calls/s and CPU per call. ``--replicas N`` runs
the server as N processes, the driver routing over them (its repeatable endpoints). The
server plants each passage's relevance from one generator (the hashed fallback draws a
generator per passage, a cost of the SIMULATED server, not of the driver), and sets its
collector as the driver does during a run (``gc.freeze`` after the planted table is made, a
young generation of ``GC_YOUNG``).

    PYTHONPATH=src python bench/judge_driver.py --concurrency 128 256 512 --seconds 70
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SERVER = """
import asyncio, gc, json, os, signal, sys, time
sys.path.insert(0, sys.argv[4])
from judge_driver import LoopWatch, planted
from rcp_data.demo.simulated_judge import ServerThread, SimulatedJudge
from rcp_data.judging.driver import GC_YOUNG
judge = SimulatedJudge(planted(int(sys.argv[3])), latency=float(sys.argv[1]))
# the server's collector set as the driver sets its own: the planted table out of its sight
gc.collect()
gc.freeze()
gc.set_threshold(GC_YOUNG, *gc.get_threshold()[1:])
watch = LoopWatch()
def dump(*_):
    tmp = sys.argv[5] + ".tmp"
    with open(tmp, "w") as f:
        json.dump(watch.report(), f)
    os.replace(tmp, sys.argv[5])
signal.signal(signal.SIGUSR1, lambda *_: watch.restart())
signal.signal(signal.SIGUSR2, dump)
with ServerThread(judge, port=int(sys.argv[2])) as s:
    asyncio.run_coroutine_threadsafe(watch.run(), s.loop)
    print(s.url, flush=True)
    while True:
        time.sleep(3600)
"""
N_DOCS = 150


def start_servers(latency: float, n_queries: int, replicas: int = 1
                  ) -> tuple[list[subprocess.Popen], list[str]]:
    """``replicas`` SIMULATED server processes (started at once), and their URLs."""
    import socket

    src = str(Path(__file__).resolve().parent.parent / "src")
    procs = []
    for _ in range(replicas):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        procs.append(subprocess.Popen(
            [sys.executable, "-c", SERVER, str(latency), str(port), str(n_queries),
             str(Path(__file__).resolve().parent), _lag_file(port)],
            stdout=subprocess.PIPE, text=True, env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}))
    urls = []
    for proc in procs:
        url = proc.stdout.readline().strip()
        urllib.request.urlopen(f"{url}/models", timeout=60).read()
        urls.append(url)
    return procs, urls


def _lag_file(port: int) -> str:
    return str(Path(tempfile.gettempdir()) / f"rcp-judge-bench-lag-{port}.json")


def server_lag(procs: list[subprocess.Popen]) -> dict:
    """The servers' loop lag and GC pauses since they were told to start (the worst one)."""
    import os
    import signal

    out = {}
    for proc in procs:
        path = Path(_lag_file(int(proc.args[4])))
        path.unlink(missing_ok=True)
        os.kill(proc.pid, signal.SIGUSR2)
        for _ in range(200):
            if path.exists():
                break
            time.sleep(0.01)
        r = json.loads(path.read_text())
        path.unlink()
        if not out or r["loop_lag_ms_mean"] > out["loop_lag_ms_mean"]:
            out = r
    return out


def _text(d: str) -> str:
    return f"{d}: SIMULATED page text " + "lorem ipsum " * 40


def make_pool(n_queries: int, n_docs: int = N_DOCS):
    from rcp_data.judging.pool_input import JudgePool, PoolQuery

    texts = {"g": {}}
    queries = []
    for i in range(n_queries):
        docs = tuple(f"q{i}d{j}" for j in range(n_docs))
        for d in docs:
            texts["g"][d] = _text(d)
        queries.append(PoolQuery("bench", f"q{i}", f"SIMULATED question {i}", docs, "g"))
    return JudgePool(queries, texts, "SIMULATED")


def planted(n_queries: int, n_docs: int = N_DOCS) -> dict[tuple[str, str], float]:
    """The SIMULATED relevance of :func:`make_pool`'s passages (query text, passage key)."""
    import numpy as np

    from rcp_data.demo.simulated_judge import passage_key

    rel = np.random.default_rng(0).normal(0.0, 1.5, (n_queries, n_docs)).tolist()
    return {(f"SIMULATED question {i}", passage_key(_text(f"q{i}d{j}"))): rel[i][j]
            for i in range(n_queries) for j in range(n_docs)}


class LoopWatch:
    """The event loop's lag (how late a 10 ms timer fires) and the collector's pauses (CPU
    seconds of this process's GC per generation), from :meth:`start` on."""

    TICK = 0.01

    def __init__(self) -> None:
        self._on = False
        self._t = 0.0
        self._reset()

    def _reset(self) -> None:
        self.lags: list[float] = []
        self.gc_cpu = [0.0, 0.0, 0.0]
        self.gc_max = [0.0, 0.0, 0.0]
        self.gc_n = [0, 0, 0]
        self._since = time.monotonic()

    def _gc(self, phase: str, info: dict) -> None:
        if phase == "start":
            self._t = time.thread_time()
        elif self._on:
            g, d = info["generation"], time.thread_time() - self._t
            self.gc_cpu[g] += d
            self.gc_n[g] += 1
            self.gc_max[g] = max(self.gc_max[g], d)

    async def run(self) -> None:
        gc.callbacks.append(self._gc)
        try:
            while True:
                t = time.perf_counter()
                await asyncio.sleep(self.TICK)
                if self._on:
                    self.lags.append(time.perf_counter() - t - self.TICK)
        finally:
            gc.callbacks.remove(self._gc)

    def start(self) -> None:
        if not self._on:
            self.restart()

    def restart(self) -> None:
        self._reset()
        self._on = True

    def report(self, seconds: float | None = None) -> dict:
        seconds = time.monotonic() - self._since if seconds is None else seconds
        lags = sorted(self.lags) or [float("nan")]
        return {"loop_lag_ms_mean": round(1000 * sum(lags) / len(lags), 2),
                "loop_lag_ms_p99": round(1000 * lags[int(0.99 * (len(lags) - 1))], 2),
                "gc_cpu_share": round(sum(self.gc_cpu) / max(seconds, 1e-9), 4),
                "gc_cpu_s": round(sum(self.gc_cpu), 3),
                "gc_pauses": {f"gen{g}": [self.gc_n[g], round(1000 * self.gc_max[g], 1)]
                              for g in range(3)}}


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(urls: list[str], pool, concurrency: int, seconds: float, warmup: float,
                  servers: list[subprocess.Popen] = ()) -> dict:
    import os
    import signal

    from rcp_data.demo.simulated_judge import MODEL
    from rcp_data.judging.budget import TokenCounter
    from rcp_data.judging.client import ChatClient, ClientSettings
    from rcp_data.judging.driver import Judging, RunSettings, judge_identity
    from rcp_data.judging.prompts import load_prompts
    from rcp_data.judging.settings import make_schedule
    from rcp_data.judging.store import Store, read_records

    server_pids = [p.pid for p in servers]
    prompts, schedule = load_prompts(), make_schedule("stage-b-only")
    run = RunSettings(concurrency=concurrency, show_progress=False, context_tokens=32768)
    client = ChatClient(ClientSettings(model=MODEL, urls=list(urls), timeout=60))
    with tempfile.TemporaryDirectory() as tmp:
        identity = judge_identity(MODEL, "", prompts, schedule, pool, run, 1.0)
        async with client:
            await client.check_models()
            with Store(Path(tmp) / "store", identity) as store:
                judging = Judging(pool, prompts, schedule, store, client, TokenCounter(None),
                                  run)
                watch = LoopWatch()
                watching = asyncio.ensure_future(watch.run())
                cpu0 = time.process_time()
                srv0 = sum(proc_cpu(p) for p in server_pids)
                task = asyncio.ensure_future(judging.run_all())
                t0 = time.monotonic()
                samples, starved = [], 0
                while time.monotonic() - t0 < seconds and not task.done():
                    await asyncio.sleep(0.05)
                    now = time.monotonic() - t0
                    in_flight = concurrency - judging._sem._value
                    samples.append((now, judging.summary.windows_new))
                    if now > warmup:
                        if not watch._on:
                            for pid in server_pids:
                                os.kill(pid, signal.SIGUSR1)
                        watch.start()
                        starved += in_flight < concurrency
                cpu = time.process_time() - cpu0
                srv = (sum(proc_cpu(p) for p in server_pids) - srv0) if server_pids else float(
                    "nan")
                watching.cancel()
                lag = server_lag(list(servers)) if servers else {}
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                took = [r["seconds"] for r in read_records(store.root)]
    steady = [(t, n) for t, n in samples if t > warmup]
    rate = (steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0]) if len(
        steady) > 1 else float("nan")
    done = samples[-1][1] if samples else 0
    return {"concurrency": concurrency, "calls": done, "calls_per_s": round(rate, 1),
            "starved_share": round(starved / max(len(steady), 1), 4),
            "cpu_ms_per_call": round(1000 * cpu / max(done, 1), 3),
            "server_cpu_ms_per_call": round(1000 * srv / max(done, 1), 3),
            # Little's law: the mean time a call took as the driver saw it (on a loaded machine
            # more than the server's fixed latency), and the rate that keeps every slot busy
            "mean_call_s": round(sum(took) / max(len(took), 1), 4),
            "busy_slot_share": round(rate * (sum(took) / max(len(took), 1)) / concurrency, 3),
            **(w := watch.report(steady[-1][0] - steady[0][0] if len(steady) > 1 else 0.0)),
            "gc_ms_per_call": round(1000 * w["gc_cpu_s"] / max(
                steady[-1][1] - steady[0][1] if len(steady) > 1 else 0, 1), 3),
            "server": lag}


def _stop(procs: list[subprocess.Popen]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.wait(10)


def main() -> int:
    import os

    from rcp_data.judging.driver import run_async

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, nargs="+", default=[128, 256, 512])
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=70.0)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--instant-seconds", type=float, default=20.0)
    p.add_argument("--replicas", type=int, default=1, help="SIMULATED server processes")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    pool = make_pool(args.queries)
    results = {"latency_s": args.latency, "queries": args.queries, "replicas": args.replicas,
               "runs": []}
    procs, urls = start_servers(args.latency, args.queries, args.replicas)
    try:
        for c in args.concurrency:
            r = run_async(one_run(urls, pool, c, args.seconds, args.warmup, procs))
            r["ideal_calls_per_s"] = c / args.latency
            r["share_of_ideal"] = round(r["calls_per_s"] / r["ideal_calls_per_s"], 3)
            r["load_1min"] = round(os.getloadavg()[0], 2)
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    finally:
        _stop(procs)
    if args.instant_seconds > 0:
        procs, urls = start_servers(0.0, args.queries, args.replicas)
        try:
            r = run_async(one_run(urls, pool, 64, args.instant_seconds, 2.0, procs))
            r["load_1min"] = round(os.getloadavg()[0], 2)
            results["instant"] = r
            print(json.dumps({"instant": r}), flush=True)
        finally:
            _stop(procs)
    results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps({"peak_rss_mib": results["peak_rss_mib"]}))
    for r in results["runs"]:
        target = " (target >= 0.90)" if r["concurrency"] == 128 else ""
        print(f"{r['concurrency']} in flight: {r['calls_per_s']} calls/s = "
              f"{r['share_of_ideal']:.3f} of ideal {r['ideal_calls_per_s']:g}{target}; starved "
              f"{r['starved_share']:.1%} (target < 5%); mean call {1000 * r['mean_call_s']:.1f} "
              f"ms; loop lag driver {r['loop_lag_ms_mean']} ms, server "
              f"{r['server'].get('loop_lag_ms_mean')} ms; CPU/call driver {r['cpu_ms_per_call']} "
              f"ms, server {r['server_cpu_ms_per_call']} ms; load {r['load_1min']}")
    if "instant" in results:
        r = results["instant"]
        print(f"instant server: {r['calls_per_s']} calls/s; driver {r['cpu_ms_per_call']} ms, "
              f"server {r['server_cpu_ms_per_call']} ms CPU/call")
    print(f"peak RSS {results['peak_rss_mib']} MiB (target <= 2048)")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
