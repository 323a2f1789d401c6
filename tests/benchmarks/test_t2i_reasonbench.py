"""T2I-ReasonBench: the release reader (every quirk, every pair), the two-stage scoring protocol with
hand-computed values, re-asks and failures, the text score, and stage-1 criteria generation."""

from __future__ import annotations

import io
import json
import math
import re
import shutil

import datasets
import numpy as np
import pytest
from PIL import Image

from t2ireason.benchmarks import ReleaseError, get_benchmark, is_safe_name, safe_name
from t2ireason.benchmarks.t2i_reasonbench import (
    ANOMALY_KINDS,
    DIMENSIONS,
    group_prompt,
    parse_pairs,
    render_rubric,
)
from t2ireason.images import JudgeImage
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.prompts import render
from t2ireason.results import ImageResult

BENCH = get_benchmark("t2i-reasonbench")

FIG14 = ("Based on the image and your previous description, answer the following questions: q1, q2, ...",
         "For each question, assign a score of 1, 0.5 or 0 according to the corresponding scoring criteria: c1, c2, ...",
         'provide your answer in json format: {"reason": [your detailed reasoning], "score": [s1,s2, ...]}')


@pytest.fixture(scope="module")
def release():
    return BENCH.read_release(BENCH.sample_path())


def _row(release, dim, rid):
    return next(r for r in release.configs[dim] if r["id"] == rid)


def _group(row, name):
    return next(g for g in row["evaluation"] if g["group"] == name)


# -- reading the release ----------------------------------------------------------------------------

def test_sample_counts_equal_what_was_written(release):
    # written by hand in the sample: pairs per row, group by group
    assert release.counts == {
        "idiom": {"rows": 4, "pairs": 22, "reason_pairs": 15, "detail_pairs": 0, "quality_pairs": 7},
        "textual": {"rows": 4, "pairs": 21, "reason_pairs": 15, "detail_pairs": 0, "quality_pairs": 6},
        "entity": {"rows": 4, "pairs": 19, "reason_pairs": 8, "detail_pairs": 6, "quality_pairs": 5},
        "scientific": {"rows": 4, "pairs": 23, "reason_pairs": 11, "detail_pairs": 6, "quality_pairs": 6},
    }
    sizes = {d: [[len(g["pairs"]) for g in r["evaluation"]] for r in rows] for d, rows in release.configs.items()}
    assert sizes == {"idiom": [[4, 2], [3, 1], [5, 3], [3, 1]], "textual": [[4, 2], [3, 1], [5, 1], [3, 2]],
                     "entity": [[2, 2, 1], [1, 2, 2], [3, 1, 1], [2, 1, 1]],
                     "scientific": [[2, 1, 2], [3, 2, 1], [4, 1, 1], [2, 2, 2]]}


def test_every_quirk_survives_with_its_original_keys(release):
    keys = lambda row, group: [(p["question_key"], p["criterion_key"]) for p in _group(row, group)["pairs"]]  # noqa: E731
    assert keys(_row(release, "idiom", 2), "quality_evaluation") == [("aq1", "ac1")]
    assert keys(_row(release, "idiom", 3), "quality_evaluation") == [("q4", "c4"), ("q5", "c5"), ("q6", "c6")]
    scoring = _group(_row(release, "idiom", 4), "quality_evaluation")
    assert keys(_row(release, "idiom", 4), "quality_evaluation") == [("q1", "c1")]
    assert json.loads(scoring["extra"]) == {"scoring": "Average the scores of the questions above."}
    assert keys(_row(release, "textual", 2), "quality_evaluation") == [("aes_q1", "aes_c1")]
    assert keys(_row(release, "entity", 2), "other_details_evaluation") == [("det_q1", "det_c1"), ("q2", "c2")]
    assert keys(_row(release, "entity", 4), "other_details_evaluation") == [("detail_q1", "c1")]
    assert keys(_row(release, "scientific", 1), "scientific_evaluation") == [("sci_q1", "sci_c1"), ("q2", "c2")]
    # the question and its criterion stay together
    pair = _group(_row(release, "scientific", 1), "scientific_evaluation")["pairs"][0]
    assert pair["question"].startswith("Does the ice cube float") and pair["criterion"].startswith("1: Floating.")

    # dict image_content kept faithfully as JSON text
    content = json.loads(_row(release, "textual", 1)["image_content"])
    assert content["text"][0] == "Neighborhood Cleanup Day"
    assert isinstance(_row(release, "textual", 3)["image_content"], str)

    # the prompt used for generation comes from prompts/, the evaluation file's one is kept apart
    sci2 = _row(release, "scientific", 2)
    assert sci2["prompt"] == "A pencil standing in a half-filled glass of water, seen from the side"
    assert sci2["evaluation_prompt"] == sci2["explicit_meaning"]
    assert _row(release, "textual", 3)["prompt"].endswith("café.")
    mismatched = {(d, r["id"]) for d, rows in release.configs.items() for r in rows if r["evaluation_prompt"]}
    assert mismatched == {("textual", 3), ("entity", 3), ("scientific", 2)}

    # pipeline records: rewritten prompt, reasoning, and extra keys kept
    assert _row(release, "idiom", 2)["reason_prompt"].startswith("A nervous boy")
    assert json.loads(_row(release, "textual", 2)["extra"]) == {"pipeline": {"model": "an LLM", "note": "rewritten twice"}}
    assert json.loads(_row(release, "entity", 4)["extra"])["pipeline"] == {"explicit_meaning": "An emperor penguin feeding its chick"}
    assert _row(release, "idiom", 1)["extra"] is None


