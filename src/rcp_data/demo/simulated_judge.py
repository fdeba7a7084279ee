"""A SIMULATED judge behind the OpenAI chat API, for tests and benchmarks of ``rcp-data judge``.

Nothing it answers comes from a language model. It reads the passages of the project's prompts
and answers from a planted relevance per (query, passage): Stage A scores
``clip(round(rel + N(0, noise), 1), -5, 5)``, Stage B passes with ``sigmoid(gamma_c (rel -
beta_c))``. A set share of answers is malformed (prose, a passage left out, a score out of
range), and a set share of requests fails (429 with Retry-After, 500, a reset connection, a
hang). A :class:`FaultPlan` makes every request for a chosen share of windows (by prompt) fail
in transport, or answer a 200 whose body has another shape, until it is switched off; the
server counts the requests per prompt (``asked``). The answer to a request depends only on
its ``seed`` and prompt, so a run is repeatable. It names itself SIMULATED in its model id and in every answer.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

MODEL = "rcp-data/SIMULATED-judge"
GAMMA = (1.4, 1.1, 0.9, 0.8, 0.8)
BETA = (-1.6, -0.6, 0.2, 1.0, 1.9)
_NUMBER = re.compile(r"\[(\d+)\] ")  # a passage's line starts "[k] "
LLAMA_CPP_REFUSAL = ("[{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
                     "'msg': \"Input should be 'text' or 'json_object'\", "
                     "'input': 'json_schema', 'ctx': {'expected': \"'text' or 'json_object'\"}}]")
_QUERY = re.compile(r"^Query: (.*)$", re.MULTILINE)
_CRITERION = re.compile(r"^(C\d+) \(", re.MULTILINE)

try:  # orjson (the judge extra): the server's request and answer JSON, faster
    import orjson

    _loads, _dumps = orjson.loads, orjson.dumps
except ImportError:  # pragma: no cover - json is the fallback
    _loads = json.loads

    def _dumps(obj: object) -> bytes:
        return json.dumps(obj).encode("utf-8")


def passage_key(text: str) -> str:
    """How the server finds a passage's planted relevance: its first line."""
    return text.strip().split("\n", 1)[0][:200]


def _passages(body: str) -> list[str]:
    """The passages of a prompt's body: the text after each line that starts "[k] " up to the
    next such line (what splitting on ``^\\[(\\d+)\\] `` in multiline mode gives, found with
    ``str.find`` instead of a regular expression tried at every character)."""
    starts = []  # (where the "[k] " begins, where its text begins)
    at = 0
    while at >= 0:
        m = _NUMBER.match(body, at)
        if m:
            starts.append((at, m.end()))
        at = body.find("\n[", at)
        if at >= 0:
            at += 1
    ends = [a for a, _ in starts[1:]] + [len(body)] if starts else []
    return [body[b:e] for (_, b), e in zip(starts, ends, strict=True)]


FAULT_KINDS = ("500", "reset", "truncated")
# 200 answers of other shapes (what some servers send): each is one invalid window
SHAPES: dict[str, object] = {
    "choices-string": {"choices": "no"},
    "choices-null": {"choices": [None]},
    "message-string": {"choices": [{"message": "hello"}]},
    "usage-list": {"choices": [{"message": {"content": "no json"}}], "usage": [1, 2]},
    "content-int": {"choices": [{"message": {"content": 7}}]},
    "content-parts": {"choices": [{"message": {"content": [{"type": "text", "text": "{"},
                                                          {"type": "text", "text": "}"}]}}]},
}


def _prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


