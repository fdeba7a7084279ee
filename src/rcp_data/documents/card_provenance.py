"""Where each part of a release came from, as its card says it: the judge, the first stage and
each reranker run, each from its own record in the build manifest, never from the release's
one SYNTHETIC flag.

A build records the judge's kind (``real``, ``simulated``, ``generated``) and each reranker
run's origin (``given`` as a file, ``generated``, ``simulated``, ``computed`` with a model) in
``parameters.provenance`` (:class:`rcp_data.model.manifest.PartsProvenance`), and each
first-stage run's in its :class:`~rcp_data.model.manifest.FirstStageRecord` (``computed``,
``generated``, else given). A release built before these records has none: its card reads
every part of a SYNTHETIC release as generated and of any other as given, as cards always did
(:attr:`PartOrigins.recorded` is false).

The sentences here are the card's provenance sentences (:func:`notice`,
:func:`relation_parts`, :func:`licence_parts`): where every part was generated, each is the
sentence cards always printed, so such cards do not change.
"""

from __future__ import annotations

from dataclasses import dataclass

from rcp_data.core.specs import SuiteSpec
from rcp_data.model.manifest import BuildManifest


@dataclass(frozen=True)
class PartOrigin:
    """One run as the card names it (a retriever key or a reranker's short name), its origin
    (``given``, ``generated``, ``simulated``, ``computed``) and, computed, with what."""

    name: str
    origin: str
    computed_with: str = ""


@dataclass(frozen=True)
class PartOrigins:
    """How each part of a release came about (see the module's text)."""

    recorded: bool
    data_generated: bool
    judge: str
    judge_kind: str                            # real | simulated | generated
    first_stage: tuple[PartOrigin, ...]
    rerankers: tuple[PartOrigin, ...]

    @property
    def all_generated(self) -> bool:
        """Whether judge and rerankers were generated and no first-stage run was given: what
        the cards' one SYNTHETIC sentence always said (then it is still printed)."""
        return (self.judge_kind == "generated"
                and all(r.origin == "generated" for r in self.rerankers)
                and all(f.origin != "given" for f in self.first_stage))

    @property
    def legacy_text(self) -> bool:
        """Whether the card prints the sentences cards always printed: no record, or every
        part generated."""
        return not self.recorded or self.all_generated

    def first_stage_of(self, origin: str) -> tuple[str, ...]:
        return tuple(f.name for f in self.first_stage if f.origin == origin)


def part_origins(spec: SuiteSpec, manifest: BuildManifest | None, *, synthetic: bool
                 ) -> PartOrigins:
    """The parts' origins of a release (``synthetic``: the release's SYNTHETIC flag, what a
    release without records falls back on)."""
    parts = manifest.provenance if manifest is not None else None
    records = {r.retriever: r for r in (manifest.first_stage if manifest else ())}
    data_generated = spec.synthetic or bool(manifest and manifest.source_fact("synthetic")
                                            is True)
    judge = manifest.judge.model if manifest else ""
    fallback = "generated" if synthetic else "given"
    first = []
    for key in spec.pool.retrievers:
        rec = records.get(key)
        if rec is not None and rec.computed:
            first.append(PartOrigin(key, "computed", rec.model or rec.method))
        elif parts is not None:
            first.append(PartOrigin(key, "generated" if rec is not None and rec.generated
                                    else "given"))
        else:
            first.append(PartOrigin(key, fallback))
    if parts is None:
        return PartOrigins(recorded=False, data_generated=data_generated,
                           judge=judge, judge_kind="generated" if synthetic else "real",
                           first_stage=tuple(first), rerankers=())
    runs = tuple(PartOrigin(spec.short_name(r.model), r.origin, r.computed_with)
                 for r in parts.rerankers)
    return PartOrigins(recorded=True, data_generated=data_generated, judge=judge,
                       judge_kind=parts.judge, first_stage=tuple(first), rerankers=runs)


