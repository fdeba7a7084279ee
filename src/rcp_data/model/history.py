"""Release histories: the ``rcp-data.releases/1`` schema of ``provenance/releases.json``.

The same schema serves two places:

- ``provenance/releases.json`` inside a release commit. That commit cannot name its own sha, so
  the release it holds has ``"revision": null`` ("the commit that holds this file"); every older
  release carries its sha (``validate_history(..., for_commit=True)``).
- ``release/<suite>.json`` in this project: one history per suite, seeded with the releases the
  published cards name and extended by every release the toolkit cuts. There ``null`` means the
  sha is not known, and a release's ``note`` says why.

Extra keys (``note`` on a release, ``suite`` and ``paper`` on a history) are kept as they are.
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from rcp_data.core.errors import InputError
from rcp_data.core.gains import get_link, link_name
from rcp_data.core.io import atomic_write_text, dumps_json, loads_json, read_json
from rcp_data.core.specs import suite_key
from rcp_data.model.manifest import BuildManifest, is_digest

log = logging.getLogger(__name__)

SCHEMA = "rcp-data.releases/1"
STATUSES = ("current", "superseded")
CALIBRATION_METHODS = {"2pl-irt": "2PL IRT"}
_SHA_RE = re.compile(r"^[0-9a-f]{7,40}$")
_FULL_SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_RELEASE_KEYS = ("release", "tag", "revision", "data_revision", "judge", "calibration", "status",
                 "superseded_by", "date", "summary")


def judge_slug(model: str) -> str:
    """Tag slug of a judge's hub id: ``nvidia/Qwen3.5-397B-A17B-NVFP4`` -> ``nvidia-qwen3.5-...``."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", model.strip().lower()).strip("-.")
    if not slug:
        raise InputError(f"judge model {model!r} gives an empty tag slug")
    return slug


def release_tag(number: int, judge_model: str) -> str:
    """The Hub tag of release ``number``: ``v<N>-<judge slug>``."""
    return f"v{number}-{judge_slug(judge_model)}"


def is_sha(value: object, *, full: bool = False) -> bool:
    """A lowercase hex commit id (40 digits when ``full``, else 7 to 40)."""
    return isinstance(value, str) and bool((_FULL_SHA_RE if full else _SHA_RE).match(value))


def same_commit(a: str | None, b: str | None) -> bool:
    """Whether two commit ids name the same commit (an abbreviated id matches its prefix)."""
    if not a or not b:
        return False
    return a.startswith(b) or b.startswith(a)


@dataclass(frozen=True)
class ReleaseRecord:
    """One release: a tagged commit with one judge's calibrated gains."""

    release: int
    tag: str
    revision: str | None
    data_revision: str | None
    judge: dict
    calibration: dict
    status: str
    superseded_by: int | None = None
    date: str | None = None
    summary: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def judge_model(self) -> str:
        return str(self.judge.get("model", ""))

    @property
    def item_params(self) -> str:
        return str(self.calibration.get("item_params", ""))

    @property
    def link(self) -> str:
        return link_name(self.calibration)

    @property
    def note(self) -> str:
        return str(self.extra.get("note", ""))

    @property
    def synthetic(self) -> bool:
        """Built from generated data (``"synthetic": true`` on the release)."""
        return self.extra.get("synthetic") is True

    @property
    def digest(self) -> str | None:
        """The release's content digest (:func:`rcp_data.model.manifest.release_digest`) as
        recorded at publish time (``"digest"``, beside the commit sha in a record); None when
        not recorded."""
        value = self.extra.get("digest")
        return value if isinstance(value, str) else None

    @classmethod
    def from_dict(cls, data: Mapping, *, source: str = "<releases>", row: int | None = None
                  ) -> ReleaseRecord:
        if not isinstance(data, Mapping):
            raise InputError("a release must be a JSON object", path=source, row=row)
        for key in ("release", "tag", "revision", "judge", "calibration", "status"):
            if key not in data:
                raise InputError(f"missing key {key!r}", path=source, row=row, field=key)
        extra = {k: copy.deepcopy(v) for k, v in data.items() if k not in _RELEASE_KEYS}
        return cls(
            release=data["release"],
            tag=data["tag"],
            revision=data["revision"],
            data_revision=data.get("data_revision"),
            judge=dict(data["judge"]) if isinstance(data["judge"], Mapping) else data["judge"],
            calibration=(dict(data["calibration"]) if isinstance(data["calibration"], Mapping)
                         else data["calibration"]),
            status=data["status"],
            superseded_by=data.get("superseded_by"),
            date=data.get("date"),
            summary=data.get("summary", "") or "",
            extra=extra,
        )

    def to_dict(self) -> dict:
        out = {
            "release": self.release,
            "tag": self.tag,
            "revision": self.revision,
            "data_revision": self.data_revision,
            "judge": dict(self.judge),
            "calibration": dict(self.calibration),
            "status": self.status,
            "superseded_by": self.superseded_by,
            "date": self.date,
            "summary": self.summary,
        }
        out.update(copy.deepcopy(self.extra))
        return out


