"""R2I-Score (scores.py) with scripted judge replies checked by hand: one image's weighted mean, what is
unscorable or failed, the aggregation with its intervals, Table 13 and the official rounding."""

from __future__ import annotations

import math

import numpy as np
import pytest
from PIL import Image

from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult

from .scripted import BENCH, CountingJudge, answer, by_prompt, ids_in, images

# -- one image's score -----------------------------------------------------------------------------------


def test_weighted_mean_by_hand(rows):
    selected = [rows["causal/cause_to_effect/1"], rows["compositional/prescriptive_spatial/22"],
                rows["numerical/exact_number_generation/71"]]
    judge = by_prompt({"glass of milk": {"1": 1, "2": 0.5, "3": 0},
                       "Three books": {"1": 1, "2": 0.5},
                       "rubber ducks": {"1": 0, "2": 1}})
    results = BENCH.score(selected, images(3), judge)
    assert [r.score for r in results] == pytest.approx([(5 + 4.5 + 0) / 16, (5 + 6.25) / 17.5, 5 / 55])
    assert all(r.failure is None and r.reasks == 0 for r in results)
    first = results[0]
    assert first.id == "causal/cause_to_effect/1" and first.config == "causal"
    assert first.context["subcategory"] == "cause_to_effect"
    assert [(q.id, q.score, q.weight) for q in first.questions] == [("1", 1.0, 5.0), ("2", 0.5, 9.0), ("3", 0.0, 2.0)]
    assert first.replies and "```json" in first.replies[0]


def test_zero_weight_questions_count_for_nothing(rows):
    judge = by_prompt({"teapot": {"1": 1, "2": 0, "3": 0}})
    [result] = BENCH.score([rows["compositional/prescriptive_spatial/21"]], images(1), judge)
    assert result.score == pytest.approx(9 / 17)


def test_all_instances_go_in_one_batch_and_unscorable_ones_are_not_asked(release):
    rows = release.configs["all"]

    def reply(request):
        return answer({k: 1 for k in ids_in(request)})

    judge = CountingJudge(reply)
    results = BENCH.score(rows, images(len(rows)), judge)
    assert judge.chat_calls == 1 and len(judge.requests) == 12
    unscorable = [r for r in results if r.context.get("unscorable")]
    assert sorted(r.id for r in unscorable) == ["concept_mixing/functional_mixing/31",
                                                "concept_mixing/functional_mixing/32", "logical/disjunctive/42"]
    assert all(r.score is None and "no evaluation questions" in r.failure for r in unscorable)
    assert all(r.score == 1.0 for r in results if r not in unscorable)


def test_unanswered_after_reasks_is_a_recorded_failure(rows):
    row = rows["causal/cause_to_effect/2"]
    judge = ScriptedJudge([answer({"1": 1, "2": 1})] * 3)
    [result] = BENCH.score([row], images(1), judge, max_reasks=2)
    assert len(judge.requests) == 3 and result.reasks == 2
    assert result.score is None and result.failed
    assert result.context["unanswered"] == ["3", "4"]
    assert "question(s) 3, 4 unanswered after 2 re-ask(s)" in result.failure
    assert [q.score for q in result.questions] == [1.0, 1.0, None, None]  # recorded, not zeros

    judge = ScriptedJudge([answer({"1": 1, "2": 1})] * 3)
    [partial] = BENCH.score([row], images(1), judge, missing="answered")
    assert partial.score == pytest.approx(1.0)  # (5 + 10) / 15, the official code's choice
    assert partial.context["unanswered"] == ["3", "4"] and "missing='answered'" in partial.failure
    agg = BENCH.aggregate([partial])
    assert agg["num_partial"] == 1


def test_backend_error_is_recorded_not_resent(rows):
    """Transport retries are the backend's: a failed request is the image's failure, sent once."""
    error = Reply(text="", model="scripted", sampling={}, error="HTTP 500 from the server", transient=True)
    judge = ScriptedJudge([error, answer({"1": 1, "2": 0, "3": 1})])
    [failed] = BENCH.score([rows["logical/disjunctive/41"]], images(1), judge)
    assert failed.score is None and "judge error: HTTP 500" in failed.failure
    assert failed.replies == ["[judge error] HTTP 500 from the server"] and len(judge.requests) == 1
    assert failed.retryable  # the judge could not answer: --retry-failed redoes it

    judge = ScriptedJudge([Reply(text="", model="scripted", sampling={}, error="bad request", transient=False)])
    [refused] = BENCH.score([rows["logical/disjunctive/41"]], images(1), judge)
    assert refused.score is None and not refused.retryable


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels and holds no image data: a decompression bomb's header."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"")) + chunk(b"IEND", b""))


