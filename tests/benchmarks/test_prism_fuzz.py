"""Property-based tests of PRISM-Bench (hypothesis): fuzzed judge replies never crash scoring, never
become a silent zero, and stay in range under the paper protocol; the official protocol counts exactly
what the authors' rules count; mutated releases (values retyped, keys renamed, files emptied, lines
duplicated or broken, whitespace and unicode added) are read with nothing lost silently."""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from pathlib import Path

import datasets
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.prism_bench import AXES, LANGUAGES, TRACKS, official_judgement
from t2ireason.judges.scripted import ScriptedJudge

BENCH = get_benchmark("prism-bench")
ROWS = BENCH.read_release(BENCH.sample_path()).configs["en"]
IMAGE = Image.new("RGB", (8, 8), "white")
OUTCOMES = {"counted", "failed", "judge_error", "image_error", "unparsable", "no_number", "summary_raises",
            "unparsed_no_demjson3", "not_finite"}
FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# -- replies ---------------------------------------------------------------------------------------

scores = st.one_of(st.integers(-1000, 1000), st.integers(0, 10), st.floats(allow_nan=True, allow_infinity=True),
                   st.booleans(), st.none(), st.text(max_size=6), st.sampled_from(["8", " 7 ", "10%", "NaN", "1e309"]),
                   st.lists(st.integers(0, 10), max_size=2), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))
judgements = st.builds(lambda s, j: {"justification": j, "score": s}, scores, st.text(max_size=30))
#: wrappers after which the authors' parser reads the object exactly (the first three), or not at all
READ = ("plain", "json fence", "trailing comma")
WRAPPERS = (*READ, "other fence", "trailing text", "two objects")


def wrap(obj: dict, how: str) -> str:
    text = json.dumps(obj)
    return {"plain": text, "json fence": f"```json\n{text}\n```", "trailing comma": text[:-1] + ",}",
            "other fence": f"```python\n{text}\n```", "trailing text": text + "\nI hope this helps.",
            "two objects": text + text}[how]


wrapped = st.tuples(judgements, st.sampled_from(WRAPPERS))
noise = st.one_of(st.text(max_size=200), st.sampled_from(["", "7", '"8"', "null", "[]", "{}", "true", "[" * 2000,
                                                          '{"score": ' * 300, "```json\n```", "```json"]))
replies = st.one_of(wrapped.map(lambda t: wrap(*t)), noise)


@FUZZ
@given(st.one_of(wrapped, noise))
def test_official_judgements_never_crash_and_count_what_the_authors_count(case):
    reply = wrap(*case) if isinstance(case, tuple) else case
    judged = official_judgement(reply)
    assert judged.outcome in OUTCOMES and judged.texts == [reply]
    if judged.outcome == "counted":
        assert isinstance(judged.score, float) and judged.detail == ""
    else:
        assert judged.score is None and judged.detail  # never a silent skip
    if isinstance(case, tuple) and case[1] in READ:
        given_score = case[0]["score"]
        number = isinstance(given_score, (int, float))  # booleans included, no range check
        countable = number and not math.isinf(given_score)  # an infinity is refused (issue 40 item 8)
        assert (judged.outcome == "counted") == countable
        if countable:
            assert judged.score == float(given_score) or (math.isnan(judged.score) and math.isnan(given_score))
        else:
            assert judged.outcome == ("not_finite" if number else "no_number")
    elif isinstance(case, tuple):
        assert judged.outcome != "counted" or case[1] != "two objects"


def _score(replies_, **options):
    pair = list(replies_)
    judge = ScriptedJudge(lambda request: pair.pop(0))
    [result] = BENCH.score(ROWS[:1], [IMAGE], judge, **options)
    return result