@dataclass(frozen=True)
class History:
    """The releases of one Hub repository, oldest first."""

    repo: str
    releases: tuple[ReleaseRecord, ...]
    schema: str = SCHEMA
    extra: dict = field(default_factory=dict, compare=False)

    @property
    def current(self) -> ReleaseRecord | None:
        cur = [r for r in self.releases if r.status == "current"]
        return cur[-1] if cur else None

    @property
    def latest(self) -> ReleaseRecord | None:
        return self.releases[-1] if self.releases else None

    def get(self, number: int) -> ReleaseRecord:
        for r in self.releases:
            if r.release == number:
                return r
        raise InputError(f"{self.repo}: no release {number}")

    def by_tag(self, tag: str) -> ReleaseRecord | None:
        for r in self.releases:
            if r.tag == tag:
                return r
        return None

    @property
    def paper(self) -> dict | None:
        """Which release (and commit) the paper's tables were replayed from, when known."""
        p = self.extra.get("paper")
        return dict(p) if isinstance(p, Mapping) else None

    @classmethod
    def from_dict(cls, data: object, *, source: str = "<releases>") -> History:
        if not isinstance(data, Mapping):
            raise InputError("a release history must be a JSON object", path=source)
        schema = data.get("schema")
        if not is_history_schema(schema):
            raise InputError(
                f"not a release history: its schema is {schema!r}, a release history's is "
                f"{SCHEMA!r}", path=source, field="schema")
        if schema != SCHEMA:
            raise InputError(
                f"unknown schema {schema!r}; this rcp-data reads {SCHEMA!r} only "
                "(upgrade rcp-data to read a newer file)",
                path=source,
                field="schema",
            )
        if not isinstance(data.get("repo"), str) or "/" not in data["repo"]:
            raise InputError("'repo' must be 'owner/name'", path=source, field="repo")
        rel = data.get("releases")
        if not isinstance(rel, list):
            raise InputError("'releases' must be a list", path=source, field="releases")
        releases = tuple(ReleaseRecord.from_dict(r, source=source, row=i) for i, r in enumerate(rel))
        extra = {k: copy.deepcopy(v) for k, v in data.items()
                 if k not in ("schema", "repo", "releases")}
        return cls(repo=data["repo"], releases=releases, schema=schema, extra=extra)

    def to_dict(self) -> dict:
        out: dict = {"schema": self.schema, "repo": self.repo}
        out.update(copy.deepcopy(self.extra))
        out["releases"] = [r.to_dict() for r in self.releases]
        return out

    def to_json(self) -> str:
        return dumps_json(self.to_dict())


# -- reading, writing, validating --------------------------------------------------------------
def read_history(path: str | Path, *, for_commit: bool = False) -> History:
    """Read and validate a releases file; refuses an unknown ``schema``."""
    path = Path(path)
    data = read_json(path)
    return loads_history(data, source=str(path), for_commit=for_commit)


def loads_history(data: object, *, source: str = "<releases>", for_commit: bool = False
                  ) -> History:
    """Parse (a dict or JSON text) and validate."""
    if isinstance(data, str | bytes):
        data = loads_json(data, source=source)
    history = History.from_dict(data, source=source)
    problems = validate_history(history, for_commit=for_commit)
    if problems:
        raise InputError("; ".join(problems), path=source)
    return history


