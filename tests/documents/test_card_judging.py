"""The card's judge-run section, from a build manifest's ``parameters.judging``."""

from __future__ import annotations

from rcp_data.documents.card_judging import judging_markdown, judging_of
from rcp_data.judging.tables import judging_record
from rcp_data.model.manifest import BuildManifest


def _judging() -> dict:
    usage = {"A": {"windows": 432, "windows_per_query": 216.0, "placements_per_document": 14.4,
                   "reversed": True, "calls": 450, "input_tokens": 1234567,
                   "output_tokens": 65432, "seconds_in_calls": 812.25, "invalid_windows": 7,
                   "invalid_by_category": {"unparsable": 5, "length": 2, "refusal": 0},
                   "documents_cut": 12, "tokens_cut": 3456},
             "B": {"windows": 200, "windows_per_query": 100.0,
                   "placements_per_document": 6.666667, "reversed": False, "calls": 200,
                   "input_tokens": 654321, "output_tokens": 98765, "seconds_in_calls": 400.0,
                   "invalid_windows": 0, "invalid_by_category": {"unparsable": 0},
                   "documents_cut": 0, "tokens_cut": 0}}
    return judging_record({
        "identity": {"judge": {"model": "org/judge-1"},
                     "prompts": {"prompt_a_sha256": "a" * 64, "prompt_b_sha256": "b" * 64,
                                 "rubric_sha256": "c" * 64,
                                 "criteria": ["C1", "C2", "C3", "C4", "C5"]},
                     "schedule": {"preset": "full", "seed": 42}},
        "tokens": "tokenizer org/judge-1", "usage": usage, "wall_seconds": 1500.04,
        "runs": 2})


def test_section_shows_model_hashes_usage_and_census():
    text = judging_markdown(_judging())
    assert "`org/judge-1`" in text and "preset `full`, seed 42" in text
    for h in ("a" * 64, "b" * 64, "c" * 64):
        assert f"`{h}`" in text
    rows = [line for line in text.splitlines() if line.startswith("| Stage")]
    assert rows == [
        "| Stage A (tournament) | 432 | 216.00 | 14.40 | yes | 450 | 1,234,567 | 65,432 | 812.2 "
        "| 7 | 12 | 3,456 |",
        "| Stage B (rubric) | 200 | 100.00 | 6.67 | no | 200 | 654,321 | 98,765 | 400.0 | 0 "
        "| 0 | 0 |"]
    assert "Wall time: 1,500.0 s over 2 run(s)" in text
    assert "Stage A (tournament) invalid windows by cause: unparsable 5, length 2." in text
    assert "Stage B (rubric) invalid windows by cause" not in text
    header, rule = text.splitlines()[7:9]
    assert header.count("|") == rule.count("|") == 13


def test_no_judge_run_no_section():
    manifest = BuildManifest.from_dict({
        "schema": "rcp-data.build-manifest/1", "suite": "demo",
        "judge": {"model": "m"},
        "calibration": {"item_params": "x.json", "link": "weighted_discrimination"}})
    assert judging_of(manifest) is None
    with_run = BuildManifest.from_dict({**manifest.to_dict(),
                                        "parameters": {"judging": _judging()}})
    assert judging_of(with_run)["judge_model"] == "org/judge-1"
