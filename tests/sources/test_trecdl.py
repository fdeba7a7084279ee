"""TREC-DL builder: ir_datasets offline cache (REAL qrels/topics, SYNTHETIC passages), pools,
first stage, judge attach, layout, rebuilds and bad input."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from support import trecdl_fixtures as fx

from rcp_data.core.errors import InputError
from rcp_data.core.specs import load_spec
from rcp_data.model.layout import BUILD_MANIFEST, provenance_file, subset_file

YEARS = {"trec_dl_2019": 2019, "trec_dl_2020": 2020}


@pytest.fixture(scope="module")
def spec():
    return load_spec("trecdl")


@pytest.fixture(scope="module")
def staged(tmp_path_factory, trecdl_data, irds_home):
    return fx.stage_cache(tmp_path_factory.mktemp("trecdl-work"), trecdl_data)


@pytest.fixture(scope="module")
def source(spec, staged):
    from rcp_data.sources.trecdl import read_suite

    return read_suite(spec, {"raw_collection": str(staged.raw)})


@pytest.fixture(scope="module")
def inputs_dir(spec, staged, tmp_path_factory):
    root = tmp_path_factory.mktemp("trecdl-inputs")
    info = fx.write_inputs(root, staged, spec=spec)
    return root, info


@pytest.fixture(scope="module")
def built(spec, source, inputs_dir, tmp_path_factory):
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs

    root, info = inputs_dir
    out = tmp_path_factory.mktemp("trecdl-out") / "release"
    manifest = build_release(spec, source, read_inputs(root), out)
    return out, manifest, info


# -- sources ---------------------------------------------------------------------------------
def test_real_queries_and_qrels(source, staged):
    counts = {name: (len(s.queries), s.qrels["query-id"].nunique(), len(s.qrels))
              for name, s in source.subsets.items()}
    expected = {s.name: (s.upstream["queries"], s.upstream["queries"], s.upstream["qrels"])
                for s in load_spec("trecdl").subsets}
    assert counts == expected
    for name, sub in source.subsets.items():
        year = YEARS[name]
        assert set(sub.qrels["score"]) <= {0, 1, 2, 3}
        assert sub.qrels["score"].dtype == np.int64
        # same labels as the file, independently parsed
        real = staged.real.qrels[year]
        pd.testing.assert_frame_equal(sub.qrels.reset_index(drop=True),
                                      real.reset_index(drop=True))
        # queries: the topics that have qrels, with their text
        topics = staged.real.topics[year].set_index("id")["text"]
        assert sub.queries["text"].tolist() == topics.loc[sub.queries["id"]].tolist()
        assert set(sub.queries["id"]) == set(real["query-id"])
    assert source.subsets["trec_dl_2019"].corpus is source.subsets["trec_dl_2020"].corpus
    assert source.subsets["trec_dl_2019"].corpus.group == "msmarco_passage"


def test_corpus_stream_is_ir_datasets_repaired_text(source, staged):
    corpus = source.subsets["trec_dl_2019"].corpus
    assert corpus.size == len(staged.ids)
    clean = fx.read_tsv(staged.clean)
    batches = list(corpus.batches())
    assert max(b.num_rows for b in batches) <= 100_000
    got = pd.concat([b.to_pandas() for b in batches], ignore_index=True)
    assert got["id"].tolist() == staged.ids
    # ir_datasets' FixEncoding output equals the clean text the generator intended
    assert got["text"].tolist() == clean["text"].tolist()
    repair = source.facts["corpus"]["repair"]
    assert repair["changed_vs_raw"] == staged.counts["changed"] > 0
    assert repair["verified_against_raw"] is True


def test_judged_and_retrieved_ids_are_in_the_corpus(staged, inputs_dir):
    ids = set(staged.ids)
    for year in (2019, 2020):
        assert set(staged.real.qrels[year]["corpus-id"]) <= ids
        assert set(inputs_dir[1]["pools"][year]["corpus-id"]) <= ids


def test_raw_collection_mismatch_is_an_error(spec, staged, tmp_path):
    from rcp_data.sources.trecdl import read_suite

    bad = tmp_path / "raw.tsv"
    lines = staged.raw.read_bytes().split(b"\n")
    lines[5] = b"999999999\t" + lines[5].split(b"\t", 1)[1]
    bad.write_bytes(b"\n".join(lines))
    src = read_suite(spec, {"raw_collection": str(bad), "batch_rows": "1000"})
    with pytest.raises(InputError) as err:
        for _ in src.subsets["trec_dl_2019"].corpus.batches():
            pass
    assert str(bad) in str(err.value) and "row 6" in str(err.value)


def test_non_integer_grade_names_file_and_line(spec, staged, tmp_path):
    from rcp_data.sources.trecdl import msmarco_dir, read_suite

    qrels = msmarco_dir() / "trec-dl-2020" / "qrels"
    original = qrels.read_bytes()
    lines = original.split(b"\n")
    lines[41] = lines[41].rsplit(b" ", 1)[0] + b" 2.5"
    try:
        qrels.write_bytes(b"\n".join(lines))
        with pytest.raises(InputError) as err:
            read_suite(spec, {})
        msg = str(err.value)
        assert str(qrels) in msg and "row 42" in msg and "'2.5'" in msg
    finally:
        qrels.write_bytes(original)


def _cli_build_with_qrels(inputs_dir, tmp_path, capsys, year: int, content: bytes
                          ) -> tuple[int, str, Path]:
    """``rcp-data build trecdl`` with year ``year``'s NIST qrels file replaced by ``content``
    (restored afterwards); returns the exit code, stderr and the qrels path."""
    from rcp_data.cli import main
    from rcp_data.sources.trecdl import msmarco_dir

    qrels = msmarco_dir() / f"trec-dl-{year}" / "qrels"
    original = qrels.read_bytes()
    out = tmp_path / "out"
    capsys.readouterr()
    try:
        qrels.write_bytes(content)
        code = main(["-q", "build", "trecdl", "--inputs", str(inputs_dir[0]), "--out", str(out),
                     "--repo", "rcp-test/trecdl-bad-qrels"])
    finally:
        qrels.write_bytes(original)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.split("\r")[-1], qrels  # the line after the progress bars


def test_grade_1_5_is_reported_as_the_qrels_line_not_the_queries(staged, inputs_dir, tmp_path,
                                                                   capsys):
    """ir_datasets reads a year's judged queries through its qrels: the qrels file is checked
    first, so a grade 1.5 names the qrels file and line (it once read 'could not read the
    queries')."""
    from rcp_data.sources.trecdl import msmarco_dir

    lines = (msmarco_dir() / "trec-dl-2019" / "qrels").read_bytes().split(b"\n")
    lines[9] = lines[9].rsplit(b" ", 1)[0] + b" 1.5"
    code, err, qrels = _cli_build_with_qrels(inputs_dir, tmp_path, capsys, 2019,
                                             b"\n".join(lines))
    assert (code, err) == (2, f"rcp-data build: error: {qrels}, row 10, field 'grade': grade "
                              "'1.5' is not an integer\n")


def test_empty_qrels_file_is_an_error(staged, inputs_dir, tmp_path, capsys):
    code, err, qrels = _cli_build_with_qrels(inputs_dir, tmp_path, capsys, 2020, b"")
    assert (code, err) == (2, f"rcp-data build: error: {qrels}: the qrels file holds no "
                              "judgements\n")


def test_non_utf8_qrels_file_names_its_line(staged, inputs_dir, tmp_path, capsys):
    from rcp_data.sources.trecdl import msmarco_dir

    lines = (msmarco_dir() / "trec-dl-2020" / "qrels").read_bytes().split(b"\n")
    lines[3] = lines[3].replace(b" 0 ", b" \xe9 ", 1)
    code, err, qrels = _cli_build_with_qrels(inputs_dir, tmp_path, capsys, 2020,
                                             b"\n".join(lines))
    at = lines[3].index(b"\xe9")
    assert (code, err) == (2, f"rcp-data build: error: {qrels}, row 4: not UTF-8 text "
                              f"(invalid continuation byte at byte {at})\n")


def test_unmarked_collection_is_refused_not_deleted(spec, staged):
    from rcp_data.sources.trecdl import msmarco_dir, read_suite, stage_collection

    marker = msmarco_dir() / "irds_version.txt"
    coll = msmarco_dir() / "collection.tsv"
    read_suite(spec, {})  # builds collection.tsv from the tarball if not yet done
    try:
        marker.unlink()
        with pytest.raises(InputError, match="irds_version.txt"):
            read_suite(spec, {})
        assert coll.exists()
    finally:
        stage_collection(staged.clean)
    # a placed repaired collection.tsv (+ v2 marker) reads back unchanged
    got = pd.concat([b.to_pandas() for b in read_suite(spec, {}).subsets[
        "trec_dl_2019"].corpus.batches()], ignore_index=True)
    assert got["text"].tolist() == fx.read_tsv(staged.clean)["text"].tolist()


# -- build -----------------------------------------------------------------------------------
def _read(out: Path, rel: str) -> pd.DataFrame:
    return pq.read_table(out / rel).to_pandas()


def test_pools_equal_brute_force(built, staged):
    out, manifest, info = built
    for name, year in YEARS.items():
        pool = _read(out, provenance_file("pool", name))
        expected = info["pools"][year]
        assert pool["query-id"].tolist() == expected["query-id"].tolist()
        assert pool["corpus-id"].tolist() == expected["corpus-id"].tolist()
        assert pool["pool_rank"].tolist() == expected["pool_rank"].tolist()
        assert pool["gt_injected"].tolist() == expected["gt_injected"].tolist()
        np.testing.assert_allclose(pool["rrf_score"], expected["rrf_score"], rtol=0, atol=1e-15)
        sizes = pool.groupby("query-id").size()
        assert (sizes >= 150).all()
        assert manifest.counts[name]["gt_injected"] == int(expected["gt_injected"].sum())
        assert not pool["excluded"].any() and pool["judged"].all()
        # every NIST-labelled passage is in its query's pool; qrels rows = pool pairs
        qrels = _read(out, subset_file(name, "qrels"))
        labels = staged.real.qrels[year]
        pairs = set(zip(pool["query-id"], pool["corpus-id"], strict=True))
        assert set(zip(labels["query-id"], labels["corpus-id"], strict=True)) <= pairs
        assert len(qrels) == len(pool)
        assert list(zip(qrels["query-id"], qrels["corpus-id"], strict=True)) == list(
            zip(pool["query-id"], pool["corpus-id"], strict=True))
        graded = qrels.merge(labels, on=["query-id", "corpus-id"], how="left",
                             suffixes=("", "_nist"))
        assert (graded["score"] == graded["score_nist"].fillna(0)).all()
        assert qrels["theta"].notna().all() and qrels["gain"].between(0, 1).all()
        top = _read(out, subset_file(name, "top_ranked"))
        assert sum(len(x) for x in top["corpus-ids"]) == len(pool)


def test_fusing_written_first_stage_reproduces_rrf_fused(built):
    out, _, _ = built
    for name in YEARS:
        fs = _read(out, provenance_file("first_stage", name))
        assert set(fs["retriever"]) == {"embed_v4", "bm25", "octen", "rrf_fused"}
        for q, grp in fs.groupby("query-id", sort=False):
            runs = {r: list(zip(g["corpus-id"], g["rank"], strict=True))
                    for r, g in grp.groupby("retriever") if r != "rrf_fused"}
            fused = fx.brute_force_fuse(runs)[:150]
            stored = grp[grp["retriever"] == "rrf_fused"].sort_values("rank")
            assert stored["corpus-id"].tolist() == [d for d, _ in fused], q
            assert np.max(np.abs(stored["score"].to_numpy() - [s for _, s in fused])) < 1e-12


def test_unreleased_dev_queries_are_ignored(built):
    out, manifest, info = built
    dev = set(info["dev_ids"])
    for path in out.rglob("*.parquet"):
        table = pq.read_table(path)
        if "query-id" in table.column_names:
            assert not dev & set(table.column("query-id").to_pylist()), path
    runs = _read(out, provenance_file("runs", "trec_dl_2019"))
    assert runs["model"].nunique() == 3 and runs["is_judge"].sum() > 0
    assert manifest.sources["corpus"]["repair"]["changed_vs_raw"] > 0


def test_card_states_the_repair_count_and_trec_facts(built, staged):
    from rcp_data.core.specs import load_spec
    from rcp_data.documents.card import render_card

    out, manifest, _ = built
    card = render_card(out, spec=load_spec("trecdl"), repo="rcp-test/trecdl")
    changed = manifest.sources["corpus"]["repair"]["changed_vs_raw"]
    total = manifest.sources["corpus"]["documents"]
    assert f"{changed:,} of {total:,} passages" in card
    assert "97 queries" in card or "(97 queries" in card


def test_shared_corpus_written_once(built, staged):
    out, _, _ = built
    shards = sorted((out / "corpus" / "msmarco_passage").glob("corpus-*.parquet"))
    assert [p.name for p in shards] == ["corpus-00000-of-00001.parquet"]
    table = pq.read_table(shards[0])
    assert table.column_names == ["id", "title", "text"]
    assert table.num_rows == len(staged.ids)
    assert not (out / "trec_dl_2019" / "corpus.parquet").exists()


def test_rebuild_is_byte_identical(spec, staged, inputs_dir, built, tmp_path):
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs
    from rcp_data.sources.trecdl import read_suite

    out1, _, _ = built
    out2 = tmp_path / "again"
    src = read_suite(spec, {"raw_collection": str(staged.raw)})
    build_release(spec, src, read_inputs(inputs_dir[0]), out2)
    files1 = sorted(p.relative_to(out1) for p in out1.rglob("*") if p.is_file())
    files2 = sorted(p.relative_to(out2) for p in out2.rglob("*") if p.is_file())
    assert files1 == files2 and Path(BUILD_MANIFEST) in files1
    for rel in files1:
        assert (out1 / rel).read_bytes() == (out2 / rel).read_bytes(), rel


def test_cli_build_computes_bm25_when_absent(spec, staged, tmp_path, capsys):
    from rcp_data.cli import main

    info = fx.write_inputs(tmp_path / "inputs", staged, spec=spec, give_bm25=False)
    out = tmp_path / "out"
    code = main(["build", "trecdl", "--inputs", str(tmp_path / "inputs"), "--out", str(out),
                 "--source-option", f"raw_collection={staged.raw}", "--repo", "rcp-test/trecdl",
                 "--json"])
    assert code == 0
    printed = json.loads(capsys.readouterr().out)   # status lines show on a terminal only
    assert printed["suite"] == "trecdl" and printed["queries"] == 97
    for name, year in YEARS.items():
        pool = _read(out, provenance_file("pool", name))
        assert pool["corpus-id"].tolist() == info["pools"][year]["corpus-id"].tolist()
        fs = _read(out, provenance_file("first_stage", name))
        bm25 = fs[fs["retriever"] == "bm25"]
        assert bm25.groupby("query-id").size().max() == 150


# -- bad input -------------------------------------------------------------------------------
def _copy_inputs(inputs_dir, tmp_path) -> Path:
    root = tmp_path / "inputs"
    shutil.copytree(inputs_dir[0], root)
    return root


def _released_line(lines: list[str], info: dict) -> int:
    """Index of the first line of a run file that belongs to a released query."""
    released = set(info["query_ids"][2019]) | set(info["query_ids"][2020])
    return next(i for i, line in enumerate(lines) if line.split()[0] in released)


def _fails(spec, source, root: Path, tmp_path: Path) -> InputError:
    from rcp_data.building.build import build_release
    from rcp_data.building.contract import read_inputs

    out = tmp_path / "out"
    with pytest.raises(InputError) as err:
        build_release(spec, source, read_inputs(root), out)
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out")]
    return err.value


def test_duplicate_run_line(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    run = next((root / "runs").glob("*.trec"))
    lines = run.read_text().splitlines(keepends=True)
    lines.insert(10, lines[3])
    run.write_text("".join(lines))
    err = _fails(spec, source, root, tmp_path)
    assert str(run) in str(err) and "row 11" in str(err) and "duplicate" in str(err)


def test_duplicate_first_stage_line(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    run = root / "first_stage" / "octen.trec"
    lines = run.read_text().splitlines(keepends=True)
    i = _released_line(lines, inputs_dir[1])
    lines.insert(i + 7, lines[i + 2])
    run.write_text("".join(lines))
    err = _fails(spec, source, root, tmp_path)
    assert str(run) in str(err) and f"row {i + 8}" in str(err) and "duplicate" in str(err)


def test_nan_score(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    run = next((root / "runs").glob("*.trec"))
    lines = run.read_text().splitlines(keepends=True)
    parts = lines[20].split()
    parts[4] = "nan"
    lines[20] = " ".join(parts) + "\n"
    run.write_text("".join(lines))
    err = _fails(spec, source, root, tmp_path)
    assert str(run) in str(err) and "row 21" in str(err) and "score" in str(err)


def test_nan_first_stage_score(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    path = root / "first_stage" / "embed_v4.parquet"
    frame = pd.read_parquet(path)
    frame.loc[12, "score"] = np.nan  # a row of the first released query
    frame.to_parquet(path)
    err = _fails(spec, source, root, tmp_path)
    assert str(path) in str(err) and "row 13" in str(err) and "score" in str(err)


def test_run_naming_passage_outside_the_pool(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    run = next((root / "runs").glob("*.trec"))
    lines = run.read_text().splitlines(keepends=True)
    parts = lines[30].split()
    parts[2] = "123456789012"
    lines[30] = " ".join(parts) + "\n"
    run.write_text("".join(lines))
    err = _fails(spec, source, root, tmp_path)
    assert str(run) in str(err) and "row 31" in str(err) and "123456789012" in str(err)


def test_check_known_ids_names_file_and_line(source, staged, inputs_dir, tmp_path):
    from rcp_data.building.pools import check_known_ids
    from rcp_data.runs.run_files import read_run_file

    run = inputs_dir[0] / "first_stage" / "octen.trec"
    frame = read_run_file(run)
    corpus = source.subsets["trec_dl_2019"].corpus
    check_known_ids(frame, corpus, source=str(run))  # every retrieved passage is known
    frame.loc[40, "corpus-id"] = "123456789012"
    with pytest.raises(InputError) as err:
        check_known_ids(frame, corpus, source=str(run))
    assert str(run) in str(err.value) and "row 41" in str(err.value)
    # the streaming fallback (no fast index) agrees
    from rcp_data.sources.base import CorpusReader

    slow = CorpusReader(corpus.batches, size=corpus.size)
    ids = pd.Series(["123456789012", staged.ids[0], staged.ids[-1]])
    assert slow.known(ids).tolist() == corpus.known(ids).tolist() == [False, True, True]


def test_first_stage_naming_unknown_passage(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    run = root / "first_stage" / "octen.trec"
    lines = run.read_text().splitlines(keepends=True)
    i = _released_line(lines, inputs_dir[1])
    parts = lines[i].split()  # rank 1 of a released query: certainly in the pool
    parts[2] = "123456789012"
    lines[i] = " ".join(parts) + "\n"
    run.write_text("".join(lines))
    err = _fails(spec, source, root, tmp_path)
    assert "123456789012" in str(err)
    assert str(run) in str(err) and f"row {i + 1}" in str(err)


def test_theta_table_missing_pool_documents(spec, source, inputs_dir, tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    path = root / "judge" / "thetas.parquet"
    thetas = pd.read_parquet(path)
    pool = inputs_dir[1]["pools"][2020]
    drop = thetas.index[(thetas["query-id"] == pool["query-id"].iloc[0])
                        & (thetas["corpus-id"] == pool["corpus-id"].iloc[5])]
    thetas.drop(index=drop).to_parquet(path)
    err = _fails(spec, source, root, tmp_path)
    assert "judge/thetas.parquet" in str(err) and "no theta" in str(err)
    assert pool["corpus-id"].iloc[5] in str(err)


def test_dev_small_queries_from_the_tarball(staged):
    from rcp_data.sources.trecdl import dev_small_queries

    dev = dev_small_queries()
    assert len(dev) == 6980 == len(staged.real.dev_topics)
    assert set(dev["id"]) == set(staged.real.dev_topics["id"])


def test_nan_first_stage_score_of_a_later_query_names_its_row(spec, source, inputs_dir,
                                                              tmp_path):
    root = _copy_inputs(inputs_dir, tmp_path)
    path = root / "first_stage" / "embed_v4.parquet"
    frame = pd.read_parquet(path)
    first_2020 = inputs_dir[1]["query_ids"][2020][0]
    i = int(np.flatnonzero(frame["query-id"].to_numpy() == first_2020)[3])
    frame.loc[i, "score"] = np.inf
    frame.to_parquet(path)
    err = _fails(spec, source, root, tmp_path)
    assert str(path) in str(err) and f"row {i + 1}," in str(err) and "score" in str(err)


def _pool_rule_problems(spec, out, name, pool: pd.DataFrame) -> list[str]:
    import pyarrow as pa

    from rcp_data.checks.integrity import _Corpora, check_pool_rule, load_subset
    from rcp_data.model.release import Release

    rel = Release(out, spec)
    table = pa.Table.from_pandas(pool.reset_index(drop=True), preserve_index=False)
    (check,) = check_pool_rule(rel, load_subset(rel, name, table, _Corpora(rel)))
    return check.details


@pytest.mark.parametrize("damage", ["unflag", "reorder", "drop"])
def test_pool_rule_checks_the_union_judged_rule(spec, built, damage):
    out, _, _ = built
    name = "trec_dl_2019"
    pool = _read(out, provenance_file("pool", name))
    assert _pool_rule_problems(spec, out, name, pool) == []
    q = pool.loc[pool["gt_injected"], "query-id"].iloc[0]
    grp = pool.index[pool["query-id"] == q]
    if damage == "unflag":      # an added positive (grade > 0) not flagged gt_injected
        pool.loc[pool.loc[grp][pool.loc[grp, "gt_injected"]].index[0], "gt_injected"] = False
        want = "an added positive is not gt_injected"
    elif damage == "reorder":   # an added grade-0 passage moved above the fused top 150
        zero = pool.loc[grp][(pool.loc[grp, "rrf_score"] == 0) & ~pool.loc[grp, "gt_injected"]]
        order = [zero.index[0], *[i for i in grp if i != zero.index[0]]]
        moved = pool.loc[order].assign(pool_rank=range(1, len(order) + 1))
        pool = pd.concat([pool[pool["query-id"] != q], moved])
        want = "added documents (rrf_score 0) do not follow the fused ones"
    else:                       # a NIST positive left out of the pool
        drop = pool.loc[grp][pool.loc[grp, "gt_injected"]].index[-1]
        pool = pool.drop(index=drop)
        mine = pool["query-id"] == q
        pool.loc[mine, "pool_rank"] = range(1, int(mine.sum()) + 1)
        want = "a positive qrel is outside the pool"
    assert _pool_rule_problems(spec, out, name, pool) == [f"query {q}: {want}"]
