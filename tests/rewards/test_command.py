"""`t2ireason criteria`: a file of prompts in, a dataset of the benchmark's schema out, which the metric, the
rows loader of `t2ireason evaluate --data` and a reward all read; the criteria LLM asked over real HTTP."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from t2ireason.cli import main
from t2ireason.testing_http import serve

from .scripted import turn_reply


def test_r2i_criteria_for_a_file_of_prompts_are_a_dataset_the_metric_and_evaluate_read(tmp_path, capsys):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "apples", "prompt": "one more apple than the two on the plate"}) + "\n"
                       + json.dumps({"prompt": "a clock showing a quarter past three",
                                     "reference_caption": "A clock whose hands show 3:15."}) + "\n")
    cache, out = tmp_path / "criteria.sqlite", tmp_path / "made"
    with serve(lambda r: turn_reply(r.text)) as server:
        command = ["criteria", "--benchmark", "r2i-bench", "--prompts", str(prompts), "--criteria-llm",
                   f"openai:test-model@{server.base_url}", "--cache", str(cache)]
        code = main([*command, "--out", str(out)])
        asked = len(server.requests)
        assert code == 0, capsys.readouterr()
        assert asked == 1 + 3 * 2  # one reference caption written (the other prompt gave its own), 3 steps each
        assert "2 prompts: 2 made, 0 from the cache" in capsys.readouterr().out
        # made once: the same prompts again (into another folder) are read from the cache, nothing asked
        assert main([*command, "--out", str(tmp_path / "again")]) == 0
        assert len(server.requests) == asked
    assert "0 made, 2 from the cache" in capsys.readouterr().out

    import datasets

    from t2ireason.data import load_rows
    from t2ireason.judges.scripted import ScriptedJudge
    from t2ireason.metric import load_metric

    rows = list(datasets.load_dataset(str(out), "all", split="test"))
    assert [r["id"] for r in rows] == ["custom/custom/apples", "custom/custom/2"]
    assert rows[1]["reference_caption"] == "A clock whose hands show 3:15." and all(r["has_questions"] for r in rows)
    assert [q["weight"] for q in rows[0]["questions"]] == [9.0, 2.0]
    assert load_rows("r2i-bench", str(out)) == rows  # what `t2ireason evaluate --data <folder>` reads
    report = json.loads((out / "build_report.json").read_text())
    assert report["benchmark"] == "r2i-bench" and report["criteria_llm"]["model"] == "test-model"
    r2i = load_metric("r2i_score", judge=ScriptedJudge(lambda r: '```json\n{"1": 1, "2": 0}\n```'), cache=False,
                      progress=False)
    assert r2i.compute(predictions=[Image.new("RGB", (8, 8))] * 2, references=rows)["scores"] == [9 / 11, 9 / 11]



def test_a_prompt_whose_criteria_fail_is_kept_listed_and_exits_1(tmp_path, capsys):
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("a titration curve of a weak acid\n\na map of the Silk Road\n")
    with serve(lambda r: "no JSON" if "Silk Road" in json.dumps(r.messages) else turn_reply(r.text)) as server:
        code = main(["criteria", "--benchmark", "worldgenbench", "--prompts", str(prompts), "--criteria-llm",
                     f"openai:test-model@{server.base_url}", "--no-cache", "--out", str(tmp_path / "out")])
    assert code == 1
    printed = capsys.readouterr().out
    assert "1 made, 0 from the cache, 0 given, 1 failed" in printed and "failed: nature-2: checklist:" in printed
    report = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert [f["prompt"] for f in report["failed"]] == ["a map of the Silk Road"]
    import datasets

    rows = datasets.load_dataset(str(tmp_path / "out"), "nature", split="test")
    assert [len(r["checklist"]) for r in rows] == [3, 0]  # kept, with no checklist: scored, it fails with a reason


def test_prism_bench_needs_no_llm_and_names_each_prompts_track(tmp_path, capsys):
    prompts = tmp_path / "prompts.csv"
    prompts.write_text('prompt,track\n"a sign that reads OPEN",text_rendering\na cat,\n')
    assert main(["criteria", "--benchmark", "prism-bench", "--prompts", str(prompts), "--out", str(tmp_path / "o")]) == 0
    import datasets

    rows = datasets.load_dataset(str(tmp_path / "o"), "all", split="test")
    assert [(r["track"], r["language"]) for r in rows] == [("text_rendering", "en"), ("general", "en")]
    assert datasets.get_dataset_config_names(str(tmp_path / "o")) == ["all", "en", "text_rendering_en"]


@pytest.mark.parametrize("content, said", [
    ("", "holds no prompt"),
    ('{"text": "no prompt key"}\n', "prompt 1: needs a non-empty 'prompt' string"),
    ("{not json\n", "line 1: not JSON"),
])
def test_a_bad_prompts_file_is_one_line(tmp_path, capsys, content, said):
    path = tmp_path / "p.jsonl"
    path.write_text(content)
    assert main(["criteria", "--benchmark", "prism-bench", "--prompts", str(path), "--out", str(tmp_path / "o")]) == 2
    assert said in capsys.readouterr().err


def test_an_llm_made_benchmark_without_an_llm_is_refused(tmp_path, capsys):
    (tmp_path / "p.txt").write_text("a cat\n")
    assert main(["criteria", "--benchmark", "r2i-bench", "--prompts", str(tmp_path / "p.txt"),
                 "--out", str(tmp_path / "o")]) == 2
    assert "--criteria-llm is needed" in capsys.readouterr().err


def test_a_prompts_json_file_that_is_not_json_is_named(tmp_path, capsys):
    path = tmp_path / "p.json"
    path.write_text('[{"prompt": "a cat"')
    assert main(["criteria", "--benchmark", "prism-bench", "--prompts", str(path), "--out", str(tmp_path / "o")]) == 2
    assert f"{path}: not JSON" in capsys.readouterr().err


@pytest.mark.parametrize("name, content", [("p.txt", "a cat\n"), ("p.csv", "prompt,id\na cat,7\n"),
                                           ("p.jsonl", '{"prompt": "a cat"}\n'), ("p.json", '["a cat"]')])
def test_a_prompts_file_saved_with_a_byte_order_mark_reads_as_without(tmp_path, name, content):
    """Spreadsheets and Windows editors begin UTF-8 files with a BOM: it was read into the first prompt (or the
    CSV's first column name, or refused as JSON)."""
    from t2ireason.rewards.prompt_files import read_prompts

    path = tmp_path / name
    path.write_text(content, encoding="utf-8-sig")
    assert read_prompts(path)[0]["prompt"] == "a cat"


def test_the_library_names_the_dimension_as_its_caller_says():
    """Issue 43 (library half): the message naming how to give T2I-ReasonBench's dimension is the caller's."""
    from t2ireason.rewards import Criteria

    with pytest.raises(ValueError, match=r"no dimension: give one of .*\(load_reward\(\.\.\., dimension=\.\.\.\)"):
        Criteria("t2i_reasonscore", cache=False).method.dimension({}, "a cat")
    criteria = Criteria("t2i_reasonscore", cache=False, choice_hint="--dimension")
    with pytest.raises(ValueError, match=r"no dimension: give one of .*\(--dimension\), for 'a cat'"):
        criteria.method.dimension({}, "a cat")


def test_criteria_without_dimension_points_to_the_option(tmp_path, capsys):
    """Issue 43: `t2ireason criteria --benchmark t2i-reasonbench` without --dimension pointed to load_reward(...)."""
    (tmp_path / "p.txt").write_text("a cat\n")
    with serve(lambda r: turn_reply(r.text)) as server:
        code = main(["criteria", "--benchmark", "t2i-reasonbench", "--prompts", str(tmp_path / "p.txt"),
                     "--criteria-llm", f"openai:test-model@{server.base_url}", "--no-cache",
                     "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and "--dimension" in err and "load_reward" not in err, err


def test_new_r2i_prompts_are_made_as_the_paper_made_its_own(tmp_path, capsys):
    """Issue 52: R2I-Bench appendix A.4's data-creation and explanation prompts behind `t2ireason criteria --create`:
    the subcategory's definitions (appendix A.2) and the good cases go into the creation prompt, each new prompt is
    explained, the explanation is its assessment point, and its questions are made by the A.4 criteria pipeline."""
    good = tmp_path / "good.jsonl"
    good.write_text(json.dumps({"prompt": "Either the lamp or the candle is lit; the lamp is broken.",
                                "reference_caption": "A lit candle beside a dark lamp."}) + "\n")
    created = [{"Prompt": "Either the kettle or the pot boils; the pot is empty.", "Reference Caption": "A boiling kettle."},
               {"Prompt": "Either the cat or the dog sleeps; the dog is running.", "Reference Caption": "A sleeping cat."}]

    def reply(request):
        text = request.text
        if "Can you generate 10 test cases" in text:
            return "Here are two:\n```json\n" + json.dumps(created) + "\n```"
        if "Your task is to explain why" in text:
            prompt = text.split("Prompt: ", 1)[1].split("\n", 1)[0]
            return json.dumps({"Explanation": f"because of: {prompt}"})
        return turn_reply(text)

    with serve(reply) as server:
        code = main(["criteria", "--benchmark", "r2i-bench", "--create", "logical/disjunctive", "--good-cases",
                     str(good), "--criteria-llm", f"openai:test-model@{server.base_url}", "--no-cache",
                     "--out", str(tmp_path / "made")])
        asked = [r.text for r in server.requests]
    assert code == 0, capsys.readouterr()
    creation = next(t for t in asked if "Can you generate 10 test cases" in t)
    assert creation.startswith("You are an expert in text-to-image generation. I am currently creating a benchmark")
    assert "### Definition of Logical Reasoning:\nLogical reasoning involves using systematic, structured" in creation
    assert "### Definition of Disjunctive Reasoning:\nDisjunctive reasoning involves premises in the form" in creation
    assert "1. Prompt: Either the lamp or the candle is lit" in creation and "Reference Caption: A lit candle" in creation
    assert "(1) No Effective Reasoning" in creation  # appendix A.2's negative examples by default
    assert sum("Your task is to explain why" in t for t in asked) == 2
    import datasets

    rows = list(datasets.load_dataset(str(tmp_path / "made"), "all", split="test"))
    assert [(r["prompt"], r["reference_caption"]) for r in rows] == [(c["Prompt"], c["Reference Caption"]) for c in created]
    assert [r["assessment_point"] for r in rows] == [f"because of: {c['Prompt']}" for c in created]
    assert [(r["category"], r["subcategory"], r["id"]) for r in rows] == [
        ("logical", "disjunctive", "logical/disjunctive/1"), ("logical", "disjunctive", "logical/disjunctive/2")]
    assert all(r["has_questions"] and [q["weight"] for q in r["questions"]] == [9.0, 2.0] for r in rows)
    assert "2 new logical/disjunctive prompts made" in capsys.readouterr().out


def test_creating_r2i_prompts_says_what_is_missing_before_any_llm_is_asked(tmp_path, capsys):
    base = ["criteria", "--benchmark", "r2i-bench", "--criteria-llm", "openai:m@http://127.0.0.1:9", "--out",
            str(tmp_path / "o")]
    assert main([*base, "--create", "logical/nonsense", "--good-cases", "x.txt"]) == 2
    assert "unknown R2I-Bench subcategory 'logical/nonsense'" in capsys.readouterr().err
    assert main([*base, "--create", "logical/disjunctive"]) == 2
    assert "--create needs --good-cases" in capsys.readouterr().err
    assert main([*base]) == 2
    assert "give --prompts (a file of prompts) or --create" in capsys.readouterr().err
    assert main(["criteria", "--benchmark", "t2i-reasonbench", "--create", "logical/disjunctive", "--out", "o"]) == 2
    assert "use it with --benchmark r2i-bench" in capsys.readouterr().err
