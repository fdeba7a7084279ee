"""SYNTHETIC MS MARCO-like passages, with and without the MS MARCO encoding fault.

Not real data: English filler words with multilingual fragments, built to exercise the text
repair and the TREC-DL builder at full scale without the real collection. Statistics aimed at:
~56 words / ~330 characters per passage on average; about 22.9% of passages carry the fault
(UTF-8 bytes read as Latin-1, ``text.encode("utf-8").decode("latin-1")``, the fault
ir_datasets' ``FixEncoding`` undoes), usually on some but not all non-ASCII characters of the
passage, as in MS MARCO; about 10% are correct non-ASCII text (accents, CJK with full-width
punctuation, emoji with skin tones, ZWJ sequences and flags, curly quotes, dashes, symbols,
NBSP, soft hyphens, genuine C1 controls); the rest is plain ASCII.

API (deterministic: a passage depends only on ``seed`` and its own id, so any subset of ids
can be generated on its own and agrees with a full run):

- ``generate_passages(ids_or_count, seed=0)`` yields :class:`SyntheticPassage` ``(id, raw,
  clean)``: ``raw`` is the text as the faulty source has it, ``clean`` the correct text
  (``rcp_data.sources.text_repair.repair_text(raw) == clean`` and ``repair_text(clean) == clean``).
  ``ids_or_count`` is a count N (ids ``"0"`` .. ``str(N-1)``) or an iterable of ids (str or
  int; digit strings are used as numbers, other strings are hashed).
- ``generate_batches(ids_or_count, seed=0, batch_size=50_000)`` yields ``pyarrow.RecordBatch``
  with string columns ``id``, ``raw``, ``clean`` (the fast path for millions of passages).
- ``write_tsv(path, ids_or_count, seed=0, column="raw")`` writes ``id<TAB>text`` lines.
- ``mojibake(text)`` applies the fault.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa

FAULT_RATE = 0.229
CLEAN_NON_ASCII_RATE = 0.10
_ENCODE_OTHER_PERCENT = 80  # chance that a faulty passage's further fragments are broken too

_WORDS = """
the of and to in a is that for it as was with be by on not he this are or his from at which
but have an they you were her she there been one all we their has would when if so no will
more about can said up out them into only some could time these two may first then do any
like my now over such our man me even most made after also did many before must through
years where much your way well down should because each just those people how too little
state good very make world still own see men work long get here between both life being
under never day same another know while last might us great old year off come since against
go came right used take three water called however system number body process found
different energy common usually includes average cost blood temperature between
information company located county population definition typically patients treatment
symptoms business function example products school service country history several
minutes hours weeks months weather normal levels average salary require provide contains
muscle protein vitamin calories bacteria infection disease pressure heart liver kidney
cells tissue surface rocks mineral plants animals species forest ocean river mountain
city capital government federal president election court law tax income interest loan
credit bank insurance account payment price dollars percent million billion market stock
software computer program internet website email phone device battery screen network
data file server memory storage language english spanish french german chinese japanese
music movie song album actor character series season episode network television radio
recipe chicken beef pork cheese butter sugar flour oven bake cook degrees fahrenheit
celsius inches feet miles pounds ounces grams liters gallons acres square meters
university college student degree master doctor nurse engineer teacher lawyer manager
according research study studies results evidence effect effects cause causes risk
generally approximately located northern southern eastern western central national
international local public private medical physical chemical natural human social economic
political financial important available possible different similar specific various
""".split()  # noqa: SIM905 (a word list reads better as text)
_PUNCTUATED = ["however,", "also,", "therefore,", "example,", "years.", "time.", "water.",
               "states.", "body.", "cost.", "(see", "below).", "e.g.", "i.e.", "etc.", "and/or",
               "1990", "2012", "15", "3.5", "100", "$25", "10%", "(2)", "U.S.", "A.", "pH"]
# frequent short words three more times, so word lengths follow web text (~4.9 letters on average)
_FUNCTION_WORDS = "the of and to in a is that for it as was with be by on or an are at he".split()  # noqa: SIM905
_ASCII_VOCAB = tuple(_WORDS + _PUNCTUATED + 3 * _FUNCTION_WORDS)

# Non-ASCII fragments, repeated by rough frequency in English web text (curly quotes and dashes
# dominate MS MARCO's broken passages). Each is a fixed point of the repair on its own, and
# passages join fragments with spaces, so correct passages are fixed points too.
_FRAGMENTS: tuple[tuple[str, int], ...] = (
    # curly quotes, dashes, ellipsis, bullets
    ("it’s", 8), ("don’t", 6), ("‘single’", 3), ("“quoted”", 6), ("—", 5), ("–", 5),
    ("1990–2000", 2), ("well…", 2), ("•", 2), ("„Anführung“", 1), ("«citation»", 1),
    ("‹ok›", 1),
    # accents (precomposed and combining)
    ("café", 3), ("naïve", 2), ("résumé", 2), ("Zürich", 2), ("São Paulo", 2), ("façade", 1),
    ("jalapeño", 2), ("Ångström", 1), ("Kraków", 1), ("Dvořák", 1), ("İstanbul", 1),
    ("Ærøskøbing", 1), ("Straße", 1), ("crème brûlée", 1), ("Pokémon", 2), ("Đà Nẵng", 1),
    ("cafe\u0301", 1), ("Mötley Crüe", 1), ("¿Qué pasa?", 1), ("¡Olé!", 1), ("1º", 1),
    ("2ª", 1),
    # other scripts
    ("Москва", 1), ("Αθήνα", 1), ("القاهرة", 1), ("ירושלים", 1), ("नमस्ते", 1), ("กรุงเทพ", 1),
    ("서울특별시", 1), ("ひらがな", 1), ("カタカナ", 1),
    # CJK with full-width punctuation
    ("東京、日本。", 2), ("「こんにちは」！", 1), ("中文（简体）：你好？", 1), ("北京；上海", 1),
    ("ＡＢＣ１２３", 1), ("〜", 1), ("【注意】", 1),
    # emoji: plain, variation selector, skin tone, ZWJ family, flags, keycap
    ("😀", 2), ("👍🏽", 1), ("❤️", 1), ("👨‍👩‍👧", 1), ("🇺🇸", 1), ("🇯🇵", 1), ("🏳️‍🌈", 1),
    ("1️⃣", 1), ("🎉🎉", 1), ("🙂", 1),
    # symbols
    ("€20", 3), ("£15", 2), ("¥500", 1), ("25°C", 3), ("98.6°F", 2), ("±5%", 1), ("5×3", 1),
    ("10÷2", 1), ("50µg", 1), ("©2016", 2), ("Brand®", 1), ("Name™", 2), ("§3", 1), ("¶", 1),
    ("‰", 1), ("→", 1), ("≤", 1), ("≥", 1), ("∞", 1), ("√2", 1), ("1½", 1), ("¼", 1),
    ("x²", 1), ("H₂O", 1), ("½-inch", 1), ("10\u00a0km", 2), ("co\u00adoperate", 1),
    ("•\u00a0item", 1),
    # genuine C1 control characters (cp1252 bytes that some scraper decoded as Latin-1)
    ("word\x92s", 1), ("page\x85", 1), ("1990\x962000", 1), ("\x93quote\x94", 1),
    ("price\x80", 1),
)
_SPECIALS = tuple(itertools.chain.from_iterable([f] * w for f, w in _FRAGMENTS))

_LEAD_THEN_CONTINUATION = re.compile("[\xc2-\xf4][\x80-\xbf]")
for _f, _ in _FRAGMENTS:  # keep correct text a fixed point of the repair (see module doc)
    assert not _LEAD_THEN_CONTINUATION.search(_f), _f

_MIN_WORDS, _SPREAD = 16, 81  # words per passage: 16 + mean of two uniforms on 0..80 -> mean 56
_MAX_SPECIALS = 3
_N_DRAWS = _MIN_WORDS + _SPREAD + 4 + 3 * _MAX_SPECIALS
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1, _M2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)
_S30, _S27, _S31 = np.uint64(30), np.uint64(27), np.uint64(31)


class SyntheticPassage(NamedTuple):
    """One SYNTHETIC passage: ``raw`` as a faulty source has it, ``clean`` the correct text."""

    id: str
    raw: str
    clean: str


def mojibake(text: str) -> str:
    """The MS MARCO fault: UTF-8 bytes read as Latin-1."""
    return text.encode("utf-8").decode("latin-1")


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer on a uint64 array (wrapping arithmetic)."""
    x = x + _GOLDEN
    x = (x ^ (x >> _S30)) * _M1
    x = (x ^ (x >> _S27)) * _M2
    return x ^ (x >> _S31)