def test_an_unreadable_image_fails_alone(rows, tmp_path):
    good = tmp_path / "good.png"
    Image.new("RGB", (16, 16), "red").save(good)
    broken = {"empty.png": b"", "truncated.png": good.read_bytes()[:-20], "text.png": b"not an image at all",
              "bomb.png": _png_header_only(200_000, 200_000)}
    for name, data in broken.items():
        (tmp_path / name).write_bytes(data)
    row = rows["logical/disjunctive/41"]
    judge = CountingJudge(lambda request: answer({"1": 1, "2": 1, "3": 1}))
    paths = [good, *(tmp_path / name for name in broken), good]
    results = BENCH.score([row] * len(paths), paths, judge)
    assert results[0].score == 1.0 and results[-1].score == 1.0
    assert len(judge.requests) == 2 and judge.chat_calls == 1  # the readable ones still go in one batch
    for r, name in zip(results[1:-1], broken):
        assert r.score is None and r.failure.startswith("image: ") and name in r.failure, r.failure
        assert not r.retryable and r.replies == []


def test_wrong_inputs(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([])
    with pytest.raises(ValueError, match="got 1 rows but 2 images"):
        BENCH.score([row], images(2), judge)
    with pytest.raises(ValueError, match=r"rows\[0\] is a str"):
        BENCH.score(["a prompt"], images(1), judge)
    with pytest.raises(ValueError, match=r"lacks field\(s\) \['questions'\]"):
        BENCH.score([{k: v for k, v in row.items() if k != "questions"}], images(1), judge)
    bad = dict(row, questions=[dict(row["questions"][0], weight="heavy")])
    [unscorable] = BENCH.score([bad], images(1), judge)  # the row's own irregularity: unscorable, not an error
    assert unscorable.context["unscorable"] and "no usable weight" in unscorable.failure
    with pytest.raises(TypeError, match="unknown option"):
        BENCH.score([row], images(1), judge, temperature=0)
    with pytest.raises(ValueError, match="missing must be one of"):
        BENCH.score([row], images(1), judge, missing="zero")
    assert judge.requests == []


# -- aggregation -----------------------------------------------------------------------------------------


def result(id_, category, sub, score, **context):
    return ImageResult(id=id_, prompt="p", score=score, config=category,
                       context={"subcategory": sub, **context})


def test_micro_average_standard_error_and_intervals():
    results = [result("a", "logical", "disjunctive", 1.0), result("b", "logical", "disjunctive", 0.5),
               result("c", "logical", "deductive", 0.0), result("d", "causal", "cause_to_effect", 1.0),
               result("e", "causal", "cause_to_effect", None),  # a judge failure
               result("f", "concept_mixing", "functional_mixing", None, unscorable=True)]
    agg = BENCH.aggregate(results, n_resamples=500)
    scored = [1.0, 0.5, 0.0, 1.0]
    assert agg["r2i_score"] == pytest.approx(62.5)  # micro: mean over instances, not over categories
    assert agg["category_scores"] == {"logical": pytest.approx(50.0), "causal": pytest.approx(100.0)}
    assert list(agg["category_scores"]) == ["logical", "causal"]  # Table 3's order
    assert agg["category_macro_mean"] == pytest.approx(75.0)
    overall = agg["overall"]
    se = 100 * np.std(scored, ddof=1) / math.sqrt(4)
    assert overall["se"] == pytest.approx(se) and overall["n"] == 4 and overall["failed"] == 1
    assert overall["normal_ci_low"] == pytest.approx(62.5 - 1.959964 * se, rel=1e-5)
    assert 0 <= overall["ci_low"] <= 62.5 <= overall["ci_high"] <= 100
    assert agg["categories"]["causal"]["failed"] == 1 and agg["categories"]["causal"]["n"] == 1
    assert agg["subcategories"]["logical/disjunctive"]["mean"] == pytest.approx(75.0)
    assert agg["num_unscorable"] == 1 and agg["unscorable_ids"] == ["f"]
    assert "concept_mixing" not in agg["categories"]
    assert BENCH.aggregate(results, scale=1.0, n_resamples=100)["r2i_score"] == pytest.approx(0.625)


def test_aggregate_rejects_unknown_options():
    with pytest.raises(TypeError, match="unknown option"):
        BENCH.aggregate([], scal=1)


def test_official_category_figures_are_rounded_as_the_authors_round():
    """evaluation.py: each instance's round(above / under, 2), then per category
    round(sum(scores) / len(scores), 2): 0.57, shown on 0-100 as 57.0 (not 56.99999999999999)."""
    def result(score, category="logical"):
        return ImageResult(id=f"{category}/x/{score}", prompt="p", score=score, config=category,
                           context={"subcategory": "x"})

    scores = [0.57, 0.57, 0.57]  # sum 1.71 / 3 = 0.57 (0.5700000000000001 in floats): 0.57
    halves = [0.12, 0.13]  # 0.125 in decimals; 0.25 / 2 in floats is exactly 0.125: round() gives 0.12
    agg = BENCH.aggregate([result(s) for s in scores] + [result(s, "causal") for s in halves],
                          round_scores=2, n_resamples=20)
    expected = {"logical": round(sum(scores) / len(scores), 2) * 100, "causal": round(sum(halves) / 2, 2) * 100}
    assert expected == {"logical": 56.99999999999999, "causal": 12.0}  # the authors' figures, scaled naively
    assert agg["category_scores"] == {"logical": 57.0, "causal": 12.0}
    assert agg["categories"]["logical"]["n"] == 3 and agg["overall"]["mean"] == 39.0  # 1.96 / 5 = 0.392 -> 0.39


# -- Table 13: dimensions inferred from the weights ------------------------------------------------------


@pytest.mark.parametrize("weight, dimension", [(1, "quality"), (3, "quality"), (4, "alignment"), (6, "alignment"),
                                               (7, "reasoning"), (10, "reasoning"), (0, None), (3.5, None),
                                               (6.5, None), (50, None), (None, None)])
def test_dimension_from_the_papers_weight_ranges(weight, dimension):
    assert r2i.infer_dimension(weight) == dimension


def test_table13_dimensions_are_inferred_and_marked_in_the_paper_preset(rows):
    base = rows["logical/disjunctive/41"]
    weights = [5, 9, 2]  # alignment, reasoning, quality
    row = dict(base, questions=[dict(q, weight=w) for q, w in zip(base["questions"], weights, strict=True)])
    odd = dict(row, id="logical/disjunctive/x", questions=[dict(q, weight=w) for q, w in
                                                           zip(base["questions"], [5, 6.5, 0.5], strict=True)])
    opts = BENCH.presets["paper"]["options"]
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})] * 2)
    results = BENCH.score([row, odd], images(2), judge, **opts)
    assert [q.group for q in results[0].questions] == ["alignment", "reasoning", "quality"]
    assert results[0].subscores == {"alignment": 1, "reasoning": 0.5, "quality": 0}
    assert results[1].context["outside_ranges"] == ["2", "3"] and results[1].subscores == {"alignment": 1}
    out = BENCH.aggregate(results)
    assert out["dimensions_inferred"] and out["questions_outside_ranges"] == 2
    assert out["dimensions"]["alignment"]["mean"] == 100 and out["dimensions"]["reasoning"]["n"] == 1
    [t13] = [t for t in BENCH.paper_tables(out, "m") if "Table 13" in t.title]
    assert t13.title == "R2I-Bench Table 13: dimensions (inferred)" and list(t13.columns) == ["TA", "RA", "IQ"]
    assert "INFERRED" in t13.note and "2 question(s) in no range" in t13.note
    # the official preset (the authors' script reports no dimensions) infers none
    plain = BENCH.score([row], images(1), ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})]),
                        **BENCH.presets["official"]["options"])
    assert plain[0].subscores == {} and not BENCH.aggregate(plain)["dimensions_inferred"]
    assert all("Table 13" not in t.title for t in BENCH.paper_tables(BENCH.aggregate(plain), "m"))


