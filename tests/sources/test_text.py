"""MS MARCO text repair: same output as ir_datasets' FixEncoding, correct text untouched."""

from __future__ import annotations

import json
import random

import ftfy
import pyarrow as pa
import pytest
from support.text_repair_reference import irds_repair, irds_repair_bytes

from rcp_data import cli
from rcp_data.core.errors import InputError
from rcp_data.demo.synthetic_corpus import generate_batches, generate_passages, mojibake, write_tsv
from rcp_data.sources.text_repair import (
    count_changed,
    repair_array,
    repair_settings,
    repair_text,
    repair_tsv,
)

# -- the reference: ir_datasets' own repair, run on the bytes of an id<TAB>text file ----------
_reference_bytes = irds_repair_bytes
reference = irds_repair


CORRECT = [
    "Café au lait, naïve résumé, jalapeño, Zürich, São Paulo, Kraków, Dvořák, İstanbul, Straße",
    "cafe\u0301 (combining accent), Ærøskøbing, Đà Nẵng, ¿Qué pasa? ¡Olé! 1º 2ª",
    "東京、日本。「こんにちは」！中文（简体）：你好？【注意】ＡＢＣ１２３〜",
    "서울특별시 ひらがな カタカナ Москва Αθήνα القاهرة ירושלים नमस्ते กรุงเทพ",
    "emoji 😀 👍🏽 ❤️ 👨‍👩‍👧 flags 🇺🇸 🇯🇵 🏳️‍🌈 keycap 1️⃣ 🎉",
    "“double” ‘single’ it’s — en–dash … • „Anführung“ «citation» ‹ok›",
    "€20 £15 ¥500 25°C 98.6°F ±5% 5×3 10÷2 50µg ©2016 ®™ §3 ¶ ‰ → ≤ ≥ ∞ √2 1½ x² H₂O",
    "no\u00a0break and co\u00adoperate, C1 controls: word\x92s page\x85 \x93quote\x94 price\x80",
    "plain ASCII text stays as it is.",
]


def test_reference_helper_really_repairs() -> None:
    assert reference([mojibake("café"), "café"]) == ["café", "café"]


@pytest.mark.parametrize("text", CORRECT)
def test_double_encoded_text_comes_back_exactly(text: str) -> None:
    broken = mojibake(text)
    if not text.isascii():
        assert broken != text
    assert repair_text(broken) == text
    assert reference([broken]) == [text]


@pytest.mark.parametrize("text", CORRECT)
def test_correct_text_is_byte_identical(text: str) -> None:
    assert repair_text(text).encode("utf-8") == text.encode("utf-8")
    assert reference([text]) == [text]


def test_mixed_passage_repairs_only_the_broken_characters() -> None:
    text = "it’s “naïve” — 東京 😀 and " + mojibake("it’s “naïve” — 東京 😀") + " ok"
    assert repair_text(text) == "it’s “naïve” — 東京 😀 and it’s “naïve” — 東京 😀 ok"
    assert reference([text]) == [repair_text(text)]


# -- edge cases where tools disagree: we follow ir_datasets ----------------------------------
def test_edge_genuine_c1_control_is_kept() -> None:
    text = "price\x80 list, page\x85"
    assert repair_text(text) == text == reference([text])[0]
    assert ftfy.fix_encoding(text) != text  # ftfy reads C1 controls as cp1252 ("€", "…")


def test_edge_double_encoded_twice_is_repaired_one_level_per_pass() -> None:
    twice = mojibake(mojibake("café ’"))
    once = repair_text(twice)
    assert once == mojibake("café ’") == reference([twice])[0]
    assert repair_text(once) == "café ’"  # so not idempotent on such input, like ir_datasets
    assert ftfy.fix_encoding(twice) == "café ’"  # ftfy undoes both levels at once


def test_edge_literal_mojibake_in_correct_text_is_decoded() -> None:
    text = "the string Ã© is how é looks when broken"
    assert repair_text(text) == "the string é is how é looks when broken"
    assert reference([text]) == [repair_text(text)]


def test_edge_invalid_and_partial_sequences_stay() -> None:
    # overlong, surrogate, above U+10FFFF, truncated, lone continuation/lead bytes
    texts = ["\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x80 x",
             "\xf0\x9f\x98", "\x80\xbf", "\xc3 \xa9", "\xc3"]
    assert [repair_text(t) for t in texts] == texts == reference(texts)


def test_random_strings_match_reference() -> None:
    """Fuzz the single-scan rule against ir_datasets' three window passes."""
    rng = random.Random(20240601)
    alphabet = (["a", " ", "\t", "\r", "é", "€", "東", "😀"]
                + [chr(c) for c in range(0x80, 0x100)]
                + [chr(c) for c in (0xC2, 0xC3, 0xE2, 0xE6, 0xF0, 0x80, 0x82, 0x9F, 0xA9, 0xBF)] * 6)
    pieces = [mojibake(s) for s in ("é", "’", "東", "😀", "🇺🇸", "\x85", "ð")]
    texts = []
    for _ in range(3000):
        parts = [rng.choice(alphabet) if rng.random() < 0.7 else rng.choice(pieces)
                 for _ in range(rng.randint(0, 12))]
        texts.append("".join(parts))
    assert [repair_text(t) for t in texts] == reference(texts)
    assert repair_array(texts).texts.to_pylist() == reference(texts)


