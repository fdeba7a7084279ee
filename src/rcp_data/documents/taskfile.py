"""Generate a release's ``rcp_ndcg_tasks.py``: the mteb task file other tools read as text.

The file is the template ``templates/rcp_ndcg_tasks.py.tmpl`` with literal JSON blocks filled in
(``_REVISION``, ``_RELEASES``, ``_TASK_METADATA`` keyed by task name, ``_SUBSETS``). Task names
follow the docs/concepts: ``{task}RCPReranking`` (judged pool), ``{task}RCPRetrieval`` (open corpus),
and for suites with page images ``...RCPRerankingOCR`` / ``...RCPRetrievalOCR``; with
``task_versioning = "suffix"`` release N > 1 adds ``.vN`` and earlier releases are marked
``superseded_by``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from rcp_data.core.errors import InputError, UsageError
from rcp_data.core.io import atomic_write_text
from rcp_data.core.specs import SuiteSpec, check_no_todo
from rcp_data.model.card_format import CARD_K
from rcp_data.model.layout import BUILD_MANIFEST, TASK_FILE
from rcp_data.model.manifest import load_manifest

log = logging.getLogger(__name__)

MAIN_SCORE = f"ndcg_float_at_{CARD_K}"      # the main score of a card at the default k
CUTOFFS = (1, 3, 5, 10, 20, 100, 1000)        # the cutoffs every task reports
PAPER_URL = "https://arxiv.org/abs/2609.35739"

# ISO 639-1 codes of the specs and ViDoRe's language names -> mteb's language-script codes.
MTEB_LANGUAGES = {
    "en": "eng-Latn", "fr": "fra-Latn", "de": "deu-Latn", "it": "ita-Latn", "pt": "por-Latn",
    "es": "spa-Latn",
    "english": "eng-Latn", "french": "fra-Latn", "german": "deu-Latn", "italian": "ita-Latn",
    "portuguese": "por-Latn", "spanish": "spa-Latn",
}


def main_score(spec: SuiteSpec) -> str:
    """The tasks' main score: the card's metric at its main k (``ndcg_float_at_10``)."""
    return f"ndcg_float_at_{spec.main_k}"


def cutoffs(spec: SuiteSpec) -> tuple[int, ...]:
    """The cutoffs the tasks report: :data:`CUTOFFS` and every cutoff of the card."""
    return tuple(sorted(set(CUTOFFS) | set(spec.card_k)))


def template_text(name: str) -> str:
    """The text of a packaged template (``rcp_data/templates/<name>``)."""
    return resources.files("rcp_data.documents").joinpath("templates", name).read_text(encoding="utf-8")


@dataclass(frozen=True)
class TaskFamily:
    """One upstream task: its short name, its subsets and (ViDoRe) its domain."""

    family: str
    subsets: tuple[str, ...]
    domain: str | None
    adapted_from: str | None


def families(spec: SuiteSpec) -> list[TaskFamily]:
    """The suite's upstream tasks in spec order (ViDoRe: one per domain, 6 language subsets)."""
    out: dict[str, TaskFamily] = {}
    for sub in spec.subsets:
        upstream = sub.mteb.rsplit("/", 1)[-1] if sub.mteb else None
        if sub.task in out:
            prev = out[sub.task]
            out[sub.task] = TaskFamily(prev.family, prev.subsets + (sub.name,), prev.domain,
                                       prev.adapted_from)
        else:
            out[sub.task] = TaskFamily(sub.task, (sub.name,), sub.domain, upstream)
    return list(out.values())


def has_ocr_view(spec: SuiteSpec) -> bool:
    """Suites with page images also get text-only (OCR) tasks."""
    return "image" in spec.modalities


def task_name(spec: SuiteSpec, family: str, release: int, *, view: str = "reranking",
              text_only: bool = False) -> str:
    """Task name of ``family`` in ``release`` for a view (``reranking`` or ``retrieval``)."""
    if view not in ("reranking", "retrieval"):
        raise UsageError(f"unknown view {view!r}; choose reranking or retrieval")
    name = f"{family}RCP{'Reranking' if view == 'reranking' else 'Retrieval'}"
    if text_only:
        name += "OCR"
    if spec.task_versioning == "suffix" and release > 1:
        name += f".v{release}"
    return name


