"""The judge driver's cheap per-call paths give what the general ones give: prompts as
``string.Template.safe_substitute`` fills them, the SIMULATED server's passages as the regular
expression splits them, answers read the same whatever their key order or wrapping, and the
store's batched lines on disk only once flushed, each id once."""

from __future__ import annotations

import dataclasses
import json
import re
from string import Template

from rcp_data.demo.simulated_judge import SimulatedJudge, _passages
from rcp_data.judging.answers import read_answer
from rcp_data.judging.prompts import format_passages, load_prompts
from rcp_data.judging.store import Store, read_records

ODD = ["  lead\n[9] a line that looks numbered\n\nafter", "[3] y\n[4]z", "", "$query $$ ${n}",
       "\n\nleading newlines\n[ab] not a number", "inline [1] mark"]


def test_prompts_fill_as_safe_substitute():
    p = load_prompts()
    crit = "\n".join(f"{c.id} ({c.name}): {c.question}" for c in p.rubric.criteria)
    weird = "$$ $query ${query} $n$passages $criteria ${ids} $unknown ${bad $ end $"
    for a, b in ((p.stage_a, p.stage_b), (weird, weird), ("", "$ids$criteria$")):
        q = dataclasses.replace(p, stage_a=a, stage_b=b)
        for query, texts in (("q $n", ODD), ("", []), ("x", ["$$"] * 3)):
            filled = {"query": query, "n": len(texts), "passages": format_passages(texts)}
            assert q.render_a(query, texts) == Template(a).safe_substitute(filled)
            assert q.render_b(query, texts) == Template(b).safe_substitute(
                filled, criteria=crit, ids=", ".join(p.rubric.ids))


def test_simulated_passages_as_the_regex_splits_them():
    for texts in (ODD, ["one"], [], ["x\n[2] y"] * 4):
        body = "intro\n" + format_passages(texts) + "\n"
        parts = re.split(r"^\[(\d+)\] ", body, flags=re.MULTILINE)[1:]
        assert _passages(body) == parts[1::2]
    assert len(_passages(format_passages(ODD))) == len(ODD) + 1  # one text has a "[9] " line


def test_simulated_answers_repeat_and_stage_b_text_is_json():
    p = load_prompts()
    prompt = p.render_b("SIMULATED q", [f"d{i}: text" for i in range(10)])
    a, b = SimulatedJudge(malformed=0.3), SimulatedJudge(malformed=0.3)
    answers = [a.answer(prompt, s) for s in range(60)]
    assert answers == [b.answer(prompt, s) for s in range(60)]
    ok = [json.loads(t) for t, _ in answers if not t.startswith("SIMULATED")]
    assert ok and all(set(v) == set(p.rubric.ids) for o in ok for v in o.values())
    assert {len(o) for o in ok} == {9, 10}  # malformed ones leave a passage out


def test_answers_read_the_same_in_any_key_order_or_wrapping():
    ids = ["C1", "C2"]
    rows = {str(i): {"C1": i % 2 == 0, "C2": 1} for i in range(1, 4)}
    plain = read_answer("B", json.dumps(rows), 3, ids)
    assert plain.ok and plain.values == [[0, 1], [1, 1], [0, 1]]
    shuffled = json.dumps(dict(reversed(list(rows.items()))))
    for text in (shuffled, f"<think>{{\"1\": 0}}</think>\n```json\n{shuffled}\n```",
                 json.dumps({"answers": rows})):
        assert read_answer("B", text, 3, ids) == plain
    a = read_answer("A", '{"1": 2.5, "2": -1}', 2, ids)
    assert a.values == [2.5, -1.0] and a == read_answer("A", '{"2": -1, "[1]": 2.5}', 2, ids)
    assert read_answer("A", '{"1": 2.5, "3": 1}', 2, ids).category == "wrong-count"
    huge = read_answer("A", '{"1": 12345678901234567890123, "2": NaN}', 2, ids)
    assert huge == read_answer("A", ' x {"2": NaN, "1": 12345678901234567890123}', 2, ids)
    assert huge.values[0] == float(12345678901234567890123) and huge.category == "wrong-count"
    assert read_answer("B", '{"1": {"C1": 2, "C2": 1}}', 1, ids).category == "wrong-count"


def test_store_writes_each_line_at_once_each_id_once(tmp_path):
    def rec(i: int, values: list) -> dict:
        return {"id": f"w{i}", "query": "q", "stage": "A", "phase": "random", "seq": i,
                "docs": [f"d{j}" for j in range(len(values))], "status": "ok",
                "usage": {}, "values": values}

    ident = {"judge": {"model": "SIMULATED"}}
    recs = [rec(i, [i]) for i in range(3)]
    with Store(tmp_path / "s", ident) as store:
        for r in recs:
            store.append(r)
            assert read_records(tmp_path / "s")[-1] == r     # on disk before the next call
        store.append(recs[0])
        assert read_records(tmp_path / "s") == recs
        assert store.has("w2") and not store.has("w3")
        store.append(rec(3, []))
    assert [r["id"] for r in read_records(tmp_path / "s")] == ["w0", "w1", "w2", "w3"]
    with Store(tmp_path / "s", ident) as store:
        assert store.has("w3") and store.records["w1"] == recs[1]
        store.append(recs[1])
    assert len(read_records(tmp_path / "s")) == 4
