"""One revision taken through the stages of ``verify`` one at a time: a test runs the stage a
change must trip (and the stages that stage needs), not a whole verification."""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property
from pathlib import Path

from rcp_data.checks import verify_stages as stages
from rcp_data.checks.numbers import default_reference
from rcp_data.checks.reports import Check, VerifyReport
from rcp_data.checks.verify import fetch, report_of
from rcp_data.checks.verify_stages import Fetched, Options
from rcp_data.core.hub_client import HubClient
from rcp_data.model.release import Release


class Staged:
    """A fetched revision whose stages run on demand, each at most once, with what they need
    (as :func:`rcp_data.checks.verify.verify_fetched` runs them); ``ran`` lists the checks of
    the stages that ran, in the order they ran."""

    def __init__(self, fetched: Fetched, *, histories: Path | None = None,
                 options: Options | None = None) -> None:
        self.fetched, self.histories, self.options = fetched, histories, options or Options()
        self.ran: list[Check] = []

    @classmethod
    def of(cls, client: HubClient, repo: str, revision: str, *, histories: Path | None = None,
           options: Options | None = None) -> Staged:
        """``revision`` fetched from the Hub (not with ``--quick``: its stand-ins live only as
        long as the fetch)."""
        options = options or Options()
        assert not options.quick, "a --quick fetch is verified inside its context"
        with fetch(client, repo, revision, options) as (fetched, _snapshot):
            return cls(fetched, histories=histories, options=options)

    def _ran(self, checks: list[Check]) -> list[Check]:
        self.ran += checks
        return checks

    # -- the stages -----------------------------------------------------------------------------
    @cached_property
    def proof(self) -> stages.BytesProof:
        proof = stages.prove_bytes(self.fetched)
        self._ran(proof.checks)
        return proof

    @cached_property
    def rel(self) -> Release:
        self.proof  # noqa: B018 -- verify proves the bytes before it opens the release
        rel = stages.open_verified(self.fetched)
        assert isinstance(rel, Release), rel
        return rel

    @cached_property
    def pinned(self) -> stages.Pinned:
        pinned = stages.pin_revision(self.rel, self.fetched, self.histories)
        self._ran(pinned.checks)
        return pinned

    @cached_property
    def content(self) -> stages.Content:
        content = stages.check_manifest(self.rel, self.fetched, self.proof)
        self._ran(content.checks)
        return content

    @cached_property
    def history(self) -> list[Check]:
        return self._ran(stages.check_commits(self.rel, self.fetched, self.pinned))

    @cached_property
    def inputs(self) -> stages.Inputs:
        inputs = stages.read_inputs(self.rel, self.pinned)
        self._ran(inputs.checks)
        return inputs

    @cached_property
    def integrity(self) -> stages.Integrity:
        integrity = stages.check_integrity(self.rel, self.inputs)
        self._ran(integrity.checks)
        return integrity

    @cached_property
    def provenance(self) -> list[Check]:
        return self._ran(stages.check_provenance(self.rel, self.inputs, self.integrity))

    @cached_property
    def counts(self) -> list[Check]:
        return self._ran(stages.check_counts_stated(self.rel, self.inputs, self.integrity))

    @cached_property
    def replay(self) -> stages.Replay:
        replay = stages.replay_numbers(self.rel, self.pinned, self.inputs, default_reference())
        self._ran(replay.checks)
        return replay

    @cached_property
    def diagnostics(self) -> list[Check]:
        return self._ran(stages.check_diagnostics_of(self.rel))

    @cached_property
    def documents(self) -> list[Check]:
        return self._ran(stages.check_documents(self.rel, self.pinned, self.replay,
                                                self.content))

    @cached_property
    def sources(self) -> list[Check]:
        return self._ran(stages.compare_sources(self.rel, replace(self.options, sources=True)))

    @cached_property
    def anchored(self) -> stages.Anchored:
        anchored = stages.anchor_release(self.fetched.root, self.fetched, self.pinned,
                                         self.proof, self.options, self.ran)
        self._ran([anchored.check])
        return anchored

    # -- what they found ------------------------------------------------------------------------
    def report(self) -> VerifyReport:
        """The report verify makes of the checks of the stages that ran and of the anchor (run
        now when it has not): its exit code and text as far as those stages go."""
        anchored = self.anchored
        pin, release = self.fetched.pin, self.pinned.release
        target = f"{pin.repo}@{pin.requested}" if pin else None
        return replace(report_of(self.fetched.root, None, target, pin, self.rel.spec, release,
                                 list(self.ran), {}), **anchored.fields())

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.ran if not c.ok]

    def check(self, name: str) -> Check:
        """The first check called ``name`` of the stages that ran (an error when none did)."""
        found = next((c for c in self.ran if c.name == name), None)
        assert found is not None, f"no stage that ran made a check {name!r}"
        return found

    def naming(self, needle: str) -> set[str]:
        """The failed checks whose found, where or details name ``needle``."""
        return {c.name for c in self.failed
                if needle in c.found or needle in c.where or any(needle in d for d in c.details)}


__all__ = ["Staged"]
