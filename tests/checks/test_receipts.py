"""Receipts of passed verifications (``rcp_data.checks.receipts``): a publish after a passed
``rcp-data verify`` of the same bytes hashes every file again but does not repeat the other
checks; any other byte, another verifier or ``--reverify`` runs them all. ``verify`` itself
always runs every check. Release directories are tiny SYNTHETIC demo-suite releases."""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest
from support.release_dirs import make_release_dir

import rcp_data
import rcp_data.checks.receipts as receipts
import rcp_data.checks.release_check as release_check
import rcp_data.checks.verify as verify_module
import rcp_data.core.files as files
from rcp_data.cli import main
from rcp_data.core.errors import RefusedError
from rcp_data.core.files import hash_files, release_paths
from rcp_data.core.hub_client import HubClient
from rcp_data.model import layout
from rcp_data.release.publish import publish


@pytest.fixture
def client(local_hub) -> HubClient:
    return HubClient(local_hub.url)


@pytest.fixture
def calls(monkeypatch) -> dict[str, list]:
    """Counts of the verifications run, of the release checks run and of the files hashed."""
    seen: dict[str, list] = {"verified": [], "release-checked": [], "hashed": []}
    real_verify, real_hash = verify_module.verify_release_dir, files.hash_file
    real_check = release_check.check_release_dir

    def counting_verify(root, **kwargs):
        seen["verified"].append(Path(root))
        return real_verify(root, **kwargs)

    def counting_check(root, **kwargs):
        seen["release-checked"].append(Path(root))
        return real_check(root, **kwargs)

    def counting_hash(root, rel, *snapshot):
        seen["hashed"].append(rel)
        return real_hash(root, rel, *snapshot)

    monkeypatch.setattr(verify_module, "verify_release_dir", counting_verify)
    monkeypatch.setattr(verify_module, "check_release_dir", counting_check)
    monkeypatch.setattr(release_check, "check_release_dir", counting_check)
    monkeypatch.setattr(files, "hash_file", counting_hash)
    return seen


def _receipts() -> list[Path]:
    folder = receipts.receipts_dir()
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def test_verify_records_a_receipt_of_exactly_the_files_it_passed(tmp_path):
    root = make_release_dir(tmp_path / "v1", "rcp-test/receipts")
    assert main(["-q", "verify", str(root)]) == 0
    [path] = _receipts()
    data = json.loads(path.read_text())
    files = hash_files(root, release_paths(root))
    assert data["key"] == path.stem == receipts.receipt_key(files)
    assert data["files"] == len(release_paths(root)) == len(files)
    assert data["bytes"] == sum(p.stat().st_size for p in root.rglob("*") if p.is_file()
                                and not any(s.startswith(".") for s in p.relative_to(root).parts))
    assert data["suite"] == "demo" and data["checks"] > 20
    assert data["publishable"] is True   # the release check ran and passed on the same bytes
    assert receipts.find_receipt(files) is not None


def test_a_publish_after_verify_hashes_every_file_and_runs_no_other_check(
        tmp_path, client, hub_repo, calls, caplog):
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "verify", str(root)]) == 0
    assert len(calls["verified"]) == len(calls["release-checked"]) == 1
    calls["hashed"].clear()
    with caplog.at_level(logging.INFO, logger="rcp_data.release.publish"):
        result = publish(root, hub_repo, client=client, create_repo=True)
    assert result.status == "published"
    assert len(calls["verified"]) == 1                    # no second verification
    assert len(calls["release-checked"]) == 1             # nor a second release check
    assert sorted(calls["hashed"]) == release_paths(root)  # every file, once
    assert "passed the release check and all" in caplog.text and "receipt" in caplog.text
    files = client.api.list_repo_files(hub_repo, repo_type="dataset")
    assert sorted(set(files) - {".gitattributes"}) == release_paths(root)