@dataclass
class FaultPlan:
    """Every request for a window (by its prompt's hash) whose hash falls in ``share`` fails
    the same way (``kinds`` in turn by hash: HTTP 500, a reset connection, a truncated body;
    or a name of :data:`SHAPES`, a 200 of that shape) while ``active``."""

    share: float = 0.1
    kinds: tuple[str, ...] = FAULT_KINDS
    active: bool = True
    hits: int = 0

    def kind(self, prompt: str) -> str | None:
        if not self.active or not self.kinds:
            return None
        h = int(_prompt_hash(prompt)[:12], 16)
        if (h % 10_000) / 10_000 >= self.share:
            return None
        return self.kinds[(h // 10_000) % len(self.kinds)]


@dataclass
class SimulatedJudge:
    relevance: dict[tuple[str, str], float] = field(default_factory=dict)  # (query, key)
    noise: float = 0.6
    malformed: float = 0.0  # share of answers that fail validation
    faults: float = 0.0  # share of requests that fail (429, 500, reset, hang in turn)
    latency: float = 0.0
    hang_seconds: float = 5.0
    # as llama.cpp's server does: a json_schema response format answered with this HTTP
    # status (400 or 500) and its message; 0 takes it
    refuse_json_schema: int = 0
    fail_after: int = 0  # after this many requests, ...
    fail_status: int = 0  # ... every chat request answered with this status (0: none) ...
    fail_message: str = "SIMULATED failure"  # ... and this error message
    retry_after: str | None = None  # ... and this Retry-After header
    gamma: tuple = GAMMA
    beta: tuple = BETA
    stats: dict = field(default_factory=lambda: {"requests": 0, "faults": 0, "malformed": 0})
    plan: FaultPlan | None = None
    asked: collections.Counter = field(default_factory=collections.Counter)  # prompt hash
    model: str = MODEL  # the id it serves (a path, as llama.cpp's server gives, for tests)
    _drawn: dict = field(default_factory=dict, repr=False)
    _heads: dict = field(default_factory=dict, repr=False)

    def planted(self, query: str, key: str) -> float:
        """The planted relevance; a passage not given one gets a fixed value drawn from its
        hash (so any pool, e.g. the demo's, can be judged)."""
        if (query, key) in self.relevance:
            return self.relevance[(query, key)]
        if (query, key) not in self._drawn:  # drawn once: the same value every time
            h = int(hashlib.sha256(f"{query}\x1f{key}".encode()).hexdigest()[:12], 16)
            self._drawn[(query, key)] = float(np.random.default_rng(h).normal(0.0, 1.5))
        return self._drawn[(query, key)]

    def _head(self, head: str) -> tuple:
        """What a prompt's head says (query, stage, criteria), read once per head."""
        got = self._heads.get(head)
        if got is None:
            query = _QUERY.search(head).group(1).strip()
            stage_b = "yes/no questions" in head
            ids = _CRITERION.findall(head) if stage_b else []
            g = np.resize(np.asarray(self.gamma), len(ids))
            b = np.resize(np.asarray(self.beta), len(ids))
            # the JSON text of one criterion's answer, false and true
            words = [(f'"{c}": false', f'"{c}": true') for c in ids]
            got = self._heads[head] = (query, stage_b, ids, g, b, words)
        return got

    def answer(self, prompt: str, seed: int) -> tuple[str, str]:
        """The answer text and finish_reason of one request."""
        head, body = prompt.split("Passages:\n", 1)
        query, stage_b, ids, g, b, words = self._head(head)
        body = body.rsplit("\n\nAnswer with", 1)[0]
        passages = _passages(body)
        rel = np.array([self.planted(query, passage_key(p)) for p in passages])
        rng = np.random.default_rng([seed, int(hashlib.sha256(prompt.encode()).hexdigest()[:8],
                                               16)])
        bad = rng.random() < self.malformed
        if bad:
            self.stats["malformed"] += 1
            kind = int(rng.integers(0, 3))
            if kind == 0:
                return "SIMULATED: I think passage 1 is the best one.", "stop"
            if kind == 1 or stage_b:
                passages = passages[:-1]
                rel = rel[:-1]
        if stage_b:
            p = expit(g * (rel[:, None] - b[None, :]))
            v = (rng.random(p.shape) < p).tolist()
            # the text json.dumps gives {"1": {"C1": true, ...}, ...}, written directly
            return "{" + ", ".join(
                f'"{i + 1}": {{' + ", ".join([w[x] for w, x in zip(words, row, strict=True)]) + "}"
                for i, row in enumerate(v)) + "}", "stop"
        s = np.clip(np.round(rel + rng.normal(0, self.noise, len(rel)), 1), -5, 5)
        if bad and kind == 2:
            s[0] = 9.0
        return json.dumps({str(i + 1): x for i, x in enumerate(s.tolist())}), "stop"

    # -- the HTTP server -------------------------------------------------------------------
    def app(self):
        from aiohttp import web

        counter = {"n": 0}

        async def models(_request):
            return web.json_response({"object": "list", "data": [
                {"id": self.model, "object": "model", "owned_by": "rcp-data SIMULATED",
                 "max_model_len": 32768}]})

        async def chat(request):
            self.stats["requests"] += 1
            data = _loads(await request.read())
            counter["n"] += 1
            if self.fail_status and counter["n"] > self.fail_after:
                headers = {"Retry-After": self.retry_after} if self.retry_after else None
                return web.json_response({"error": {"message": self.fail_message,
                                                    "code": self.fail_status}},
                                         status=self.fail_status, headers=headers)
            fmt = data.get("response_format") or {}
            if self.refuse_json_schema and fmt.get("type") == "json_schema":
                return web.json_response({"error": {
                    "message": LLAMA_CPP_REFUSAL, "code": self.refuse_json_schema}},
                    status=self.refuse_json_schema)
            if self.faults and (counter["n"] * 0.6180339887) % 1.0 < self.faults:
                self.stats["faults"] += 1
                kind = counter["n"] % 4
                if kind == 0:
                    return web.json_response({"error": "SIMULATED rate limit"}, status=429,
                                             headers={"Retry-After": "0.05"})
                if kind == 1:
                    return web.json_response({"error": "SIMULATED failure"}, status=500)
                if kind == 2:
                    request.transport.close()
                    return web.Response(status=500)
                await asyncio.sleep(self.hang_seconds)
            if data.get("model") != self.model:
                return web.json_response({"error": f"model {data.get('model')!r} not found"},
                                         status=404)
            if self.latency:
                await asyncio.sleep(self.latency)
            prompt = data["messages"][-1]["content"]
            if "Passages:\n" not in prompt:  # a client's probe call: not a window asked
                text, finish = '{"ok": true}', "stop"
            else:
                self.asked[_prompt_hash(prompt)] += 1
                planned = self.plan.kind(prompt) if self.plan is not None else None
                if planned is not None:
                    return self._planned_fault(request, planned, web)
                text, finish = self.answer(prompt, int(data.get("seed") or 0))
            return web.Response(content_type="application/json", body=_dumps({
                "id": "SIMULATED", "object": "chat.completion", "model": self.model,
                "system_fingerprint": "SIMULATED",
                "choices": [{"index": 0, "finish_reason": finish,
                             "message": {"role": "assistant", "content": text}}],
                "usage": {"prompt_tokens": len(prompt) // 4,
                          "completion_tokens": len(text) // 4}}))

        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_get("/v1/models", models)
        app.router.add_post("/v1/chat/completions", chat)
        return app


    def _planned_fault(self, request, kind: str, web):
        self.plan.hits += 1
        if kind == "500":
            return web.json_response({"error": "SIMULATED failure"}, status=500)
        if kind == "reset":
            request.transport.close()
            return web.Response(status=500)
        if kind == "truncated":
            return web.Response(content_type="application/json",
                                body=b'{"id": "SIMULATED", "choices": [{"index": 0, "mess')
        return web.Response(content_type="application/json", body=_dumps(SHAPES[kind]))


class ServerThread:
    """The SIMULATED server on 127.0.0.1 in a background thread (``url`` once started)."""

    def __init__(self, judge: SimulatedJudge, port: int = 0) -> None:
        self.judge, self.port = judge, port
        self.url = ""
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._main, daemon=True)
        self._stop: Callable[[], None] | None = None

    def _main(self) -> None:
        from aiohttp import web

        try:  # uvloop (the judge extra): a cheaper event loop per request
            import uvloop

            loop = uvloop.new_event_loop()
        except ImportError:
            loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        runner = web.AppRunner(self.judge.app(), access_log=None)
        loop.run_until_complete(runner.setup())
        site = web.TCPSite(runner, "127.0.0.1", self.port, backlog=2048)
        loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}/v1"
        self.loop = loop  # for a caller's own coroutines (a benchmark's lag probe)
        stop = asyncio.Event()
        self._stop = lambda: loop.call_soon_threadsafe(stop.set)
        self._ready.set()
        loop.run_until_complete(stop.wait())
        loop.run_until_complete(runner.cleanup())
        loop.close()

    def __enter__(self) -> ServerThread:
        self._thread.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc) -> None:
        if self._stop:
            self._stop()
        self._thread.join(10)


def main(argv: list[str] | None = None) -> int:
    """``python -m rcp_data.demo.simulated_judge --port 8000``: serve the SIMULATED judge on
    127.0.0.1 until interrupted (to try ``rcp-data judge run`` or ``release cut`` without a
    language model)."""
    import argparse
    import sys
    import time

    parser = argparse.ArgumentParser(prog="python -m rcp_data.demo.simulated_judge",
                                     description="Serve the SIMULATED judge (no language "
                                     "model) behind the OpenAI chat API on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=8000, help="the port (default 8000)")
    args = parser.parse_args(argv)
    with ServerThread(SimulatedJudge(), port=args.port) as server:
        if not server.url:
            print(f"could not serve on port {args.port}", file=sys.stderr)
            return 2
        print(f"SIMULATED judge {MODEL} at {server.url}", file=sys.stderr, flush=True)
        try:
            while server._thread.is_alive():
                time.sleep(0.5)
        except KeyboardInterrupt:
            return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
