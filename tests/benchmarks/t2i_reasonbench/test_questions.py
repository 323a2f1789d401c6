"""Question groups as the reader makes them: pairs matched by key, not position, and every
shape of rubric rendered as text the judge reads."""

from __future__ import annotations

import json

import pytest

from t2ireason.benchmarks.t2i_reasonbench import group_prompt, parse_pairs, render_rubric

from .conftest import _group, _row


def test_parse_pairs_matches_by_key_not_by_position():
    pairs, extra, notes = parse_pairs({"c1": "crit 1", "q1": "quest 1", "q2": "quest 2", "c2": "crit 2"}, "x")
    assert [(p["question"], p["criterion"]) for p in pairs] == [("quest 1", "crit 1"), ("quest 2", "crit 2")]
    assert extra == {} and [kind for kind, _ in notes] == ["key_order"]
    pairs, _, notes = parse_pairs({"det_q1": "q", "c1": "c"}, "x")
    assert pairs[0]["criterion_key"] == "c1" and notes[0][0] == "irregular_key"
    # shuffled numbers: pairs follow their numbers, each with its own criterion
    pairs, _, _ = parse_pairs({"q2": "second", "c1": "crit 1", "c2": "crit 2", "q1": "first"})
    assert [(p["question_key"], p["question"], p["criterion"]) for p in pairs] == [
        ("q1", "first", "crit 1"), ("q2", "second", "crit 2")]
    # a question that is not text is kept as JSON text, and said so
    pairs, _, notes = parse_pairs({"q1": 3, "c1": "c"}, "x")
    assert pairs[0]["question"] == "3" and ("non_text_value", "question 'q1' is a number; kept as JSON text") in notes


# -- rubrics of every shape, as the judge reads them ------------------------------------------------------

@pytest.mark.parametrize("criterion, text", [
    ("1: Yes. 0.5: Partly. 0: No.", "1: Yes. 0.5: Partly. 0: No."),
    ({"0.5": "Partly.", "1": "Yes.", "0": "No."}, "1: Yes. 0.5: Partly. 0: No."),
    ({"score_0": "none", "score_1": "all", "score_0.5": "some"}, "1: all; 0.5: some; 0: none"),
    ({"score": "1 if red, 0.5 if pink, 0 otherwise"}, "1 if red, 0.5 if pink, 0 otherwise"),
    ({"criteria": "Full marks for a clear tilt."}, "Full marks for a clear tilt."),
    ({"score_1": "q1 - legible", "score_2": "q2 - tidy"}, "score_1: q1 - legible; score_2: q2 - tidy"),
    ({"yes": "1", "no": {"0": "absent"}}, "yes: 1; no: 0: absent"),
    (["1: yes.", "0: no."], "1: yes. 0: no."),
    (1, "1"),
    (True, "true"),
    (None, None),
])
def test_every_criterion_shape_is_rendered_as_readable_text(criterion, text):
    assert render_rubric(criterion) == text
    pairs, _, _ = parse_pairs({"q1": "Question?", "c1": criterion})
    assert pairs[0]["criterion"] == text
    assert pairs[0]["criterion_json"] == (None if criterion is None or isinstance(criterion, str)
                                          else json.dumps(criterion, ensure_ascii=False))
    sent = json.loads(group_prompt(pairs))
    assert sent == {"q1": "Question?", "c1": text}  # readable text, never an escaped JSON object


def test_the_sample_keeps_each_rubric_shape_and_the_judge_sees_it(release):
    idiom3 = _group(_row(release, "idiom", 3), "reason_evaluation")["pairs"]
    assert idiom3[1]["criterion"] == "1: Clearly studying. 0.5: Books present but not in use. 0: No studying."
    assert json.loads(idiom3[1]["criterion_json"]) == {"0.5": "Books present but not in use.", "1": "Clearly studying.",
                                                      "0": "No studying."}
    assert list(json.loads(idiom3[1]["criterion_json"])) == ["0.5", "1", "0"]  # the release's order, kept
    assert idiom3[2]["criterion"] == "1: Clearly a kitchen. 0.5: A table of unclear kind. 0: Not a kitchen."
    assert idiom3[0]["criterion_json"] is None  # text criteria stay text
    textual4 = _group(_row(release, "textual", 4), "reason_evaluation")["pairs"]
    assert textual4[0]["criterion"].startswith("1: ") and json.loads(textual4[0]["criterion_json"]).keys() == {"score"}
    assert json.loads(textual4[1]["criterion_json"]).keys() == {"criteria"}

    # a group whose rubric is under a non-pair key: kept, and sent with the group
    entity3 = _group(_row(release, "entity", 3), "entity_evaluation")
    rubric = json.loads(entity3["extra"])["scoring_criteria"]
    assert list(rubric) == ["score_1", "score_2", "score_3"]
    sent = json.loads(group_prompt(entity3["pairs"], entity3["extra"]))
    assert list(sent) == ["q1", "c1", "q2", "c2", "q3", "c3", "scoring_criteria"]
    assert sent["scoring_criteria"] == " ".join(f"{k}: {v}" for k, v in rubric.items())  # each line ends a sentence
    assert any(a.kind == "non_pair_key" and a.row == 3 and "scoring_criteria" in a.detail for a in release.anomalies)

    # shuffled keys, a criterion before its question: each question keeps its own criterion
    sci3 = _group(_row(release, "scientific", 3), "scientific_evaluation")
    assert [(p["question_key"], p["criterion_key"]) for p in sci3["pairs"]] == [("q1", "c1"), ("q2", "c2"),
                                                                                ("q3", "c3"), ("q4", "c4")]
    raw = json.loads(sci3["raw"])
    assert list(raw) == ["q2", "c2", "q1", "c1", "c4", "q4", "q3", "c3"]  # the release's order, kept
    assert all(p["question"] == raw[p["question_key"]] and p["criterion"] == raw[p["criterion_key"]] for p in sci3["pairs"])
    assert any(a.kind == "key_order" and a.row == 3 for a in release.anomalies if "scientific" in a.file)
    assert any(a.kind == "structured_criterion" and a.row == 3 for a in release.anomalies if "idiom" in a.file)
