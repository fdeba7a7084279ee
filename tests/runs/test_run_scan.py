"""The run reader's two paths (the compiled passes of ``_run_scan`` and the NumPy fallback) read
every score bit for bit as ``float()`` does, on random and adversarial tokens, refuse what
``float()`` refuses, and find the same blocks, first non-finite score, first repeated document
and ranked flag as a plain Python reading of the rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rcp_data.core.errors import InputError
from rcp_data.runs.id_spans import IdSpans
from rcp_data.runs.qrels_runs import read_run
from rcp_data.runs.run_scan import COMPILED, check_run


def _checked(queries: IdSpans, docs: IdSpans, scores: np.ndarray) -> tuple:
    checks, block_queries = check_run(queries, docs, scores)
    names = block_queries.texts(np.arange(len(block_queries)))
    assert names == queries.texts(checks.block_start)
    return checks.block_start, checks.nonfinite, checks.repeat, checks.ranked

pytestmark = pytest.mark.usefixtures("either_run_reader")

ADVERSARIAL = [
    "0", "-0", "+0", "0.0", "-0.0", "-0e5", "0e-400", "00000.000", "1", "-1", "+1", "1.", ".5",
    "-.5", "1.e5", "1e-05", "1E+05", "1e22", "1e23", "-1e22", "1e-22", "1e-23", "0.1", "0.2",
    "0.3", "0.30000000000000004", "0.1e1", "123456789012345678", "1234567890123456789",
    "12345678901234567890", "9007199254740993", "9007199254740992", "9007199254740991",
    "0.12345678901234567", "1.7976931348623157e308", "2.2250738585072014e-308",
    "4.9e-324", "5e-324", "2e-324", "1e-400", "123.456e-2", "0.000001", "1e+0022", "1e0023",
    "0.000000000000000000000000001", "1" + "0" * 30, "1" + "0" * 22, "3.14159",
    "2.718281828459045", "1_0", "1_000.5", "99999999999999999999e-20", "4503599627370497.5",
    "0.1000000000000000055511151231257827", "9007199254740993e-22", "9007199254740992e22",
    "18446744073709551615", "18446744073709551616e-3", "1844674407370955161.5",
]


def _tokens(rng: np.random.Generator) -> list[str]:
    out = list(ADVERSARIAL)
    values = np.concatenate([rng.normal(size=300), rng.normal(size=200) * 10.0 **
                             rng.integers(-30, 30, size=200),
                             rng.uniform(-1, 1, size=100) * 2.0 ** -1060])
    out += [repr(float(v)) for v in values]                # shortest round trip, up to 17 digits
    out += [f"{v:.{d}g}" for v, d in zip(values, rng.integers(1, 25, size=len(values)),
                                         strict=True)]
    out += [f"{v:.{d}f}" for v, d in zip(values[:300], rng.integers(0, 20, size=300),
                                         strict=True)]
    out += [f"{v:.{d}e}" for v, d in zip(values, rng.integers(0, 20, size=len(values)),
                                         strict=True)]
    digits = rng.integers(1, 21, size=300)
    out += ["".join(map(str, rng.integers(0, 10, size=n))) + "e" + str(int(e))
            for n, e in zip(digits, rng.integers(-40, 40, size=300), strict=True)]
    return out


def test_scores_are_float_bit_for_bit(tmp_path: Path) -> None:
    tokens = _tokens(np.random.default_rng(11))
    path = tmp_path / "run.txt"
    path.write_text("".join(f"q1 Q0 d{i} {i + 1} {t} tag\n" for i, t in enumerate(tokens)))
    got = read_run(path, str(path))
    assert len(got) == len(tokens) > 2000
    want = np.array([float(t) for t in tokens])
    assert got.scores.tobytes() == want.tobytes()          # signed zeros and all
    assert np.signbit(got.scores[tokens.index("-0")])


@pytest.mark.parametrize("token", ["0x1p3", "1e", "e5", ".", "-", "1..2", "1e5.5", "1-2", "--1",
                                   "1e+", "0b1", "1f", "1,5", "infinit", "1e5_0x"])
def test_tokens_float_refuses_name_their_line(tmp_path: Path, token: str) -> None:
    with pytest.raises(ValueError):
        float(token)
    path = tmp_path / "run.txt"
    path.write_text(f"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 {token} t\n")
    with pytest.raises(InputError) as err:
        read_run(path, str(path))
    assert (err.value.path, err.value.row, err.value.field) == (str(path), 2, "score")


@pytest.mark.parametrize("token", ["nan", "-inf", "1e400", "Infinity"])
def test_non_finite_scores_name_their_line(tmp_path: Path, token: str) -> None:
    path = tmp_path / "run.txt"
    path.write_text(f"q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.25 t\nq1 Q0 d3 3 {token} t\n")
    with pytest.raises(InputError, match="is not finite") as err:
        read_run(path, str(path))
    assert (err.value.row, err.value.field) == (3, "score")


def _truth(queries: list[str], docs: list[str], scores: list[float]) -> tuple:
    starts = [i for i in range(len(queries)) if i == 0 or queries[i] != queries[i - 1]]
    nonfinite = next((i for i, s in enumerate(scores) if not np.isfinite(s)), None)
    seen: set[tuple[str, str]] = set()
    repeat = None
    for i, pair in enumerate(zip(queries, docs, strict=True)):
        if pair in seen:
            repeat = i
            break
        seen.add(pair)
    one_each = len({queries[i] for i in starts}) == len(starts)
    rises = any(scores[i] > scores[i - 1] for i in range(1, len(scores))
                if queries[i] == queries[i - 1])
    return starts, nonfinite, repeat, one_each and not rises


@pytest.mark.parametrize("seed", range(60))
def test_checks_equal_python(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n_q = int(rng.integers(1, 6))
    names = ["q" + "x" * int(rng.integers(0, 12)) + str(q) for q in range(n_q)]
    pool = ["d" + "y" * int(rng.integers(0, 20)) + str(d) + "é" * (d % 2)
            for d in range(int(rng.integers(2, 60)))]
    rows = int(rng.integers(1, 120))
    queries = rng.choice(names, size=rows).tolist()
    if seed % 2:
        queries = sorted(queries)
    docs = [str(d) for d in rng.choice(pool, size=rows, replace=rows > len(pool) or seed % 3 == 0)]
    scores = np.round(-np.sort(-rng.normal(size=rows)) if seed % 4 < 2 else
                      rng.normal(size=rows), 1)
    if seed % 5 == 0:
        scores[int(rng.integers(0, rows))] = [np.nan, np.inf, -np.inf][seed % 3]
    start, nonfinite, repeat, ranked = _checked(IdSpans.of(queries), IdSpans.of(docs), scores)
    want_start, want_nonfinite, want_repeat, want_ranked = _truth(queries, docs, scores.tolist())
    assert start.tolist() == want_start
    assert (nonfinite, repeat, bool(ranked)) == (want_nonfinite, want_repeat, want_ranked)


def test_checks_of_slices_and_an_empty_run() -> None:
    """Spans taken out of order (not contiguous) and a run of no rows."""
    queries, docs = IdSpans.of(["q1", "q1", "q2", "q2"]), IdSpans.of(["a", "b", "a", "b"])
    index = np.array([3, 2, 1, 0, 1])
    start, nonfinite, repeat, ranked = _checked(queries.take(index), docs.take(index),
                                                np.array([4.0, 3.0, 2.0, 1.0, 0.5]))
    assert (start.tolist(), nonfinite, repeat, ranked) == ([0, 2], None, 4, True)
    empty = IdSpans.of([])
    start, nonfinite, repeat, ranked = _checked(empty, empty, np.zeros(0))
    assert (start.tolist(), nonfinite, repeat, bool(ranked)) == ([], None, None, True)


def test_compiled_check_refuses_spans_outside_their_buffer(either_run_reader: str) -> None:
    if either_run_reader == "numpy":
        return
    ids = IdSpans.of(["q1", "q2"])
    out = [np.empty(2, dtype=np.int64) for _ in range(3)]
    with pytest.raises(ValueError, match="a span outside its buffer"):
        COMPILED.check_run(ids.buf, ids.starts, np.array([2, 99]), ids.buf, ids.starts,
                           ids.ends, np.zeros(2), *out)
    with pytest.raises(ValueError, match="^qe: 8 bytes"):
        COMPILED.check_run(ids.buf, ids.starts, ids.ends[:1], ids.buf, ids.starts, ids.ends,
                           np.zeros(2), *out)


def _file(tmp_path: Path, queries: list[str], docs: list[str], scores: list[str]) -> Path:
    path = tmp_path / "run.txt"
    path.write_text("".join(f"{q} Q0 {d} {i + 1} {s} t\n"
                            for i, (q, d, s) in enumerate(zip(queries, docs, scores,
                                                              strict=True))))
    return path


@pytest.mark.parametrize("case", ["long block, repeat last", "many queries", "interleaved",
                                  "long ids sharing their ends", "clean"])
def test_large_runs_equal_python(tmp_path: Path, case: str) -> None:
    """Runs past the checks' first table sizes (blocks of 5,000 rows, 3,000 queries), read from
    a file (one pass) and from a frame (the checks alone), against the plain reading."""
    rng = np.random.default_rng(5)
    if case == "long block, repeat last":
        queries = ["q1"] * 5000
        docs = [f"d{i}" for i in range(4999)] + ["d1234"]
    elif case == "many queries":
        queries = [f"q{i // 3}" for i in range(9000)]
        docs = [f"d{i % 3}" for i in range(9000)]
        docs[-1] = "d1"
    elif case == "interleaved":
        queries = [f"q{i % 7}" for i in range(7000)]
        docs = [f"d{i}" for i in range(7000)]
        docs[6500] = docs[6500 - 700]                  # same query (700 = 7 x 100 rows)
    elif case == "long ids sharing their ends":
        queries = ["q1"] * 3000
        docs = ["aaaaaaaaaaaaaaaa" + f"{i:06d}" + "zzzzzzzzzzzzzzzz" for i in range(3000)]
        docs[2999] = docs[17]
    else:
        queries = [f"q{i // 1000}" for i in range(8000)]
        docs = [f"doc-{i}-" + "x" * (i % 30) for i in range(8000)]
    scores = [repr(float(v)) for v in np.round(-np.sort(-rng.normal(size=len(queries))), 3)]
    want = _truth(queries, docs, [float(s) for s in scores])
    path = _file(tmp_path, queries, docs, scores)
    from rcp_data.runs.trec_run_bytes import read_trec_run_spans

    split = read_trec_run_spans(path)
    assert split is not None
    got = (split.checks.block_start.tolist(), split.checks.nonfinite, split.checks.repeat,
           split.checks.ranked)
    assert got == want
    size = np.diff(np.append(split.checks.block_start, len(queries)))
    names = split.block_queries.texts(np.arange(len(size)))
    assert [q for name, n in zip(names, size, strict=True) for q in [name] * int(n)] == queries
    start, nonfinite, repeat, ranked = _checked(IdSpans.of(queries), IdSpans.of(docs),
                                                np.array([float(s) for s in scores]))
    assert (start.tolist(), nonfinite, repeat, ranked) == want


def test_compiled_checks_without_padding(either_run_reader: str) -> None:
    """Ids in a buffer with no spare bytes after them (read byte by byte, not a word at a time)
    give what the padded buffer gives."""
    if either_run_reader == "numpy":
        return
    text = b"q1q1q2d1dd1d1"                      # q1 q1 q2 | d1 dd1 d1
    buf = np.frombuffer(text, dtype=np.uint8)
    qs, qe = np.array([0, 2, 4]), np.array([2, 4, 6])
    ds, de = np.array([6, 8, 11]), np.array([8, 11, 13])
    out = [np.empty(3, dtype=np.int64) for _ in range(3)]
    got = COMPILED.check_run(buf, qs, qe, buf, ds, de, np.array([3.0, 2.0, 1.0]), *out)
    assert got == (2, -1, -1, True)
    ds[2], de[2] = 6, 8                          # q2 d1: a new query, no repeat
    assert COMPILED.check_run(buf, qs, qe, buf, ds, de, np.array([3.0, 2.0, 1.0]), *out) == \
        (2, -1, -1, True)
    qs[2], qe[2] = 0, 2                          # q1 d1 twice
    assert COMPILED.check_run(buf, qs, qe, buf, ds, de, np.array([3.0, 2.0, 1.0]), *out) == \
        (1, -1, 2, True)


def test_threads_read_runs_at_once(tmp_path: Path) -> None:
    """Runs read in two threads at once (the GIL released, taken back for the tokens float()
    parses) equal the same runs read one by one."""
    from concurrent.futures import ThreadPoolExecutor

    paths = []
    for r in range(6):
        rng = np.random.default_rng(r)
        tokens = [repr(float(v)) for v in rng.normal(size=3000)]
        tokens[::50] = ["1" * 25] * len(tokens[::50])   # left to float()'s own parser
        path = tmp_path / f"run{r}.txt"
        path.write_text("".join(f"q{i // 100} Q0 d{i} {i} {t} t\n"
                                for i, t in enumerate(tokens)))
        paths.append(path)
    one_by_one = [read_run(p, str(p)) for p in paths]
    with ThreadPoolExecutor(max_workers=2) as pool:
        at_once = list(pool.map(lambda p: read_run(p, str(p)), paths * 3))
    for i, run in enumerate(at_once):
        want = one_by_one[i % len(paths)]
        assert run.scores.tobytes() == want.scores.tobytes()
        assert run.block_query == want.block_query and run.ranked == want.ranked
    assert one_by_one[0].scores[0] == float("1" * 25)


@pytest.mark.parametrize("counted", [False, True])
def test_room_for_the_shortest_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     either_run_reader: str, counted: bool) -> None:
    """A file of nothing but the shortest canonical lines (12 bytes) fits the arrays the
    compiled pass sizes from the file's length, and gives what counting its lines gives."""
    from rcp_data.runs import run_scan
    from rcp_data.runs.trec_run_bytes import read_trec_run_spans

    if counted:
        monkeypatch.setattr(run_scan, "BOUND_UP_TO", 0)
    path = tmp_path / "run.txt"
    line = "q Q d 1 0 t\n"
    assert len(line) == run_scan.MIN_LINE
    path.write_text(line * 999 + "q Q e 1 0 t\n")
    split = read_trec_run_spans(path)
    assert split is not None and len(split) == 1000
    assert split.docs.texts(np.array([0, 998, 999])) == ["d", "d", "e"]
    assert (split.checks.repeat, split.checks.ranked, len(split.checks.block_start)) == \
        (1, True, 1)
