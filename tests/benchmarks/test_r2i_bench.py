"""R2I-Bench: the release reader on the shipped sample (every quirk of formats.md) and on broken
releases, R2I-Score scoring with scripted judge replies checked by hand, the tables, and the
appendix A.4 evaluation-criteria pipeline."""

from __future__ import annotations

import importlib.util
import json
import math
import re
import shutil
from pathlib import Path

import datasets
import numpy as np
import pytest
from PIL import Image

from t2ireason.benchmarks import ReleaseError, get_benchmark
from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.images import JudgeImage
from t2ireason.judges.base import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult

BENCH = get_benchmark("r2i-bench")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def release():
    return BENCH.read_release(BENCH.sample_path())


@pytest.fixture(scope="module")
def rows(release):
    return {r["id"]: r for r in release.configs["all"]}


def kinds(release, kind):
    return [a for a in release.anomalies if a.kind == kind]


@pytest.fixture
def copy(tmp_path):
    """A writable copy of the sample release."""
    dst = tmp_path / "release"
    shutil.copytree(BENCH.sample_path(), dst)
    return dst


# -- reading the sample release ---------------------------------------------------------------------


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
    known = tuple(s for subs in r2i.SUBCATEGORIES.values() for s in subs) + r2i.CATEGORIES
    assert r2i._names(cell, own, known) == named


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
    assert official.files == {}  # the bytes could not be verified: nothing is claimed
    assert BENCH.release_markers == ("data/prompts", "data/evaluation")
    assert set(r2i.OFFICIAL_SUBCATEGORIES) == {f"{c}/{s}" for c, subs in r2i.SUBCATEGORIES.items() for s in subs} - {
        "commonsense/affordance", "commonsense/attribute", "commonsense/color", "commonsense/emotion_intention_commonsense"}
    assert sum(len(s) for s in r2i.SUBCATEGORIES.values()) == 32


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


# -- irregular releases: kept and reported, never a stop ----------------------------------------------


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


# -- scoring -------------------------------------------------------------------------------------------


def ids_in(request) -> list[str]:
    return re.findall(r"^Question (\S+):", request.messages[0].text, re.M)


def answer(scores: dict, analysis: str = "Analysis.") -> str:
    return f"{analysis}\n```json\n{json.dumps(scores)}\n```"


def by_prompt(table: dict[str, dict]) -> ScriptedJudge:
    """A judge answering each instance from ``table`` (prompt prefix -> scores)."""

    def reply(request):
        text = request.messages[0].text
        for prefix, scores in table.items():
            if prefix in text:
                return answer(scores)
        raise AssertionError("unexpected prompt")

    return ScriptedJudge(reply)


class CountingJudge(ScriptedJudge):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.chat_calls = 0

    def chat(self, requests, **kw):
        self.chat_calls += 1
        return super().chat(requests, **kw)


def images(n):
    return [Image.new("RGB", (24, 24), (10 * i, 20, 30)) for i in range(n)]


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


def test_request_holds_the_template_every_question_and_criterion(rows):
    row = rows["commonsense/color/11"]
    judge = by_prompt({"unpeeled": {"1": 1, "2": 1, "3": 1}})
    img = images(1)[0]
    BENCH.score([row], [img], judge)
    [request] = judge.requests
    text = request.messages[0].text
    assert "# Text-to-Image Quality Evaluation Protocol" in text and "ABSOLUTE RUTHLESSNESS" in text
    assert row["prompt"] in text
    for q in row["questions"]:
        assert q["question"] in text and q["criterion"] in text
    assert "[QUESTION" not in text and "[PROMPT]" not in text and "[IMPORTANT" not in text
    assert "1, 2, 3" in text and "0, 0.5 or 1" in text
    assert ids_in(request) == ["1", "2", "3"]
    [image] = request.images
    assert isinstance(image, JudgeImage) and image.size == img.size


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


