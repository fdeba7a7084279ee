"""What the checks found, as frozen records.

- :class:`Check`: one verified property (what, expected, found, where, status, details), the
  unit of ``rcp-data verify`` and of the integrity checks;
- :class:`VerifyReport`: every check of one verified revision or release directory, with the
  text and ``--json`` forms the CLI prints;
- :class:`CheckReport`: the problems the pre-publish release check found.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rcp_data.core.errors import RefusedError
from rcp_data.model.card_format import escape_cell
from rcp_data.model.history import History

MAX_DETAILS = 20
#: What verify says of a revision whose checks all pass but that nothing outside it vouches for.
NOT_ANCHORED = "consistent, not anchored: pass --digest or --histories"
#: verify's exit code for that revision (a failed check, 1, wins).
EXIT_NOT_ANCHORED = 3
STATUSES = ("ok", "failed", "absent", "diff", "skipped")
VERIFY_SCHEMA = "rcp-data.verify/1"


@dataclass(frozen=True)
class Check:
    """One verified property.

    ``status``: ``ok``; ``failed``; ``absent`` (an optional table or column the release does not
    carry; not a failure); ``diff`` (differences reported for information, e.g. to the paper
    for a release the paper did not use; not a failure); ``skipped`` (does not apply).
    Empty, it follows ``ok``. At most :data:`MAX_DETAILS` details are kept.
    """

    name: str
    ok: bool
    what: str
    expected: str = ""
    found: str = ""
    where: str = ""
    status: str = ""
    details: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.status:
            object.__setattr__(self, "status", "ok" if self.ok else "failed")
        object.__setattr__(self, "details", list(self.details)[:MAX_DETAILS])

    @classmethod
    def passed(cls, name: str, what: str, found: str = "", where: str = "") -> Check:
        return cls(name, True, what, found=found, where=where)

    @classmethod
    def failed(cls, name: str, what: str, expected: str, found: str, where: str,
               details: Sequence[str] | None = None) -> Check:
        return cls(name, False, what, expected, found, where, details=list(details or []))

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class VerifyReport:
    """Everything ``verify`` found about one revision (or local release directory)."""

    target: str
    root: Path
    repo: str | None = None
    requested: str | None = None
    sha: str | None = None
    suite: str | None = None
    release: int | None = None
    tag: str | None = None
    checks: list[Check] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)
    cpu_seconds: dict[str, float] = field(default_factory=dict)   # CPU of the same stages
    # (integrity and replay run at once: the CPU of the thread that ran each)
    synthetic: bool = False          # the revision holds generated data
    digest: str | None = None        # the release's content digest (model.manifest)
    digest_of: str = ""              # which commit's release the digest is of, in words
    anchor: str | None = None        # what outside the repository vouches for it, in words
    needs_anchor: bool = False       # a Hub revision: without an anchor it exits 3

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    @property
    def ok(self) -> bool:
        return not self.failed

    @property
    def anchored(self) -> bool:
        """Whether something outside the repository vouches for it (or it needs nothing:
        a local directory)."""
        return self.anchor is not None or not self.needs_anchor

    @property
    def exit_code(self) -> int:
        """0 verified; 1 a check failed (wins); 3 every check passed, nothing anchors it."""
        if not self.ok:
            return 1
        return 0 if self.anchored else EXIT_NOT_ANCHORED

    def check(self, name: str) -> Check | None:
        """The first check called ``name`` (None when there is none)."""
        return next((c for c in self.checks if c.name == name), None)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.checks:
            out[c.status] = out.get(c.status, 0) + 1
        return out

    def to_json(self) -> dict:
        return {
            "schema": VERIFY_SCHEMA,
            "target": self.target,
            "path": str(self.root),
            "repo": self.repo,
            "requested": self.requested,
            "sha": self.sha,
            "suite": self.suite,
            "release": self.release,
            "tag": self.tag,
            "synthetic": self.synthetic,
            "digest": self.digest,
            "digest_of": self.digest_of,
            "anchor": self.anchor,
            "anchored": self.anchored,
            "ok": self.ok,
            "exit_code": self.exit_code,
            "counts": self.counts(),
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "checks": [c.to_dict() for c in self.checks],
        }

    def text(self) -> str:
        """A report a person can read: one block per check (failures first); a check that is
        absent or skipped says why on its first line. What comes from the data (an id in a
        finding, a path) is one escaped cell: a newline, tab or terminal escape in it never
        adds a line or forges a check."""
        lines = self._head() + [""]
        for c in self._ordered():
            if c.status == "ok":
                tail = "; ".join(_e(x) for x in (c.found, c.where) if x)
                lines.append(f"{_mark(c)} {c.name}: {_e(c.what)}" + (f" ({tail})" if tail
                                                                     else ""))
                continue
            if c.status in EXPLAINED:
                lines.append(f"{_mark(c)} {c.name} — {_e(reason(c))}")
                fields = (("check", c.what), ("expected", c.expected), ("where", c.where))
            else:
                lines.append(f"{_mark(c)} {c.name}: {_e(c.what)}")
                fields = (("expected", c.expected), ("found", c.found), ("where", c.where))
            lines += [f"           {label + ':':9} {_e(value)}" for label, value in fields
                      if value]
            lines += [f"             - {_e(d)}" for d in c.details[:MAX_DETAILS]]
        return "\n".join([*lines, "", self.verdict_line()])

    def brief(self) -> str:
        """The report in a few lines: what was verified (its digest and anchor), one line per
        check that is not ok (with its reason), and the verdict."""
        head = f"rcp-data verify {_e(self.target)}" + (f" (commit {self.sha[:12]})" if self.sha
                                                   else "")
        lines = [head, *(line for line in self._head() if line.startswith(("  digest ",
                                                                          "  anchor ")))]
        for c in self._ordered():
            if c.status == "ok":
                continue
            why = reason(c) if c.status in EXPLAINED else f"{c.what} (found {c.found})"
            lines.append(f"{_mark(c)} {c.name} — {_e(why)}")
        return "\n".join([*lines, self.verdict_line()])

    def verdict_line(self) -> str:
        """``N checks: <counts>. VERIFIED`` (or ``FAILED (k check(s))``)."""
        counts = ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))
        verdict = ("VERIFIED" if self.anchored else NOT_ANCHORED) if self.ok else \
            f"FAILED ({len(self.failed)} check(s))"
        if self.synthetic:
            verdict += " (SYNTHETIC data)"
        return f"{len(self.checks)} checks: {counts}. {verdict}"

    def _head(self) -> list[str]:
        head = [f"rcp-data verify {_e(self.target)}"]
        if self.sha:
            head.append(f"  commit   {self.sha}")
        if self.suite:
            rel = f", release {self.release} ({self.tag})" if self.release else ""
            data = " (SYNTHETIC data: generated, not a benchmark)" if self.synthetic else ""
            head.append(f"  suite    {_e(self.suite)}{_e(rel)}{data}")
        if self.digest:
            head.append(f"  digest   {self.digest}" + (f" ({self.digest_of})"
                                                       if self.digest_of else ""))
        if self.needs_anchor or self.anchor:
            head.append(f"  anchor   {self.anchor or 'none'}")
        return head

    def _ordered(self) -> list[Check]:
        return sorted(self.checks, key=lambda c: _ORDER.get(c.status, 5))


# statuses that are not failures: the report says why the check did not run (or found nothing)
EXPLAINED = ("absent", "skipped")
_ORDER = {"failed": 0, "diff": 1, "absent": 2, "skipped": 3, "ok": 4}
_BARE = {"", "absent", "none found", "missing", "skipped"}


def _e(value: object) -> str:
    """A value of the report as one line of text (:func:`escape_cell`)."""
    return escape_cell(str(value), markdown=False)


def _mark(c: Check) -> str:
    return f"[{({'failed': 'FAILED'}).get(c.status, c.status):>7}]"


def reason(c: Check) -> str:
    """Why a check is absent or skipped, in one phrase: its finding when that says why, else
    what was looked for, and where."""
    found = c.found.strip()
    for prefix in ("absent:", "skipped:", "not compared:"):
        if found.lower().startswith(prefix):
            found = found[len(prefix):].strip()
    if found.lower() not in _BARE:
        return found
    where = f" ({c.where})" if c.where else ""
    return f"{c.what}: {found or c.status}{where}"


@dataclass(frozen=True)
class CheckReport:
    """What the pre-publish checks found in one release directory."""

    root: Path
    suite: str | None = None
    history: History | None = None
    files: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    qrels_rows: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems

    def raise_if_failed(self, *, publishing: bool = False) -> None:
        """Refuse a failed check; ``publishing``: a publish asked, so say nothing went up."""
        if self.problems:
            shown = "\n  - ".join(self.problems)
            uploaded = "; nothing was uploaded" if publishing else ""
            raise RefusedError(f"release check of {self.root} failed "
                               f"({len(self.problems)} problem(s)){uploaded}:\n"
                               f"  - {shown}")


__all__ = ["EXIT_NOT_ANCHORED", "EXPLAINED", "MAX_DETAILS", "NOT_ANCHORED", "STATUSES",
           "VERIFY_SCHEMA", "Check", "CheckReport", "VerifyReport", "reason"]
