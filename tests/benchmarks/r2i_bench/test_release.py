"""R2I-Bench's release reader (release.py, csv_records.py): the shipped sample (every quirk of formats.md)
and broken releases, each irregularity kept and reported."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import datasets
import pytest

from t2ireason.benchmarks import ReleaseError
from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.benchmarks.r2i_bench.release import SUBCATEGORIES, _names
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import BENCH, images, kinds

ROOT = Path(__file__).resolve().parents[3]


# -- reading the sample release --------------------------------------------------------------------------


def test_registered_and_declared():
    assert BENCH is r2i.BENCHMARK and BENCH.metric == "r2i_score"
    assert BENCH.configs == (*r2i.CATEGORIES, "all")
    assert set(r2i.CATEGORIES) == {"causal", "commonsense", "compositional", "concept_mixing", "logical",
                                   "mathematical", "numerical"}
    assert BENCH.license is None and "R2I-Bench" in BENCH.citation
    assert set(BENCH.field_docs) == set(BENCH.features) | {f"questions.{k}" for k in BENCH.features["questions"].feature}
    for name in ("paper", "official"):
        preset = BENCH.presets[name]
        assert preset["judge"] == "openai:gpt-4o"
        assert preset["judge_kwargs"]["sampling"].temperature == 0.1
    assert BENCH.presets["paper"]["options"]["missing"] == "fail"
    assert BENCH.presets["official"]["options"]["missing"] == "answered"


def test_counts_per_config(release):
    c = release.counts
    assert {k: c[k]["rows"] for k in BENCH.configs} == {
        "commonsense": 2, "compositional": 2, "concept_mixing": 3, "logical": 2, "numerical": 2,
        "mathematical": 2, "causal": 2, "all": 15}
    assert {k: c[k]["questions"] for k in BENCH.configs} == {
        "commonsense": 5, "compositional": 5, "concept_mixing": 3, "logical": 3, "numerical": 5,
        "mathematical": 5, "causal": 7, "all": 33}
    assert c["all"]["question_rows"] == 36 and c["all"]["orphan_questions"] == 3
    assert c["mathematical"]["question_rows"] == 8 and c["mathematical"]["orphan_questions"] == 3
    assert c["all"]["prompts_without_questions"] == 3
    assert c["all"]["unusual_weights"] == 4 and c["all"]["relabelled"] == 2
    assert c["all"]["quarantined"] == 3 == len(release.quarantine)  # the orphans, with their raw text
    for config in BENCH.configs:
        assert len(release.configs[config]) == c[config]["rows"]
        assert sum(len(r["questions"]) for r in release.configs[config]) == c[config]["questions"]
    assert len({r["id"] for r in release.configs["all"]}) == 15


def test_nothing_is_lost(release):
    """Every question row read is attached to its prompt or quarantined with its raw text."""
    c = release.counts["all"]
    assert c["question_rows"] == c["questions"] + len(release.quarantine)
    raw = "".join(q.raw for q in release.quarantine)
    assert "Is a parabola drawn?" in raw and "Is a sine wave drawn over two periods?" in raw


def test_rows_take_labels_from_folders_and_files_whatever_the_column_order(rows):
    row = rows["commonsense/color/12"]  # columns reordered in this file, cells say another label
    assert row["prompt"] == "The leaves of a maple tree in Vermont in the middle of October."
    assert row["reference_caption"] == "A maple tree with bright red and orange leaves."
    assert row["assessment_point"] == "Seasonal leaf colour"
    assert (row["category"], row["subcategory"]) == ("commonsense", "color")
    assert (row["category_cell"], row["subcategory_cell"]) == ("Common Sense", "Attribute")
    assert row["source_id"] == "12" and row["extra"] is None
    logical = rows["logical/disjunctive/41"]  # id column in the middle
    assert logical["prompt"].startswith("Either a spoon or a fork")
    # case, spelling and word-order variants that name the same label are not relabels
    assert rows["causal/cause_to_effect/2"]["subcategory_cell"] == "cause-to-effect"
    assert rows["compositional/prescriptive_spatial/22"]["subcategory_cell"] == "Spatial Prescriptive"


def test_text_is_kept_byte_exact(rows):
    assert rows["causal/cause_to_effect/1"]["prompt"].endswith("summer week. ")
    criterion = rows["mathematical/number_theory/51"]["questions"][0]["criterion"]
    assert criterion.startswith("   1: a complete") and criterion.endswith("no number line  ")


def test_relabelled_rows_are_reported_whatever_the_word_order(release):
    found = kinds(release, "relabelled")
    assert [(a.file, a.row) for a in found] == [("prompts/commonsense/commonsense_color.csv", "12"),
                                                ("prompts/logical/logical_disjunctive.csv", "42")]
    assert "'Attribute'" in found[0].detail and "names 'attribute'" in found[0].detail and "'color'" in found[0].detail
    assert "'Conditional Sufficient'" in found[1].detail and "names 'sufficient_conditional'" in found[1].detail


@pytest.mark.parametrize("cell, own, named", [
    ("Cause to Effect", "cause_to_effect", "cause_to_effect"),
    ("EFFECT-TO-CAUSE", "cause_to_effect", "effect_to_cause"),  # the other label, word for word
    ("Spatial Inferential", "prescriptive_spatial", "inferential_spatial"),  # another label, words swapped
    ("Geometric Transformation", "geometrical_transformations", "geometrical_transformations"),  # spelling
    ("Emotion Intention", "emotion_intention_commonsense", "emotion_intention_commonsense"),
    ("Common Sense", "commonsense", "commonsense"),
    ("Knowledge Social Cultural Scene", "color", "social_cultural_knowledge_scene"),
    ("Quantum Chromodynamics", "color", None),
])
def test_label_recognition(cell, own, named):
    known = tuple(s for subs in SUBCATEGORIES.values() for s in subs) + r2i.CATEGORIES
    assert _names(cell, own, known) == named


def test_orphan_questions_name_the_file_the_authors_code_looks_for(release, rows):
    orphans = kinds(release, "orphan_question")
    assert len(orphans) == 1
    assert orphans[0].file == "evaluation/mathematical/mathematical_function_eval.csv"
    assert "3 question(s) for 2 source id(s) (61, 62)" in orphans[0].detail
    assert "prompts/mathematical/mathematical_mathematical_function.csv" in orphans[0].detail
    assert not any(r["id"].startswith("mathematical/mathematical_function/") for r in rows.values())
    assert [(q.file, q.row) for q in release.quarantine] == [(orphans[0].file, "61")] * 2 + [(orphans[0].file, "62")]
    missing = kinds(release, "missing_file")
    assert [a.file for a in missing] == ["evaluation/concept_mixing/functional_mixing_eval.csv"]
    [empty] = kinds(release, "empty_file")
    assert empty.file == "evaluation/concept_mixing/concept_mixing_eval.csv"
    assert "header only" in empty.detail and "does not name the columns" in empty.detail


def test_adding_the_missing_prompts_under_the_official_name_attaches_their_questions(copy):
    (copy / "data/prompts/mathematical/mathematical_mathematical_function.csv").write_text(
        "Prompt,Reference Caption,Assessment Point,Category,Subcategory,id\n"
        "The graph of y = x squared.,A parabola through the origin.,Plotting,Mathematical,Function,61\n"
        "Two periods of a sine wave.,A sine curve over two periods.,Plotting,Mathematical,Function,62\n")
    rel = BENCH.read_release(copy)
    rows = {r["id"]: r for r in rel.configs["mathematical"]}
    assert [q["question"] for q in rows["mathematical/mathematical_function/61"]["questions"]] == [
        "Is a parabola drawn?", "Is the vertex at the origin?"]
    assert rel.counts["all"]["orphan_questions"] == 0 and rel.quarantine == []
    assert not kinds(rel, "orphan_question") and not kinds(rel, "file_name")


def test_prompts_under_another_name_are_attached_and_the_official_name_reported(copy):
    (copy / "data/prompts/mathematical/mathematical_function.csv").write_text(
        "Prompt,id\nThe graph of y = x squared.,61\nTwo periods of a sine wave.,62\n")
    rel = BENCH.read_release(copy)
    assert rel.counts["mathematical"]["questions"] == 8 and rel.quarantine == []
    [note] = kinds(rel, "file_name")
    assert note.file == "prompts/mathematical/mathematical_function.csv"
    assert "prompts/mathematical/mathematical_mathematical_function.csv" in note.detail


def test_an_evaluation_file_named_in_another_case_or_with_dashes_finds_its_prompts(copy, release):
    ev = copy / "data/evaluation/causal"
    (ev / "cause_to_effect_eval.csv").rename(ev / "Cause-To-Effect_eval.csv")
    rel = BENCH.read_release(copy)
    assert rel.configs["causal"] == release.configs["causal"]  # every question still attached, ids unchanged
    assert rel.quarantine == release.quarantine
    [note] = kinds(rel, "file_name")
    assert note.file == "prompts/causal/causal_cause_to_effect.csv"
    assert "evaluation/causal/Cause-To-Effect_eval.csv" in note.detail


def test_prompts_without_questions_are_kept_and_flagged(release, rows):
    flagged = sorted(r["id"] for r in rows.values() if not r["has_questions"])
    assert flagged == ["concept_mixing/functional_mixing/31", "concept_mixing/functional_mixing/32",
                       "logical/disjunctive/42"]
    assert all(rows[i]["questions"] == [] for i in flagged)
    assert sorted(a.row for a in kinds(release, "no_questions")) == ["31", "32", "42"]
    assert all(r["has_questions"] for i, r in rows.items() if i not in flagged)


def test_questions_weights_notes_and_repeated_ids(release, rows):
    qs = rows["commonsense/color/11"]["questions"]  # the file with a note column, reordered
    assert [q["id"] for q in qs] == ["1", "2", "3"]
    assert [q["weight"] for q in qs] == [5.0, 10.0, 4.0]
    assert qs[1]["note"] == "tangerines count as oranges" and qs[0]["note"] is None
    assert qs[1]["criterion"].startswith("1: clearly an orange")
    assert qs[0]["question"] == "Is there a fruit on a plate?"
    weights = {(r["source_id"], q["question"]): q["weight"] for r in rows.values() for q in r["questions"]}
    assert weights[("21", "Is the picture well composed?")] == 0.0
    assert weights[("22", "Is the largest book on top and the smallest at the bottom?")] == 12.5
    assert weights[("71", "Are there exactly seven rubber ducks?")] == 50.0
    assert weights[("72", "Are there exactly four red apples?")] == 8.5
    assert all(isinstance(w, float) for w in weights.values())
    unusual = kinds(release, "unusual_weight")
    assert sorted(a.row for a in unusual) == ["21", "22", "71", "72"]
    assert any("12.5" in a.detail for a in unusual)
    assert [q["id"] for q in rows["numerical/exact_number_generation/72"]["questions"]] == ["1", "2", "2"]
    [dup] = kinds(release, "duplicate_question_id")
    assert dup.row == "72" and "line 6" in dup.detail


def test_missing_subcategories_are_listed(release):
    missing = {a.file for a in kinds(release, "missing_subcategory")}
    assert "prompts/causal/causal_effect_to_cause.csv" in missing
    assert len(missing) == 32 - 9  # the sample holds 9 of the release's 32 subcategories


def test_rows_fit_the_features_and_round_trip(release):
    ds = datasets.Dataset.from_list(release.configs["all"], features=BENCH.features)
    assert ds.features == BENCH.features and len(ds) == 15
    assert ds[0] == release.configs["all"][0]


def test_image_path_follows_the_release_folders(rows):
    row = rows["numerical/exact_number_generation/71"]
    assert BENCH.image_path(row) == "numerical/exact_number_generation/71.png"
    assert BENCH.image_path(row, 2) == "numerical/exact_number_generation/71_2.png"
    assert BENCH.row_id(row) == "numerical/exact_number_generation/71"


def test_reads_the_data_folder_itself():
    whole = BENCH.read_release(BENCH.sample_path())
    data = BENCH.read_release(BENCH.sample_path() / "data")
    assert data.configs == whole.configs and data.counts == whole.counts
    assert "data/prompts/logical/logical_disjunctive.csv" in whole.files_read
    assert "prompts/logical/logical_disjunctive.csv" in data.files_read


def test_official_release_and_markers():
    official = BENCH.official_release
    assert (official.kind, official.repo) == ("github", "PLUM-Lab/R2I-Bench")
    assert re.fullmatch(r"[0-9a-f]{40}", official.revision)
    # every file of the release at that commit, checked byte for byte: its data and the authors' scripts
    assert set(official.scripts) <= set(official.files) and len(official.files) == 67
    assert sum(f.startswith(("data/prompts/", "data/evaluation/")) for f in official.files) == 63
    assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in official.files.values())
    assert BENCH.release_markers == ("data/prompts", "data/evaluation")
    assert set(r2i.OFFICIAL_SUBCATEGORIES) == {f"{c}/{s}" for c, subs in SUBCATEGORIES.items() for s in subs} - {
        "commonsense/affordance", "commonsense/attribute", "commonsense/color", "commonsense/emotion_intention_commonsense"}
    assert sum(len(s) for s in SUBCATEGORIES.values()) == 32


def test_large_synthetic_release_counts(tmp_path):
    """perf/build.py's synthetic release (scaled down): the reader finds exactly what was written."""
    spec = importlib.util.spec_from_file_location("r2i_perf_build", ROOT / "perf" / "build.py")
    perf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(perf)
    expected = perf.write_release(tmp_path / "big", n_prompts=300, seed=1)
    rel = BENCH.read_release(tmp_path / "big")
    assert rel.counts["all"]["rows"] == expected["prompts"]
    assert rel.counts["all"]["question_rows"] == expected["question_rows"]
    assert rel.counts["all"]["questions"] == expected["attached"]
    assert rel.counts["all"]["prompts_without_questions"] == expected["without_questions"]
    assert len(rel.quarantine) == expected["orphans"]


