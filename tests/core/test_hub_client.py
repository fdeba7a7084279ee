"""One Hub client, passed in, and one translation of Hub errors (issue 12, item 5).

The library tests point the environment and ``huggingface_hub``'s default endpoint at a closed
port: only a client that is really passed through reaches the local Hub.
"""

from __future__ import annotations

import socket
from pathlib import Path

import httpx
import pytest
from huggingface_hub import constants
from huggingface_hub.errors import HfHubHTTPError, RepositoryNotFoundError
from support.release_dirs import make_release_dir

from rcp_data.checks.release_check import check_release_dir
from rcp_data.checks.verify import verify
from rcp_data.cli import main
from rcp_data.core.errors import NotFoundError, RefusedError, UsageError
from rcp_data.core.hub_client import (
    REAL_HUB,
    BranchMoved,
    HubClient,
    HubConflict,
    HubNotFound,
    HubUnavailable,
    hub_errors,
    translate,
)
from rcp_data.model.history import release_tag
from rcp_data.release.publish import execute_plan, plan_publish, publish
from rcp_data.release.refs import list_releases
from rcp_data.release.regenerate import regenerate

TAG1 = release_tag(1, "rcp-data/synthetic-judge-7b")
MOVED = r"moved since .* \(412\)\. Nothing was committed"


def _closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


@pytest.fixture
def dead_default(monkeypatch) -> str:
    """``$HF_ENDPOINT`` and huggingface_hub's default endpoint both name a closed port."""
    url = _closed_port_url()
    monkeypatch.setenv("HF_ENDPOINT", url)
    monkeypatch.setattr(constants, "ENDPOINT", url)
    return url


@pytest.fixture
def clients_seen(monkeypatch) -> list[HubClient]:
    """Every client a Hub call went through (all of them go through ``HubClient.errors``)."""
    seen: list[HubClient] = []
    original = HubClient.errors

    def spy(self: HubClient, what: str):
        seen.append(self)
        return original(self, what)

    monkeypatch.setattr(HubClient, "errors", spy)
    return seen


# -- the client ----------------------------------------------------------------------------------
def test_from_env_reads_the_endpoint_now_and_leaves_the_token_to_huggingface_hub(monkeypatch,
                                                                                 tmp_path):
    monkeypatch.setenv("HF_ENDPOINT", "http://hub.example:8080/")
    client = HubClient.from_env()
    assert (client.endpoint, client.token, client.cache_dir) == ("http://hub.example:8080",
                                                                 None, None)
    monkeypatch.delenv("HF_ENDPOINT")
    assert HubClient.from_env().endpoint == REAL_HUB
    given = HubClient.from_env(endpoint="http://other:1", token=False, cache_dir=str(tmp_path))
    assert (given.endpoint, given.token, given.cache_dir) == ("http://other:1", False, tmp_path)
    assert given.api.endpoint == "http://other:1"


def test_the_token_is_never_in_the_clients_text():
    client = HubClient("http://127.0.0.1:1", token="hf_" + "s3cr3t" * 4)
    assert "s3cr3t" not in repr(client) and "s3cr3t" not in str(client)


# -- the translation -----------------------------------------------------------------------------
def _http_error(status: int, cls: type[HfHubHTTPError] = HfHubHTTPError) -> HfHubHTTPError:
    response = httpx.Response(status, request=httpx.Request("POST", "http://hub/api/x"))
    return cls(f"{status} Client Error\n\nsecond line", response=response,
               server_message="the server says\nmore")


@pytest.mark.parametrize(("exc", "kind", "code", "text"), [
    (_http_error(412), BranchMoved, 1, "(412). Nothing was committed"),
    (_http_error(409), HubConflict, 1, "conflict (409): the server says"),
    (_http_error(404, RepositoryNotFoundError), HubNotFound, 2, "repo was not found"),
    (_http_error(404), HubNotFound, 2, "not found on the Hub at http://hub"),
    (_http_error(500), HubUnavailable, 2, "answered 500: the server says"),
    (httpx.ConnectError("[Errno 111] Connection refused"), HubUnavailable, 2,
     "could not run: the Hub at http://hub is unreachable"),
    (ConnectionRefusedError(111, "Connection refused"), HubUnavailable, 2, "unreachable"),
])
def test_one_translation_of_hub_errors(exc, kind, code, text):
    mapped = translate(exc, "doing it", "http://hub")
    assert type(mapped) is kind and mapped.exit_code == code
    assert text in mapped.message and "\n" not in mapped.message
    assert isinstance(mapped, RefusedError) == (code == 1)