def test_anomalies_report_every_irregularity(release):
    found = {(a.kind, a.file.split("/")[-1], a.row) for a in release.anomalies}
    assert found >= {
        ("irregular_key", "evaluation_idiom.json", 2), ("numbering", "evaluation_idiom.json", 3),
        ("non_pair_key", "evaluation_idiom.json", 4), ("dict_image_content", "evaluation_textual_image.json", 1),
        ("dict_image_content", "evaluation_textual_image.json", 2), ("irregular_key", "evaluation_textual_image.json", 2),
        ("prompt_mismatch", "evaluation_textual_image.json", 3), ("irregular_key", "evaluation_entity.json", 2),
        ("irregular_key", "evaluation_entity.json", 4), ("prompt_mismatch", "evaluation_entity.json", 3),
        ("irregular_key", "evaluation_scientific.json", 1), ("prompt_mismatch", "evaluation_scientific.json", 2),
        ("extra_key", "textual_image_pipeline_prompts.json", 2), ("extra_key", "entity_pipeline_prompts.json", 4),
    }
    assert not any(a.kind == "prompt_mismatch" and a.row == 1 for a in release.anomalies)


def test_rows_fit_the_features_and_the_official_layout(release):
    rows = [r for rows in release.configs.values() for r in rows]
    ds = datasets.Dataset.from_list(rows, features=BENCH.features)
    assert ds[0]["evaluation"][0]["pairs"][0]["question_key"] == "q1"
    from t2ireason.build import describe_features

    assert {f["name"] for f in describe_features(BENCH.features)} == set(BENCH.field_docs)
    assert BENCH.image_path(rows[0]) == "idiom/0001.png"
    assert BENCH.image_path(_row(release, "scientific", 3), sample=2) == "scientific/0003_2.png"
    assert len({BENCH.row_id(r) for r in rows}) == len(rows) == 16
    assert BENCH.pipeline_prompts(rows)["entity-0001"].startswith("Mount Everest")
    assert BENCH.license is None and "2508.17472" in BENCH.citation and BENCH.metric == "t2i_reasonscore"


def test_a_full_sized_release_keeps_every_pair(tmp_path):
    """800 records with 1 to 5 pairs per group and the quirks sprinkled in: nothing is lost."""
    import random

    rng = random.Random(0)
    expected = 0
    for dim, spec in DIMENSIONS.items():
        prompts_rel, eval_rel, pipe_rel = spec.files()
        prompts, evals, pipes = [], [], []
        for rid in range(1, 201):
            prompts.append({"id": rid, "prompt": f"{dim} prompt {rid}", "tag": "t",
                            **{f: f"{f} {rid}" for f in spec.fields}})
            ev = {"id": rid, "prompt": f"{dim} prompt {rid}", "image_content": {"k": rid} if rid % 50 == 0 else "c"}
            for gi, (group, _) in enumerate(spec.groups):
                n = rng.randint(1, 5)
                expected += n
                start = 4 if rid % 37 == 0 else 1
                prefix = ["", "sci_", "a"][(rid + gi) % 3] if rid % 11 == 0 else ""
                ev[group] = {}
                for k in range(start, start + n):
                    ev[group][f"{prefix}q{k}"] = f"question {k}"
                    ev[group][f"{prefix}c{k}"] = f"criterion {k}"
                if rid % 23 == 0:
                    ev[group]["scoring"] = "mean"
            evals.append(ev)
            pipes.append({"id": rid, "reason": ["r"], "reason_prompt": "p", **({"x": 1} if rid % 40 == 0 else {})})
        for rel, data in ((prompts_rel, prompts), (eval_rel, evals), (pipe_rel, pipes)):
            (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / rel).write_text(json.dumps(data))
    rel = BENCH.read_release(tmp_path)
    assert sum(c["rows"] for c in rel.counts.values()) == 800
    assert sum(c["pairs"] for c in rel.counts.values()) == expected


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


def test_text_is_kept_byte_for_byte(release):
    question = _group(_row(release, "scientific", 4), "quality_evaluation")["pairs"][1]["question"]
    assert question == "Is the lighting natural? "  # the trailing space of the release, kept
    with pytest.raises(TypeError, match="read_release takes"):  # normalising is the builder's option
        BENCH.read_release(BENCH.sample_path(), strip_whitespace=True)


# -- damaged and irregular releases: everything kept, everything reported ------------------------------