def _covered_results() -> list[ImageResult]:
    """An `official`-preset run of a complete release, as scored: every subcategory's instance scored, but the
    four commonsense subcategories the authors' script skips (excluded), functional_mixing without questions,
    and no mathematical_function prompt (the release has none)."""
    out = []
    for category, subs in r2i.release.SUBCATEGORIES.items():
        for sub in subs:
            if sub == "mathematical_function":
                continue
            context = {"subcategory": sub}
            if f"{category}/{sub}" not in r2i.OFFICIAL_SUBCATEGORIES:
                context["excluded"] = True
            if sub == "functional_mixing":
                context["unscorable"] = True
            score = None if context.keys() - {"subcategory"} else 0.5
            out.append(ImageResult(id=f"{category}/{sub}/1", prompt="p", score=score, config=category, context=context))
    return out


def test_a_category_over_fewer_subcategories_than_the_papers_says_so():
    """Issue 40 item 3: an official run's Commonsense covers 3 of the paper's 7 subcategories, Mathematical 7 of 8
    (the release has no mathematical_function prompt), Con.Mix. 1 of 2 (functional_mixing has no questions):
    nothing said so. Coverage per Table 3 column, each missing subcategory with why and whether the release
    lacks it, and the table's note."""
    covered = r2i.scores.subcategory_coverage(_covered_results())
    common = covered["Commonsense"]
    assert common["scored"] == ["social_cultural_knowledge_object", "social_cultural_knowledge_scene",
                                "temporal_understanding"] and len(common["paper"]) == 7
    assert common["missing"]["affordance"] == ["left out by the preset (the authors' script evaluates 28 "
                                               "subcategories)", False]
    assert covered["Mathematical"]["missing"] == {"mathematical_function": ["no prompts in the release", True]}
    assert covered["Con.Mix."]["missing"] == {"functional_mixing": ["no questions in the release", True]}
    assert covered["Logical"]["missing"] == {}
    aggregate = BENCH.aggregate(_covered_results(), n_resamples=50)
    assert set(aggregate["coverage"]) == {"Commonsense", "Mathematical", "Con.Mix."}
    [table3, *_] = BENCH.paper_tables(aggregate, "official-run")
    assert ("official-run: Commonsense over 3 of the paper's 7 subcategories (affordance, attribute, color, "
            "emotion_intention_commonsense: left out by the preset") in table3.note
    assert "Mathematical over 7 of the paper's 8 subcategories (mathematical_function: no prompts in the release)" \
        in table3.note and "Con.Mix. over 1 of the paper's 2 subcategories" in table3.note