def _eval_langs(spec: SuiteSpec, subsets: tuple[str, ...]) -> dict[str, list[str]]:
    out = {}
    for s in subsets:
        sub = spec.subset(s)
        codes = [sub.language] if sub.language else list(spec.languages)
        try:
            out[s] = [MTEB_LANGUAGES[c] for c in codes]
        except KeyError as exc:
            raise InputError(f"no mteb language code for {exc.args[0]!r}", path=spec.path,
                             field="languages") from exc
    return out


def _citation() -> str:
    return template_text("rcp_citation.bib").strip() + "\n"


def release_prompts(root: Path) -> dict[str, str]:
    """Query instructions a build recorded for its subsets (the build manifest's
    ``sources.instructions``, e.g. BRIGHT's mteb task prompts), keyed by subset name."""
    path = Path(root) / BUILD_MANIFEST
    manifest = load_manifest(root)
    found = (manifest.source_fact("instructions") if manifest else None) or {}
    if not isinstance(found, dict) or not all(isinstance(v, str) for v in found.values()):
        raise InputError("'sources.instructions' must map subset names to strings",
                         path=str(path), field="sources.instructions")
    return dict(found)


def task_metadata(spec: SuiteSpec, fam: TaskFamily, release: dict, *, repo: str, view: str,
                  text_only: bool, superseded_by: str | None, revision: str,
                  prompts: dict[str, str] | None = None) -> dict:
    """The TaskMetadata keyword arguments of one task (JSON-ready). ``prompts`` (by task family
    or subset name) adds to the spec's ``[source] prompts``."""
    number = int(release["release"])
    image = has_ocr_view(spec) and not text_only
    prompts = {**spec.source.prompts, **(prompts or {})}
    prompt = prompts.get(fam.family) or prompts.get(fam.subsets[0])
    judge = release.get("judge", {}).get("model", "an LLM judge")
    what = ("reranks the judged candidate pool (top_ranked)" if view == "reranking"
            else "searches the open corpus minus each query's excluded documents")
    text = " (OCR text of the pages)" if text_only else ""
    description = (
        f"RCP-nDCG {spec.title}, {fam.family}{text}: the model {what}. Relevance gains are "
        f"calibrated probabilities from one LLM judge ({judge}), release {number}; the main "
        f"score {main_score(spec)} uses them with group-mean tie handling."
    )
    if spec.synthetic:
        description = "SYNTHETIC demo data, not a benchmark. " + description
    return {
        "name": task_name(spec, fam.family, number, view=view, text_only=text_only),
        "description": description,
        "reference": PAPER_URL,
        "dataset": {"path": repo, "revision": revision},
        "type": "Reranking" if view == "reranking" else "Retrieval",
        # page images: text queries against page images, as mteb's own Vidore3 tasks (t2i);
        # the OCR text is the text-only task's (t2t), never mixed into the image documents
        "category": "t2i" if image else "t2t",
        "modalities": ["text", "image"] if image else ["text"],
        "eval_splits": [spec.split],
        "eval_langs": _eval_langs(spec, fam.subsets),
        "main_score": main_score(spec),
        "license": spec.license,
        "annotations_creators": "LM-generated",
        "dialect": [],
        "sample_creation": "created" if spec.synthetic else "found",
        "bibtex_citation": _citation(),
        "prompt": {"query": prompt} if prompt else None,
        "adapted_from": [fam.adapted_from] if fam.adapted_from else None,
        "superseded_by": superseded_by,
    }


def pinned_revision(release: dict) -> str:
    """What a release's tasks pin: its sha once known, else its tag."""
    return release.get("revision") or release["tag"]


def current_release(releases: list[dict]) -> dict:
    current = [r for r in releases if r.get("status") == "current"]
    if len(current) != 1:
        raise InputError(f"release history has {len(current)} current releases; expected 1",
                         field="status")
    return current[0]


