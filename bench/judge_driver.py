"""Benchmark: the judge driver's throughput against the SIMULATED server (not a test).

The SIMULATED server runs in its own process (answers after a fixed latency); the driver
judges a generated pool of ``--queries`` queries of 150 documents with ViDoRe's per-query plan
(preset ``stage-b-only``: 100 Stage B windows of 10) for ``--seconds``, at each
``--concurrency``. Reported per run: calls/s over the steady state (after ``--warmup`` s), the
share of the ideal ``concurrency / latency``, the share of sampled time with fewer calls in
flight than allowed, the driver's and the server's CPU per call (load-independent, unlike the
rate on a shared machine), the mean time a call took as the driver saw it and the share of
call slots busy (Little's law), and the driver's peak RSS. Then the same against an
instant server (latency 0): calls/s and CPU per call.

    PYTHONPATH=src python bench/judge_driver.py --concurrency 128 256 512 --seconds 70
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import resource
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

SERVER = """
import sys, time
from rcp_data.demo.simulated_judge import ServerThread, SimulatedJudge
with ServerThread(SimulatedJudge(latency=float(sys.argv[1])), port=int(sys.argv[2])) as s:
    print(s.url, flush=True)
    while True:
        time.sleep(3600)
"""


def start_server(latency: float) -> tuple[subprocess.Popen, str]:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    src = str(Path(__file__).resolve().parent.parent / "src")
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(latency), str(port)],
                            stdout=subprocess.PIPE, text=True,
                            env={"PYTHONPATH": src, "PATH": "/usr/bin:/bin"})
    url = proc.stdout.readline().strip()
    urllib.request.urlopen(f"{url}/models", timeout=30).read()
    return proc, url


def make_pool(n_queries: int, n_docs: int = 150):
    from rcp_data.stages.judging.pool_input import JudgePool, PoolQuery

    texts = {"g": {}}
    queries = []
    for i in range(n_queries):
        docs = tuple(f"q{i}d{j}" for j in range(n_docs))
        for d in docs:
            texts["g"][d] = f"{d}: SIMULATED page text " + "lorem ipsum " * 40
        queries.append(PoolQuery("bench", f"q{i}", f"SIMULATED question {i}", docs, "g"))
    return JudgePool(queries, texts, "SIMULATED")


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    import os

    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def one_run(url: str, pool, concurrency: int, seconds: float, warmup: float,
                  server_pid: int | None = None) -> dict:
    from rcp_data.demo.simulated_judge import MODEL
    from rcp_data.stages.judging.budget import TokenCounter
    from rcp_data.stages.judging.client import ChatClient, ClientSettings
    from rcp_data.stages.judging.driver import Judging, RunSettings, judge_identity
    from rcp_data.stages.judging.prompts import load_prompts
    from rcp_data.stages.judging.settings import make_schedule
    from rcp_data.stages.judging.store import Store, read_records

    prompts, schedule = load_prompts(), make_schedule("stage-b-only")
    run = RunSettings(concurrency=concurrency, show_progress=False, context_tokens=32768)
    client = ChatClient(ClientSettings(model=MODEL, urls=[url], timeout=60))
    with tempfile.TemporaryDirectory() as tmp:
        identity = judge_identity(MODEL, "", prompts, schedule, pool, run, 1.0)
        async with client:
            await client.check_models()
            with Store(Path(tmp) / "store", identity) as store:
                judging = Judging(pool, prompts, schedule, store, client, TokenCounter(None),
                                  run)
                cpu0 = time.process_time()
                srv0 = proc_cpu(server_pid) if server_pid else 0.0
                task = asyncio.ensure_future(judging.run_all())
                t0 = time.monotonic()
                samples, starved = [], 0
                while time.monotonic() - t0 < seconds and not task.done():
                    await asyncio.sleep(0.05)
                    now = time.monotonic() - t0
                    in_flight = concurrency - judging._sem._value
                    samples.append((now, judging.summary.windows_new))
                    if now > warmup:
                        starved += in_flight < concurrency
                cpu = time.process_time() - cpu0
                srv = (proc_cpu(server_pid) - srv0) if server_pid else float("nan")
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                store.flush()
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
            "busy_slot_share": round(rate * (sum(took) / max(len(took), 1)) / concurrency, 3)}


def main() -> int:
    from rcp_data.stages.judging.driver import run_async

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--concurrency", type=int, nargs="+", default=[128, 256, 512])
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--queries", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=70.0)
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args()
    pool = make_pool(args.queries)
    results = {"latency_s": args.latency, "queries": args.queries, "runs": []}
    proc, url = start_server(args.latency)
    try:
        for c in args.concurrency:
            r = run_async(one_run(url, pool, c, args.seconds, args.warmup, proc.pid))
            r["ideal_calls_per_s"] = c / args.latency
            r["share_of_ideal"] = round(r["calls_per_s"] / r["ideal_calls_per_s"], 3)
            results["runs"].append(r)
            print(json.dumps(r), flush=True)
    finally:
        proc.terminate()
    proc, url = start_server(0.0)
    try:
        r = run_async(one_run(url, pool, 64, min(args.seconds, 20.0), 2.0, proc.pid))
        results["instant"] = r
        print(json.dumps({"instant": r}), flush=True)
    finally:
        proc.terminate()
    results["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps({"peak_rss_mib": results["peak_rss_mib"]}))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
