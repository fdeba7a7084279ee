"""An OpenAI-compatible chat client over replicas (aiohttp: measured here, it sustains the
rates a judge run needs where httpx's async client did not; docs/concepts).

Each request goes to the live replica with the fewest requests in flight. A connection error,
a timeout, HTTP 408, 429 or 5xx is retried with exponential backoff (``Retry-After`` honoured)
and sets the replica aside for a while (5 s doubling to 60 s while it keeps failing); when every
replica is set aside a request waits, at most ``outage_wait`` seconds from its first failure.
HTTP 401/403 (credentials) and 404 (no such model or route) stop the run; any other 4xx is this
request's refusal. The API key is read from an environment variable and only ever sent in the
``Authorization`` header.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import random
import time
from dataclasses import dataclass, field

from rcp_data.core.errors import (  # EndpointError, OutageError: kept importable here
    EndpointError,
    OutageError,
    UsageError,
)

log = logging.getLogger(__name__)

try:  # orjson (the judge extra) encodes a window's prompt several times faster than json
    import orjson

    _dumps, _loads = orjson.dumps, orjson.loads
except ImportError:  # pragma: no cover - json is the fallback
    def _dumps(obj: object) -> bytes:
        return json.dumps(obj).encode("utf-8")

    _loads = json.loads

RETRY_STATUS = {408, 429, 500, 502, 503, 504}


@dataclass
class ChatResult:
    text: str | None
    finish_reason: str | None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # "refusal" | "server-error" when no answer came
    detail: str = ""
    replica: str = ""
    tries: int = 1


@dataclass
class _Replica:
    url: str
    in_flight: int = 0
    parked_until: float = 0.0
    backoff: float = 5.0
    failures: int = 0
    calls: int = 0


@dataclass
class ClientSettings:
    model: str
    urls: list[str]
    api_key_env: str | None = None
    timeout: float = 600.0
    retries: int = 6
    outage_wait: float = 600.0
    temperature: float | None = 1.0
    max_tokens: int = 1024
    park_min: float = 5.0
    park_max: float = 60.0
    backoff_base: float = 0.5
    backoff_cap: float = 30.0
    extra: dict = field(default_factory=dict)


def _base(url: str) -> str:
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


class ChatClient:
    def __init__(self, s: ClientSettings) -> None:
        self.s = s
        self.replicas = [_Replica(_base(u)) for u in s.urls]
        self._session = None
        self._headers = {"Content-Type": "application/json"}
        if s.api_key_env:
            key = os.environ.get(s.api_key_env)
            if not key:
                raise UsageError(f"the environment variable {s.api_key_env} (--api-key-env) is "
                                 "not set")
            self._headers["Authorization"] = f"Bearer {key}"
        self.served: dict[str, dict] = {}

    async def __aenter__(self) -> ChatClient:
        import aiohttp

        self._aiohttp = aiohttp
        self._timeout = aiohttp.ClientTimeout(total=self.s.timeout)
        # no cookie jar: an OpenAI-compatible API sets none, and a jar costs every call a
        # lookup and every answer a parse
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
            headers=self._headers, json_serialize=json.dumps,
            cookie_jar=aiohttp.DummyCookieJar())
        from yarl import URL

        self._chat_urls = {r.url: URL(f"{r.url}/chat/completions") for r in self.replicas}
        return self

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            await self._session.close()

    async def check_models(self) -> None:
        """Every replica answers ``GET /models`` and serves the judge's model."""
        aiohttp = self._aiohttp
        for r in self.replicas:
            try:
                async with self._session.get(f"{r.url}/models", timeout=aiohttp.ClientTimeout(
                        total=30)) as resp:
                    if resp.status in (401, 403):
                        raise EndpointError(f"{r.url}: the endpoint refused the credentials "
                                            f"(HTTP {resp.status}); set --api-key-env")
                    body = await resp.json(content_type=None)
            except EndpointError:  # a ConnectionError too: not "cannot reach"
                raise
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                raise EndpointError(f"cannot reach the endpoint {r.url} "
                                    f"({type(exc).__name__}: {exc or 'no answer'})") from exc
            ids = [m.get("id") for m in (body or {}).get("data", []) if isinstance(m, dict)]
            if self.s.model not in ids:
                raise EndpointError(f"the endpoint {r.url} does not serve the model "
                                    f"{self.s.model!r} (it serves: {', '.join(map(str, ids)) or 'none'})")
            self.served[r.url] = next(m for m in body["data"] if m.get("id") == self.s.model)

    def _pick(self) -> _Replica | None:
        now = time.monotonic()
        live = [r for r in self.replicas if r.parked_until <= now]
        if not live:
            return None
        return min(live, key=lambda r: (r.in_flight, r.calls))

    def _park(self, r: _Replica, retry_after: float | None) -> None:
        r.failures += 1
        wait = max(r.backoff, retry_after or 0.0)
        r.parked_until = time.monotonic() + wait
        r.backoff = min(r.backoff * 2, self.s.park_max)
        log.info("replica %s set aside for %.1f s", r.url, wait)

    async def chat(self, prompt: str, *, response_format: dict | None, seed: int | None
                   ) -> ChatResult:
        aiohttp = self._aiohttp
        body = {"model": self.s.model, "messages": [{"role": "user", "content": prompt}],
                "max_tokens": self.s.max_tokens, **self.s.extra}
        if self.s.temperature is not None:
            body["temperature"] = self.s.temperature
        if seed is not None:
            body["seed"] = seed
        if response_format is not None:
            body["response_format"] = response_format
        payload = _dumps(body)  # once per call, not per retry
        first_failure = None
        last = "no answer"
        for attempt in range(self.s.retries + 1):
            r = self._pick()
            while r is None:
                now = time.monotonic()
                first_failure = first_failure or now
                if now - first_failure > self.s.outage_wait:
                    raise OutageError(f"every replica has been down for more than "
                                      f"{self.s.outage_wait:g} s (last: {last})")
                soonest = min(x.parked_until for x in self.replicas)
                await asyncio.sleep(max(0.05, min(soonest - now, 5.0)))
                r = self._pick()
            r.in_flight += 1
            r.calls += 1
            retry_after = None
            try:
                async with self._session.post(
                        self._chat_urls[r.url], data=payload,
                        timeout=self._timeout) as resp:
                    status = resp.status
                    if status == 200:
                        data = _loads(await resp.read())
                        if not isinstance(data, dict):
                            raise ValueError("the answer is not a JSON object")
                        r.backoff, r.failures = self.s.park_min, 0
                        return _result(data, r.url, attempt + 1)
                    text = (await resp.text())[:300]
                    retry_after = _retry_after(resp.headers.get("Retry-After"))
            except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as exc:
                status, text = None, f"{type(exc).__name__}: {exc}"
            finally:
                r.in_flight -= 1
            last = f"HTTP {status}: {text}" if status else text
            if status in (401, 403):
                raise EndpointError(f"{r.url}: the endpoint refused the credentials (HTTP "
                                    f"{status}); set --api-key-env")
            if status == 404:
                raise EndpointError(f"{r.url}: no such model or route (HTTP 404: {text})")
            if status is not None and status not in RETRY_STATUS:
                return ChatResult(None, None, error="refusal", detail=last, replica=r.url,
                                  tries=attempt + 1)
            self._park(r, retry_after)
            first_failure = first_failure or time.monotonic()
            delay = min(self.s.backoff_cap, self.s.backoff_base * 2 ** attempt)
            await asyncio.sleep(max(retry_after or 0.0, delay * (0.5 + random.random() / 2)))
        return ChatResult(None, None, error="server-error", detail=last,
                          tries=self.s.retries + 1)


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def _tokens(usage: object, name: str) -> int:
    v = usage.get(name) if isinstance(usage, dict) else None
    return v if type(v) is int and 0 <= v < 2 ** 53 else 0


