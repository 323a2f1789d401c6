"""Each R2I-Bench question's levels, read from its criterion (levels.py): the shapes the real criteria
write them in, those that cannot be read, and scoring on them (request, schema, validation, build report)."""

from __future__ import annotations

import csv
import io

import pytest

from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import BENCH, answer, images, kinds


# criteria written as the real release writes them (formats.md; the shapes, not the records)
@pytest.mark.parametrize("criterion, levels", [
    ("1.0 (Fully Correct) – clear. 0.5 (Partially Correct) – some. 0.0 (Failure) – none.", [0, 0.5, 1]),
    ("1.0: three slices. 0.75: 2-3 slices visible. 0.5: one slice. 0.25: blurry. 0: none.", [0, 0.25, 0.5, 0.75, 1]),
    ("1.0: melted. 0.7: partial (e.g., 2.5 cm). 0.3: barely. 0.0: solid.", [0, 0.3, 0.7, 1]),
    ("1.0 = smile + tears; 0.6 = simple smile; 0.3 = neutral; 0.0 = contradicts", [0, 0.3, 0.6, 1]),
    ("0.0-0.3 (Poor): overlaid. 0.4-0.6 (Fair): partial. 0.7-0.8 (Good): most. 0.9-1.0 (Excellent): all.",
     [(0, 0.3), (0.4, 0.6), (0.7, 0.8), (0.9, 1)]),
    ("Scoring: 1.0 - shoes; 0.6-0.9 - obscured; 0.1-0.5 - sandals; 0 - gloves.", [0, (0.1, 0.5), (0.6, 0.9), 1]),
    ("{'1.0': 'tiny with details', '0.5': 'blurry', '0.0': 'invisible'}", [0, 0.5, 1]),
    ("- **1.0**: Exact 45° rotation. - **0.5**: Close (e.g., 30°). - **0.0**: wrong (e.g., 90°).", [0, 0.5, 1]),
    ("Score 0 if absent, 0.5 if present but not contrasted, 1 if clearly compared.", [0, 0.5, 1]),
    ("1: pens countable.0.5: some obscured.0: unclear", [0, 0.5, 1]),
    ("1: Exists as '56', 0: Does not exist as '56'", [0, 1]),
    ("1: Exact 2:3 ratio (e.g., 200x300). 0.5: close (e.g., 17-step, 10–30%). 0: other", [0, 0.5, 1]),
    ("[0.0] Violates. [0.4] Flaws. [0.8] Lacks details. [1.0] Fully logical.", [0, 0.4, 0.8, 1]),
    ("- All correct (1 point)- Partially correct (0.5 points)- Completely wrong (0 points)", [0, 0.5, 1]),
])
def test_criterion_levels_are_read_as_the_real_criteria_write_them(criterion, levels):
    expected = tuple(sorted((float(v), float(v)) if not isinstance(v, tuple) else tuple(map(float, v)) for v in levels))
    assert r2i.criterion_levels(criterion) == expected


# issue 34.14: the shapes of four real criteria whose defined levels were lost, and the scale's header that
# was read as a level (the real rows are checked in tests/test_real_release.py)
@pytest.mark.parametrize("criterion, levels", [
    ("1: error <2% of the width0.5: error 2%-10%0: error >10% or missing", [0, 0.5, 1]),  # glued: after % too
    ("1.0: points at (≈(-1.5,2))0.5: right way, length >20%0: wrong way", [0, 0.5, 1]),
    ("- Right (1 point)- Wrong place (0.5 points, e.g., shifted)- None (0 points)", [0, 0.5, 1]),
    ("Scoring (reverse scale, subtract from 1): -1 (score 0) → rotten. -0.5 (score 0.5) → spots. 0 (score 1) → fresh.",
     [0, 0.5, 1]),
    ("Scoring (0-1):- 0: none.- 0.5: some.- 1: all.", [0, 0.5, 1]),  # "(0-1)" is the scale, not a level
])
def test_levels_glued_to_their_text_or_written_as_the_score_in_parentheses(criterion, levels):
    assert r2i.criterion_levels(criterion) == tuple((float(v), float(v)) for v in levels)


@pytest.mark.parametrize("criterion", [
    "Tests geometric reasoning. The rotation must be precise.",            # no levels
    "5: Angle error <2° | 4: Error 2-5° | 3: Error 5-10° | 1: Completely wrong",  # a points scale
    "Full credit (2): No extra elements. Partial credit (1): Minor noise. Fail (0): Unrelated objects.",
    "1: labeled 'Step 1: Rotate', 'Step 2: Scale'. 0.5: split. 0: reversed",  # a number read as a level: out of 0-1
    "Full score (1) if both are placed; otherwise 0.",                      # one level
])
def test_criteria_whose_levels_cannot_be_read(criterion):
    assert r2i.criterion_levels(criterion) is None
    assert r2i.question_levels({"criterion": criterion}) == (r2i.DEFAULT_LEVELS, False)


# -- scored on its criterion's levels --------------------------------------------------------------------


def _with_criteria(row, *criteria):
    return dict(row, questions=[dict(q, criterion=c) for q, c in zip(row["questions"], criteria, strict=True)])


