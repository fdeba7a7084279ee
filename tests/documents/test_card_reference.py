"""A generated NanoBEIR card against the published one, and SYNTHETIC labels end to end.

Data: NanoBEIR from SYNTHETIC nano-beir cache files (tests/fixtures_nanobeir.py) with SYNTHETIC
judge inputs (rcp_data.demo.synthetic_judge), built once for this module. The published card
is ../shared/reference/card-rcp-ndcg-nanobeir.md. The generated card must have the published
card's sections, in order, and state each of its named facts in the same section; the only
differences allowed are those the project states (documents/card.py: ADDED_SECTIONS,
ADDED_CONFIGS) and the SYNTHETIC labels of generated data.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import card_front_matter
from rcp_data.model.history import fill_known_shas, read_history
from rcp_data.model.layout import BUILD_MANIFEST, RELEASES_JSON

REPO = "rcp-test/nanobeir-synthetic"
SHA = "0123456789abcdef0123456789abcdef01234567"
REAL_RERANKERS = set(load_spec("nanobeir").rerankers) | set(load_spec("nanobeir").rerankers
                                                           .values())


@pytest.fixture(scope="module")
def built(irds_home, tmp_path_factory) -> Path:
    from support.nanobeir_fixtures import make_all, stage

    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.demo.synthetic_judge import write_synthetic_inputs
    from rcp_data.release.prepare import prepare_release
    from rcp_data.sources.nanobeir import read_suite

    work = tmp_path_factory.mktemp("nanobeir-reference")
    stage(make_all())
    spec = load_spec("nanobeir")
    source = read_suite(spec, {"allow_download": "0"})
    inputs = write_synthetic_inputs(spec, source, work / "inputs")
    build_release(spec, source, read_inputs(inputs), work / "release")
    prepare_release(work / "release", spec, REPO, date="2026-11-30")
    return work / "release"


@pytest.fixture(scope="module")
def card_with_sha(built) -> str:
    """The card as ``card regenerate`` writes it once the Hub knows the release's sha."""
    from rcp_data.documents.card import render_card

    history = read_history(built / RELEASES_JSON)
    history = fill_known_shas(history, {history.current.tag: SHA})
    return render_card(built, history=history)


@pytest.fixture(scope="module")
def reference(reference_dir) -> str:
    return (reference_dir / "card-rcp-ndcg-nanobeir.md").read_text(encoding="utf-8")


def _body(text: str) -> str:
    return text.split("\n---\n", 1)[1] if text.startswith("---") else text


def sections(text: str) -> dict[str, str]:
    """``{normalised heading: text}`` of the ``## `` sections; digits become N and the judge
    named after 'ONE judge:' is dropped."""
    out: dict[str, str] = {}
    name = "intro"
    for line in _body(text).splitlines():
        if line.startswith("## "):
            name = re.sub(r"\d+", "N", line[3:].split(" judge:")[0]).strip()
            out[name] = ""
            continue
        out[name] = out.get(name, "") + line + "\n"
    return out


# Named facts of the published card: (what, section, pattern). Each must hold in that section of
# both cards (patterns match the published wording and the project's).
NAMED_FACTS = [
    ("the mteb PR", "intro", r"\[PR #5516\]\(https://github\.com/embeddings-benchmark/mteb/pull/5516\)"),
    ("the task-rename notice", "intro", r"\*\*(Renamed|Task names changed) \(October 2026\)"),
    ("stock mteb, no fork", "intro", r"mteb.{0,60}≥ 2\.0\.1"),
    ("the second judge", "⚠️ Gains come from ONE", r"gpt-oss-120b"),
    ("the judge's link in the release table", "Releases and judge provenance",
     r"\| 1 \| `v1-[^`]+` \|"),
    ("the copied self-document, named", "Evaluation protocol", r"`[^`\s]+` → `[^`\s]+`"),
    ("NFCorpus's deep queries, named", "Evaluation protocol",
     r"NFCorpus.*(more qrel positives than fit|More positives than the pool holds)"),
    ("the query-instruction statement", "Layout", r"prompt\[\"query\"\]"),
    ("Cohere Embed v4", "How the pool was built", r"Cohere Embed v4"),
    ("Octen-Embedding-8B, linked", "How the pool was built",
     r"\[Octen-Embedding-8B\]\(https://huggingface\.co/Octen/Octen-Embedding-8B\)"),
    ("BM25", "How the pool was built", r"BM25"),
    ("unweighted RRF with k = 60", "How the pool was built", r"unweighted.*(RRF|rank fusion).*k = 60"),
    ("the pinned sha in the results intro", "Results: N rerankers under both tie rules",
     r"provenance-runs`?\s+at\s+revision `[0-9a-f]{40}`"),
    ("the Relation to the paper paragraph", "Results: N rerankers under both tie rules",
     r"\*\*Relation to the paper\.\*\*"),
    ("both tie rules", "Results: N rerankers under both tie rules", r"\*\*\(b\)\*\*"),
    ("the reranker map", "Results: N rerankers under both tie rules", r"Rerankers\*?\*? \(hub"),
    ("the declared licence", "Licence and attribution", r"CC-BY-4\.0"),
    ("MS MARCO's non-commercial terms", "Licence and attribution", r"MS MARCO.*non-commercial"),
    ("cite MTEB and the sources", "Licence and attribution", r"cite.*MTEB.*(source|upstream)"),
    ("the RCP-nDCG citation", "Licence and attribution", r"@misc\{schmidt2026rcp"),
    ("the external validation data", "Licence and attribution",
     r"fabianschmidt-cohere/rcp-ndcg-external-validation"),
]