def write_history(history: History, path: str | Path) -> None:
    """Validate, then write atomically (temp file, then rename)."""
    problems = validate_history(history)
    if problems:
        raise InputError("refusing to write an invalid history: " + "; ".join(problems),
                         path=str(path))
    atomic_write_text(path, history.to_json())


def validate_history(history: History, *, for_commit: bool = False) -> list[str]:
    """Problems of a history, each naming the release and field (empty when consistent).

    ``for_commit``: the file goes into the commit of its latest release, so that release has
    ``revision: null`` and every older release a full 40-hex sha.
    """
    problems: list[str] = []
    if history.schema != SCHEMA:
        problems.append(f"schema is {history.schema!r}, expected {SCHEMA!r}")
    if not history.releases:
        if for_commit:
            problems.append("no releases")
        return problems
    numbers = [r.release for r in history.releases]
    if numbers != list(range(1, len(numbers) + 1)):
        problems.append(f"releases must be numbered 1..N in order, got {numbers}")
    last = history.releases[-1].release
    for i, r in enumerate(history.releases):
        where = f"release {r.release!r} (entry {i})"
        if not isinstance(r.release, int) or isinstance(r.release, bool):
            problems.append(f"{where}: 'release' must be an integer")
            continue
        if not isinstance(r.judge, Mapping) or not isinstance(r.judge.get("model"), str):
            problems.append(f"{where}: 'judge' must be an object with a 'model'")
        else:
            want = release_tag(r.release, r.judge["model"])
            if r.tag != want:
                problems.append(f"{where}: tag {r.tag!r} should be {want!r} "
                                f"(v<N>-<judge slug>)")
        problems += _check_calibration(where, r.calibration)
        for key in ("revision", "data_revision"):
            value = getattr(r, key)
            if value is not None and not is_sha(value):
                problems.append(f"{where}: {key!r} must be a lowercase hex commit id or null, "
                                f"got {value!r}")
        if r.status not in STATUSES:
            problems.append(f"{where}: status {r.status!r} must be one of {STATUSES}")
        if r.status == "superseded":
            if not isinstance(r.superseded_by, int) or not r.release < r.superseded_by <= last:
                problems.append(f"{where}: a superseded release names the later release that "
                                f"superseded it in 'superseded_by', got {r.superseded_by!r}")
        elif r.superseded_by is not None:
            problems.append(f"{where}: a current release has superseded_by null")
        if "digest" in r.extra and not is_digest(r.extra["digest"]):
            problems.append(f"{where}: 'digest' must be a release digest (64 lowercase hex), "
                            f"got {r.extra['digest']!r}")
        if r.date is not None and not (isinstance(r.date, str) and _DATE_RE.match(r.date)):
            problems.append(f"{where}: date {r.date!r} must be YYYY-MM-DD or null")
        if for_commit and r.release != last and not is_sha(r.revision, full=True):
            problems.append(f"{where}: an older release needs its full 40-hex sha in "
                            f"'revision', got {r.revision!r}")
    current = [r.release for r in history.releases if r.status == "current"]
    if current != [last]:
        problems.append(f"exactly the latest release ({last}) must be 'current', "
                        f"found current: {current}")
    tags = [r.tag for r in history.releases]
    if len(set(tags)) != len(tags):
        problems.append("two releases share a tag")
    if for_commit and history.releases[-1].revision is not None:
        problems.append(f"release {last}: the release a commit holds has 'revision': null "
                        "(a commit cannot name its own sha)")
    return problems


def _check_calibration(where: str, calibration: object) -> list[str]:
    if not isinstance(calibration, Mapping):
        return [f"{where}: 'calibration' must be an object"]
    problems = []
    for key in ("method", "item_params", "link"):
        if not isinstance(calibration.get(key), str) or not calibration[key]:
            problems.append(f"{where}: calibration needs a {key!r}")
    link = calibration.get("link")
    if isinstance(link, str) and link:
        try:
            get_link(link)
        except InputError as exc:
            problems.append(f"{where}: calibration link: {exc.message}")
    return problems


