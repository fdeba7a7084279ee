"""ViDoRe v3 builder on a generated fixture in the upstream layouts (SYNTHETIC pages)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from support.vidore_fixtures import LANGS, N_QUESTIONS, write_domain

from rcp_data.building.build import build_release
from rcp_data.building.contract import read_inputs
from rcp_data.checks.integrity import run_integrity
from rcp_data.core.gains import ItemParams
from rcp_data.core.specs import load_spec
from rcp_data.demo.synthetic_judge import write_synthetic_inputs
from rcp_data.model.release import Release
from rcp_data.sources.vidore import read_suite

DOMAINS = {"hr": "Hr", "energy": "Energy"}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("vidore-upstream")
    truth = {d: write_domain(root, d, task, seed=i) for i, (d, task) in enumerate(DOMAINS.items())}
    return root, truth


@pytest.fixture(scope="module")
def source(upstream):
    root, _ = upstream
    return read_suite(load_spec("vidore_v3"), {"root": str(root), "domains": ",".join(DOMAINS)})


@pytest.fixture(scope="module")
def release(source, tmp_path_factory) -> Path:
    spec = load_spec("vidore_v3")
    work = tmp_path_factory.mktemp("vidore-build")
    inputs = write_synthetic_inputs(spec, source, work / "inputs", seed=3)
    build_release(spec, source, read_inputs(inputs), work / "release", partial=True)
    return work / "release"


def test_subsets_languages_and_qrels_filtering(source):
    assert sorted(source.subsets) == sorted(f"{d}__{lang}" for d in DOMAINS for lang in LANGS)
    for li, lang in enumerate(LANGS):
        sub = source.subsets[f"hr__{lang}"]
        # language from the record: question n of language li has id query-test-(n + 5*li)
        assert sorted(sub.queries["id"]) == sorted(
            f"query-test-{n + N_QUESTIONS * li}" for n in range(N_QUESTIONS))
        assert sub.queries["text"].str.startswith(f"[{lang}]").all()
        # qrels hold only the subset's own queries (upstream holds all six languages)
        assert set(sub.qrels["query-id"]) == set(sub.queries["id"])
        assert len(sub.qrels) == 2 * N_QUESTIONS


def test_one_corpus_per_domain_and_data_notes(source):
    hr = [source.subsets[f"hr__{lang}"].corpus for lang in LANGS]
    assert all(c is hr[0] for c in hr)
    assert source.subsets["energy__english"].corpus is not hr[0]
    notes = source.facts["domains"]["hr"]
    assert notes["empty_ocr_pages"] == 1
    assert notes["identical_ocr_groups"] == 1 and notes["identical_ocr_pages"] == 2
    assert notes["identical_ocr_groups_with_different_qrels"] == 1
    assert notes["questions_per_language"] == dict.fromkeys(LANGS, N_QUESTIONS)


def test_release_layout_and_byte_identical_pages(release, upstream):
    _, truth = upstream
    for domain in DOMAINS:
        shards = sorted((release / "corpus" / domain).glob("corpus-*.parquet"))
        assert [p.name for p in shards] == ["corpus-00000-of-00001.parquet"]
        table = pq.read_table(shards[0])
        assert table.schema.names == ["id", "image", "text"]
        for pid, img in zip(table.column("id").to_pylist(), table.column("image").to_pylist(),
                            strict=True):
            assert hashlib.sha256(img["bytes"]).digest() == hashlib.sha256(
                truth[domain]["image_bytes"][pid]).digest()
        for kind in ("pool", "runs", "first_stage", "judge_criteria"):
            assert (release / "provenance" / kind / f"{domain}.parquet").exists()
    assert not (release / "hr__english" / "corpus.parquet").exists()


def test_empty_ocr_page_enters_no_pool(release):
    pool = pq.read_table(release / "provenance/pool/hr.parquet").to_pandas()
    assert "corpus-test-3" not in set(pool["corpus-id"])
    assert set(pool["query-id"]) == {f"query-test-{i}" for i in range(N_QUESTIONS * len(LANGS))}


def test_release_passes_integrity(release):
    spec = load_spec("vidore_v3")
    rel = Release(release, spec)
    params = ItemParams.read(release / "provenance/item_params.synthjudge.json")
    from dataclasses import replace

    partial = replace(spec, subsets=tuple(s for s in spec.subsets if s.domain in DOMAINS))
    checks, _ = run_integrity(Release(rel.root, partial), params, "weighted_discrimination")
    assert [c.name for c in checks if not c.ok] == []


def test_images_decode_through_datasets(release):
    import datasets

    ds = datasets.load_dataset("parquet", data_files=str(release / "corpus/hr/corpus-*.parquet"),
                               split="train")
    assert isinstance(ds.features["image"], datasets.Image)
    img = ds[0]["image"]
    assert img.size == (96, 128)


def test_two_local_mirrors_with_the_same_names_are_read_apart(tmp_path):
    """``datasets`` caches a local folder by its name and file names; two mirrors laid out
    alike but holding other pages must still be read as they are, not from each other's cache."""
    spec = load_spec("vidore_v3")
    truths, read = [], []
    for seed in (11, 12):
        root = tmp_path / f"mirror-{seed}"
        truths.append(write_domain(root, "hr", "Hr", seed=seed))
        source = read_suite(spec, {"root": str(root), "domains": "hr"})
        corpus = next(iter(source.subsets.values())).corpus
        images = {}
        for batch in corpus.batches():
            for pid, img in zip(batch.column("id").to_pylist(), batch.column("image").to_pylist(),
                                strict=True):
                images[pid] = hashlib.sha256(img["bytes"]).hexdigest()
        read.append(images)
    for truth, images in zip(truths, read, strict=True):
        assert images == {pid: hashlib.sha256(b).hexdigest()
                          for pid, b in truth["image_bytes"].items()}
    assert read[0] != read[1]