def build_blocks(spec: SuiteSpec, releases: list[dict], *, repo: str,
                 prompts: dict[str, str] | None = None) -> dict:
    """The literal blocks of the task file: revision, releases, task metadata, subsets."""
    if not releases:
        raise InputError("empty release history: nothing to pin the tasks to")
    current = current_release(releases)
    by_number = {int(r["release"]): r for r in releases}
    listed = releases if spec.task_versioning == "suffix" else [current]
    views = [("reranking", False), ("retrieval", False)]
    if has_ocr_view(spec):
        views += [("reranking", True), ("retrieval", True)]
    metadata: dict[str, dict] = {}
    for release in sorted(listed, key=lambda r: int(r["release"])):
        number = int(release["release"])
        newer = release.get("superseded_by") if spec.task_versioning == "suffix" else None
        for fam in families(spec):
            for view, text_only in views:
                successor = (task_name(spec, fam.family, int(newer), view=view,
                                       text_only=text_only)
                             if newer is not None and int(newer) in by_number else None)
                md = task_metadata(spec, fam, release, repo=repo, view=view,
                                   text_only=text_only, superseded_by=successor,
                                   revision=pinned_revision(release), prompts=prompts)
                metadata[md["name"]] = {
                    "family": fam.family, "release": number, "view": view,
                    "text_only": text_only, "metadata": md,
                }
    subsets: dict[str, dict] = {}
    number = int(current["release"])
    for fam in families(spec):
        for s in fam.subsets:
            entry = {"task": task_name(spec, fam.family, number), "family": fam.family}
            if has_ocr_view(spec):
                entry["ocr"] = task_name(spec, fam.family, number, text_only=True)
            if fam.domain:
                entry["domain"] = fam.domain
            subsets[s] = entry
    releases_block = {
        str(r["release"]): {"tag": r["tag"], "revision": r.get("revision"),
                            "status": r.get("status"), "superseded_by": r.get("superseded_by")}
        for r in sorted(releases, key=lambda r: int(r["release"]))
    }
    return {"revision": pinned_revision(current), "releases": releases_block,
            "task_metadata": metadata, "subsets": subsets}


def pins_text(releases: list[dict]) -> str:
    """The task file's docstring lines naming what each release pins."""
    lines = []
    for r in sorted(releases, key=lambda r: int(r["release"])):
        pin = (f"commit {r['revision']}" if r.get("revision")
               else "its tag (the sha of the commit holding this file is not known inside it)")
        lines.append(f"- release {r['release']} ({r.get('status')}), tag {r['tag']}: pins {pin}")
    return "\n".join(lines)


def _literal_json(data) -> str:
    text = json.dumps(data, indent=1, ensure_ascii=False)
    if '"""' in text:  # cannot happen with json.dumps, kept as a guard for the raw string
        raise InputError("task metadata would break the task file's raw string literal")
    return text


def render_task_file(spec: SuiteSpec, releases: list[dict], *, repo: str,
                     prompts: dict[str, str] | None = None) -> str:
    """The text of ``rcp_ndcg_tasks.py`` for ``repo`` and its release history; ``prompts``:
    query instructions by subset (see :func:`release_prompts`)."""
    check_no_todo(spec, given=("suite.repo",))   # as build refuses them; the repo is given
    if Path(TASK_FILE).stem == repo.rsplit("/", 1)[-1]:
        raise UsageError(f"the task file may not be named after the repo {repo!r}")
    blocks = build_blocks(spec, releases, repo=repo, prompts=prompts)
    text = template_text("rcp_ndcg_tasks.py.tmpl")
    for key, value in (
        ("PINS", pins_text(releases)),
        ("PRETTY_NAME", spec.pretty_name),
        ("REPO", repo),
        ("MTEB_FLOOR", spec.mteb_floor),
        ("REVISION", blocks["revision"]),
        ("TEXT_ONLY", repr(has_ocr_view(spec))),
        ("CUTOFFS", repr(cutoffs(spec))),
        ("CUTOFF_LIST", ", ".join(map(str, cutoffs(spec)))),
        ("RELEASES", _literal_json(blocks["releases"])),
        ("TASK_METADATA", _literal_json(blocks["task_metadata"])),
        ("SUBSETS", _literal_json(blocks["subsets"])),
    ):
        text = text.replace(f"@@{key}@@", value)
    return text


def write_task_file(root: Path, spec: SuiteSpec, releases: list[dict], *, repo: str) -> Path:
    """Write ``root/rcp_ndcg_tasks.py`` (temp file, then rename), with the query instructions
    the build recorded in ``root``."""
    path = Path(root) / TASK_FILE
    atomic_write_text(path, render_task_file(spec, releases, repo=repo,
                                             prompts=release_prompts(root)))
    log.info("wrote %s (%d releases)", path, len(releases))
    return path


__all__ = [
    "CUTOFFS", "MAIN_SCORE", "TaskFamily", "build_blocks", "cutoffs", "families",
    "has_ocr_view", "main_score",
    "release_prompts", "render_task_file", "task_metadata", "task_name", "template_text", "write_task_file",
]