def test_missing_answer_is_reasked_naming_it_and_merged(rows):
    row = rows["causal/cause_to_effect/2"]
    judge = CountingJudge([answer({"1": 1, "2": 1, "4": 0}), answer({"3": 0.5})])
    [result] = BENCH.score([row], images(1), judge)
    assert result.score == pytest.approx((5 + 10 + 3.5 + 0) / 23)
    assert result.reasks == 1 and result.failure is None and len(result.replies) == 2
    follow_up = judge.requests[1]
    assert "no valid score for question(s) 3" in follow_up.messages[-1].text
    assert follow_up.messages[1].role == "assistant"
    assert follow_up.images[0] is judge.requests[0].images[0]  # one JudgeImage, reused


def test_out_of_range_answer_is_reasked(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 0.7, "2": 1, "3": 2}), answer({"Q1": "0.5", "q3": 1})])
    [result] = BENCH.score([row], images(1), judge)
    reask = judge.requests[1].messages[-1].text
    assert "question 1 0.7 is not one of 0, 0.5, 1" in reask and "question 3 2" in reask
    assert result.score == pytest.approx((5 + 4 + 2) / 16)


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


def test_unparsable_reply_then_failure(rows):
    judge = ScriptedJudge(["I cannot judge this image."] * 2)
    [result] = BENCH.score([rows["logical/disjunctive/41"]], images(1), judge, max_reasks=1)
    assert result.score is None and "no JSON dict found" in result.failure
    assert result.replies == ["I cannot judge this image."] * 2


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


def test_official_template_sends_the_authors_text_before_the_image(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})])
    [result] = BENCH.score([row], images(1), judge, template="official")
    [message] = judge.requests[0].messages
    assert [type(p).__name__ for p in message.content] == ["str", "JudgeImage"]  # text first, as the authors send it
    text = message.content[0]
    listed = "\n".join(f"{q['id']}. {q['question']} \nCriteria: {q['criterion']}" for q in row["questions"])
    assert text == r2i.official_template().replace("[PROMPT]", row["prompt"]).replace("[QUESTION LIST]", listed)
    # the authors' PROMPT string of instance.py, byte for byte around the filled slots
    assert text.startswith("\n# Text-to-Image Quality Evaluation Protocol \n# ## System Instruction \nYou are an AI "
                           "quality auditor for text-to-image generation. Answer these questions with ABSOLUTE "
                           "RUTHLESSNESS. \nOnly images meeting the HIGHEST standards should receive top scores.\n\n"
                           "## Task Overview\nThe image is prompt by the prompt: \n" + row["prompt"] + "\n\n## Question List\n1. ")
    assert "whether there are invalid permutations will both be 0.\n\n```json\n{\n    \"id\": score,\n    ...\n}\n``` \n]\n" in text
    assert text.endswith("``` \n]\n") and "[QUESTION" not in text and "[PROMPT]" not in text
    assert result.score == pytest.approx((10 + 2 + 0) / 16)


def test_official_preset_reproduces_what_the_card_says(rows):
    opts = BENCH.presets["official"]["options"]
    assert opts == {"missing": "answered", "template": "official", "round_scores": 2,
                    "subcategories": list(r2i.OFFICIAL_SUBCATEGORIES)}
    selected = [rows["commonsense/color/11"], rows["logical/disjunctive/41"], rows["causal/cause_to_effect/2"]]
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0.5}), answer({"1": 1, "2": 1, "3": 0})] + [
        answer({"1": 1, "2": 1, "3": 0})] * 2)
    results = BENCH.score(selected, images(3), judge, **opts)
    # commonsense/color is one of the four subcategories the official script never evaluates
    assert results[0].context["excluded"] and results[0].score is None and "not evaluated" in results[0].failure
    assert len(judge.requests) == 4  # two instances asked, question 4 of the second re-asked twice
    assert results[1].score == 0.81  # (10 + 2 + 1) / 16 = 0.8125, rounded to 2 decimals
    assert results[2].score == 0.68 and results[2].context["unanswered"] == ["4"]  # 15 / 22 over the answered ones
    agg = BENCH.aggregate(results, **opts, n_resamples=50)
    assert agg["num_excluded"] == 1 and agg["num_unscorable"] == 0 and agg["num_partial"] == 1
    assert agg["category_scores"] == {"logical": pytest.approx(81.0), "causal": pytest.approx(68.0)}
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0.5})])
    [paper] = BENCH.score(selected[1:2], images(1), judge, **BENCH.presets["paper"]["options"])
    assert paper.score == 0.8125  # the paper preset: not rounded, the paper's template, the image first
    assert ids_in(judge.requests[0]) == ["1", "2", "3"]
    assert [type(p).__name__ for p in judge.requests[0].messages[0].content] == ["JudgeImage", "str"]


