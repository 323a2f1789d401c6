"""The r2i_score evaluate module end to end: evaluate.load with a scripted judge, the sample
release's rows, hand-computed scores, presets, compute options and clear errors for wrong inputs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import evaluate
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
METRIC = str(ROOT / "metrics" / "r2i_score")
BENCH = get_benchmark("r2i-bench")


@pytest.fixture(scope="module")
def rows():
    return BENCH.read_release(BENCH.sample_path()).configs["all"]


def answer_all(scores: dict[str, float] | None = None, default: float = 1.0):
    """A judge scoring every listed question ``default`` (or as ``scores`` says for a prompt)."""

    def reply(request):
        text = request.messages[0].text
        keys = re.findall(r"^Question (\S+):", text, re.M)
        value = next((v for prefix, v in (scores or {}).items() if prefix in text), default)
        return "Checked.\n```json\n" + json.dumps({k: value for k in keys}) + "\n```"

    return ScriptedJudge(reply)


def load(judge, **kw):
    return evaluate.load(METRIC, judge=judge, cache=False, progress=False, **kw)


def test_end_to_end_on_the_sample(rows, tmp_path):
    judge = answer_all({"glass of milk": 0.5, "rubber ducks": 0.0})
    # paths as predictions, as generators write them
    paths = []
    for i, row in enumerate(rows):
        path = tmp_path / BENCH.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (32, 32), (i * 9, 0, 0)).save(path)
        paths.append(str(path))
    out = load(judge).compute(predictions=paths, references=rows)
    by_id = dict(zip([r["id"] for r in rows], out["scores"]))
    assert by_id["causal/cause_to_effect/1"] == 0.5 and by_id["numerical/exact_number_generation/71"] == 0.0
    assert by_id["logical/disjunctive/42"] is None
    assert out["num_unscorable"] == 3 and out["num_failed"] == 3 and out["num_reasks"] == 0
    scored = [s for s in out["scores"] if s is not None]
    assert len(scored) == 12 and len(judge.requests) == 12
    assert out["r2i_score"] == pytest.approx(100 * sum(scored) / 12)
    assert out["category_scores"]["causal"] == pytest.approx(75.0)
    assert out["category_scores"]["numerical"] == pytest.approx(50.0)
    assert out["overall"]["n"] == 12 and out["overall"]["se"] > 0
    assert out["judge"]["backend"] == "scripted" and out["judge"]["preset"] == "paper"
    detail = out["per_image"][rows.index(next(r for r in rows if r["id"] == "causal/cause_to_effect/1"))]
    assert [q["score"] for q in detail["questions"]] == [0.5, 0.5, 0.5] and detail["replies"]


def test_unanswered_questions_per_preset(rows):
    row = next(r for r in rows if r["id"] == "causal/cause_to_effect/2")  # weights 5, 10, 7, 1
    partial = '```json\n{"1": 1, "2": 1, "3": 0}\n```'  # question 4 never answered
    image = Image.new("RGB", (32, 32))

    judge = ScriptedJudge([partial] * 3)
    out = load(judge).compute(predictions=[image], references=[row])
    assert out["scores"] == [None] and out["num_failed"] == 1 and out["num_reasks"] == 2
    assert "question(s) 4 unanswered" in out["per_image"][0]["failure"]
    assert "no valid score for question(s) 4" in judge.requests[1].messages[-1].text

    judge = ScriptedJudge([partial] * 3)
    out = load(judge, preset="official").compute(predictions=[image], references=[row])
    assert out["scores"] == [0.68] and out["num_partial"] == 1  # 15 / 22 over the answered ones, to 2 decimals
    assert out["per_image"][0]["context"]["unanswered"] == ["4"] and out["judge"]["preset"] == "official"
    assert judge.requests[0].messages[0].content[0].startswith("\n# Text-to-Image Quality Evaluation Protocol \n")

    # a compute option overrides the preset's
    out = load(ScriptedJudge([partial] * 2)).compute(predictions=[image], references=[row],
                                                     missing="answered", max_reasks=1)
    assert out["scores"] == [pytest.approx(15 / 22)] and out["num_reasks"] == 1


def test_an_unreadable_image_is_that_images_failure_not_the_chunks(rows, tmp_path):
    scorable = [r for r in rows if r["questions"]][:3]
    good = tmp_path / "good.png"
    Image.new("RGB", (16, 16)).save(good)
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "cut.png").write_bytes(good.read_bytes()[:-30])
    judge = answer_all()
    out = load(judge).compute(predictions=[str(good), str(tmp_path / "empty.png"), str(tmp_path / "cut.png")],
                              references=scorable)
    assert out["scores"][0] == 1.0 and out["scores"][1:] == [None, None] and len(judge.requests) == 1
    assert "empty" in out["per_image"][1]["failure"] and "cut.png" in out["per_image"][2]["failure"]
    assert out["num_failed"] == 2 and out["overall"]["failed"] == 2


def test_presets_and_judge_loading():
    m = evaluate.load(METRIC, cache=False)  # the paper preset names GPT-4o; nothing is loaded yet
    assert m.judge_spec == "openai:gpt-4o" and m.judge_kwargs["sampling"].temperature == 0.1
    with pytest.raises(ValueError, match="unknown preset 'fast'"):
        evaluate.load(METRIC, preset="fast", judge=ScriptedJudge([]))


def test_a_row_needs_only_what_scoring_reads(rows):
    """Issue 34.10: a row without the bookkeeping fields (source_id, reference_caption, the raw cells, a
    question's note, dimension, extra, even its id) was refused; a row of what scoring reads is scored, the
    same as the whole row, through compute and add_batch alike (what a metric Space calls)."""
    row = rows[0]
    bare = {k: row[k] for k in ("id", "prompt", "category", "subcategory")}
    bare["questions"] = [{k: q[k] for k in ("question", "criterion", "weight")} for q in row["questions"]]
    image = Image.new("RGB", (8, 8))
    m = load(answer_all(default=0.5))
    whole = m.compute(predictions=[image], references=[row])
    out = m.compute(predictions=[image], references=[bare])
    assert out["scores"] == whole["scores"] == [0.5] and out["num_failed"] == 0
    assert out["per_image"][0]["id"] == row["id"] and [q["weight"] for q in out["per_image"][0]["questions"]] == [
        q["weight"] for q in row["questions"]]
    m.add_batch(predictions=[image], references=[bare])
    assert m.compute()["scores"] == [0.5]
    for field in ("prompt", "category"):  # what scoring reads is still required, by name
        with pytest.raises(ValueError, match=rf"lacks field\(s\) \['{field}'\]: is it a r2i-bench row"):
            m.compute(predictions=[image], references=[{k: v for k, v in bare.items() if k != field}])
    no_criterion = dict(bare, questions=[{"question": "Is it?", "weight": 1.0}])
    with pytest.raises(ValueError, match=r"question 0 lacks \['criterion'\]"):
        m.compute(predictions=[image], references=[no_criterion])


def test_wrong_inputs_give_clear_errors(rows):
    m = load(ScriptedJudge([]))
    image = Image.new("RGB", (8, 8))
    with pytest.raises(ValueError, match=r"got 2 images \(predictions\) but 1 rows"):
        m.compute(predictions=[image, image], references=rows[:1])
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['questions'\]: is it a r2i-bench row"):
        m.compute(predictions=[image], references=[{k: v for k, v in rows[0].items() if k != "questions"}])
    with pytest.raises(ValueError, match=r"references\[0\] is a str"):
        m.compute(predictions=[image], references=["a prompt"])
    with pytest.raises(ValueError, match=r"predictions\[0\].*is None"):
        m.compute(predictions=[None], references=rows[:1])
    with pytest.raises(TypeError, match="unknown option"):
        m.compute(predictions=[image], references=rows[:1], temperature=0.5)


# -- fuzzed judge replies: never a crash, never a silent zero, scores in range ---------------------------



_KEYS = st.sampled_from(["1", "2", "3", "4", "Q1", "question 2", " 3", "id", "score", "", "01"])
_VALUES = st.one_of(st.sampled_from([0, 0.5, 1, "0.5", "1", 1.0]), st.none(), st.booleans(), st.integers(-3, 12),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=6),
                    st.lists(st.integers(0, 1), max_size=3), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2))
_JSON = st.one_of(st.dictionaries(_KEYS, _VALUES, max_size=6), st.lists(_VALUES, max_size=4), _VALUES)


@st.composite
def replies(draw):
    value = draw(_JSON)
    try:
        body = json.dumps(value, allow_nan=True)
    except (TypeError, ValueError):
        body = str(value)
    shape = draw(st.sampled_from(["fenced", "bare", "prose", "broken", "text", "nested"]))
    if shape == "fenced":
        return f"{draw(st.text(max_size=20))}\n```json\n{body}\n```"
    if shape == "bare":
        return body
    if shape == "prose":
        return f"Analysis: {draw(st.text(max_size=30))} {body} {draw(st.text(max_size=10))}"
    if shape == "broken":
        return body[: draw(st.integers(0, max(0, len(body) - 1)))] + draw(st.sampled_from(["", ",", "}", "{", "]"]))
    if shape == "nested":
        return "[" * draw(st.integers(1, 50)) + body + "]" * draw(st.integers(0, 50))
    return draw(st.text(max_size=60))


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(replies(), min_size=1, max_size=3), st.sampled_from(["fail", "answered"]),
       st.sampled_from([(0.0, 0.5, 1.0), None]))
def test_fuzzed_replies_never_crash_and_never_score_in_silence(rows, texts, missing, allowed):
    row = next(r for r in rows if r["id"] == "causal/cause_to_effect/2")  # 4 questions, weights 5, 10, 7, 1
    judge = ScriptedJudge(list(texts) * 3)
    [result] = BENCH.score([row], [Image.new("RGB", (8, 8))], judge, max_reasks=2, missing=missing,
                           allowed_scores=allowed)
    scores = [q.score for q in result.questions]
    if result.score is None:
        assert result.failure  # a failure says why; nothing is scored in silence
    else:
        assert 0.0 <= result.score <= 1.0
        answered = [(q.weight, q.score) for q in result.questions if q.score is not None]
        assert answered, "a score with no answered question would be a silent score"
        assert result.score == pytest.approx(sum(w * s for w, s in answered) / sum(w for w, _ in answered))
        if missing == "fail":
            assert None not in scores and result.failure is None
        assert all(0.0 <= s <= 1.0 and (allowed is None or s in allowed) for s in scores if s is not None)
    assert len(result.replies) == len(judge.requests) <= 3


def test_fuzz_reaches_the_metric_module(rows):
    """The same guarantee through evaluate: a reply that parses to nothing is a counted failure."""
    row = next(r for r in rows if r["id"] == "causal/cause_to_effect/2")
    out = load(ScriptedJudge(['{"score": [1, 1]}', "[[[[", '{"reason": 5, "1": true}'])).compute(
        predictions=[Image.new("RGB", (8, 8))], references=[row])
    assert out["scores"] == [None] and out["num_failed"] == 1 and out["overall"]["failed"] == 1
    assert r2i.question_keys(row["questions"]) == ["1", "2", "3", "4"]


def test_the_card_says_what_the_official_preset_does():
    card = (ROOT / "metrics" / "r2i_score" / "README.md").read_text()
    opts = BENCH.presets["official"]["options"]
    assert opts["missing"] == "answered" and '`missing="answered"`' in card
    assert opts["round_scores"] == 2 and "`round_scores=2`" in card
    assert opts["template"] == "official" and "official_evaluation.txt" in card
    never = {f"commonsense/{s}" for s in ("affordance", "attribute", "color", "emotion_intention_commonsense")}
    assert never.isdisjoint(opts["subcategories"]) and len(opts["subcategories"]) == 28
    assert all(s.split("/")[1] in card for s in never)
    assert BENCH.official_release.revision in card
    for bug in ("`[QUESTION_LIST]`", "scores **0**, in silence", "`TypeError`", "`image/jpeg`"):
        row = next(line for line in card.splitlines() if bug in line)
        assert row.rstrip().endswith("**not reproduced** |") or "**not reproduced**" in row, row
