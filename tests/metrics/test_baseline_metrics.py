"""The dsg, viescore and tifa evaluate modules with scripted judges: the preset's judge and question LLM, one
model named doing both, the preset's options reaching the scoring, inputs checked before a judge is loaded."""

from __future__ import annotations

from pathlib import Path

import evaluate
import pytest
from PIL import Image

from t2ireason.judges.scripted import ScriptedJudge

ROOT = Path(__file__).resolve().parents[2]
DSG = {"tuple": "1 | entity - whole (cube)\n2 | attribute - color (cube, red)", "dependency": "1 | 0\n2 | 1",
       "question": "1 | Is there a cube?\n2 | Is the cube red?"}


def load(name: str, **kwargs):
    return evaluate.load(str(ROOT / "metrics" / name), progress=False, **kwargs)


def dsg_model(answer: str = "yes", model: str = "scripted") -> ScriptedJudge:
    def reply(request):
        text = request.messages[0].text
        if text.startswith("Task:"):
            return DSG["tuple" if "describe each scene" in text else "dependency" if "parent" in text else "question"]
        return answer

    return ScriptedJudge(reply, model=model)


def test_the_presets_judge_and_llm_are_named_and_nothing_is_loaded_before_compute():
    dsg = load("dsg", store=False)
    assert dsg.judge_spec == "openai:gpt-4o" and dsg._judge is None
    assert dsg.baseline.questions.spec == "openai:gpt-3.5-turbo" and dsg.baseline.questions._loaded is None
    assert dsg.judge_setting.options == {"dependency": "paper"}
    official = load("dsg", preset="official", store=False)
    assert official.judge_setting.judge_kwargs["sampling"].temperature == 1.0
    vie = load("viescore")
    assert vie.judge_spec == "openai:gpt-4o-2024-05-13"
    with pytest.raises(ValueError, match="unknown preset 'gpt-4v' for viescore"):
        load("viescore", preset="gpt-4v")
    with pytest.raises(ValueError, match="viescore asks no LLM for questions"):
        load("viescore", llm="openai:gpt-4o")


def test_one_model_named_writes_the_questions_and_answers_them():
    model = dsg_model()
    dsg = load("dsg", judge=model, store=False, cache=False)
    out = dsg.compute(predictions=[Image.new("RGB", (8, 8))], references=["a red cube"])
    assert out["dsg"] == 100.0 and out["scores"] == [1.0] and out["num_failed"] == 0
    assert out["judge"]["questions_by"]["model"] == "scripted" and out["judge"]["preset"] == "paper"
    assert [r.messages[0].text.startswith("Task:") for r in model.requests] == [True, True, True, False, False]
    assert out["per_image"][0]["context"]["dependency_rule"] == "paper"


def test_an_llm_named_apart_writes_the_questions_and_the_presets_options_reach_the_scoring():
    llm, judge = dsg_model(model="writer"), dsg_model("no", model="answerer")
    dsg = load("dsg", judge=judge, llm=llm, preset="official", store=False, cache=False)
    out = dsg.compute(predictions=[Image.new("RGB", (8, 8))], references=["a red cube"])
    assert out["scores"] == [0.0] and out["per_image"][0]["context"]["dependency_rule"] == "official"
    assert out["judge"]["questions_by"]["model"] == "writer" and out["judge"]["model"] == "answerer"
    assert all(r.messages[0].text.startswith("Task:") for r in llm.requests)
    assert not any(r.messages[0].text.startswith("Task:") for r in judge.requests)
    again = dsg.aggregate_results(out["per_image"] * 2)
    assert again["dsg"] == 0.0 and again["num_scored"] == 2


def test_inputs_are_checked_before_a_judge_is_loaded(tmp_path):
    dsg = load("dsg", judge="openai:gpt-4o", store=False)
    with pytest.raises(FileNotFoundError, match=r"1 of 1 image files do not exist: predictions\[0\]"):
        dsg.compute(predictions=[str(tmp_path / "missing.png")], references=["a cube"])
    with pytest.raises(ValueError, match=r"got 1 images \(predictions\) but 2 prompts"):
        dsg.compute(predictions=[Image.new("RGB", (8, 8))], references=["a", "b"])
    assert dsg._judge is None
    tifa = load("tifa", store=False)
    with pytest.raises(ValueError, match="no judge given and the 'paper' preset of tifa names none"):
        tifa.compute(predictions=[Image.new("RGB", (8, 8))], references=["a cube"])


def test_viescore_and_tifa_modules_score_with_a_scripted_judge():
    vie = load("viescore", judge=ScriptedJudge(['{"score": [8], "reasoning": "a red cube"}',
                                                 '{"score": [9, 6], "reasoning": "clean"}']), cache=False)
    out = vie.compute(predictions=[Image.new("RGB", (8, 8))], references=["a red cube"])
    assert out["viescore"] == pytest.approx(10 * (8 * 6) ** 0.5) and out["SC"] == 8.0 and out["PQ"] == 6.0

    def tifa_reply(request):
        if "Given a image descriptions" in request.messages[0].text:
            return ": cube\nActivities:\nColors: red\nCounting:\nOther attributes:\nQuestions and answers are below:\n" \
                   "About cube (object):\nQ: is there a cube?\nChoices: yes, no\nA: yes"
        return "yes"

    tifa = load("tifa", judge=ScriptedJudge(tifa_reply), store=False, cache=False)
    out = tifa.compute(predictions=[Image.new("RGB", (8, 8))], references=["a red cube"])
    assert out["tifa"] == 100.0 and out["accuracy_by_type"] == {"object": 100.0}


def test_distributed_mode_each_process_judges_its_own_rows_and_process_0_combines(tmp_path):
    """As found: BaselineMetric overrode _compute, so in evaluate's distributed mode process 0 judged every row while
    the others waited. Now each process judges the rows it was given (the shared _score_rows/_combine), and process
    0 combines them in evaluate's order."""
    import threading

    def reply(request):
        text = request.messages[-1].text
        return '{"score": [6, 9], "reasoning": "q"}' if "naturalness" in text else '{"score": [9], "reasoning": "s"}'

    judges = [ScriptedJudge(reply), ScriptedJudge(reply)]
    common = {"num_process": 2, "experiment_id": "vie-run", "cache_dir": str(tmp_path / "cache"), "cache": False}
    modules = [load("viescore", judge=judges[i], process_id=i, **common) for i in range(2)]
    prompts = ["a red cube", "two cats", "a blue sky", "a green door"]
    images = [Image.new("RGB", (8, 8), (60 * i, 0, 0)) for i in range(4)]
    results, errors = [None, None], []

    def run(i):
        try:
            results[i] = modules[i].compute(predictions=images[2 * i: 2 * i + 2], references=prompts[2 * i: 2 * i + 2])
        except Exception as e:  # surfaced below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert results[1] is None and [r["prompt"] for r in results[0]["per_image"]] == prompts
    assert results[0]["scores"] == pytest.approx([(6 * 9) ** 0.5 / 10] * 4)
    asked = [sorted({p for r in j.requests for p in prompts if p in r.messages[-1].text}) for j in judges]
    assert asked == [sorted(prompts[:2]), sorted(prompts[2:])]  # each process judged its own rows alone