@pytest.fixture
def copy(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(BENCH.sample_path(), root)
    return root


def _edit(root, rel, fn):
    path = root / rel
    data = json.loads(path.read_text())
    fn(data)
    path.write_text(json.dumps(data))


def _kinds(release, name=None):
    assert {a.kind for a in release.anomalies} <= set(ANOMALY_KINDS)  # every kind is documented
    return [(a.kind, a.row) for a in release.anomalies if name is None or a.file.endswith(name)]


def test_missing_empty_and_garbage_files_are_read_around_and_reported(copy):
    (copy / "pipeline_prompts/entity_pipeline_prompts.json").unlink()
    (copy / "pipeline_prompts/idiom_pipeline_prompts.json").write_text("")
    (copy / "pipeline_prompts/scientific_pipeline_prompts.json").write_text("[]")
    (copy / "pipeline_prompts/textual_image_pipeline_prompts.json").write_text("<html>Not Found</html>")
    rel = BENCH.read_release(copy)
    assert rel.counts == BENCH.read_release(BENCH.sample_path()).counts  # every pair still there
    assert all(r["reason_prompt"] is None for rows in rel.configs.values() for r in rows)
    assert ("missing_file", None) in _kinds(rel, "entity_pipeline_prompts.json")
    assert ("empty_file", None) in _kinds(rel, "idiom_pipeline_prompts.json")
    assert ("empty_file", None) in _kinds(rel, "scientific_pipeline_prompts.json")
    garbage = [a for a in rel.anomalies if a.file.endswith("textual_image_pipeline_prompts.json")]
    assert [a.kind for a in garbage] == ["malformed_file", "malformed_record"]
    assert [(q.file, q.raw) for q in rel.quarantine] == [  # the raw text, whole
        ("pipeline_prompts/textual_image_pipeline_prompts.json", "<html>Not Found</html>")]
    # a file that is there but empty is one anomaly, not one per row
    assert not any(a.kind == "no_pipeline_prompt" for a in rel.anomalies)


def test_a_dimension_with_no_files_is_absent_and_said_so(copy):
    for rel in DIMENSIONS["idiom"].files():
        (copy / rel).unlink()
    rel = BENCH.read_release(copy)
    assert list(rel.configs) == ["textual", "entity", "scientific"]
    assert [k for k, _ in _kinds(rel, "idiom_interpretation.json")] == ["missing_file", "no_rows"]


def test_files_under_a_misspelt_or_recased_name_are_read_in_place_and_reported(copy):
    # the authors' README spells the question folder "deepseek_evaluatioin_qs" once; a user's copy may too
    (copy / "deepseek_evaluation_qs").rename(copy / "deepseek_evaluatioin_qs")
    (copy / "prompts/entity_reasoning.json").rename(copy / "prompts/Entity-Reasoning.json")
    rel = BENCH.read_release(copy)
    sample = BENCH.read_release(BENCH.sample_path())
    assert rel.counts == sample.counts and rel.configs == sample.configs  # every row and pair, as released
    renamed = {(a.file, a.detail.split(",")[0]) for a in rel.anomalies if a.kind == "file_name"}
    assert ("prompts/Entity-Reasoning.json", "read as prompts/entity_reasoning.json") in renamed
    assert ("deepseek_evaluatioin_qs/evaluation_idiom.json", "read as deepseek_evaluation_qs/evaluation_idiom.json") \
        in renamed and len(renamed) == 5
    assert not any(a.kind == "missing_file" for a in rel.anomalies)
    assert "deepseek_evaluatioin_qs/evaluation_entity.json" in rel.files_read


def test_a_missing_file_is_never_read_from_another_dimensions_file_or_a_guess_among_several(copy):
    (copy / "deepseek_evaluation_qs/evaluation_idiom.json").unlink()
    rel = BENCH.read_release(copy, configs=["idiom"])  # evaluation_entity.json is close, but it is entity's
    assert all(r["evaluation"] == [] for r in rel.configs["idiom"])
    assert ("missing_file", None) in _kinds(rel, "evaluation_idiom.json")
    for name in ("evaluation_idiom_v1.json", "evaluation_idiom_v2.json"):  # two candidates: no guess
        shutil.copy(copy / "deepseek_evaluation_qs/evaluation_entity.json", copy / "deepseek_evaluation_qs" / name)
    rel = BENCH.read_release(copy, configs=["idiom"])
    assert all(r["evaluation"] == [] for r in rel.configs["idiom"])
    [ambiguous] = [a for a in rel.anomalies if a.kind == "ambiguous_file"]
    assert "evaluation_idiom_v1.json" in ambiguous.detail and "evaluation_idiom_v2.json" in ambiguous.detail


def test_a_damaged_record_costs_only_itself(copy):
    path = copy / "deepseek_evaluation_qs/evaluation_idiom.json"
    text = path.read_text()
    broken = text.replace('"prompt": "Standing at the edge', '"prompt" "Standing at the edge', 1)  # record 2
    path.write_text(broken)
    rel = BENCH.read_release(copy, configs=["idiom"])
    assert [r["id"] for r in rel.configs["idiom"]] == [1, 2, 3, 4]
    assert [len(r["evaluation"]) for r in rel.configs["idiom"]] == [2, 0, 2, 2]  # records 1, 3, 4 whole
    kinds = [a.kind for a in rel.anomalies if a.file.endswith("evaluation_idiom.json")]
    assert kinds[:2] == ["malformed_file", "malformed_record"]
    [quarantined] = rel.quarantine
    assert quarantined.file == "deepseek_evaluation_qs/evaluation_idiom.json"
    assert quarantined.raw in broken  # the damaged record, as released
    assert '"prompt" "Standing at the edge' in quarantined.raw and quarantined.raw.rstrip().endswith(",")
    assert ("no_evaluation_record", 2) in _kinds(rel, "idiom_interpretation.json")


def test_a_truncated_file_keeps_its_whole_records(copy):
    path = copy / "deepseek_evaluation_qs/evaluation_entity.json"
    text = path.read_text()
    path.write_text(text[: text.index('"id": 3')])  # cut inside the array, after record 2
    rel = BENCH.read_release(copy, configs=["entity"])
    assert [len(r["evaluation"]) for r in rel.configs["entity"]] == [3, 3, 0, 0]
    kinds = [a.kind for a in rel.anomalies if a.file.endswith("evaluation_entity.json")]
    assert {"malformed_file", "truncated_file"} <= set(kinds)
    assert [q.file for q in rel.quarantine] == ["deepseek_evaluation_qs/evaluation_entity.json"]
    assert rel.quarantine[0].raw in text and '"id": 2' not in rel.quarantine[0].raw  # the cut record, not record 2


def test_records_without_id_and_unpaired_keys_are_kept(copy):
    _edit(copy, "prompts/scientific_reasoning.json", lambda d: d[2].pop("id"))
    _edit(copy, "deepseek_evaluation_qs/evaluation_idiom.json", lambda d: d[0]["reason_evaluation"].pop("c2"))
    _edit(copy, "deepseek_evaluation_qs/evaluation_idiom.json", lambda d: d[1]["reason_evaluation"].pop("q2"))
    rel = BENCH.read_release(copy, configs=["scientific", "idiom"])
    sci = rel.configs["scientific"]
    # the prompt without an id is its own row; the questions of id 3 keep theirs, prompt from the evaluation file
    assert [(r["id"], r["name"]) for r in sci] == [(1, "0001"), (2, "0002"), (None, "noid-prompt-0003"),
                                                   (4, "0004"), (3, "0003")]
    assert sci[2]["prompt"] == "A slice of apple left on a plate for an hour" and sci[2]["evaluation"] == []
    assert len(sci[4]["evaluation"]) == 3 and sci[4]["reason_prompt"].startswith("An apple slice")
    assert ("no_id", "record 2") in _kinds(rel, "scientific_reasoning.json")
    assert ("no_prompt_record", 3) in _kinds(rel, "evaluation_scientific.json")
    assert rel.counts["scientific"]["pairs"] == 23
    idiom = rel.configs["idiom"]
    q2 = _group(idiom[0], "reason_evaluation")["pairs"][1]
    assert (q2["question_key"], q2["criterion_key"], q2["criterion"]) == ("q2", None, None)
    assert ("question_without_criterion", 1) in _kinds(rel, "evaluation_idiom.json")
    orphan = _group(idiom[1], "reason_evaluation")
    c2 = _group(_row(BENCH.read_release(BENCH.sample_path()), "idiom", 2), "reason_evaluation")["pairs"][1]["criterion"]
    assert json.loads(orphan["extra"]) == {"c2": c2}
    assert ("criterion_without_question", 2) in _kinds(rel, "evaluation_idiom.json")


def test_irregular_groups_ids_and_duplicates_are_kept(copy):
    _edit(copy, "deepseek_evaluation_qs/evaluation_entity.json",
          lambda d: d[1].update(details_evaluation=d[1].pop("other_details_evaluation")))
    _edit(copy, "prompts/textual_image_design.json", lambda d: d.append(dict(d[0])))  # an exact repeat
    _edit(copy, "prompts/textual_image_design.json", lambda d: d.append({**d[1], "prompt": "Another infographic"}))
    _edit(copy, "deepseek_evaluation_qs/evaluation_scientific.json", lambda d: d.append({**d[0], "id": 99}))
    _edit(copy, "pipeline_prompts/scientific_pipeline_prompts.json", lambda d: d.append({**d[0], "id": 77}))
    rel = BENCH.read_release(copy, configs=["entity", "textual", "scientific"])
    group = _group(rel.configs["entity"][1], "details_evaluation")
    assert group["role"] == "detail" and len(group["pairs"]) == 2
    assert ("unexpected_group", 2) in _kinds(rel, "evaluation_entity.json")
    textual = rel.configs["textual"]
    assert [r["name"] for r in textual] == ["0001", "0002", "0002-2", "0003", "0004"]
    assert textual[2]["prompt"] == "Another infographic" and textual[2]["evaluation"] == []
    assert {("duplicate_record", 1), ("duplicate_id", 2)} <= set(_kinds(rel, "textual_image_design.json"))
    sci = rel.configs["scientific"]
    assert sci[-1]["id"] == 99 and sci[-1]["prompt"] == sci[0]["prompt"] and len(sci[-1]["evaluation"]) == 3
    assert ("no_prompt_record", 99) in _kinds(rel, "evaluation_scientific.json")
    assert [k for k in _kinds(rel, "scientific_pipeline_prompts.json") if k[1] == 77] == [
        ("orphan_pipeline_prompt", 77)]
    [orphan] = rel.quarantine
    assert (orphan.file, orphan.row, orphan.reason) == ("pipeline_prompts/scientific_pipeline_prompts.json", 77,
                                                        "no prompt with this id")
    pipeline = json.loads((copy / "pipeline_prompts/scientific_pipeline_prompts.json").read_text())
    assert json.loads(orphan.raw) == pipeline[-1]  # the record whole


def test_ids_that_cannot_be_file_names_are_mapped_and_never_written_through(copy, tmp_path):
    from t2ireason.files import UnsafePath

    for rel_path in DIMENSIONS["idiom"].files():
        _edit(copy, rel_path, lambda d: d[0].update(id="../../outside/x"))
    _edit(copy, "prompts/idiom_interpretation.json", lambda d: d[1].update(id="2"))
    _edit(copy, "deepseek_evaluation_qs/evaluation_idiom.json", lambda d: d[1].update(id="2"))
    rel = BENCH.read_release(copy, configs=["idiom"])
    row = rel.configs["idiom"][0]
    assert row["id"] is None and row["original_id"] == '"../../outside/x"'
    assert row["name"] == safe_name("../../outside/x") and is_safe_name(row["name"])  # the generic mapping
    assert len(row["evaluation"]) == 2 and row["reason_prompt"] is not None  # joined across the three files
    assert BENCH.image_path(row) == f"idiom/{row['name']}.png" and BENCH.row_id(row) == f"idiom-{row['name']}"
    unsafe = [a for a in rel.anomalies if a.kind == "unsafe_id"]
    assert len(unsafe) == 3 and row["name"] in unsafe[0].detail
    assert rel.configs["idiom"][1]["id"] == 2 and ("id_as_text", 2) in _kinds(rel, "idiom_interpretation.json")
    # a hostile row given directly never yields a path out of the output folder
    with pytest.raises(UnsafePath):
        BENCH.image_path({**row, "name": "../../x"})
    with pytest.raises(UnsafePath):
        BENCH.image_path({**row, "dimension": "../.."})
    # and the build keeps the mapping
    from t2ireason import build

    out = tmp_path / "hub"
    build.build_dataset(BENCH, copy, out, license="cc-by-4.0", options={"configs": ["idiom"]})
    loaded = datasets.load_dataset(str(out), "idiom", split="test")
    assert (loaded[0]["name"], loaded[0]["original_id"]) == (row["name"], '"../../outside/x"')
    report = json.loads((out / "build_report.json").read_text())
    assert sum(a["kind"] == "unsafe_id" for a in report["anomalies"]) == 3  # the reader's, one per file
    assert report["renamed"] == []  # the reader owns the mapping: the builder has nothing left to rename


def test_a_checkout_with_scripts_and_other_files(tmp_path):
    from t2ireason import build

    root = tmp_path / "clone" / "T2I-ReasonBench-main"
    shutil.copytree(BENCH.sample_path(), root)
    (root / "evaluation/Qwen2.5-VL").mkdir(parents=True)
    (root / "evaluation/Qwen2.5-VL/eval_idiom.py").write_text("print('the authors score here')\n")
    (root / "prompts/notes.json").write_text('{"draft": true}')
    (root / ".git").mkdir()
    (root / ".git/HEAD").write_text("ref: refs/heads/main\n")
    rel = BENCH.read_release(root)
    assert rel.counts == BENCH.read_release(BENCH.sample_path()).counts
    assert rel.files_read == {f for spec in DIMENSIONS.values() for f in spec.files()}
    # a JSON in a data folder may be data the reader misses: an anomaly; the rest is the builder's to list
    assert [(a.kind, a.file) for a in rel.anomalies if a.kind == "unknown_data_file"] == [
        ("unknown_data_file", "prompts/notes.json")]
    report = build.build_dataset(BENCH, tmp_path / "clone", tmp_path / "out", license="cc-by-4.0")  # root found
    assert report.source_info["kind"] == "checkout" and report.configs["entity"]["pairs"] == 19
    assert report.ignored_files == ["README.md", "evaluation/Qwen2.5-VL/eval_idiom.py", "prompts/notes.json"]
    assert report.authors_scripts == ["evaluation/Qwen2.5-VL/eval_idiom.py"]  # named as such, .git not looked into
    assert "the authors' scripts, not read: evaluation/Qwen2.5-VL/eval_idiom.py" in report.summary()


def test_values_of_any_type_fit_the_schema_and_build(copy, tmp_path):
    def odd(d):
        d[0]["image_content"] = ["a", {"b": 1}]
        d[0]["reason_evaluation"]["q1"] = {"text": "Is it a dinner?"}
        d[0]["reason_evaluation"]["c1"] = [1, 0.5, 0]
        d[1]["reason_evaluation"] = "Ask whether the boy climbs down."
        d[2]["prompt"] = 42
        d[3]["quality_evaluation"]["scoring"] = {"mean": True, "weights": [1, 2]}
    _edit(copy, "deepseek_evaluation_qs/evaluation_idiom.json", odd)
    _edit(copy, "prompts/idiom_interpretation.json", lambda d: d[3].update(tag=["family", 3], prompt=None))
    _edit(copy, "pipeline_prompts/idiom_pipeline_prompts.json", lambda d: d[0].update(reason={"why": "x"}))
    rel = BENCH.read_release(copy, configs=["idiom"])
    rows = rel.configs["idiom"]
    assert json.loads(rows[0]["image_content"]) == ["a", {"b": 1}]
    assert rows[0]["evaluation"][0]["pairs"][0]["question"] == '{"text": "Is it a dinner?"}'
    assert rows[0]["evaluation"][0]["pairs"][0]["criterion"] == "1; 0.5; 0"
    assert rows[1]["evaluation"][0]["pairs"] == [] and json.loads(rows[1]["evaluation"][0]["raw"]).startswith("Ask")
    assert rows[2]["evaluation_prompt"] == "42"
    assert rows[3]["tag"] == '["family", 3]' and rows[3]["prompt"].startswith("Nobody at the family meeting")
    assert rows[0]["reason"] == ['{"why": "x"}']
    kinds = {k for k, _ in _kinds(rel)}
    assert {"non_text_value", "group_not_object", "structured_criterion", "missing_field"} <= kinds
    from t2ireason import build

    build.build_dataset(BENCH, copy, tmp_path / "hub", license="cc-by-4.0", options={"configs": ["idiom"]})
    loaded = datasets.load_dataset(str(tmp_path / "hub"), "idiom", split="test")
    assert loaded.to_list() == datasets.Dataset.from_list(rows, features=BENCH.features).to_list()


def test_not_a_release_is_a_clear_error(tmp_path):
    with pytest.raises(ReleaseError, match="not a folder"):
        BENCH.read_release(tmp_path / "nowhere")
    with pytest.raises(ReleaseError, match="no prompts/, deepseek_evaluation_qs/ or pipeline_prompts/ folder"):
        BENCH.read_release(tmp_path)


def test_a_folder_above_the_release_is_for_the_builder_to_search(tmp_path):
    shutil.copytree(BENCH.sample_path(), tmp_path / "T2I-ReasonBench-main")
    with pytest.raises(ReleaseError, match="pass the release's root, or build it with `t2ireason build"):
        BENCH.read_release(tmp_path)


def test_official_release_is_pinned():
    official = BENCH.official_release
    assert (official.kind, official.repo) == ("github", "KaiyueSun98/T2I-ReasonBench")
    assert re.fullmatch(r"[0-9a-f]{40}", official.revision)
    # the data (prompts, questions, pipeline prompts) and the authors' scripts at that commit, byte for byte
    assert set(official.scripts) <= set(official.files)
    assert sum(f.endswith(".json") for f in official.files) == 12
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in official.files.values())
    assert set(official.scripts) == {f"evaluation/Qwen2.5-VL/eval_{d}.py"
                                     for d in ("idiom", "textual_image", "entity", "scientific")}
    assert BENCH.release_markers == ("prompts/idiom_interpretation.json",)
    assert (BENCH.sample_path() / BENCH.release_markers[0]).is_file()