def test_other_errors_pass_through():
    assert translate(ValueError("ours"), "x", "http://hub") is None
    assert translate(UsageError("ours"), "x", "http://hub") is None
    with pytest.raises(KeyError), hub_errors("x", "http://hub"):
        raise KeyError("not a Hub error")


# -- one client reaches every step ---------------------------------------------------------------
def test_one_client_reaches_publish_list_regenerate_and_verify(tmp_path, local_hub, hub_repo,
                                                               dead_default, clients_seen):
    client = HubClient(local_hub.url, token=local_hub.token, cache_dir=tmp_path / "cache")
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    result = publish(v1, hub_repo, client=client, create_repo=True)
    assert result.status == "published" and result.tag == TAG1
    assert list_releases(hub_repo, client=client).ok
    regenerated = regenerate(hub_repo, "main", client=client)
    assert regenerated.parent == result.commit and regenerated.commit
    report = verify(repo=hub_repo, revision=TAG1, client=client)
    assert report.sha == result.commit
    assert any((tmp_path / "cache").rglob("releases.json"))       # the client's cache
    assert clients_seen and all(c is client for c in clients_seen)


def test_the_cli_builds_one_client_and_passes_it(tmp_path, local_hub, hub_repo, monkeypatch,
                                                 clients_seen, capsys):
    built: list[HubClient] = []
    from_env = HubClient.from_env.__func__

    def counting(cls, **kwargs):
        built.append(from_env(cls, **kwargs))
        return built[-1]

    monkeypatch.setattr(HubClient, "from_env", classmethod(counting))
    monkeypatch.setenv("HF_ENDPOINT", local_hub.url)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    records = tmp_path / "records"
    for argv in (["release", "publish", str(v1), "--repo", hub_repo, "--create-repo",
                  "--record-to", str(records)],
                 ["release", "list", "--repo", hub_repo],
                 ["card", "regenerate", "--repo", hub_repo, "--revision", "main"],
                 ["verify", "--repo", hub_repo, "--revision", TAG1,
                  "--cache-dir", str(tmp_path / "cache"), "--histories", str(records)],
                 ["replay", f"hf://datasets/{hub_repo}@{TAG1}"]):
        built.clear()
        clients_seen.clear()
        assert main(argv) == 0, argv
        (client,) = built
        assert client.endpoint == local_hub.url
        assert clients_seen and all(c is client for c in clients_seen), argv
    assert client.cache_dir is None and built[0] is client
    capsys.readouterr()


# -- the Hub down: exit 2, one line --------------------------------------------------------------
@pytest.mark.parametrize("argv", [
    ["replay", "hf://datasets/rcp-test/anything@v1"],
    ["verify", "--repo", "rcp-test/anything", "--revision", "v1"],
    ["verify", "hf://datasets/rcp-test/anything@v1", "--json"],
    ["release", "list", "--repo", "rcp-test/anything"],
    ["card", "regenerate", "--repo", "rcp-test/anything", "--revision", "main"],
], ids=lambda a: " ".join(a[:2]))
def test_hub_down_exits_2_with_one_line(argv, dead_default, tmp_path, capsys):
    assert main([*argv, *(["--cache-dir", str(tmp_path)] if argv[0] == "verify" else [])]) == 2
    out, err = capsys.readouterr()
    text = (out if "--json" in argv else err).strip()
    assert f"could not run: the Hub at {dead_default} is unreachable" in text
    assert "Traceback" not in out + err
    if "--json" not in argv:
        assert err.count("\n") == 1 and err.startswith(f"rcp-data {argv[0]}: error: ")


def test_publish_with_the_hub_down_exits_2(tmp_path, dead_default, capsys):
    v1 = make_release_dir(tmp_path / "v1", "rcp-test/anything")
    assert main(["release", "publish", str(v1), "--repo", "rcp-test/anything"]) == 2
    err = capsys.readouterr().err
    assert f"could not run: the Hub at {dead_default} is unreachable" in err
    assert err.count("\n") == 1