# -- irregular releases: kept and reported, never a stop -------------------------------------------------


def _rewrite(path, old, new):
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


def test_not_a_release(tmp_path):
    with pytest.raises(ReleaseError, match="no data/prompts or data/evaluation folder"):
        BENCH.read_release(tmp_path)
    (tmp_path / "data" / "prompts").mkdir(parents=True)
    rel = BENCH.read_release(tmp_path)
    assert [a.file for a in kinds(rel, "missing_file")] == ["evaluation/"]


def test_renamed_columns_are_recognised_or_the_rows_quarantined(copy):
    path = copy / "data/prompts/causal/causal_cause_to_effect.csv"
    _rewrite(path, "Reference Caption,", "Caption,")  # a known variant
    rel = BENCH.read_release(copy)
    assert rel.configs["causal"][0]["reference_caption"].startswith("A glass of curdled")
    _rewrite(path, "Prompt,", "Text To Draw,")  # not recognisable: the rows cannot be placed
    rel = BENCH.read_release(copy)
    [bad] = kinds(rel, "unreadable_header")
    assert bad.file == "prompts/causal/causal_cause_to_effect.csv" and "'prompt'" in bad.detail
    assert [q.row for q in rel.quarantine if q.file == bad.file] == ["line 2", "line 3"]
    assert "A snowman right after" in rel.quarantine[1].raw
    # their 7 questions now have no prompt: quarantined too, none lost
    assert rel.counts["all"]["question_rows"] == rel.counts["all"]["questions"] + rel.counts["all"]["orphan_questions"]