# -- scoring --------------------------------------------------------------------------------------------

class CountingJudge(ScriptedJudge):
    """A scripted judge that also records the size of every chat batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def chat(self, requests, **kwargs):
        self.batches.append(len(requests))
        return super().chat(requests, **kwargs)


def pairs_in(request) -> dict[str, str]:
    return json.loads(re.search(r"criteria: (\{.*\})$", request.messages[-1].text, re.M).group(1))


def answering(scores: dict[str, float], description: str = "A photo of a scene."):
    """Describe, then answer each question with the score scripted for its text."""

    def reply(request):
        if request.messages[-1].text == "Describe this image.":
            return description
        qc = pairs_in(request)
        questions = [qc[f"q{i}"] for i in range(1, len(qc) // 2 + 1)]
        return "My analysis.\n```json\n" + json.dumps(
            {"reason": [f"on {q}" for q in questions], "score": [scores[q] for q in questions]}) + "\n```"

    return reply


# per row, the judge's score for each question of each group (written by hand)
HAND = {
    ("idiom", 1): {"reason_evaluation": [1, 0.5, 1, 0], "quality_evaluation": [1, 0.5]},
    ("textual", 2): {"reason_evaluation": [1, 1, 0.5], "quality_evaluation": [0]},
    ("entity", 2): {"entity_evaluation": [0.5], "other_details_evaluation": [1, 0], "quality_evaluation": [1, 1]},
    ("scientific", 1): {"scientific_evaluation": [1, 0.5], "other_details_evaluation": [0], "quality_evaluation": [1, 0.5]},
}


@pytest.fixture
def scored_rows(release):
    rows = [_row(release, d, i) for d, i in HAND]
    scores = {p["question"]: s for row, groups in zip(rows, HAND.values())
              for name, values in groups.items() for p, s in zip(_group(row, name)["pairs"], values, strict=True)}
    images = [Image.new("RGB", (8, 8), c) for c in ("red", "green", "blue", "white")]
    return rows, images, scores


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


def test_conversation_structure_and_one_encoding_per_image(scored_rows):
    rows, images, scores = scored_rows
    judge = ScriptedJudge(answering(scores, description="Four people at a table."))
    BENCH.score(rows, images, judge)
    describes, groups = judge.requests[:4], judge.requests[4:]
    for d in describes:
        assert len(d.messages) == 1 and d.messages[0].role == "user"
        img, text = d.messages[0].content
        assert isinstance(img, JudgeImage) and text == "Describe this image."
    for g in groups:
        assert [m.role for m in g.messages] == ["user", "assistant", "user"]
        assert g.messages[1].text == "Four people at a table."
        assert g.messages[2].images == []  # the image is sent once, in the first turn
        for sentence in FIG14:
            assert sentence in g.messages[2].text
    # the same JudgeImage object (one digest, one encoding) in every turn about an image
    owner = {id(d.messages[0].content[0]): i for i, d in enumerate(describes)}
    assert len(owner) == 4
    assert [owner[id(g.messages[0].content[0])] for g in groups] == [0, 0, 1, 1, 2, 2, 2, 3, 3, 3]
    # irregular keys are renumbered q1.. for the judge, in order, with their criteria
    sci = pairs_in(groups[7])
    assert list(sci) == ["q1", "c1", "q2", "c2"] and sci["q1"].startswith("Does the ice cube float")


def _one_row(release):
    return [_row(release, "idiom", 2)], [Image.new("RGB", (8, 8), "gray")]  # reason: 3 questions, quality: aq1


@pytest.mark.parametrize("bad, complaint", [
    ("I think the image is fine.", "no JSON"),
    ('{"reason": ["a", "b"], "score": [1, 1]}', "expected 3 scores, got 2"),
    ('{"reason": ["a", "b", "c"], "score": [1, 0.7, 0]}', "0.7 is not one of 0, 0.5, 1"),
    ('{"reason": ["a", "b", "c"]}', 'no "score"'),
])
def test_bad_group_reply_is_reasked(release, bad, complaint):
    rows, images = _one_row(release)
    judge = ScriptedJudge(["A boy on a ladder.", bad, '{"reason": ["q"], "score": [1]}',
                           '{"reason": ["a", "b", "c"], "score": [1, 0.5, 0]}'])
    (result,) = BENCH.score(rows, images, judge)
    assert result.score == pytest.approx(0.9 * 0.5 + 0.1 * 1) and result.failure is None
    assert result.reasks == 1
    reask = judge.requests[3]
    assert [m.role for m in reask.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert reask.messages[3].text == bad and complaint in reask.messages[4].text
    assert len(result.replies) == 4  # describe, reason, quality, the re-asked reason


def test_failure_after_the_bound_is_recorded_not_zeroed(release):
    rows, images = _one_row(release)
    wrong = '{"reason": ["a"], "score": [1]}'  # one score for three questions, every time
    judge = ScriptedJudge(lambda r: "A boy." if r.messages[-1].text == "Describe this image." else wrong)
    (result,) = BENCH.score(rows, images, judge, max_reasks=1)
    assert result.score is None and result.failed
    assert "reason_evaluation" in result.failure and "expected 3 scores, got 1" in result.failure
    assert [q.score for q in result.questions] == [None, None, None, 1.0]  # aq1 answered fine
    assert result.subscores == {"reason": None, "quality": 1.0}
    assert result.reasks == 1
    table = BENCH.aggregate([result])
    assert table["dimensions"]["idiom"]["score"]["failed"] == 1 and math.isnan(table["idiom"])


def test_describe_failure_skips_the_questions(release):
    rows, images = _one_row(release)
    boom = Reply(text="", model="s", sampling={}, error="HTTP 500")
    judge = ScriptedJudge([boom, boom, boom])
    (result,) = BENCH.score(rows, images, judge)
    assert result.score is None and result.failure.startswith("describe turn: judge error: HTTP 500")
    assert len(judge.requests) == 1 and result.replies == ["[judge error] HTTP 500"]  # not re-sent
    assert [q.score for q in result.questions] == [None] * 4 and result.subscores == {"reason": None, "quality": None}


def test_unreadable_image_is_a_failure_not_a_crash(release, tmp_path):
    rows = [_row(release, "idiom", 1), _row(release, "idiom", 2), _row(release, "idiom", 3), _row(release, "idiom", 4)]
    scores = {p["question"]: 1 for r in rows for g in r["evaluation"] for p in g["pairs"]}
    (tmp_path / "empty.png").write_bytes(b"")
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, format="PNG")
    (tmp_path / "cut.png").write_bytes(buf.getvalue()[:-12])  # no IEND chunk: a torn write
    judge = ScriptedJudge(answering(scores))
    results = BENCH.score(rows, [tmp_path / "missing.png", tmp_path / "empty.png", tmp_path / "cut.png",
                                 Image.new("RGB", (8, 8))], judge)
    for r in results[:3]:
        assert r.score is None and r.failure.startswith("image could not be read") and not r.retryable
    assert results[3].score == pytest.approx(1.0)
    assert len(judge.requests) == 1 + 2  # only the readable image is described and asked about


#: the group turn of the authors' scripts (KaiyueSun98/T2I-ReasonBench, evaluation/Qwen2.5-VL/eval_*.py at
#: 83a91df3d36b43665bfc5e8166493665cc5a7f8f: the f-string q2/q3/q4, the group dict formatted into it)
def official_turn(group: dict) -> str:
    return ("Based on the image and your previous description, answer the following questions: q1, q2, ...\n"
            "For each question, assign a score of 1, 0.5 or 0 according to the corresponding scoring criteria: c1, c2, ...\n"
            f"Here are the questions and criteria: {group}\n"
            "Carefully consider the image and each question before responding, then provide your answer in json format:\n"
            '{"reason": [your detailed reasoning], "score": [s1,s2, ...]"}')


def test_official_template_sends_the_scripts_text_byte_for_byte(release):
    """Every group of every sample row (irregular keys, rubric objects, shuffled keys included) as the scripts
    would send it: the release's record loaded with json.load and printed into their f-string."""
    rows = [r for d in BENCH.configs for r in release.configs[d]]
    judge = ScriptedJudge(lambda r: "An image." if r.messages[-1].text == "Describe this image."
                          else '{"reason": [], "score": []}')
    BENCH.score(rows, [Image.new("RGB", (8, 8))] * len(rows), judge, template="official", max_reasks=0)
    sent = {(r.metadata["id"], r.messages[2].text) for r in judge.requests if len(r.messages) == 3}
    expected = set()
    for dim, spec in DIMENSIONS.items():
        records = json.loads((BENCH.sample_path() / spec.files()[1]).read_text(encoding="utf-8"))
        for rec in records:
            for key, _ in spec.groups:
                expected.add((f"{dim}-{rec['id']:04d}", official_turn(rec[key])))
    assert sent == expected
    describe = judge.requests[0]
    assert [type(p).__name__ for p in describe.messages[0].content] == ["JudgeImage", "str"]  # image, then text