def test_a_receipt_of_an_unpublishable_release_runs_the_release_check(
        tmp_path, client, hub_repo, calls, monkeypatch):
    """A verification whose release check failed records so; the publish of the same bytes
    runs the release check itself (and only it: the verification's receipt stands)."""
    root = make_release_dir(tmp_path / "v1", hub_repo)
    real_check = verify_module.check_release_dir

    def failing_check(path, **kwargs):
        report = real_check(path, **kwargs)
        report.problems.append("a problem this release check found")
        return report

    monkeypatch.setattr(verify_module, "check_release_dir", failing_check)
    assert main(["-q", "verify", str(root)]) == 0   # verify itself passes
    [path] = _receipts()
    assert json.loads(path.read_text())["publishable"] is False
    monkeypatch.setattr(release_check, "check_release_dir", failing_check)
    with pytest.raises(RefusedError, match="a problem this release check found"):
        publish(root, hub_repo, client=client, create_repo=True)
    assert len(calls["verified"]) == 1
    assert not client.api.repo_exists(hub_repo, repo_type="dataset")


def test_a_receipt_whose_publishable_is_not_a_boolean_is_ignored(tmp_path, calls):
    root = make_release_dir(tmp_path / "v1", "rcp-test/receipts")
    assert main(["-q", "verify", str(root)]) == 0
    [path] = _receipts()
    data = json.loads(path.read_text())
    hashed = hash_files(root, release_paths(root))
    for value in ("yes", 1, None):
        path.write_text(json.dumps({**data, "publishable": value}), encoding="utf-8")
        assert receipts.find_receipt(hashed) is None
    path.write_text(json.dumps({k: v for k, v in data.items() if k != "publishable"}),
                    encoding="utf-8")
    assert receipts.find_receipt(hashed) is None


def test_verify_runs_every_check_even_with_a_receipt(tmp_path, calls):
    root = make_release_dir(tmp_path / "v1", "rcp-test/receipts")
    assert main(["-q", "verify", str(root)]) == 0
    assert main(["-q", "verify", str(root)]) == 0
    assert len(calls["verified"]) == 2


@pytest.mark.parametrize("change", ["data byte", "card", "extra file"])
def test_other_bytes_are_verified_again_and_refused(tmp_path, client, hub_repo, calls, change):
    """After a receipt, any changed or added file names another receipt: the verification runs
    and refuses the release, and nothing reaches the Hub."""
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "verify", str(root)]) == 0
    if change == "data byte":
        [target] = sorted(root.glob("alpha/corpus*.parquet"))  # not read by the release check
        data = bytearray(target.read_bytes())
        data[len(data) // 2] ^= 0x01
        target.write_bytes(bytes(data))
    elif change == "card":
        card = root / layout.CARD_FILE
        card.write_text(card.read_text(encoding="utf-8").replace("SYNTHETIC", "synthetic", 1),
                        encoding="utf-8")
    else:
        (root / "alpha" / "notes.txt").write_text("an extra file\n", encoding="utf-8")
    with pytest.raises(RefusedError, match="fails verification"):
        publish(root, hub_repo, client=client, create_repo=True)
    assert len(calls["verified"]) == 2
    assert not client.api.repo_exists(hub_repo, repo_type="dataset")


def test_another_verifier_does_not_use_the_receipt(tmp_path, client, hub_repo, calls,
                                                   monkeypatch):
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "verify", str(root)]) == 0
    monkeypatch.setattr(receipts, "verifier_identity", lambda: "another rcp-data")
    assert publish(root, hub_repo, client=client, create_repo=True).status == "published"
    assert len(calls["verified"]) == 2


def test_reverify_runs_every_check(tmp_path, client, hub_repo, calls):
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "verify", str(root)]) == 0
    assert main(["-q", "release", "publish", str(root), "--repo", hub_repo, "--create-repo",
                 "--reverify"]) == 0
    assert len(calls["verified"]) == len(calls["release-checked"]) == 2


def test_a_publish_leaves_a_receipt_for_the_next(tmp_path, client, hub_repo, calls):
    """A publish that verified fully records its receipt; publishing the same folder again
    (already published: nothing changes) hashes it but does not verify it again."""
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert publish(root, hub_repo, client=client, create_repo=True).status == "published"
    assert len(calls["verified"]) == 1 and len(_receipts()) == 1
    calls["hashed"].clear()
    assert publish(root, hub_repo, client=client).status == "already-published"
    assert len(calls["verified"]) == 1
    assert sorted(calls["hashed"]) == release_paths(root)


