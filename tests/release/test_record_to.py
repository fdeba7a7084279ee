"""``release publish --record-to``: a repo the packaged history does not know starts its record
from the release's own ``provenance/releases.json``; a record that cannot be made exits 1; the
record renders as RELEASES.md (issue 30, item 2)."""

from __future__ import annotations

import json

from huggingface_hub import HfApi
from support.release_dirs import first_history, make_release_dir, second_history

from rcp_data.cli import main
from rcp_data.model.history import SCHEMA, fill_known_shas, read_history, release_tag

JUDGE = "rcp-data/synthetic-judge-7b"


def _tags(api: HfApi, repo: str) -> dict[str, str]:
    return {t.name: t.target_commit for t in api.list_repo_refs(repo, repo_type="dataset").tags}


def test_record_of_an_unknown_repo_starts_from_the_releases_own_history(
        tmp_path, local_hub, hub_repo, capsys):
    api = HfApi(endpoint=local_hub.url)
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["release", "publish", str(v1), "--repo", hub_repo, "--create-repo"]) == 0
    sha1 = _tags(api, hub_repo)[release_tag(1, JUDGE)]
    history = fill_known_shas(first_history(hub_repo), api.list_repo_refs(hub_repo,
                                                                          repo_type="dataset"))
    v2 = make_release_dir(tmp_path / "v2", hub_repo, release=2,
                          history=second_history(hub_repo, sha1))
    record = tmp_path / "record"
    assert history.releases[0].revision == sha1
    assert main(["release", "publish", str(v2), "--repo", hub_repo,
                 "--record-to", str(record)]) == 0
    sha2 = _tags(api, hub_repo)[release_tag(2, JUDGE)]
    (path,) = record.glob("*.json")
    recorded = read_history(path)
    assert recorded.repo == hub_repo
    assert [(r.release, r.revision, r.status) for r in recorded.releases] == [
        (1, sha1, "superseded"), (2, sha2, "current")]
    out = tmp_path / "RELEASES.md"
    assert main(["release", "render-md", "--histories", str(record), "--out", str(out)]) == 0
    text = out.read_text()
    assert release_tag(2, JUDGE) in text and sha2[:7] in text


def test_a_record_that_cannot_be_made_exits_1(tmp_path, local_hub, hub_repo, capsys):
    v1 = make_release_dir(tmp_path / "v1", hub_repo)
    other = tmp_path / "other.json"   # a history of another repo: recording here must fail
    other.write_text(json.dumps({"schema": SCHEMA, "repo": "someone/else", "releases": []}))
    capsys.readouterr()
    assert main(["release", "publish", str(v1), "--repo", hub_repo, "--create-repo",
                 "--record-to", str(other)]) == 1
    err = capsys.readouterr().err
    assert "could not record the release" in err and "someone/else" in err
    assert json.loads(other.read_text())["releases"] == []