def test_first_or_last_json_of_a_reply(release):
    rows, images = _one_row(release)  # reason: 3 questions, quality: 1
    draft_then_final = ('Draft: {"reason": ["a", "b", "c"], "score": [0, 0, 0]}\nOn reflection:\n'
                        '```json\n{"reason": ["a", "b", "c"], "score": [1, 1, 1]}\n```')
    replies = ["A boy on a ladder.", draft_then_final, '{"reason": ["q"], "score": [1]}']
    (last,) = BENCH.score(rows, images, ScriptedJudge(replies))
    (first,) = BENCH.score(rows, images, ScriptedJudge(replies), reply_json="first")
    assert last.subscores["reason"] == 1.0 and first.subscores["reason"] == 0.0
    assert BENCH.presets["official"]["options"]["reply_json"] == "first"
    with pytest.raises(ValueError, match="reply_json must be one of"):
        BENCH.score(rows, images, ScriptedJudge(replies), reply_json="middle")


@pytest.mark.parametrize("reply", [
    '{"reason": 5, "score": [1, 0.5, 0]}', '{"reason": true, "score": [1, 0.5, 0]}',
    '{"reason": 1.5, "score": [1, 0.5, 0]}', '{"reason": null, "score": [1, 0.5, 0]}',
    '{"reason": [{"q1": "x"}, 2, null], "score": [1, 0.5, 0]}', '{"reason": {"q1": "x"}, "score": ["1", "0.5", "0"]}',
    '{"reason": ["a"], "score": [1.000000000035, 0.4999999999999, 0]}',
])
def test_any_reasoning_shape_is_kept_and_scores_stay_exact(release, reply):
    """Issue 16: these replies crashed the compute (TypeError) or gave 1.000000000035."""
    rows, images = _one_row(release)
    (result,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", reply, '{"reason": ["q"], "score": [1]}']))
    assert result.failure is None and [q.score for q in result.questions[:3]] == [1.0, 0.5, 0.0]
    assert result.score == pytest.approx(0.9 * 0.5 + 0.1) and 0 <= result.score <= 1
    assert all(q.reasoning is None or isinstance(q.reasoning, str) for q in result.questions)


@pytest.mark.parametrize("transient, retryable", [(True, True), (False, False)])
def test_a_failure_from_the_judges_infrastructure_is_retryable(release, transient, retryable):
    rows, images = _one_row(release)
    down = Reply(text="", model="s", sampling={}, error="connection refused", transient=transient)
    (result,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", down, '{"reason": ["q"], "score": [1]}']))
    assert result.score is None and "connection refused" in result.failure and result.retryable is retryable
    (described,) = BENCH.score(rows, images, ScriptedJudge([down]))
    assert described.score is None and described.retryable is retryable
    # an unusable reply is the judge's answer, not an outage: not retryable
    (unusable,) = BENCH.score(rows, images, ScriptedJudge(["A boy.", "no idea", '{"reason": ["q"], "score": [1]}']),
                              max_reasks=0)
    assert unusable.score is None and not unusable.retryable


def test_text_mode_scores_descriptions_without_quality(scored_rows):
    rows, _, scores = scored_rows
    judge = CountingJudge(answering(scores))
    texts = ["A girl tells a secret.", "Recycling bins.", "Van Gogh painting.", "An ice cube floats."]
    results = BENCH.score(rows, texts, judge, mode="text")
    assert [r.score for r in results] == pytest.approx([0.9 * 0.625, 0.9 * 2.5 / 3, 0.7 * 0.5 + 0.2 * 0.5, 0.7 * 0.75])
    assert judge.batches == [6]  # no describe turn; reason + detail groups only (1+1+2+2)
    for req in judge.requests:
        assert len(req.messages) == 1 and req.images == []
        assert "Here is a textual description of an image" in req.messages[0].text
    assert "A girl tells a secret." in judge.requests[0].messages[0].text
    assert all(q.group != "quality" for r in results for q in r.questions)
    table = BENCH.aggregate(results)
    assert table["mode"] == "text" and table["dimensions"]["entity"]["max_score"] == pytest.approx(90)
    with pytest.raises(ValueError, match="text mode scores descriptions"):
        BENCH.score(rows[:1], [Image.new("RGB", (8, 8))], judge, mode="text")


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


# -- stage I: criteria generation ---------------------------------------------------------------------

def _criteria_reply(groups: dict[str, int], start: int = 1, drop: str | None = None) -> str:
    value = {"id": 1, "prompt": "p", "image_content": "what the image shows"}
    for name, n in groups.items():
        value[name] = {}
        for k in range(start, start + n):
            value[name][f"q{k}"] = f"{name} question {k}?"
            value[name][f"c{k}"] = f"1: yes 0.5: partly 0: no ({name} {k})"
        if drop:
            value[name].pop(drop, None)
    return "Here is my analysis.\n```json\n" + json.dumps(value) + "\n```"


IDIOM_RECORD = {"id": 11, "prompt": "After three weeks of burning the midnight oil, she finally submitted her dissertation.",
                "idiom": "Burning the midnight oil", "idiom_meaning": "To work or study late into the night.", "tag": "work"}


def test_criteria_generation_valid_reply_gives_a_schema_row():
    judge = ScriptedJudge([_criteria_reply({"reason_evaluation": 3, "quality_evaluation": 2})])
    (row,) = BENCH.generate_criteria([IDIOM_RECORD], "idiom", judge)
    request = judge.requests[0]
    assert request.images == [] and len(request.messages) == 1
    text = request.messages[0].text
    assert text == render("t2i_reasonbench", "criteria_idiom", **{k: IDIOM_RECORD[k] for k in ("id", "prompt", "idiom", "idiom_meaning")})
    assert text.startswith("I have a text-to-image generation model that can generate images based on given prompts.")
    assert "'idiom': Burning the midnight oil, 'idiom_meaning': To work or study late into the night.}" in text
    assert "here should be a dictionary with 3-5 pairs of question and criterion" in text
    assert [len(g["pairs"]) for g in row["evaluation"]] == [3, 2]
    assert row["dimension"] == "idiom" and row["id"] == 11 and row["image_content"] == "what the image shows"
    datasets.Dataset.from_list([row], features=BENCH.features)  # fits the schema
    # and it can be scored like a release row
    scores = {p["question"]: 1 for g in row["evaluation"] for p in g["pairs"]}
    (result,) = BENCH.score([row], [Image.new("RGB", (8, 8))], ScriptedJudge(answering(scores)))
    assert result.score == pytest.approx(1.0)


@pytest.mark.parametrize("bad, complaint", [
    (_criteria_reply({"entity_evaluation": 1, "quality_evaluation": 1}), "other_details_evaluation"),
    (_criteria_reply({"entity_evaluation": 6, "other_details_evaluation": 1, "quality_evaluation": 1}), "6 pairs"),
    (_criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 1, "quality_evaluation": 1}, start=2), "numbered [2, 3]"),
    (_criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 2, "quality_evaluation": 1}, drop="c2"), "'q2' has no criterion"),
    ("I cannot help with that.", "no JSON"),
])
def test_criteria_generation_reasks_invalid_replies(bad, complaint):
    good = _criteria_reply({"entity_evaluation": 2, "other_details_evaluation": 1, "quality_evaluation": 1})
    judge = ScriptedJudge([bad, good])
    record = {"id": 31, "prompt": "The CEO of Tesla unveiling the first electric car in 2008",
              "explicit_meaning": "Elon Musk unveiling the first electric car at Tesla in 2008"}
    (row,) = BENCH.generate_criteria([record], "entity", judge)
    assert complaint in judge.requests[1].messages[-1].text
    assert [g["group"] for g in row["evaluation"]] == ["entity_evaluation", "other_details_evaluation", "quality_evaluation"]
    assert json.loads(row["extra"])["criteria"]["reasks"] == 1