def test_generated_card_has_the_published_sections_and_named_facts(card_with_sha, reference):
    from rcp_data.documents.card import ADDED_SECTIONS

    ours, theirs = sections(card_with_sha), sections(reference)
    assert [s for s in ours if s not in ADDED_SECTIONS] == list(theirs)
    missing = []
    for what, section, pattern in NAMED_FACTS:
        for name, card in (("published", theirs), ("generated", ours)):
            if not re.search(pattern, card.get(section, ""), re.S):
                missing.append(f"{name}: {what} ({section})")
    assert not missing
    # the sha the results intro pins is the release's recorded data commit
    assert f"at revision `{SHA}`" in card_with_sha


def test_generated_configs_differ_only_by_the_stated_provenance(card_with_sha, reference):
    from rcp_data.documents.card import ADDED_CONFIGS

    ours = {c["config_name"] for c in card_front_matter(card_with_sha)["configs"]}
    theirs = {c["config_name"] for c in card_front_matter(reference)["configs"]}
    assert theirs <= ours
    # and a {subset}-gains config beside every {subset}-qrels (mteb's float-gain loader)
    gains = {n for n in ours - theirs if n.endswith("-gains")}
    assert gains == {n.removesuffix("-qrels") + "-gains" for n in ours if n.endswith("-qrels")}
    assert ours - theirs - gains <= set(ADDED_CONFIGS)
    assert "provenance-first-stage" in ours - theirs


def test_synthetic_build_says_so_everywhere(built, card_with_sha):
    from rcp_data.checks.verify import verify_release_dir

    manifest = json.loads((built / BUILD_MANIFEST).read_text(encoding="utf-8"))
    assert manifest["synthetic"] is True
    assert manifest["judge"]["model"] == "rcp-data/SYNTHETIC-judge"
    history = json.loads((built / RELEASES_JSON).read_text(encoding="utf-8"))
    (release,) = history["releases"]
    assert release["synthetic"] is True and release["summary"].startswith("SYNTHETIC")
    card = (built / "README.md").read_text(encoding="utf-8")
    body = _body(card).lstrip()
    assert "SYNTHETIC" in body.splitlines()[0]                 # the title
    assert body.index("SYNTHETIC DATA") < body.index("## ")   # the banner, before any section
    front = card_front_matter(card)
    assert "synthetic" in front["tags"] and "SYNTHETIC" in front["pretty_name"]
    # no real reranker or judge name, no link to a judge page
    runs = {m for m in re.findall(r"= `([^`]+)`", sections(card)["Results: N rerankers under "
                                                                      "both tie rules"])}
    assert runs and all("SYNTHETIC" in m for m in runs)
    assert not REAL_RERANKERS & set(re.findall(r"`([^`]+)`", card))
    assert "Qwen3.5" not in card and "huggingface.co/rcp-data" not in card
    table = sections(card_with_sha)["Releases and judge provenance"]
    assert "(SYNTHETIC)" in table and "](https://huggingface.co/" not in table
    # RELEASES.md and verify's report line
    from rcp_data.documents.releases_md import render_suite
    from rcp_data.model.history import History

    md = render_suite("nanobeir", History.from_dict(history))
    assert "rcp-data/SYNTHETIC-judge @ `synthetic` (SYNTHETIC)" in md
    report = verify_release_dir(built, link_checked=True)
    assert report.synthetic and report.to_json()["synthetic"] is True
    suite_line = next(line for line in report.text().splitlines() if "suite " in line)
    assert "SYNTHETIC" in suite_line
    assert report.text().rstrip().endswith("(SYNTHETIC data)")


def test_bm25_settings_the_card_prints_are_the_builds():
    """The card's BM25 settings (builders/_card.toml) are those stages/bm25.py runs with."""
    from rcp_data.building import bm25

    printed = load_spec("nanobeir").card.retrievers["bm25"].settings
    s = bm25.settings()
    for part in (s["library"], f"method {s['method']}", f"k1 = {s['k1']}", f"b = {s['b']}",
                 f"{s['stopwords'].capitalize()} stopwords",
                 f"Snowball {s['stemmer'].split()[-1].capitalize()} stemmer"):
        assert part in printed, part