def test_unusable_weight_is_kept_as_null_and_makes_the_instance_unscorable(copy):
    _rewrite(copy / "data/evaluation/numerical/exact_number_generation_eval.csv", ",8.5\n", ",heavy\n")
    _rewrite(copy / "data/evaluation/numerical/exact_number_generation_eval.csv", ",50\n", ",-2\n")
    rel = BENCH.read_release(copy)
    bad = kinds(rel, "bad_weight")
    assert [(a.row, "heavy" in a.detail or "-2" in a.detail) for a in bad] == [("71", True), ("72", True)]
    row = next(r for r in rel.configs["numerical"] if r["source_id"] == "72")
    assert row["questions"][0]["weight"] is None
    judge = ScriptedJudge([])
    [result] = BENCH.score([row], images(1), judge)
    assert result.context["unscorable"] and "no usable weight" in result.failure and judge.requests == []


def test_malformed_csv_row_is_quarantined_and_the_rest_read(copy):
    path = copy / "data/evaluation/logical/disjunctive_eval.csv"
    path.write_text(path.read_text() + '41,"an unterminated quote,4,Is it?,5\n')
    rel = BENCH.read_release(copy)
    assert rel.counts["logical"]["questions"] == 3
    [bad] = kinds(rel, "malformed_row")
    assert bad.file == "evaluation/logical/disjunctive_eval.csv" and "unexpected end of data" in bad.detail
    assert [q.raw for q in rel.quarantine if q.file == bad.file] == ['41,"an unterminated quote,4,Is it?,5\n']


