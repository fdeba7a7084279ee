"""Table cells are escaped in every command's table output (issue 39, item 5): a name from a
user's file holding a tab, a newline, a ``|`` or a terminal escape stays one cell of one row,
in ``compare``'s table and ``verify``'s report as in ``score``, ``agree`` and ``release
list``."""

from __future__ import annotations

import json

from rcp_data.checks.reports import Check, VerifyReport
from rcp_data.cli import main

EVIL = "org/evil\tmodel\nforged | row\x1b[31m"
SHOWN = "org/evil\\tmodel\\nforged \\| row\\x1b[31m"       # the Markdown-style cell
SHOWN_TEXT = "org/evil\\tmodel\\nforged | row\\x1b[31m"    # the plain-text cell


def _replay(value: float) -> dict:
    return {"k": 10, "tie_rule": "doc-id", "view": "subsets",
            "metrics": {"rcp_ndcg": {EVIL: {"mean": value}}}}


def test_compare_prints_a_hostile_model_name_as_one_cell(tmp_path, capsys):
    ours, theirs = tmp_path / "ours.json", tmp_path / "theirs.json"
    ours.write_text(json.dumps(_replay(0.5)))
    theirs.write_text(json.dumps(_replay(0.6)))
    capsys.readouterr()
    assert main(["compare", str(ours), "--against", str(theirs), "--suite", "demo"]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert len(lines) == 2, out                      # the count line and the one failed cell
    assert lines[0] == f"{ours} vs {theirs}: 1 cells, 0 matched, 0 known, 1 failed"
    assert lines[1] == (f"  failed  rcp_ndcg@10 rule (a) subsets | {SHOWN} | mean: 50.00 vs "
                        "60.00 (diff -10.000)")
    assert "\x1b" not in out and "\t" not in out
    # the JSON keeps the name as it is
    assert main(["compare", str(ours), "--against", str(theirs), "--suite", "demo",
                 "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["rows"][0]["model"] == EVIL


def test_verify_report_prints_hostile_findings_as_one_line_each(tmp_path):
    checks = [Check("ids", False, "every corpus id is unique", expected="no duplicates",
                    found=f"duplicate id {EVIL}", where=f"alpha/corpus.parquet row 3 {EVIL}",
                    details=[f"query {EVIL}"]),
              Check.passed("configs", "configs hold", found=EVIL)]
    report = VerifyReport(target=f"release{EVIL}", root=tmp_path, suite="demo", checks=checks)
    for text in (report.text(), report.brief()):
        assert "\x1b" not in text and "\t" not in text
        assert f"release{SHOWN_TEXT}" in text
    lines = report.text().splitlines()
    assert f"           found:    duplicate id {SHOWN_TEXT}" in lines
    assert f"             - query {SHOWN_TEXT}" in lines
    assert any(line.endswith(f"configs hold ({SHOWN_TEXT})") for line in lines)
    # one line per part: the head (2), a blank, the failed check and its 4 fields, the passed
    # check, a blank and the verdict
    assert len(lines) == 2 + 1 + 5 + 1 + 2
