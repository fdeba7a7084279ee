"""No secret in what a judge run prints or writes: the userinfo of ``--endpoint`` and of
``HF_ENDPOINT``, with ``-v`` (debug logs, httpx's request log, a traceback)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import rcp_data
from rcp_data.core.redact import redact, strip_userinfo
from rcp_data.demo.simulated_judge import MODEL, ServerThread, SimulatedJudge
from rcp_data.judging.store import read_records

SRC = str(Path(rcp_data.__file__).resolve().parents[1])
SECRETS = ("s3cret", "hubsecret")


def _cli(args, tmp_path):
    env = {**os.environ, "PYTHONPATH": SRC, "HF_ENDPOINT": "http://u:hubsecret@127.0.0.1:9",
           "RCP_DATA_CACHE": str(tmp_path / "cache")}
    return subprocess.run([sys.executable, "-m", "rcp_data", "-v", *args], env=env,
                          capture_output=True, text=True, timeout=300)


def test_redact_and_strip_userinfo():
    assert redact("GET http://user:s3cret@h:8/v1 and https://t@x/y") == (
        "GET http://***@h:8/v1 and https://***@x/y")
    assert redact("Authorization: Bearer abcdefgh12345") == "Authorization: Bearer [redacted]"
    assert strip_userinfo("http://user:s3cret@127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"
    assert strip_userinfo("http://[::1]:80/v1") == "http://[::1]:80/v1"


def test_no_secret_in_logs_store_outputs_or_traceback(demo_release_v1, tmp_path):
    base = ["judge", "run", "--pool", str(demo_release_v1), "--store", str(tmp_path / "store"),
            "--out", str(tmp_path / "out"), "--model", MODEL, "--limit-queries", "1",
            "--no-progress", "--context-tokens", "4096", "--set", "a.random_placements=1",
            "--set", "a.stratified_placements=0", "--set", "a.adaptive_placements=0",
            "--set", "b.placements=1"]
    judge = SimulatedJudge(faults=0.3, hang_seconds=0.2)
    with ServerThread(judge) as srv:
        url = srv.url.replace("http://", "http://user:s3cret@")
        ok = _cli([*base, "--endpoint", url], tmp_path)
    assert ok.returncode == 0, ok.stderr[-2000:]
    assert judge.stats["faults"] >= 1 and " failed: " in ok.stderr
    failing = SimulatedJudge(fail_after=1, fail_status=500, fail_message="SIMULATED: gone")
    with ServerThread(failing) as srv:
        url = srv.url.replace("http://", "http://user:s3cret@")
        bad = _cli([*base, "--store", str(tmp_path / "store2"), "--endpoint", url,
                    "--outage-wait", "1"], tmp_path)
    assert bad.returncode == 1 and "Traceback" in bad.stderr
    printed = ok.stdout + ok.stderr + bad.stdout + bad.stderr
    assert "127.0.0.1" in printed
    for secret in SECRETS:
        assert secret not in printed
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "windows.jsonl" for p in files)
    for p in files:
        data = p.read_bytes()
        for secret in SECRETS:
            assert secret.encode() not in data, p
    replicas = {r["replica"] for r in read_records(tmp_path / "store")}
    assert replicas and all(r.startswith("http://127.0.0.1:") for r in replicas if r)