def test_criteria_generation_failure_is_kept_and_reported():
    record = {"id": 7, "prompt": "Two springs hanging in a row: one empty, one with a ball",
              "explicit_meaning": "One spring is stretched by a ball"}
    judge = ScriptedJudge(lambda r: "no idea")
    with pytest.warns(UserWarning, match="failed for 1 of 1 scientific"):
        (row,) = BENCH.generate_criteria([record], "scientific", judge, max_reasks=1)
    assert row["evaluation"] == [] and len(judge.requests) == 2
    info = json.loads(row["extra"])["criteria"]
    assert "no JSON" in info["failure"] and info["replies"] == ["no idea", "no idea"]
    with pytest.raises(ValueError, match="failed for 1 of 1"):
        BENCH.generate_criteria([record], "scientific", ScriptedJudge(lambda r: "no idea"), max_reasks=0, strict=True)
    # a row without questions is a counted failure when scored, and costs no group request
    (result,) = BENCH.score([row], [Image.new("RGB", (8, 8))], ScriptedJudge(["An image."]))
    assert result.score is None and "no reason, detail, quality questions" in result.failure
    with pytest.raises(ValueError, match=r"records\[0\] lacks \['explicit_meaning'\]"):
        BENCH.generate_criteria([{"id": 1, "prompt": "p"}], "entity", judge)


