"""A SYNTHETIC benchmark shaped like the descriptive-grammar benchmark (Kornilov et al. 2024),
written as BEIR folders: 14 subsets ("grammars") x 50 paragraphs, one typological-feature query
per grammar in two wordings, grades 0-5 in the upstream proportions 272 / 202 / 51 / 44 / 41 /
90 per 700 paragraphs. Nothing here is real data: the texts are generated from a seed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

GRADE_COUNTS = {0: 272, 1: 202, 2: 51, 3: 44, 4: 41, 5: 90}   # per 700 paragraphs
N_SUBSETS = 14
N_PARAGRAPHS = 50
FILLER = ("vowel", "harmony", "suffix", "tone", "clitic", "plural", "noun", "class", "dialect",
          "speaker", "morpheme", "stress", "syllable", "consonant", "prefix", "aspect", "mood",
          "evidential", "pronoun", "numeral", "possessive", "case", "dative", "locative")
ORDER = ("subject", "verb", "object", "word", "order", "clause", "precedes", "follows",
         "basic", "dominant", "constituent", "SOV", "SVO")
WORDINGS = ("What is the dominant word order of {lang}?",
            "In {lang}, in which order do subject, object and verb usually occur?")


def grades() -> np.ndarray:
    """The 700 paragraph grades in the upstream proportions, shuffled (seeded): (14, 50)."""
    flat = np.concatenate([np.full(n, g) for g, n in GRADE_COUNTS.items()])
    return np.random.default_rng(29).permutation(flat).reshape(N_SUBSETS, N_PARAGRAPHS)


def write_grammar_benchmark(root: Path, *, split: str = "test") -> Path:
    """Write the SYNTHETIC benchmark as one BEIR folder per grammar under ``root``."""
    rng = np.random.default_rng(2024)
    g = grades()
    for s in range(N_SUBSETS):
        lang = f"Synthlang{s + 1:02d}"
        folder = root / f"grammar_{s + 1:02d}"
        (folder / "qrels").mkdir(parents=True)
        with (folder / "corpus.jsonl").open("w", encoding="utf-8") as fh:
            for p in range(N_PARAGRAPHS):
                words = list(rng.choice(FILLER, size=int(rng.integers(30, 60))))
                words += list(rng.choice(ORDER, size=3 * int(g[s, p]) + int(rng.integers(0, 2))))
                rng.shuffle(words)
                text = f"SYNTHETIC paragraph about {lang}: " + " ".join(words) + "."
                fh.write(json.dumps({"_id": f"g{s + 1:02d}-p{p:02d}", "title": "",
                                     "text": text}) + "\n")
        with (folder / "queries.jsonl").open("w", encoding="utf-8") as fh:
            for w, wording in enumerate(WORDINGS):
                fh.write(json.dumps({"_id": f"g{s + 1:02d}-q{w}",
                                     "text": wording.format(lang=lang)}) + "\n")
        with (folder / "qrels" / f"{split}.tsv").open("w", encoding="utf-8") as fh:
            fh.write("query-id\tcorpus-id\tscore\n")
            for w in range(len(WORDINGS)):
                for p in range(N_PARAGRAPHS):
                    fh.write(f"g{s + 1:02d}-q{w}\tg{s + 1:02d}-p{p:02d}\t{int(g[s, p])}\n")
    return root