def test_no_receipt_for_a_failed_or_a_custom_verification(tmp_path):
    root = make_release_dir(tmp_path / "v1", "rcp-test/receipts")
    card = root / layout.CARD_FILE
    text = card.read_text(encoding="utf-8")
    card.write_text(text + "\nedited\n", encoding="utf-8")
    assert main(["-q", "verify", str(root)]) == 1
    assert _receipts() == []
    card.write_text(text, encoding="utf-8")
    reference = Path(rcp_data.__file__).parent / "resources" / "provenance"
    paper = sorted(reference.glob("*.json"))[0]
    assert main(["-q", "verify", str(root), "--reference", str(paper)]) in (0, 1)
    assert _receipts() == []


def test_an_unreadable_receipt_is_ignored_and_an_unwritable_cache_only_warns(
        tmp_path, client, hub_repo, calls, monkeypatch, caplog):
    root = make_release_dir(tmp_path / "v1", hub_repo)
    assert main(["-q", "verify", str(root)]) == 0
    [path] = _receipts()
    path.write_text("{not json", encoding="utf-8")
    assert receipts.find_receipt(hash_files(root, release_paths(root))) is None
    blocked = tmp_path / "a-file"
    blocked.write_text("", encoding="utf-8")
    monkeypatch.setenv("RCP_DATA_CACHE", str(blocked))
    with caplog.at_level(logging.WARNING):
        assert publish(root, hub_repo, client=client, create_repo=True).status == "published"
    assert len(calls["verified"]) == 2
    assert "could not record the passed verification" in caplog.text


def test_the_verifier_identity_covers_every_packaged_file(tmp_path, monkeypatch):
    """The identity changes with any file of the installed package (code, spec, reference,
    template), not only with its version."""
    from rcp_data.core import version

    package = version.PACKAGE_DIR
    copy = tmp_path / "rcp_data"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(version, "PACKAGE_DIR", copy)
    identities = []
    for edit in (None, "resources/provenance", "documents/templates"):
        if edit is not None:
            target = sorted(p for p in (copy / edit).rglob("*") if p.is_file())[0]
            target.write_bytes(target.read_bytes() + b"\n")
        receipts._identity.cache_clear()
        identities.append(receipts.verifier_identity())
    receipts._identity.cache_clear()
    assert len(set(identities)) == 3


def test_the_verifier_identity_covers_specs_outside_the_package(tmp_path, monkeypatch):
    """``$RCP_DATA_BUILDERS`` points the checks at other suite specs: their bytes are part of
    the identity, so an edited spec never reuses a receipt of the old one."""
    from rcp_data.resources import builders_dir

    packaged = receipts.verifier_identity()
    specs = tmp_path / "builders"
    shutil.copytree(builders_dir(), specs, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("RCP_DATA_BUILDERS", str(specs))
    copied = receipts.verifier_identity()
    target = sorted(p for p in specs.rglob("*") if p.is_file())[0]
    target.write_bytes(target.read_bytes() + b"\n")
    receipts._identity.cache_clear()
    edited = receipts.verifier_identity()
    receipts._identity.cache_clear()
    assert len({packaged, copied, edited}) == 3


@pytest.mark.parametrize("receipt", [True, False], ids=["receipt", "no-receipt"])
def test_a_file_added_while_the_release_is_checked_is_refused(tmp_path, client, hub_repo,
                                                             monkeypatch, receipt):
    """The files hashed (listed when the hashing starts) and the files listed once the checks
    are done must be the same: a file that appears in between is neither verified nor uploaded,
    and the publish stops with one message naming it. With a receipt the file appears while
    the files are hashed; without one, while the release check runs."""
    root = make_release_dir(tmp_path / "v1", hub_repo)
    if receipt:
        assert main(["-q", "verify", str(root)]) == 0
    late = "alpha/late.txt"
    module, name = (files, "hash_file") if receipt else (release_check, "check_release_dir")
    real = getattr(module, name)

    def add_then_run(*args, **kwargs):
        (root / late).write_text("written while the release was being checked\n",
                                 encoding="utf-8")
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, add_then_run)
    with pytest.raises(RefusedError, match=f"changed while they were checked \\(added: {late};"):
        publish(root, hub_repo, client=client, create_repo=True)
    assert not client.api.repo_exists(hub_repo, repo_type="dataset")