def _code(names: tuple[str, ...] | list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _runs(runs: tuple[PartOrigin, ...], origin: str) -> list[PartOrigin]:
    return [r for r in runs if r.origin == origin]


def judge_sentence(p: PartOrigins) -> str:
    """What answered for the judge, in one sentence."""
    if p.judge_kind == "generated":
        return (f"Its judge verdicts were generated from fixed random seeds (judge "
                f"`{p.judge}`), and so are its gains.")
    if p.judge_kind == "simulated":
        return (f"Its judge verdicts come from a SIMULATED judge (`{p.judge}`, rcp-data's "
                "stand-in for a served model), and so do its gains.")
    return f"Its judge verdicts come from the judge model `{p.judge}`."


def reranker_sentences(p: PartOrigins) -> list[str]:
    """One sentence per origin of the reranker runs."""
    out = []
    for origin, says in (("generated", "were generated from fixed random seeds"),
                         ("simulated", "are SIMULATED"),
                         ("given", "were given as files")):
        runs = _runs(p.rerankers, origin)
        if runs:
            out.append(f"The reranker scores of {_code([r.name for r in runs])} {says}.")
    computed = _runs(p.rerankers, "computed")
    if computed:
        out.append("The reranker scores of " + _and([
            f"`{r.name}` were computed by rcp-data with the model `{r.computed_with}`"
            if i == 0 else f"`{r.name}` with `{r.computed_with}`"
            for i, r in enumerate(computed)]) + ".")
    return out


def notice(p: PartOrigins) -> str:
    """The SYNTHETIC notice's account of a release whose parts differ (not
    :attr:`PartOrigins.legacy_text`): the data, the judge, the first stage, the rerankers."""
    out = []
    if p.data_generated:
        out.append("Every corpus, query and label in this repository was generated from fixed "
                   "random seeds.")
    out.append(judge_sentence(p))
    for origin, says in (("computed", "were computed by rcp-data"),
                         ("generated", "were generated from fixed random seeds"),
                         ("given", "were given as files")):
        names = p.first_stage_of(origin)
        if names:
            out.append(f"Its first-stage runs of {_code(names)} {says}.")
    out += reranker_sentences(p)
    return " ".join(out)


def relation_parts(p: PartOrigins) -> str:
    """What of a SYNTHETIC release keeps its numbers from the paper's: ``its judge and
    rerankers are generated`` (every part generated, as cards always said), else each part
    that was generated or SIMULATED."""
    if p.legacy_text:
        return "its judge and rerankers are generated"
    parts = []
    if p.data_generated:
        parts.append("its data is generated")
    if p.judge_kind != "real":
        parts.append(f"its judge is {'SIMULATED' if p.judge_kind == 'simulated' else 'generated'}")
    for origin, says in (("generated", "generated"), ("simulated", "SIMULATED")):
        runs = _runs(p.rerankers, origin)
        if runs:
            verb = "is" if len(runs) == 1 else "are"
            parts.append(f"the reranker scores of {_code([r.name for r in runs])} {verb} {says}")
    return _and(parts) if parts else "it is marked SYNTHETIC"


def licence_parts(p: PartOrigins) -> str:
    """The licence paragraph's account of a SYNTHETIC build: what is generated, and whose
    terms apply to the given reranker scores."""
    if p.legacy_text:
        return ("In this SYNTHETIC build the judge outputs and reranker scores are generated; "
                "the upstream terms apply to the upstream data it holds.")
    judge = {"generated": "the judge outputs are generated",
             "simulated": "the judge outputs are SIMULATED",
             "real": f"the judge outputs come from `{p.judge}`"}[p.judge_kind]
    made = [r.name for r in p.rerankers if r.origin in ("generated", "simulated")]
    given = [r.name for r in p.rerankers if r.origin in ("given", "computed")]
    text = f"In this SYNTHETIC build {judge}"
    if made:
        text += f" and the reranker scores of {_code(made)} are generated"
    text += "; the upstream terms apply to the upstream data it holds"
    if given:
        text += (f", and the terms of the models behind {_code(given)} to their scores")
    return text + "."


__all__ = ["PartOrigin", "PartOrigins", "judge_sentence", "licence_parts", "notice",
           "part_origins", "relation_parts", "reranker_sentences"]