def _id_number(pid: str | int) -> int:
    if isinstance(pid, int):
        return pid & 0xFFFFFFFFFFFFFFFF
    if pid.isdigit() and pid.isascii():
        return int(pid) & 0xFFFFFFFFFFFFFFFF
    return int.from_bytes(hashlib.blake2b(pid.encode("utf-8"), digest_size=8).digest(), "little")


def _id_chunks(ids_or_count: int | Iterable[str | int], size: int) -> Iterator[list[str | int]]:
    if isinstance(ids_or_count, int):
        for start in range(0, ids_or_count, size):
            yield list(range(start, min(start + size, ids_or_count)))
        return
    it = iter(ids_or_count)
    while chunk := list(itertools.islice(it, size)):
        yield chunk


def _make_chunk(ids: list[str | int], seed: int) -> tuple[list[str], list[str], list[str]]:
    nums = np.array([_id_number(i) for i in ids], dtype=np.uint64)
    seed_key = _mix(np.array([seed & 0xFFFFFFFFFFFFFFFF], dtype=np.uint64))
    keys = _mix(nums ^ seed_key)
    with np.errstate(over="ignore"):
        steps = np.arange(1, _N_DRAWS + 1, dtype=np.uint64) * _GOLDEN
        draws = _mix(keys[:, None] + steps[None, :])
    kind_u = (draws[:, 0] >> np.uint64(11)).astype(np.float64) / float(1 << 53)
    n_words = (_MIN_WORDS + ((draws[:, 1] % np.uint64(_SPREAD)).astype(np.int64)
                             + (draws[:, 2] % np.uint64(_SPREAD)).astype(np.int64)) // 2)
    n_special = 1 + (draws[:, 3] % np.uint64(_MAX_SPECIALS)).astype(np.int64)
    base = 4
    word_idx = (draws[:, base:base + _MIN_WORDS + _SPREAD] % np.uint64(len(_ASCII_VOCAB)))
    words = np.asarray(_ASCII_VOCAB, dtype=object)[word_idx.astype(np.int64)].tolist()
    sp = base + _MIN_WORDS + _SPREAD
    special_idx = (draws[:, sp:sp + _MAX_SPECIALS] % np.uint64(len(_SPECIALS))).astype(np.int64)
    special_pos = draws[:, sp + _MAX_SPECIALS:sp + 2 * _MAX_SPECIALS].tolist()
    broken = ((draws[:, sp + 2 * _MAX_SPECIALS:sp + 3 * _MAX_SPECIALS] % np.uint64(100))
              < _ENCODE_OTHER_PERCENT).tolist()
    specials = np.asarray(_SPECIALS, dtype=object)[special_idx].tolist()
    faulty = (kind_u < FAULT_RATE).tolist()
    non_ascii = (kind_u < FAULT_RATE + CLEAN_NON_ASCII_RATE).tolist()
    n_words_l, n_special_l = n_words.tolist(), n_special.tolist()

    out_ids, raws, cleans = [], [], []
    for row in range(len(ids)):
        n = n_words_l[row]
        clean_words = words[row][:n]
        clean_words[0] = clean_words[0][:1].upper() + clean_words[0][1:]
        if non_ascii[row]:
            raw_words = list(clean_words)
            used: set[int] = set()
            for j in range(n_special_l[row]):
                pos = special_pos[row][j] % n
                if pos in used:
                    continue
                used.add(pos)
                frag = specials[row][j]
                clean_words[pos] = frag
                # a faulty passage always has its first fragment broken, others at random
                raw_words[pos] = mojibake(frag) if faulty[row] and (
                    j == 0 or broken[row][j]) else frag
            clean = " ".join(clean_words)
            raw = " ".join(raw_words)
        else:
            raw = clean = " ".join(clean_words)
        out_ids.append(str(ids[row]))
        raws.append(raw)
        cleans.append(clean)
    return out_ids, raws, cleans


_BATCH_SCHEMA = pa.schema([("id", pa.string()), ("raw", pa.string()), ("clean", pa.string())])


def generate_batches(
    ids_or_count: int | Iterable[str | int], seed: int = 0, batch_size: int = 50_000
) -> Iterator[pa.RecordBatch]:
    """Yield SYNTHETIC passages as record batches with columns ``id``, ``raw``, ``clean``."""
    for chunk in _id_chunks(ids_or_count, batch_size):
        ids, raws, cleans = _make_chunk(chunk, seed)
        yield pa.RecordBatch.from_arrays(
            [pa.array(ids, pa.string()), pa.array(raws, pa.string()),
             pa.array(cleans, pa.string())],
            schema=_BATCH_SCHEMA,
        )


def generate_passages(
    ids_or_count: int | Iterable[str | int], seed: int = 0
) -> Iterator[SyntheticPassage]:
    """Yield :class:`SyntheticPassage` ``(id, raw, clean)`` one by one (streaming)."""
    for chunk in _id_chunks(ids_or_count, 10_000):
        ids, raws, cleans = _make_chunk(chunk, seed)
        yield from map(SyntheticPassage, ids, raws, cleans)


def write_tsv(
    path: Path, ids_or_count: int | Iterable[str | int], seed: int = 0, column: str = "raw"
) -> int:
    """Write ``id<TAB>text`` lines of the ``raw`` or ``clean`` text; returns the line count."""
    if column not in ("raw", "clean"):
        raise ValueError(f"column must be 'raw' or 'clean', not {column!r}")
    n = 0
    with open(path, "wb") as fh:
        for chunk in _id_chunks(ids_or_count, 50_000):
            ids, raws, cleans = _make_chunk(chunk, seed)
            texts = raws if column == "raw" else cleans
            fh.write("".join(f"{i}\t{t}\n" for i, t in zip(ids, texts, strict=True)).encode())
            n += len(ids)
    return n