@pytest.mark.slow
@FUZZ
@given(st.tuples(replies, replies))
def test_paper_protocol_scores_stay_in_range_and_failures_are_never_zeros(pair):
    result = _score(pair, max_reasks=0)
    for axis, reply in zip(AXES, pair):
        value, outcome = result.subscores[axis], result.context["outcome"][axis]
        if value is None:
            assert outcome == "failed" and f"{axis}: unparsable reply" in result.failure
        else:
            assert outcome == "counted" and 0 <= value <= 100 and math.isfinite(value)
            if value == 0:
                assert "0" in reply  # a zero is a zero the judge gave
    assert (result.score is None) == (result.failure is not None)


@FUZZ
@given(st.tuples(judgements, judgements))
def test_paper_protocol_counts_whole_scores_in_range_exactly(objs):
    result = _score([json.dumps(o) for o in objs], max_reasks=0)
    for axis, obj in zip(AXES, objs):
        s = obj["score"]
        if isinstance(s, int) and not isinstance(s, bool) and 0 <= s <= 10:
            assert result.subscores[axis] == 10 * s
        if isinstance(s, bool) or (isinstance(s, (int, float)) and not 0 <= s <= 10) or s is None:
            assert result.subscores[axis] is None


@FUZZ
@given(st.lists(st.tuples(st.sampled_from(range(len(ROWS))), replies, replies), min_size=1, max_size=6))
def test_official_aggregation_never_crashes_and_explains_every_zero(cases):
    rows = [ROWS[i] for i, _, _ in cases]
    texts = [t for _, a, b in cases for t in (a, b)]
    judge = ScriptedJudge(lambda request: texts.pop(0))
    results = BENCH.score(rows, [IMAGE] * len(rows), judge, protocol="official")
    out = BENCH.aggregate(results, n_resamples=20)
    cells = [*out["tracks"].values()]
    for cell in cells:
        for axis in AXES:
            assert cell["counted"][axis] + cell["failed"][axis] == cell["n"]
            assert sum(cell["outcomes"][axis].values()) == cell["n"]
            if not cell["counted"][axis]:
                assert cell[axis] == 0.0  # as the authors print it, and said so:
                assert any("shows 0.0" in n for n in out["notes"])
    uncounted = sum(out["failed_replies"].values())
    assert (uncounted > 0) == bool([n for n in out["notes"] if "shows 0.0" not in n])
    [table] = BENCH.paper_tables(out, "fuzz")
    assert set(table.columns) >= {"Overall Ali.", "Overall Aes.", "Overall Avg."}


# -- releases --------------------------------------------------------------------------------------

KINDS = ("retype", "rename_key", "empty_file", "duplicate_line", "whitespace", "junk", "blank_lines", "bom",
         "extra_key")
json_values = st.recursive(st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False)
                           | st.text(max_size=8), lambda inner: st.lists(inner, max_size=3)
                           | st.dictionaries(st.text(max_size=5), inner, max_size=3), max_leaves=6)
odd_text = st.text(alphabet=" \t\u2028\u2029\u0085\u00a0\u200b\u3000\u200d\x0b\x0cé🦜中\\\"'", max_size=4)


@st.composite
def mutations(draw):
    kind = draw(st.sampled_from(KINDS))
    value = {"retype": json_values.filter(lambda v: not isinstance(v, str)),
             "rename_key": st.sampled_from(["Prompt", "text", "prompt ", "caption", "PROMPT"]),
             "whitespace": st.tuples(odd_text, odd_text), "junk": st.text(max_size=20).map(lambda t: "<<" + t),
             "extra_key": json_values}.get(kind, st.none())
    return (kind, draw(st.sampled_from(LANGUAGES)), draw(st.sampled_from(list(TRACKS))), draw(st.integers(0, 1)),
            draw(value))