def calibration_record(calibration: Mapping) -> dict:
    """The releases.json ``calibration`` of a release from its build manifest's calibration:
    method, item parameters, link, and the reading rules the judge's answers were read with
    (``{"stage_a": "complete" | "hard-fallback", "stage_b": "complete"}``) when recorded."""
    out = {"method": "2pl-irt", "item_params": calibration["item_params"],
           "link": calibration.get("link", "weighted_discrimination")}
    rules = calibration.get("reading_rules")
    if isinstance(rules, Mapping) and rules:
        out["reading_rules"] = dict(rules)
    return out


# -- changing a history ------------------------------------------------------------------------
def add_release(history: History, *, judge: Mapping, calibration: Mapping, summary: str = "",
                date: str | None = None, previous_revision: str | None = None,
                data_revision: str | None = None, extra: Mapping | None = None) -> History:
    """History with release N+1 appended as ``current`` (``revision: null``).

    The previous current release becomes ``superseded`` (``superseded_by`` N+1). If its
    ``revision`` is still null (it was the release its own commit held), ``previous_revision``
    must give its sha, and a null ``data_revision`` becomes that sha too (its commit changed
    data). ``data_revision`` of the new release stays null when its commit changes data.
    """
    number = len(history.releases) + 1
    releases = list(history.releases)
    for i, r in enumerate(releases):
        if r.status != "current":
            continue
        rev = r.revision
        if rev is None:
            if not previous_revision:
                raise InputError(
                    f"release {r.release} ({r.tag}) has no commit sha in the history yet; pass "
                    f"--previous-revision SHA, the commit its Hub tag {r.tag} points at "
                    "(`rcp-data release list --repo OWNER/NAME` shows the Hub's tags)"
                )
            rev = previous_revision
        elif previous_revision and not same_commit(rev, previous_revision):
            raise InputError(f"release {r.release} is commit {rev} in the history, not "
                             f"{previous_revision} (--previous-revision)")
        releases[i] = replace(r, revision=rev, data_revision=r.data_revision or rev,
                              status="superseded", superseded_by=number)
    new = ReleaseRecord(
        release=number,
        tag=release_tag(number, str(judge["model"])),
        revision=None,
        data_revision=data_revision,
        judge=dict(judge),
        calibration=dict(calibration),
        status="current",
        superseded_by=None,
        date=date,
        summary=summary,
        extra=dict(extra or {}),
    )
    out = replace(history, releases=(*releases, new))
    problems = validate_history(out)
    if problems:
        raise InputError("; ".join(problems))
    return out


SYNTHETIC_SUMMARY = "SYNTHETIC data (generated; not a benchmark). "


def synthetic_summary(summary: str, synthetic: bool) -> str:
    """A release summary, starting with SYNTHETIC for a release built from generated data."""
    if not synthetic or summary.startswith("SYNTHETIC"):
        return summary
    return SYNTHETIC_SUMMARY + summary


JUDGING_HASHES = ("prompt_a_sha256", "prompt_b_sha256", "rubric_sha256")


def judge_entry(manifest: BuildManifest) -> dict:
    """The releases.json ``judge`` of a release from its build manifest: the model (the judge's
    name) and its revision, the model id as served when it is another (``served_model``), and the sha256 of the Stage A and Stage B prompts and of the rubric when the
    build took an ``rcp-data judge`` run's record (``parameters.judging``)."""
    out = {"model": manifest.judge.model, "revision": manifest.judge.revision}
    judging = manifest.parameters.get("judging")
    if isinstance(judging, Mapping):
        served = judging.get("judge_model")
        if isinstance(served, str) and served and served != manifest.judge.model:
            out["served_model"] = served   # the id the server gave (``--judge-name``)
        out.update({k: judging[k] for k in JUDGING_HASHES if judging.get(k)})
    return out