def test_repeated_question_ids_are_asked_by_position(rows):
    row = dict(rows["logical/disjunctive/41"])
    row["questions"] = [dict(q, id="1") for q in row["questions"]]
    judge = ScriptedJudge([answer({"1": 1, "2": 0, "3": 1})])
    [result] = BENCH.score([row], images(1), judge)
    assert ids_in(judge.requests[0]) == ["1", "2", "3"]
    assert result.score == pytest.approx(12 / 16)


def test_allowed_scores_option(rows):
    row = rows["logical/disjunctive/41"]
    judge = ScriptedJudge([answer({"1": 0.7, "2": 1, "3": 0.25})])
    [result] = BENCH.score([row], images(1), judge, allowed_scores=None)
    assert result.score == pytest.approx((7 + 4 + 0.5) / 16)
    assert "a score between 0 and 1" in judge.requests[0].messages[0].text


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


# -- aggregation -----------------------------------------------------------------------------------


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


# -- the criteria pipeline (appendix A.4) -----------------------------------------------------------

NEW = {"prompt": "A clock showing the time a quarter of an hour after noon.",
       "reference_caption": "An analog clock reading 12:15.", "assessment_point": "Time arithmetic",
       "category": "numerical", "subcategory": "time", "source_id": "900"}

GOOD = [
    {"id": 1, "dimension": "reasoning", "weight": 9, "question": "Does the clock read 12:15?",
     "evaluation_criteria": "1: exactly 12:15; 0.5: close; 0: another time"},
    {"id": 2, "dimension": "text-image alignment", "weight": "5", "question": "Is there an analog clock?",
     "evaluation_criteria": "1: an analog clock; 0.5: a digital clock; 0: none"},
    {"id": 3, "dimension": "quality", "weight": 2, "question": "Is the dial legible?",
     "evaluation_criteria": "1: legible; 0.5: partly; 0: illegible"},
]


def pipeline_judge(weight_replies):
    """Free text for the first two steps, then the scripted replies of the weight step in order."""
    weight_replies = list(weight_replies)

    def reply(request):
        last = request.messages[-1].text
        if "What do you think the correct image should look like" in last:
            return "A round analog clock, hour hand just past 12, minute hand on 3."
        if last.startswith("Now, create a set of evaluation questions"):
            return "1. Does the clock read 12:15? ..."
        return weight_replies.pop(0)

    return ScriptedJudge(reply)


def test_criteria_generation_produces_rows_of_the_schema():
    judge = pipeline_judge([f"```json\n{json.dumps(GOOD)}\n```"])
    [gen] = r2i.generate_criteria([NEW], judge)
    assert gen.ok and gen.adjustments == []
    row = gen.row
    assert row["id"] == "numerical/time/900" and row["has_questions"]
    assert [(q["id"], q["weight"], q["dimension"]) for q in row["questions"]] == [
        ("1", 9.0, "reasoning"), ("2", 5.0, "alignment"), ("3", 2.0, "quality")]
    assert row["questions"][0]["criterion"] == GOOD[0]["evaluation_criteria"]
    datasets.Dataset.from_list([row], features=BENCH.features)  # fits the schema
    assert len(judge.requests) == 3
    weight_request = judge.requests[2]
    assert [m.role for m in weight_request.messages] == ["user", "assistant", "user", "assistant", "user"]
    assert weight_request.messages[0].text.startswith("This test case is designed to evaluate the image generation model.")
    assert "Expected: An analog clock reading 12:15." in weight_request.messages[0].text
    text = weight_request.messages[-1].text
    assert "# Image Generation Model Assessment" in text and "Assessment Points: Time arithmetic" in text
    assert "reasoning 7 to 10, alignment 4 to 6, quality 1 to 3" in text
    assert not weight_request.images and weight_request.sampling.temperature == 0.1


