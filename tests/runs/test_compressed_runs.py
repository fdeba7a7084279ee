"""Run and qrels files as distributed: gzip, bzip2 and xz (told by their first bytes, whatever
their name), tabs, 0-based ranks; each reads exactly as its plain, space-separated twin."""

from __future__ import annotations

import bz2
import gzip
import lzma
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rcp_data.core.errors import InputError
from rcp_data.runs.compressed import compression_of, without_suffix
from rcp_data.runs.qrels_files import read_qrels
from rcp_data.runs.qrels_runs import read_run
from rcp_data.runs.run_files import read_run_file
from rcp_data.runs.runs_in import read_ranking_table

COMPRESS = {"gzip": gzip.compress, "bzip2": bz2.compress, "xz": lzma.compress}


def _nist_run(sep: str, start: int) -> bytes:
    """A SYNTHETIC run in NIST's shape: ``sep``-separated, ranks from ``start``, tied scores."""
    rng = np.random.default_rng(7)
    lines = []
    for q in range(6):
        scores = np.sort(np.round(rng.normal(size=30), 1))[::-1]
        for r, (d, s) in enumerate(zip(rng.permutation(400)[:30], scores, strict=True)):
            lines.append(sep.join([f"{1000 + q}", "Q0", f"{d}", f"{r + start}", f"{s}",
                                   "synthetic"]) + "\n")
    return "".join(lines).encode("ascii")


@pytest.mark.usefixtures("either_run_reader")
@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_compressed_run_reads_as_plain(tmp_path: Path, kind: str) -> None:
    plain = tmp_path / "run.txt"
    plain.write_bytes(_nist_run(" ", 1))
    packed = tmp_path / "run.bin"                       # no suffix: told by its magic bytes
    packed.write_bytes(COMPRESS[kind](_nist_run("\t", 0)))
    assert compression_of(packed) == kind and compression_of(plain) is None
    a, b = read_run(plain, str(plain)), read_run(packed, str(packed))
    assert len(a) == len(b) == 180
    rows = np.arange(len(a))
    assert a.docs.texts(rows) == b.docs.texts(rows)
    assert a.scores.tolist() == b.scores.tolist()
    assert a.query_texts() == b.query_texts()
    pd.testing.assert_frame_equal(read_run_file(plain).drop(columns="rank"),
                                  read_run_file(packed).drop(columns="rank"))
    assert read_ranking_table(packed, split="").to_pylist() == \
        read_ranking_table(plain, split="").to_pylist()


def test_gz_qrels_read_as_plain(tmp_path: Path, trecdl_data: Path) -> None:
    """The REAL DL19 qrels, gzip-compressed and tab-separated xz, read as the plain file."""
    dl19 = trecdl_data / "qrels.dl19-passage.txt"
    data = dl19.read_bytes()
    gz = tmp_path / "qrels.dl19-passage.txt.gz"
    gz.write_bytes(gzip.compress(data))
    tabs = tmp_path / "qrels.tsv.xz"
    tabs.write_bytes(lzma.compress(data.replace(b" ", b"\t")))
    plain = read_qrels(dl19)
    assert len(plain) == 9260 and plain["query-id"].nunique() == 43
    pd.testing.assert_frame_equal(read_qrels(gz), plain)
    pd.testing.assert_frame_equal(read_qrels(tabs), plain)


def test_corrupt_archive_is_one_input_error(tmp_path: Path) -> None:
    bad = tmp_path / "run.gz"
    bad.write_bytes(gzip.compress(_nist_run(" ", 1))[:200])
    with pytest.raises(InputError, match="cannot decompress"):
        read_run(bad, str(bad))


def test_without_suffix() -> None:
    assert without_suffix("input.run1.gz") == "input.run1"
    assert without_suffix("run.txt.xz") == "run.txt"
    assert without_suffix("run.txt") == "run.txt"