# -- generated corpora -----------------------------------------------------------------------
@pytest.fixture(scope="module")
def corpus() -> list:
    return list(generate_passages(4000, seed=11))


def test_generated_corpus_matches_reference_and_clean_text(corpus: list) -> None:
    raw = [p.raw for p in corpus]
    clean = [p.clean for p in corpus]
    ours = [repair_text(t) for t in raw]
    assert ours == reference(raw) == clean
    assert reference(clean) == clean
    assert [repair_text(t) for t in clean] == clean


def test_second_pass_changes_nothing(corpus: list) -> None:
    once = repair_array([p.raw for p in corpus])
    twice = repair_array(once.texts)
    assert twice.changed == 0
    assert twice.texts.equals(once.texts)


def test_repair_array_counts_and_nulls(corpus: list) -> None:
    raw = [p.raw for p in corpus] + [None]
    result = repair_array(pa.chunked_array([raw[:1000], raw[1000:]], pa.string()))
    expected = [repair_text(t) if t is not None else None for t in raw]
    assert result.texts.to_pylist() == expected
    brute = sum(1 for a, b in zip(raw, expected, strict=True) if a != b)
    assert result.changed == brute > 0
    assert count_changed(raw, expected) == brute
    assert count_changed(pa.array(raw), result.texts) == brute
    assert count_changed(["a", None, "b"], ["a", "x", None]) == 2
    with pytest.raises(ValueError):
        count_changed(["a"], ["a", "b"])
    assert repair_array([]).changed == 0
    ascii_only = repair_array(["plain", None, "text"])
    assert ascii_only.changed == 0 and ascii_only.texts.to_pylist() == ["plain", None, "text"]


def test_batches_agree_with_passages_and_any_id_subset() -> None:
    full = list(generate_passages(300, seed=5))
    batch = next(generate_batches(300, seed=5, batch_size=300))
    assert batch.column("id").to_pylist() == [p.id for p in full]
    assert batch.column("raw").to_pylist() == [p.raw for p in full]
    subset = list(generate_passages(["17", 250, "3"], seed=5))
    assert subset == [full[17], full[250], full[3]]
    assert list(generate_passages(["17"], seed=6)) != [full[17]]
    other = list(generate_passages(["D-1", "D-1"], seed=5))  # non-numeric ids are hashed
    assert other[0] == other[1] and other[0].id == "D-1"


def test_synthetic_statistics() -> None:
    batch = next(generate_batches(20_000, seed=0, batch_size=20_000))
    raw, clean = batch.column("raw").to_pylist(), batch.column("clean").to_pylist()
    faulty = sum(1 for a, b in zip(raw, clean, strict=True) if a != b) / len(raw)
    assert abs(faulty - 0.229) < 0.01
    assert 300 < sum(map(len, clean)) / len(clean) < 360
    assert 50 < sum(len(t.split(" ")) for t in clean) / len(clean) < 62


def test_repair_settings_is_json_and_stable() -> None:
    settings = repair_settings()
    assert json.loads(json.dumps(settings)) == settings == repair_settings()
    assert settings["version"] and "ir_datasets" in settings["equivalent_to"]


# -- files and CLI ---------------------------------------------------------------------------
def test_cli_repair_json_counts_and_reference_bytes(tmp_path, capsys) -> None:
    src, out, clean = tmp_path / "raw.tsv", tmp_path / "out" / "fixed.tsv", tmp_path / "c.tsv"
    assert write_tsv(src, 2500, seed=3) == 2500
    write_tsv(clean, 2500, seed=3, column="clean")
    assert cli.main(["text", "repair", "--input", str(src), "--output", str(out), "--json"]) == 0
    counts = json.loads(capsys.readouterr().out)
    raw_lines = src.read_text(encoding="utf-8").split("\n")  # not splitlines: NEL is text
    clean_lines = clean.read_text(encoding="utf-8").split("\n")
    expected = sum(1 for a, b in zip(raw_lines, clean_lines, strict=True) if a != b)
    assert counts == {"documents": 2500, "repaired": expected}
    assert out.read_bytes() == clean.read_bytes() == _reference_bytes(src.read_bytes())
    assert sorted(p.name for p in out.parent.iterdir()) == ["fixed.tsv"]


@pytest.mark.parametrize(
    ("content", "what"),
    [(b"1\tok\n2\tfine\n3 no tab here\n4\tok\n", "no TAB"),
     (b"1\tok\n2\tfine\n3\tbad \xc3\x28 byte\n4\tok\n", "not valid UTF-8")],
)
def test_bad_input_names_file_and_line_and_writes_nothing(tmp_path, capsys, content, what):
    src, out = tmp_path / "in.tsv", tmp_path / "out.tsv"
    src.write_bytes(content)
    with pytest.raises(InputError) as info:
        repair_tsv(src, out, batch_size=1)
    assert info.value.row == 3 and info.value.path == str(src)
    assert what in info.value.message and "line 3" in info.value.message
    assert cli.main(["text", "repair", "--input", str(src), "--output", str(out)]) == 2
    assert str(src) in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.tsv"]


def test_existing_output_survives_a_failed_repair(tmp_path) -> None:
    src, out = tmp_path / "in.tsv", tmp_path / "out.tsv"
    out.write_text("previous\n")
    src.write_bytes(b"1\tok\nbroken\n")
    with pytest.raises(InputError):
        repair_tsv(src, out)
    assert out.read_text() == "previous\n"