def _head(client: HubClient, repo: str) -> str:
    return {b.name: b.target_commit for b in client.refs(repo).branches}["main"]


# -- 412: a stale parent is a refusal in every path that commits ---------------------------------
def test_stale_parent_in_publish_is_branch_moved(tmp_path, local_hub, hub_repo):
    client = HubClient(local_hub.url)
    client.api.create_repo(hub_repo, repo_type="dataset")
    a = make_release_dir(tmp_path / "a", hub_repo)
    b = make_release_dir(tmp_path / "b", hub_repo, extra_files={"notes/b.txt": "SYNTHETIC b"})
    plan_a = plan_publish(check_release_dir(a), hub_repo, client=client)
    plan_b = plan_publish(check_release_dir(b), hub_repo, client=client)
    execute_plan(plan_a, client)
    with pytest.raises(BranchMoved, match=MOVED) as caught:
        execute_plan(plan_b, client)
    assert isinstance(caught.value, RefusedError) and caught.value.exit_code == 1


def test_stale_parent_in_card_regenerate_is_branch_moved(tmp_path, local_hub, hub_repo, capsys):
    client = HubClient(local_hub.url)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    sha1 = publish(v1, hub_repo, client=client, create_repo=True).commit
    note = tmp_path / "note.txt"
    note.write_text("SYNTHETIC: moves the branch on\n", encoding="utf-8")
    client.api.upload_file(path_or_fileobj=str(note), path_in_repo="notes/later.txt",
                           repo_id=hub_repo, repo_type="dataset")
    head = _head(client, hub_repo)
    assert head != sha1
    with pytest.raises(BranchMoved, match=MOVED):
        regenerate(hub_repo, sha1, client=client)
    assert main(["card", "regenerate", "--repo", hub_repo, "--revision", sha1]) == 1
    err = capsys.readouterr().err      # download progress bars, then the one error line
    last = err.strip().splitlines()[-1].split("\r")[-1]
    assert last.startswith("rcp-data card: error: ") and "(412). Nothing was committed" in last
    assert "Traceback" not in err
    assert _head(client, hub_repo) == head      # nothing committed


def test_a_missing_repo_or_revision_exits_2(local_hub, hub_repo, capsys, tmp_path):
    client = HubClient(local_hub.url)
    with pytest.raises(HubNotFound, match="not found"):
        client.resolve(hub_repo, "v1")
    assert main(["release", "list", "--repo", hub_repo]) == 2
    assert "not found on the Hub at" in capsys.readouterr().err
    root = Path(tmp_path)
    with pytest.raises(NotFoundError, match="release directory not found") as caught:
        client.local_release(root / "missing")
    assert isinstance(caught.value, FileNotFoundError) and caught.value.exit_code == 2


# -- credentials in HF_ENDPOINT ------------------------------------------------------------------
def test_userinfo_in_the_endpoint_is_redacted_in_translated_messages():
    endpoint = "http://user:s3cr3t-pw@127.0.0.1:1"
    quoted = httpx.ConnectError(f"All connection attempts failed for {endpoint}/api/datasets/o/r")
    mapped = translate(quoted, "dataset repo o/r", endpoint)
    assert "s3cr3t" not in mapped.message and "s3cr3t" not in str(mapped)
    assert "the Hub at http://***@127.0.0.1:1 is unreachable" in mapped.message
    assert "for http://***@127.0.0.1:1/api/datasets/o/r" in mapped.message
    assert HubClient(endpoint).shown_url == "http://***@127.0.0.1:1"
    assert HubClient(endpoint).url == endpoint          # requests still carry it


def test_userinfo_in_hf_endpoint_never_reaches_the_cli_output(tmp_path):
    import os
    import subprocess
    import sys

    with socket.socket() as sock:   # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, HF_ENDPOINT=f"http://user:s3cr3t-pw@127.0.0.1:{port}")
    done = subprocess.run([sys.executable, "-m", "rcp_data.cli", "release", "list", "--repo", "o/r"],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"http://***@127.0.0.1:{port}" in done.stderr
    assert "s3cr3t" not in done.stderr + done.stdout