def test_the_modules_examples_run():
    import doctest
    import importlib
    import pkgutil

    from t2ireason.benchmarks import t2i_reasonbench

    # the package and each of its modules
    modules = [t2i_reasonbench] + [importlib.import_module(f"{t2i_reasonbench.__name__}.{m.name}")
                                   for m in pkgutil.iter_modules(t2i_reasonbench.__path__)]
    runs = [doctest.testmod(m) for m in modules]
    result = doctest.TestResults(sum(r.failed for r in runs), sum(r.attempted for r in runs))
    assert result.attempted >= 5 and result.failed == 0


def test_the_official_preset_composites_transparent_pixels_on_white_as_qwen_vl_utils(release, tmp_path):
    """The authors' eval_*.py hand qwen_vl_utils the file's path: its fetch_image pastes an RGBA image on
    white through its alpha and resizes it to multiples of 28 before the processor sees it."""
    pixels = np.zeros((30, 40, 4), dtype=np.uint8)
    pixels[..., 0] = 250  # red everywhere, transparent on the left half, opaque on the right
    pixels[:, 20:, 3] = 255
    path = tmp_path / "0001.png"
    Image.fromarray(pixels, "RGBA").save(path)
    row = _row(release, "idiom", 1)
    seen = {}
    for preset in ("official", "paper"):
        judge = ScriptedJudge(lambda r: "An image.")
        BENCH.score([row], [str(path)], judge, **{**BENCH.presets[preset]["options"], "max_reasks": 0})
        seen[preset] = judge.requests[0].messages[0].images[0]
    official, paper = seen["official"], seen["paper"]
    # 30 -> 28, 40 / 28 = 1.43 -> 28: 784 < 4*28*28, scaled up by sqrt(3136 / 1200) = 1.617 and rounded up:
    # 30 * 1.617 / 28 = 1.73 -> 56, 40 * 1.617 / 28 = 2.31 -> 84
    assert official.size == (84, 56) and paper.size == (40, 30)
    assert official.image.getpixel((5, 28)) == (255, 255, 255) and official.image.getpixel((80, 28)) == (250, 0, 0)
    assert paper.image.getpixel((5, 15)) == (250, 0, 0)  # as it is: PIL's conversion drops the alpha