def test_wrong_field_counts(copy):
    path = copy / "data/evaluation/logical/disjunctive_eval.csv"
    path.write_text(path.read_text() + "41,criterion,4\n41,c,5,Is it?,5,extra,cells\n")
    rel = BENCH.read_release(copy)
    short = kinds(rel, "short_row")
    assert [a.row for a in short] == ["line 5"]
    row = next(r for r in rel.configs["logical"] if r["source_id"] == "41")
    assert row["questions"][3] == {"id": "4", "question": "", "criterion": "criterion", "weight": None, "note": None,
                                   "dimension": None, "extra": None}
    [long] = kinds(rel, "long_row")
    assert long.row == "line 6" and "quarantined" in long.detail
    assert any(q.raw == "41,c,5,Is it?,5,extra,cells\n" for q in rel.quarantine)


def test_not_utf8_is_read_and_reported(copy):
    path = copy / "data/prompts/logical/logical_disjunctive.csv"
    path.write_bytes(path.read_bytes().replace(b"spoon", "sp\u00f6on".encode("latin-1")))
    rel = BENCH.read_release(copy)
    [enc] = kinds(rel, "encoding")
    assert enc.file == "prompts/logical/logical_disjunctive.csv" and "cp1252" in enc.detail
    assert rel.configs["logical"][0]["prompt"].startswith("Either a sp\u00f6on")