def _lines(path: Path) -> list[bytes]:
    return [ln for ln in path.read_bytes().split(b"\n") if ln.strip()]


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutations(), min_size=1, max_size=3, unique_by=lambda m: (m[1], m[2])))
def test_mutated_releases_are_read_with_nothing_lost_silently(muts):
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        shutil.copytree(BENCH.sample_path(), repo)
        expected = {}
        for kind, lang, track, line, value in muts:
            path = repo / "captions" / lang / f"{track}.jsonl"
            records = [json.loads(ln) for ln in _lines(path)]
            texts = [json.dumps(r, ensure_ascii=False) for r in records]
            original = records[line]["prompt"]
            if kind == "retype":
                texts[line] = json.dumps({**records[line], "prompt": value}, ensure_ascii=False)
            elif kind == "rename_key":
                rec = {value if k == "prompt" else k: v for k, v in records[line].items()}
                texts[line] = json.dumps(rec, ensure_ascii=False)
            elif kind == "whitespace":
                texts[line] = json.dumps({**records[line], "prompt": value[0] + original + value[1]}, ensure_ascii=False)
            elif kind == "junk":
                texts[line] = value.replace("\n", " ").replace("\r", " ")
            elif kind == "duplicate_line":
                texts.insert(line + 1, texts[line])
            elif kind == "extra_key":
                texts[line] = json.dumps({**records[line], "k": value}, ensure_ascii=False)
            data = "\n".join(texts).encode() + b"\n"
            if kind == "empty_file":
                data = b""
            elif kind == "blank_lines":
                data = data.replace(b"\n", b"\n\n  \r\n", 1)
            elif kind == "bom":
                data = b"\xef\xbb\xbf" + data
            path.write_bytes(data)
            expected[(lang, track)] = (kind, line, value, original, len(records))

        rel = BENCH.read_release(repo)  # never raises

        datasets.Dataset.from_list(rel.configs["all"], features=BENCH.features)  # every row storable
        ids = [r["id"] for r in rel.configs["all"]]
        assert len(ids) == len(set(ids))
        for lang in LANGUAGES:
            for track in TRACKS:
                where = f"captions/{lang}/{track}.jsonl"
                rows = rel.configs.get(f"{track}_{lang}", [])
                found = [a for a in rel.anomalies if a.file == where]
                quarantined = [q for q in rel.quarantine if q.file == where]
                # every non-blank line is a row or a quarantined record with its raw text
                lines = _lines(repo / "captions" / lang / f"{track}.jsonl")
                assert len(rows) + len(quarantined) == len(lines)
                assert {q.raw for q in quarantined} <= {ln.decode("utf-8", "backslashreplace") for ln in lines}
                if (lang, track) not in expected:
                    assert found == [] and quarantined == []
                    continue
                kind, line, value, original, n = expected[(lang, track)]
                kinds = [a.kind for a in found]
                kept_as_text = kind == "retype" and isinstance(value, (bool, int, float))
                if kind in ("retype", "rename_key", "junk") and not kept_as_text:
                    assert kinds == [] and [q.row for q in quarantined] == [line + 1]  # its line, in the quarantine
                if kept_as_text:
                    assert rows[line]["prompt"] == json.dumps(value) and kinds == ["prompt_not_text"]
                elif kind == "rename_key":
                    assert "no \"prompt\"" in quarantined[0].reason
                elif kind == "whitespace":
                    prompt = value[0] + original + value[1]
                    assert rows[line]["prompt"] == prompt  # byte for byte
                    assert kinds == []
                elif kind == "junk":
                    assert [r["index"] for r in rows] == [i for i in range(n) if i != line]
                elif kind == "duplicate_line":
                    assert len(rows) == n + 1 and kinds == ["duplicate_prompt"]
                    assert rows[line]["prompt"] == rows[line + 1]["prompt"] == original
                elif kind == "empty_file":
                    assert rows == [] and kinds == ["empty_file"]
                elif kind in ("blank_lines", "bom"):
                    assert [r["prompt"] for r in rows][line] == original and kinds == [] and len(rows) == n
                    assert [r["index"] for r in rows] == list(range(n))
                elif kind == "extra_key":
                    assert json.loads(rows[line]["extra"])["k"] == value and rows[line]["prompt"] == original
                    assert kinds == []