def _content(value: object) -> str | None:
    """A message's text: a string, or the text parts of a list of content parts joined
    (as OpenAI-style servers send them); None for any other shape."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [p.get("text") if isinstance(p, dict) else p for p in value]
        if parts and all(isinstance(p, str) for p in parts):
            return "".join(parts)
    return None


def _result(data: dict, url: str, tries: int) -> ChatResult:
    """The answer of a 200 response; a body of another shape is an answer that cannot be
    read (text None, ``detail`` saying why), never an exception."""
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    usage = data.get("usage")
    p, c = _tokens(usage, "prompt_tokens"), _tokens(usage, "completion_tokens")
    if not isinstance(choice, dict):
        return ChatResult(None, None, p, c, detail="the answer has no choice object",
                          replica=url, tries=tries)
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    msg = choice.get("message")
    if not isinstance(msg, dict):
        return ChatResult(None, finish, p, c, detail="the answer's message is not an object",
                          replica=url, tries=tries)
    if msg.get("refusal"):
        return ChatResult(None, finish, p, c, error="refusal",
                          detail=str(msg["refusal"])[:300], replica=url, tries=tries)
    text = _content(msg.get("content"))
    detail = "" if text is not None or msg.get("content") is None else (
        f"the message content is a {type(msg.get('content')).__name__}, not text")
    return ChatResult(text, finish, p, c, detail=detail, replica=url, tries=tries)