def test_duplicate_header_keeps_both_columns(copy):
    _rewrite(copy / "data/evaluation/logical/disjunctive_eval.csv", "weight", "question")
    rel = BENCH.read_release(copy)
    assert kinds(rel, "duplicate_column") and kinds(rel, "missing_column")
    q = next(r for r in rel.configs["logical"] if r["source_id"] == "41")["questions"][0]
    assert q["weight"] is None and json.loads(q["extra"]) == {"question": "10"}


def test_empty_and_header_only_files(copy):
    (copy / "data/evaluation/logical/disjunctive_eval.csv").write_text("")
    (copy / "data/evaluation/causal/cause_to_effect_eval.csv").write_text("weight\n")
    rel = BENCH.read_release(copy)
    files = {a.file: a.detail for a in kinds(rel, "empty_file")}
    assert files["evaluation/logical/disjunctive_eval.csv"] == "the file is empty"
    assert "header only" in files["evaluation/causal/cause_to_effect_eval.csv"]
    assert rel.counts["causal"]["prompts_without_questions"] == 2


def test_duplicate_ids_are_kept_and_blank_rows_reported(copy):
    path = copy / "data/prompts/logical/logical_disjunctive.csv"
    path.write_text(path.read_text() + "Another prompt with a reused id.,41,Caption.,Point,Logical,Disjunctive\n,,,,,\n")
    rel = BENCH.read_release(copy)
    [dup] = kinds(rel, "duplicate_id")
    assert dup.row == "41" and "41~2" in dup.detail
    assert [a.row for a in kinds(rel, "blank_row")] == ["line 5"]
    by_sid = {r["source_id"]: r for r in rel.configs["logical"]}
    assert by_sid["41"]["prompt"].startswith("Either a spoon") and len(by_sid["41"]["questions"]) == 3
    assert by_sid["41~2"]["prompt"] == "Another prompt with a reused id." and by_sid["41~2"]["questions"] == []


def test_orphans_in_an_existing_prompts_file_and_float_ids(copy):
    path = copy / "data/evaluation/logical/disjunctive_eval.csv"
    path.write_text(path.read_text() + "99,crit,1,Is it?,5\n42.0,crit,1,Is there a child?,5\n")
    rel = BENCH.read_release(copy)
    orphans = [a for a in kinds(rel, "orphan_question") if "disjunctive" in a.file]
    assert len(orphans) == 1 and "(99)" in orphans[0].detail and "lacks these ids" in orphans[0].detail
    row42 = next(r for r in rel.configs["logical"] if r["source_id"] == "42")
    assert row42["has_questions"] and row42["questions"][0]["question"] == "Is there a child?"


def test_unknown_columns_are_kept_and_stray_files_reported(copy):
    path = copy / "data/evaluation/causal/cause_to_effect_eval.csv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0] + ",reviewer"] + [line + ",x" for line in lines[1:]]) + "\n")
    (copy / "data/prompts/everything.csv").write_text("Prompt,id\nx,1\n")
    rel = BENCH.read_release(copy)
    assert any(a.kind == "unknown_column" and "reviewer" in a.detail for a in rel.anomalies)
    assert [a.file for a in kinds(rel, "ignored_file")] == ["prompts/everything.csv"]
    assert rel.counts["causal"]["questions"] == 7
    q = rel.configs["causal"][0]["questions"][0]
    assert json.loads(q["extra"]) == {"reviewer": "x"}
