"""The commit payload reader: long inline contents are decoded from disk a piece at a time.

The piece size is shrunk to a few bytes so every boundary case (an escape, a UTF-8 sequence, a
surrogate pair or a base64 quantum cut in two) occurs; the decoded bytes must equal the input."""

from __future__ import annotations

import base64
import io
import json
import random
import urllib.request
from email.message import Message
from pathlib import Path

import pytest
from huggingface_hub import HfApi, hf_hub_download
from support.hub_fixture import HUB_TOKEN

from rcp_data.hub import payload
from rcp_data.hub.errors import HubError
from rcp_data.hub.limits import Body
from rcp_data.hub.server import LocalHub

_ALPHABET = 'ab"\\/\n\t\x01\x1fé€😀中\u2028 {}[],:'


def _body(data: bytes) -> Body:
    headers = Message()
    headers["Content-Length"] = str(len(data))
    return Body(io.BytesIO(data), headers, limit=1 << 30)


def _ndjson(*items: object, ensure_ascii: bool = True) -> bytes:
    return b"".join(json.dumps(i, ensure_ascii=ensure_ascii).encode() + b"\n" for i in items)


@pytest.fixture
def tiny_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payload, "CHUNK", 7)
    monkeypatch.setattr(payload, "SMALL_LINE", 0)  # every line through the streaming reader
    monkeypatch.setattr(payload, "LONG_STRING", 5)  # every string over 5 bytes kept as a span


@pytest.mark.parametrize("seed", range(6))
def test_contents_survive_every_cut(tiny_pieces: None, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    expected, lines = {}, [{"key": "header", "value": {"summary": "s", "description": "d"}}]
    for i in range(8):
        path = f"dir {i}/f\u00e9-{i}.txt"
        if i % 2:
            data = rng.randbytes(rng.randrange(0, 200))
            value = {"content": base64.b64encode(data).decode(), "path": path,
                     "encoding": "base64"}
        else:
            text = "".join(rng.choice(_ALPHABET) for _ in range(rng.randrange(0, 120)))
            data = text.encode()
            value = {"path": path, "content": text}  # utf-8 is the default encoding
        expected[path] = data
        lines.append({"value": value, "key": "file"} if i % 3 else {"key": "file", "value": value})
    raw = _ndjson(*lines, ensure_ascii=bool(seed % 2))
    header, ops = payload.read_commit_payload(_body(raw), tmp_path)
    assert header == {"summary": "s", "description": "d"}
    assert {op.path: op.source.read_bytes() for op in ops} == expected
    assert all(op.kind == "file" for op in ops)


def test_other_operations_and_blank_lines(tiny_pieces: None, tmp_path: Path) -> None:
    oid = "a" * 64
    raw = b"\n  \n" + _ndjson(
        {"key": "header", "value": {"summary": "s", "parentCommit": "abc123"}},
        {"key": "lfsFile", "value": {"path": "t.parquet", "algo": "sha256", "oid": oid,
                                     "size": 12}},
        {"key": "deletedFile", "value": {"path": "old.txt"}},
        {"key": "deletedFolder", "value": {"path": "gone/"}},
    ) + b"\r\n"
    header, ops = payload.read_commit_payload(_body(raw), tmp_path)
    assert header["parentCommit"] == "abc123"
    assert [(o.kind, o.path, o.oid, o.size) for o in ops] == [
        ("lfsFile", "t.parquet", oid, 12),
        ("deletedFile", "old.txt", None, None),
        ("deletedFolder", "gone", None, None),
    ]


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (b'{"key": "file", "value": {"path": "a", "content": "abc", "encoding": "base64"}}',
         "invalid base64"),
        (b'{"key": "file", "value": {"path": "a", "content": "QUJD====QUJD", '
         b'"encoding": "base64"}}', "invalid base64"),
        (b'{"key": "file", "value": {"path": "a", "content": "lone \\ud800 surrogate"}}',
         "not valid UTF-8"),
        (b'{"key": "file", "value": {"path": "a", "content": "bad \\x escape"}}',
         "invalid JSON string"),
        (b'{"key": "file", "value": {"path": "a", "content": "raw \x01 control"}}',
         "invalid JSON string"),
        (b'{"key": "file", "value": {"path": "a", "content": "unterminated}}', "unterminated"),
        (b'{"key": "file", "value": {"path": "a", "content": "x"}} trailing', "not a valid"),
        (b"[" * 100 + b"]" * 100, "nested too deeply"),
        (b'{"key": "file", "value": {"path": "a/.git/config", "content": "x"}}', ".git"),
        (b'{"key": "file", "value": {"path": "../up", "content": "x"}}', "Invalid path"),
        (b'{"key": "file", "value": {"path": "a", "content": 5}}', "not a string"),
        (b'{"key": "file", "value": {"path": "a", "content": "x", "encoding": "rot13"}}',
         "unknown encoding"),
        (b'{"key": "lfsFile", "value": {"path": "a", "oid": "xyz"}}', "Invalid LFS object id"),
        (b'{"key": "bogus", "value": {}}', "unsupported key"),
        (b'{"key": "file", "value": "not an object"}', "not a valid"),
        (b'{"key": "file", "value": {"path": "a", "content": tru}}', "not a valid"),
    ],
)
def test_malformed_lines_are_400(tiny_pieces: None, tmp_path: Path, line: bytes,
                                 message: str) -> None:
    raw = _ndjson({"key": "header", "value": {"summary": "s"}}) + line + b"\n"
    with pytest.raises(HubError) as err:
        payload.read_commit_payload(_body(raw), tmp_path)
    assert err.value.status == 400 and message in err.value.message


def test_no_header_is_400(tmp_path: Path) -> None:
    with pytest.raises(HubError, match="no header"):
        payload.read_commit_payload(_body(b'{"key": "deletedFile", "value": {"path": "a"}}\n'),
                                    tmp_path)


def test_large_inline_files_over_http(local_hub: LocalHub, hub_repo: str) -> None:
    """Lines of several MiB take the streaming path at the real piece size."""
    HfApi(endpoint=local_hub.url).create_repo(hub_repo, repo_type="dataset")
    rng = random.Random(7)
    text = "".join(rng.choice(_ALPHABET) for _ in range(1_500_000))
    data = rng.randbytes(3_000_000)
    raw = _ndjson(
        {"key": "header", "value": {"summary": "inline"}},
        {"key": "file", "value": {"content": text, "path": "big.txt"}},
        {"key": "file", "value": {"content": base64.b64encode(data).decode(), "path": "big.dat",
                                  "encoding": "base64"}},
    )
    req = urllib.request.Request(f"{local_hub.url}/api/datasets/{hub_repo}/commit/main",
                                 data=raw, method="POST",
                                 headers={"Authorization": f"Bearer {HUB_TOKEN}"})
    sha = json.loads(urllib.request.urlopen(req, timeout=60).read())["commitOid"]
    kw = {"repo_type": "dataset", "revision": sha, "endpoint": local_hub.url}
    assert Path(hf_hub_download(hub_repo, "big.txt", **kw)).read_bytes() == text.encode()
    assert Path(hf_hub_download(hub_repo, "big.dat", **kw)).read_bytes() == data