QUARTERS = "1.0: perfect. 0.75: minor flaws. 0.5: some. 0.25: little. 0: none."


RANGES = "1.0: clear. 0.7-0.9: vague but reasonable. 0.3-0.6: irrelevant. 0.0: absurd."


BINARY = "1: it exists, 0: it does not exist"


@pytest.mark.parametrize("preset", ["paper", "official"])
def test_a_criterion_that_defines_075_scores_075(rows, preset):
    row = _with_criteria(rows["logical/disjunctive/41"], QUARTERS, RANGES, BINARY)  # weights 10, 4, 2
    opts = BENCH.presets[preset]["options"]
    judge = ScriptedJudge([answer({"1": 0.75, "2": 0.85, "3": 1})])
    [result] = BENCH.score([row], images(1), judge, structured_output=True, **opts)
    assert [q.score for q in result.questions] == [0.75, 0.85, 1]
    expected = (10 * 0.75 + 4 * 0.85 + 2 * 1) / 16
    assert result.score == pytest.approx(round(expected, 2) if preset == "official" else expected)
    assert result.failure is None and result.reasks == 0 and "default_levels" not in result.context
    # the schema follows each question: quarters as an enum, ranges as bounded numbers, binary 0 or 1
    props = judge.requests[0].json_schema["properties"]
    assert props["1"] == {"enum": [0, 0.25, 0.5, 0.75, 1]}
    assert props["2"] == {"anyOf": [{"enum": [0, 1]}, {"type": "number", "minimum": 0.3, "maximum": 0.6},
                                    {"type": "number", "minimum": 0.7, "maximum": 0.9}]}
    assert props["3"] == {"enum": [0, 1]}
    if preset == "paper":  # the instruction names each question's scores; the official text is the authors'
        text = judge.requests[0].messages[0].text
        assert "- question 1: one of the scores 0, 0.25, 0.5, 0.75 or 1" in text
        assert "- question 2: one of the scores 0 or 1, or any score from 0.3 to 0.6 or any score from 0.7 to 0.9" in text
        assert "- question 3: one of the scores 0 or 1" in text


@pytest.mark.parametrize("preset", ["paper", "official"])
def test_a_score_the_criterion_does_not_define_is_reasked_then_failed(rows, preset):
    row = _with_criteria(rows["logical/disjunctive/41"], QUARTERS, RANGES, BINARY)
    opts = {**BENCH.presets[preset]["options"], "missing": "fail"}
    judge = ScriptedJudge([answer({"1": 0.7, "2": 0.65, "3": 0.5})] * 2)
    [result] = BENCH.score([row], images(1), judge, max_reasks=1, **opts)
    reask = judge.requests[1].messages[-1].text
    assert "question 1 has 0.7, not a score its criteria define (one of the scores 0, 0.25, 0.5, 0.75 or 1)" in reask
    assert "question 2 has 0.65" in reask and "question 3 has 0.5, not a score its criteria define" in reask
    assert result.score is None and result.failure  # recorded, never a zero


def test_a_criterion_without_readable_levels_is_scored_on_the_default_and_said_so(rows):
    row = _with_criteria(rows["logical/disjunctive/41"], "Tests reasoning; must be exact.", QUARTERS, BINARY)
    judge = ScriptedJudge([answer({"1": 0.5, "2": 0.25, "3": 0})])
    [result] = BENCH.score([row], images(1), judge)
    assert result.context["default_levels"] == ["1"] and result.score == pytest.approx((10 * 0.5 + 4 * 0.25) / 16)


def test_the_old_fixed_levels_stay_an_option(rows):
    row = _with_criteria(rows["logical/disjunctive/41"], QUARTERS, RANGES, BINARY)
    judge = ScriptedJudge([answer({"1": 0.5, "2": 0.5, "3": 0.5})])
    [result] = BENCH.score([row], images(1), judge, allowed_scores=(0, 0.5, 1))
    assert result.score == pytest.approx(0.5)
    assert "Give each question one of the scores 0, 0.5 or 1, as its scoring criteria define." in \
        judge.requests[0].messages[0].text
    with pytest.raises(ValueError, match="allowed_scores must be 'criteria'"):
        BENCH.score([row], images(1), judge, allowed_scores="levels")


def test_unreadable_levels_are_reported_by_the_build(copy):
    path = copy / "data/evaluation/logical/disjunctive_eval.csv"
    lines = path.read_text("utf-8").splitlines(keepends=True)
    head, first = lines[0], lines[1]
    cells = next(csv.reader([first]))
    cells[head.strip().split(",").index("evaluation_criteria")] = "Helpful but not reasoning-dependent."
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerow(cells)
    path.write_text(head + out.getvalue() + "".join(lines[2:]), "utf-8")
    release = BENCH.read_release(copy)
    [anomaly] = kinds(release, "unreadable_levels")
    assert anomaly.file == "evaluation/logical/disjunctive_eval.csv" and "scored on 0, 0.5 and 1" in anomaly.detail
    assert release.counts["logical"]["default_levels"] == 1 and release.counts["all"]["default_levels"] == 1
    assert not kinds(BENCH.read_release(BENCH.sample_path()), "unreadable_levels")