def test_generated_criteria_score_per_dimension():
    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(GOOD)]))
    judge = ScriptedJudge([answer({"1": 1, "2": 0.5, "3": 0})])
    [result] = BENCH.score([gen.row], images(1), judge)
    assert result.score == pytest.approx((9 + 2.5) / 16)
    assert result.subscores == {"reasoning": 1.0, "alignment": 0.5, "quality": 0.0}
    assert BENCH.aggregate([result], n_resamples=50)["dimensions"]["alignment"]["mean"] == pytest.approx(50.0)


def test_weights_outside_the_dimension_range_clamped_or_rejected():
    off = [dict(GOOD[0], weight=5), dict(GOOD[1], weight=9), GOOD[2]]
    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(off)]))
    assert gen.ok and [q["weight"] for q in gen.row["questions"]] == [7.0, 6.0, 2.0]
    assert gen.adjustments == ["question 1: weight 5 clamped to 7 (reasoning range 7-10)",
                               "question 2: weight 9 clamped to 6 (alignment range 4-6)"]

    judge = pipeline_judge([json.dumps(off), json.dumps(GOOD)])
    [gen] = r2i.generate_criteria([NEW], judge, weights="reject")
    assert gen.ok and [q["weight"] for q in gen.row["questions"]] == [9.0, 5.0, 2.0]
    assert "item 1 (reasoning) has weight 5, outside its range 7 to 10" in judge.requests[-1].messages[-1].text
    assert len(gen.replies["weight"]) == 2

    [gen] = r2i.generate_criteria([NEW], pipeline_judge([json.dumps(off)] * 3), weights="reject")
    assert not gen.ok and gen.row["questions"] == [] and not gen.row["has_questions"]
    assert gen.failure.startswith("weight step:") and len(gen.replies["weight"]) == 3


def test_malformed_criteria_replies_are_reasked():
    broken = [dict(GOOD[0], weight=15), {k: v for k, v in GOOD[1].items() if k != "evaluation_criteria"},
              dict(GOOD[2], dimension="style")]
    judge = pipeline_judge(["Here are the weights, as discussed.", json.dumps(broken), json.dumps(GOOD)])
    [gen] = r2i.generate_criteria([NEW], judge, max_reasks=2)
    assert gen.ok and len(gen.replies["weight"]) == 3
    second = judge.requests[-2].messages[-1].text
    assert "no JSON" in second
    last = judge.requests[-1].messages[-1].text
    assert "item 1 weight 15 is above the maximum 10" in last  # out of 1-10: re-asked even when clamping
    assert "item 2 has no evaluation_criteria" in last and "item 3 has dimension 'style'" in last


def test_criteria_failures_in_early_steps_and_bad_input():
    judge = ScriptedJudge(lambda request: "   ")
    [gen] = r2i.generate_criteria([dict(NEW, category=None, subcategory=None, source_id=None)], judge, max_reasks=1)
    assert not gen.ok and gen.failure == "imagine step: unparsable reply: empty reply"
    assert gen.row["id"] == "custom/custom/1" and len(judge.requests) == 2
    with pytest.raises(ValueError, match=r"prompts\[0\] needs a non-empty 'prompt' and 'reference_caption'"):
        r2i.generate_criteria([{"prompt": "x"}], judge)
    with pytest.raises(ValueError, match="weights must be"):
        r2i.generate_criteria([NEW], judge, weights="ignore")


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


def test_the_official_request_carries_only_model_and_temperature(rows):
    """instance.py's get_llm_response sends model, temperature 0.1 and the messages: no max_tokens, no top_p."""
    from t2ireason.judges import load_judge
    from t2ireason.testing_http import Answer, serve

    row = rows["logical/disjunctive/41"]
    preset = BENCH.presets["official"]
    with serve(Answer(answer({"1": 1, "2": 1, "3": 1, "4": 1})), models=["gpt-4o"]) as server:
        judge = load_judge(f"openai:gpt-4o@{server.base_url}", **preset["judge_kwargs"])
        try:
            [result] = BENCH.score([row], images(1), judge, **preset["options"])
        finally:
            judge.close()
    assert result.score == 1.0
    [received] = server.requests
    assert set(received.body) == {"model", "temperature", "messages"}
    assert (received.body["model"], received.body["temperature"]) == ("gpt-4o", 0.1)
