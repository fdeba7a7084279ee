"""The verify report says why a check is absent or skipped, on the check's own line."""

from __future__ import annotations

from pathlib import Path

from rcp_data.checks.reports import Check, VerifyReport, reason


def _report() -> VerifyReport:
    checks = [
        Check.passed("files-readable", "every table is readable", "21 tables"),
        Check("record", True, "the Hub's tags and releases.json name the recorded shas",
              "a record of o/n", "absent: neither the packaged release/ histories nor "
              "--histories record this repository", "release/<suite>.json", status="absent"),
        Check("fusion", True, "provenance-first-stage present", "present", "absent",
              "provenance/first_stage/alpha.parquet", status="absent"),
        Check("paper-tables", True, "the paper's numbers", found="not compared: a SYNTHETIC "
              "suite has no paper numbers", status="skipped"),
    ]
    return VerifyReport(target="o/n@v1", root=Path("."), repo="o/n", sha="a" * 40,
                        suite="demo", release=1, tag="v1", checks=checks, synthetic=True)


def test_each_absent_or_skipped_check_says_why():
    text = _report().text()
    lines = text.splitlines()
    assert ("[ absent] record — neither the packaged release/ histories nor --histories record "
            "this repository") in lines
    # a bare "absent" finding: what was looked for, and where
    assert ("[ absent] fusion — provenance-first-stage present: absent "
            "(provenance/first_stage/alpha.parquet)") in lines
    assert "[skipped] paper-tables — a SYNTHETIC suite has no paper numbers" in lines
    assert lines[-1] == "4 checks: 2 absent, 1 ok, 1 skipped. VERIFIED (SYNTHETIC data)"
    # the check's question stays in the block under it
    i = lines.index("[ absent] record — neither the packaged release/ histories nor "
                    "--histories record this repository")
    assert lines[i + 1].split() == ["check:", *["the", "Hub's", "tags", "and", "releases.json", "name", "the", "recorded", "shas"]]


def test_the_brief_report_keeps_every_check_that_is_not_ok():
    brief = _report().brief().splitlines()
    assert brief[0] == f"rcp-data verify o/n@v1 (commit {'a' * 12})"
    assert [line.split(" — ")[0] for line in brief[1:-1]] == [
        "[ absent] record", "[ absent] fusion", "[skipped] paper-tables"]
    assert brief[-1] == _report().text().splitlines()[-1]
    failed = Check.failed("gains", "gain = link(theta)", "within 1e-12", "3 differ", "qrels")
    report = VerifyReport(target="d", root=Path("."), checks=[failed])
    assert report.brief().splitlines() == [
        "rcp-data verify d", "[ FAILED] gains — gain = link(theta) (found 3 differ)",
        "1 checks: 1 failed. FAILED (1 check(s))"]
    bare = Check("counts", True, "build manifest counts", "present", "absent", "",
                 status="absent")
    assert reason(bare) == "build manifest counts: absent"
