"""T2I-ReasonScore with hand-computed values: the paper's weights, Table 4's image score, the official
accuracy, custom weights, and bad rows or options as clear errors."""

from __future__ import annotations

import pytest

from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult

from .conftest import BENCH, CountingJudge, answering


def test_paper_weights_by_hand(scored_rows):
    rows, images, scores = scored_rows
    judge = CountingJudge(answering(scores))
    results = BENCH.score(rows, images, judge)
    # idiom: 0.9*mean(1,.5,1,0) + 0.1*mean(1,.5); textual: 0.9*(2.5/3) + 0.1*0
    # entity: 0.7*0.5 + 0.2*mean(1,0) + 0.1*1; scientific: 0.7*0.75 + 0.2*0 + 0.1*0.75
    assert [r.score for r in results] == pytest.approx([0.6375, 0.75, 0.55, 0.6])
    assert results[2].subscores == pytest.approx({"reason": 0.5, "detail": 0.5, "quality": 1.0})
    assert [q.score for q in results[0].questions] == [1, 0.5, 1, 0, 1, 0.5]
    assert results[3].questions[0].id == "scientific_evaluation.sci_q1" and results[3].questions[0].group == "reason"
    assert results[3].questions[0].reasoning.startswith("on Does the ice cube float")
    assert all(r.failure is None and r.reasks == 0 for r in results)
    # batched: every describe turn in one batch, then every group turn (2+2+3+3) in one
    assert judge.batches == [4, 10]

    table = BENCH.aggregate(results)
    assert (table["idiom"], table["textual"], table["entity"], table["scientific"]) == pytest.approx((63.75, 75, 55, 60))
    assert table["overall"] == pytest.approx((63.75 + 75 + 55 + 60) / 4)
    assert table["dimensions"]["entity"]["quality"]["mean"] == pytest.approx(100)
    assert table["dimensions"]["idiom"]["weights"] == {"reason": 0.9, "detail": 0.0, "quality": 0.1}
    assert table["dimensions"]["idiom"]["max_score"] == pytest.approx(100)
    assert table["aggregation"] == "paper" and table["mode"] == "image"


def test_table4_image_score_by_hand(scored_rows):
    """Table 4's image score: w1 S_reason + w2 S_detail of each image, without quality (maximum 90)."""
    rows, images, scores = scored_rows
    results = BENCH.score(rows, images, ScriptedJudge(answering(scores)))
    table = BENCH.aggregate(results)
    # idiom 0.9*0.625, textual 0.9*(2.5/3), entity 0.7*0.5 + 0.2*0.5, scientific 0.7*0.75 + 0.2*0 (x100)
    expected = {"idiom": 56.25, "textual": 75.0, "entity": 45.0, "scientific": 52.5}
    assert table["image_score"] == pytest.approx(expected)
    assert table["dimensions"]["entity"]["image_score"]["n"] == 1
    tables = {t.title: t for t in BENCH.paper_tables(table, "m")}
    t4 = tables["T2I-ReasonBench Table 4: image score"]
    assert {c: cell.value for c, cell in t4.rows["m"].items()} == pytest.approx(
        {d.title(): v for d, v in expected.items()})
    assert "without quality" in t4.note and "maximum 90" in t4.note
    # a failed quality group leaves the Table 4 score standing; a failed reason group does not
    broken = [ImageResult(**{**results[0].__dict__, "subscores": {"reason": 0.5, "detail": 0.0, "quality": None},
                             "score": None}),
              ImageResult(**{**results[0].__dict__, "subscores": {"reason": None, "detail": 0.0, "quality": 1.0},
                             "score": None})]
    assert BENCH.aggregate(broken)["dimensions"]["idiom"]["image_score"]["mean"] == pytest.approx(45)
    # neither the text score nor the official accuracy has this table
    official = BENCH.aggregate(BENCH.score(rows, images, ScriptedJudge(answering(scores)), aggregation="official"),
                               aggregation="official")
    assert "image_score" not in official
    assert all("Table 4" not in t.title for t in BENCH.paper_tables(official, "m"))


def test_official_aggregation_by_hand(scored_rows):
    rows, images, scores = scored_rows
    results = BENCH.score(rows, images, ScriptedJudge(answering(scores)), aggregation="official")
    # idiom, textual: mean(reason); entity, scientific: 0.7 reason + 0.3 detail; quality apart
    assert [r.score for r in results] == pytest.approx([0.625, 2.5 / 3, 0.5, 0.525])
    assert [r.subscores["quality"] for r in results] == pytest.approx([0.75, 0.0, 1.0, 0.75])
    table = BENCH.aggregate(results, aggregation="official")
    assert table["textual"] == pytest.approx(250 / 3) and table["aggregation"] == "official"
    assert table["dimensions"]["textual"]["quality"]["mean"] == pytest.approx(0)


def test_custom_weights(scored_rows):
    rows, images, scores = scored_rows
    results = BENCH.score(rows[:1], images[:1], ScriptedJudge(answering(scores)),
                          weights={"idiom": {"reason": 0.5, "quality": 0.5}})
    assert results[0].score == pytest.approx(0.5 * 0.625 + 0.5 * 0.75)
    with pytest.raises(ValueError, match="weights"):
        BENCH.score(rows, images, ScriptedJudge([]), weights={"idiom": {"style": 1}})


def test_bad_rows_and_options_are_clear_errors(release, scored_rows):
    rows, images, scores = scored_rows
    with pytest.raises(ValueError, match="got 4 rows but 3 images"):
        BENCH.score(rows, images[:3], ScriptedJudge([]))
    with pytest.raises(ValueError, match=r"rows\[0\] lacks field\(s\) \['dimension'\]"):
        BENCH.score([{"id": 1, "prompt": "p", "evaluation": []}], images[:1], ScriptedJudge([]))
    # rows built before groups carried their role: a group the dimension does not have is an error
    old_style = {**rows[0], "dimension": "entity",
                 "evaluation": [{k: v for k, v in g.items() if k != "role"} for g in rows[0]["evaluation"]]}
    with pytest.raises(ValueError, match="has question group 'reason_evaluation'; a entity row"):
        BENCH.score([old_style], images[:1], ScriptedJudge([]))
    # a row of this reader carries its groups' roles: an idiom row labelled entity lacks the detail group
    (result,) = BENCH.score([{**rows[0], "dimension": "entity"}], images[:1], ScriptedJudge(answering(scores)))
    assert result.score is None and "no detail questions for a entity row" in result.failure
    with pytest.raises(TypeError, match="unknown option"):
        BENCH.score(rows, images, ScriptedJudge([]), temperature=0)
    with pytest.raises(ValueError, match="mode must be one of"):
        BENCH.score(rows, images, ScriptedJudge([]), mode="video")