def new_release_history(manifest: BuildManifest, *, repo: str, suite: str,
                        previous: History | None = None, summary: str = "",
                        date: str | None = None, previous_revision: str | None = None,
                        synthetic: bool = False) -> History:
    """The history of ``repo`` with the release a build manifest describes appended as
    current (the first release of a new history when ``previous`` is None). The one place a
    new release's record is made from a build."""
    history = previous or History(repo=repo, releases=(), schema=SCHEMA, extra={"suite": suite})
    if history.repo != repo:
        raise InputError(f"the release history is for {history.repo}, not {repo}")
    judge, calibration = manifest.judge, manifest.calibration.to_dict()
    return add_release(
        history,
        judge=judge_entry(manifest),
        calibration=calibration_record(calibration),
        summary=synthetic_summary(summary or f"Judge {judge.model}, 2PL IRT calibration, "
                                             f"{link_name(calibration)} gains.", synthetic),
        date=date,
        previous_revision=previous_revision,
        extra={"synthetic": True} if synthetic else None,
    )


def _tag_targets(refs: object) -> dict[str, str]:
    if isinstance(refs, Mapping):
        return {str(k): str(v) for k, v in refs.items()}
    tags = getattr(refs, "tags", None)
    if tags is None:
        raise TypeError("refs must be a {tag: sha} mapping or huggingface_hub GitRefs")
    return {t.name: t.target_commit for t in tags}


def fill_known_shas(history: History, refs: object) -> History:
    """Fill null ``revision`` s from the Hub's tags (``{tag: sha}`` or ``list_repo_refs``).

    A release whose revision was null held its own data commit, so a null ``data_revision``
    becomes the same sha. Known shas are never changed (a disagreement is for ``refs``' listing
    to flag, not to paper over).
    """
    targets = _tag_targets(refs)
    releases = []
    for r in history.releases:
        sha = targets.get(r.tag)
        if r.revision is None and sha:
            r = replace(r, revision=sha, data_revision=r.data_revision or sha)
        releases.append(r)
    return replace(history, releases=tuple(releases))


def record_release(history: History, published: ReleaseRecord, revision: str,
                   digest: str | None = None) -> History:
    """History with a release the toolkit just published (its commit ``revision`` now known,
    and its content ``digest``, stored beside it as the release's ``"digest"``).

    Replaces an entry of the same number (it must carry the same tag) or appends it; every
    other release marked current becomes superseded by it.
    """
    if not is_sha(revision, full=True):
        raise InputError(f"not a full commit sha: {revision!r}")
    extra = dict(published.extra)
    if digest is not None:
        extra["digest"] = digest
    entry = replace(published, revision=revision,
                    data_revision=published.data_revision or revision, extra=extra)
    releases = []
    for r in history.releases:
        if r.release == entry.release:
            if r.tag != entry.tag:
                raise InputError(f"release {r.release} is {r.tag} in the history, "
                                 f"not {entry.tag}")
            continue
        if r.release > entry.release:
            raise InputError(f"the history already has release {r.release} after "
                             f"release {entry.release}")
        if r.status == "current":
            r = replace(r, status="superseded", superseded_by=entry.release)
        releases.append(r)
    releases.append(entry)
    out = replace(history, releases=tuple(releases))
    problems = validate_history(out)
    if problems:
        raise InputError("; ".join(problems))
    return out


# -- the project's histories: release/<suite>.json ---------------------------------------------
def histories_dir() -> Path:
    """The project's packaged ``release/`` folder (one ``<suite>.json`` per suite; read-only)."""
    from rcp_data import resources

    return resources.release_history_dir()


def history_path(suite: str) -> Path:
    """The project's history of ``suite`` (any spelling of its name)."""
    return histories_dir() / f"{suite_key(suite)}.json"


def load_project_histories(folder: str | Path | None = None) -> dict[str, History]:
    """Every ``<suite>.json`` history in ``folder`` (default: the project's ``release/``)."""
    folder = Path(folder) if folder else histories_dir()
    histories = {}
    for p in sorted(folder.glob("*.json")):
        data = read_json(p)
        schema = data.get("schema") if isinstance(data, Mapping) else None
        if not is_history_schema(schema):  # another tool's file (the demo's demo.json, ...)
            log.warning("skipped %s: not a release history (schema %r)", p, schema)
            continue
        histories[p.stem] = read_history(p)
    return histories


def is_history_schema(schema: object) -> bool:
    """Whether ``schema`` names a release history of any version (``rcp-data.releases/N``)."""
    return isinstance(schema, str) and schema.split("/")[0] == SCHEMA.split("/")[0]
