"""Comparison of result tables: the real published cards against the paper's printed values."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from rcp_data import resources
from rcp_data.cli import main
from rcp_data.core.errors import UsageError
from rcp_data.core.specs import load_spec
from rcp_data.model.card_format import parse_card_tables
from rcp_data.scoring.compare import (
    compare_files,
    compare_tables,
    load_known_deviations,
    load_tables,
)

NANOBEIR_CARD = "card-rcp-ndcg-nanobeir.md"
VIDORE_CARD = "card-rcp-ndcg-vidore-v3.txt"


def test_project_copy_of_paper_values_is_the_published_file(reference_dir: Path):
    """The published file, byte for byte, plus this project's ``agreement`` section at the end
    (issue 27: the agreement numbers the paper prints, each with its quote)."""
    ours = (resources.provenance_dir() / "paper_values.json").read_bytes()
    published = (reference_dir / "paper_values.json").read_bytes()
    head = published.rstrip()[:-1].rstrip()             # without the closing brace
    assert ours.startswith(head + b',\n  "agreement": {')
    mine = json.loads(ours)
    assert list(mine)[-1] == "agreement"
    del mine["agreement"]
    assert mine == json.loads(published)


def test_nanobeir_card_against_paper_matches_with_exactly_the_known_deviations(
        reference_dir: Path):
    result = compare_files(reference_dir / NANOBEIR_CARD, reference_dir / "paper_values.json")
    counts = Counter((r["metric"], r["status"]) for r in result.rows)
    # rule (a) tables (the paper's NanoBEIR rule): 14 rerankers x (13 datasets + mean)
    assert counts[("qrel_ndcg", "matched")] == 14 * 14
    assert counts[("qrel_ndcg", "known")] == counts[("qrel_ndcg", "failed")] == 0
    assert counts[("rcp_ndcg", "known")] == 10
    assert counts[("rcp_ndcg", "failed")] == 0
    assert counts[("rcp_ndcg", "matched")] == 14 * 14 - 10
    assert {r["tie_rule"] for r in result.rows} == {"doc-id"}
    known = Counter(r["column"] for r in result.rows if r["status"] == "known")
    assert known == {"NanoFEVERRetrieval": 5, "NanoQuoraRetrieval": 2,
                     "NanoNFCorpusRetrieval": 2, "NanoHotpotQARetrieval": 1}
    assert result.ok
    js = result.to_json()
    assert (js["cells"], js["matched"], js["known"], js["failed"]) == (392, 382, 10, 0)


def test_editing_one_card_cell_fails_and_names_it(reference_dir: Path, tmp_path: Path, capsys):
    text = (reference_dir / NANOBEIR_CARD).read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    # the qrel rule (a) table's CTXL-RR-2B row: change its SciFact value 84.4 -> 84.6
    title = lines.index("**qrel-nDCG@10 (%), rule (a): document-id tie-break**\n")
    row = next(i for i in range(title, len(lines)) if lines[i].startswith("| CTXL-RR-2B |"))
    cells = lines[row].split(" | ")
    assert cells[12] == "84.4"
    cells[12] = "84.6"
    lines[row] = " | ".join(cells)
    edited = tmp_path / "README.md"
    edited.write_text("".join(lines), encoding="utf-8")
    result = compare_files(edited, reference_dir / "paper_values.json")
    failed = [r for r in result.rows if r["status"] == "failed"]
    assert len(failed) == 1
    assert (failed[0]["metric"], failed[0]["model"], failed[0]["column"]) == (
        "qrel_ndcg", "CTXL-RR-2B", "NanoSciFactRetrieval")
    assert failed[0]["diff"] == pytest.approx(0.2)
    assert main(["compare", str(edited), "--against", str(reference_dir / "paper_values.json")]) == 1
    out = capsys.readouterr().out
    assert "failed" in out and "CTXL-RR-2B" in out and "NanoSciFactRetrieval" in out
    assert main(["compare", str(reference_dir / NANOBEIR_CARD), "--against",
                 str(reference_dir / "paper_values.json"), "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    assert set(js) == {"cells", "matched", "known", "failed", "rows"}
    assert {"metric", "model", "column", "tables", "reference", "diff", "status"} <= set(
        js["rows"][0])


def test_vidore_text_card_views_and_release_2_differences(reference_dir: Path):
    raw = parse_card_tables((reference_dir / VIDORE_CARD).read_text(encoding="utf-8"))
    assert [(t.metric, t.tie_rule, t.view) for t in raw][:4] == [
        ("rcp_ndcg", "doc-id", "native"), ("rcp_ndcg", "group-mean", "native"),
        ("qrel_ndcg", "doc-id", "native"), ("qrel_ndcg", "group-mean", "native")]
    assert {t.view for t in raw[4:]} == {"languages"}
    assert all(len(t.rows) == 14 and len(t.columns) == 9 for t in raw)
    card = load_tables(reference_dir / VIDORE_CARD)
    assert card.suite == "vidore_v3"
    # release 2 vs the paper: the design note's 39 of 126 native rule-(b) RCP cells differ by at
    # most 0.1 points, all 126 qrel cells agree
    result = compare_files(reference_dir / VIDORE_CARD, reference_dir / "paper_values.json")
    counts = Counter((r["metric"], r["status"]) for r in result.rows)
    assert counts == {("qrel_ndcg", "matched"): 126, ("rcp_ndcg", "matched"): 87,
                      ("rcp_ndcg", "failed"): 39}
    assert {(r["tie_rule"], r["view"]) for r in result.rows} == {("group-mean", "native")}
    assert max(abs(r["diff"]) for r in result.rows) == pytest.approx(0.1)


def test_known_deviations_apply_only_against_the_paper(reference_dir: Path, tmp_path: Path):
    spec = load_spec("nanobeir")
    card = load_tables(reference_dir / NANOBEIR_CARD, spec)
    paper = load_tables(reference_dir / "paper_values.json", spec)
    known = load_known_deviations()
    assert len(known) == 6 and sum(d.cells for d in known if d.suite == "nanobeir") == 10
    # the paper numbers posing as a card: same cells, no known deviations applied
    as_card = type(paper)(paper.source, "card", paper.suite, paper.cells, paper.half_unit)
    plain = compare_tables(card, as_card, spec, known=known)
    assert plain.count("known") == 0 and plain.count("failed") == 10
    # the symmetric direction against the paper gives the same verdict
    rev = compare_tables(paper, card, spec, known=known)
    assert rev.count("known") == 10 and rev.count("failed") == 0
    # a reference cell the tables lack fails
    fewer = dict(card.cells)
    fewer.pop(next(iter(fewer)))
    short = type(card)(card.source, "card", card.suite, fewer, card.half_unit)
    missing = compare_tables(short, paper, spec, known=known)
    assert missing.count("failed") == 1
    assert [r for r in missing.rows if r["status"] == "failed"][0]["tables"] is None


def test_replay_json_against_card_and_nothing_in_common(tmp_path: Path):
    replay = {"k": 10, "tie_rule": "doc-id", "view": "subsets", "metrics": {
        "rcp_ndcg": {"demo/alpha-reranker": {"alpha": 0.91234, "beta": 0.8, "mean": 0.85617}},
        "qrel_ndcg": {"demo/alpha-reranker": {"alpha": 0.5, "beta": 0.25, "mean": 0.375}}}}
    path = tmp_path / "replay.json"
    path.write_text(json.dumps(replay))
    card = tmp_path / "README.md"
    card.write_text(
        "**RCP-nDCG@10 (%), rule (a): document-id tie-break**\n\n"
        "| Reranker | Alpha | Beta | Mean |\n|---|---:|---:|---:|\n"
        "| Alpha-RR | 91.2 | 80.0 | 85.7 |\n\n"
        "**qrel-nDCG@10 (%), rule (b): group-mean gain for ties**\n\n"
        "| Reranker | Alpha | Beta | Mean |\n|---|---:|---:|---:|\n"
        "| Alpha-RR | 50.0 | 25.0 | 37.5 |\n", encoding="utf-8")
    result = compare_files(path, card)
    assert [(r["column"], r["status"]) for r in result.rows] == [
        ("alpha", "matched"), ("beta", "matched"), ("mean", "failed")]       # 85.617 vs 85.7
    assert result.rows[2]["diff"] == pytest.approx(-0.083)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({**replay, "tie_rule": "pool-order"}))
    with pytest.raises(UsageError, match="nothing to compare"):
        compare_files(other, card)


def test_tables_before_a_markdown_rule_are_read():
    """A card whose body has a ``---`` rule line: the front matter ends at its own closing
    ``---``, and tables on both sides of the rule are read (hand-made card, not real data)."""
    table = ("**RCP-nDCG@10 (%), rule ({r}): x**\n\n| Reranker | Alpha | Mean |\n"
             "|---|---:|---:|\n| Alpha-RR | {v} | {v} |\n")
    text = ("---\ntags:\n- demo\n---\n\n# Card\n\n" + table.format(r="a", v="91.2")
            + "\n---\n\n" + table.format(r="b", v="90.0") + "\n---\n\nThe end.\n")
    tables = parse_card_tables(text)
    assert [(t.tie_rule, t.rows) for t in tables] == [
        ("doc-id", [("Alpha-RR", [91.2, 91.2])]), ("group-mean", [("Alpha-RR", [90.0, 90.0])])]
    assert parse_card_tables(text.replace("\n---\n\n**", "\n\n**")) == tables
