"""The T2I-ReasonBench release reader: every quirk and every pair of the sample kept, damaged and
irregular releases read around and reported, ids made into file names, the official release pinned."""

from __future__ import annotations

import json
import re
import shutil

import datasets
import pytest

from t2ireason.benchmarks import ReleaseError, is_safe_name, safe_name
from t2ireason.benchmarks.t2i_reasonbench import ANOMALY_KINDS, DIMENSIONS

from .conftest import BENCH, _group, _row

# -- reading the release ----------------------------------------------------------------------------

def test_sample_counts_equal_what_was_written(release):
    # written by hand in the sample: pairs per row, group by group
    assert release.counts == {
        "idiom": {"rows": 4, "pairs": 22, "reason_pairs": 15, "detail_pairs": 0, "quality_pairs": 7},
        "textual": {"rows": 4, "pairs": 21, "reason_pairs": 15, "detail_pairs": 0, "quality_pairs": 6},
        "entity": {"rows": 4, "pairs": 19, "reason_pairs": 8, "detail_pairs": 6, "quality_pairs": 5},
        "scientific": {"rows": 4, "pairs": 23, "reason_pairs": 11, "detail_pairs": 6, "quality_pairs": 6},
        "all": {"rows": 16, "pairs": 85, "reason_pairs": 49, "detail_pairs": 12, "quality_pairs": 24},
    }
    # the all config: every dimension's rows, in the dimensions' order
    assert release.configs["all"] == [r for d in DIMENSIONS for r in release.configs[d]]
    sizes = {d: [[len(g["pairs"]) for g in r["evaluation"]] for r in rows] for d, rows in release.configs.items()
             if d != "all"}
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
    mismatched = {(d, r["id"]) for d in DIMENSIONS for r in release.configs[d] if r["evaluation_prompt"]}
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
    rows = release.configs["all"]
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
    assert rel.counts["all"]["rows"] == sum(rel.counts[d]["rows"] for d in DIMENSIONS) == 800
    assert rel.counts["all"]["pairs"] == sum(rel.counts[d]["pairs"] for d in DIMENSIONS) == expected


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
    assert list(rel.configs) == ["textual", "entity", "scientific", "all"]
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
