"""Any metric as an evaluation of a run (issue 42 item 1): ``t2ireason evaluate --metric`` with VIEScore over a real
HTTP judge (the published reply format, malformed replies re-asked then recorded, a resume asking nothing twice),
VQAScore and CLIPScore, a user's own evaluate module (and one that returns no per-image scores, refused), the
report and the export of a run holding its benchmark's evaluation beside two others, and a tiny real judge."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.evaluation_metrics import metric_scorer
from t2ireason.judges.base import Sampling
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run

BRIGHTNESS = (40, 120, 200, 250)


def run_with_images(folder: Path, benchmark: str = "worldgenbench", limit: int = 3) -> Run:
    """A run of the shipped sample with a small PNG of its own brightness where each image goes."""
    run = Run.create(folder, benchmark, limit=limit)
    bench = get_benchmark(benchmark)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (BRIGHTNESS[i],) * 3).save(path)
    return run


def brightness(query) -> float:
    return float(np.asarray(query.image.image).mean() / 255)


def checklist_reply(request) -> str:
    """WorldGenBench's own metric, every checklist item satisfied."""
    return json.dumps({"answers": [1] * request.json_schema["properties"]["answers"]["minItems"]})


# -- VIEScore over HTTP: the published format, malformed replies, a resume ----------------------------------------

SC_REPLY = '{"score": [8], "reasoning": "The image shows what the prompt asks."}'
PQ_REPLY = '{\n  "score": [7, 9],\n  "reasoning": "Natural light, few artifacts."\n}'  # as GPT-4o writes it


def test_evaluate_metric_viescore_over_http_re_asks_records_failures_and_resumes_asking_nothing_twice(
        tmp_path, capsys, monkeypatch):
    from t2ireason.testing_http import Answer, Fail, serve

    run = run_with_images(tmp_path / "run")
    prompts = [run.bench.prompt(r) for r in run.rows()]
    asked: list[str] = []
    state = {"refuse_after": None}

    def answer(request):
        text = json.dumps(request.messages)  # the whole conversation (a re-ask's last turn is the follow-up)
        if "Is this image gray?" in text:
            return Answer("yes")  # the pre-flight's probe
        key = json.dumps(request.messages, sort_keys=True)
        if state["refuse_after"] is not None and len(asked) >= state["refuse_after"]:
            return Fail(401, "Incorrect API key provided")  # the key revoked mid-run
        asked.append(key)
        if "naturalness" in text:
            return Answer(PQ_REPLY)
        if prompts[1] in text and len(request.messages) == 1:
            return Answer("I would give it an 8 out of 10.")  # not the JSON asked for: re-asked in the conversation
        if prompts[2] in text:
            return Answer("Score: eight.")  # never the JSON asked for: the image's failure, with every reply
        return Answer(SC_REPLY)

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with serve(answer, models=["gpt-4o"]) as server:
        argv = ["evaluate", "--run", str(run.path), "--metric", "viescore", "--judge", f"openai:gpt-4o@{server.base_url}",
                "--judge-kwargs", '{"max_concurrency": 1}', "--options", '{"max_reasks": 1}', "--chunk-size", "1",
                "--no-cache", "--no-progress"]
        state["refuse_after"] = 4  # image 1 (SC, PQ), image 2's first SC reply and its PQ, then a refused key
        assert cli.main(argv) == 2
        assert "1 of 3 images scored and kept" in capsys.readouterr().err
        first = list(asked)
        state["refuse_after"] = None
        assert cli.main(argv) == 0  # an image whose replies failed is a result (a failure), not an outage
    out = capsys.readouterr().out
    assert "images scored with viescore by openai:gpt-4o" in out and "replies received before reused" in out
    assert not set(asked[len(first):]) & set(first)  # nothing asked twice: the journal gave the earlier replies
    scores = Run.open(run.path).scores("viescore-openai-gpt-4o")
    assert scores["metric"] == "viescore" and scores["settings"]["metric"] == "viescore"
    assert scores["num_images"] == 3 and scores["num_failed"] == 1 and scores["num_reasks"] == 2
    results = Run.open(run.path).results("viescore-openai-gpt-4o")
    assert [r.score for r in results[:2]] == pytest.approx([np.sqrt(8 * 7) / 10] * 2)  # O = sqrt(min SC x min PQ)
    assert results[0].config == "humanities" and results[0].prompt == prompts[0]
    assert results[1].reasks == 1 and results[1].replies[0] == "I would give it an 8 out of 10."
    assert results[2].score is None and "SC" in results[2].failure and "Score: eight." in results[2].replies
    assert scores["aggregate"]["viescore"] == pytest.approx(np.sqrt(56) * 10)


def test_the_metric_is_checked_before_anything_is_made(tmp_path, capsys):
    run = run_with_images(tmp_path / "run")
    before = sorted(p.name for p in run.path.iterdir())

    def error(*argv: str) -> str:
        assert cli.main(["evaluate", "--run", str(run.path), *argv, "--no-progress"]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
        assert len(lines) == 1, lines
        return lines[0]

    assert "unknown metric 'dgs'" in error("--metric", "dgs", "--judge", "openai:m@http://127.0.0.1:9/v1")
    assert "r2i_score is R2I-Bench's metric" in error("--metric", "r2i_score")
    assert "unknown dsg option(s) ['dependancy']" in error("--metric", "dsg", "--judge", "openai:m@http://127.0.0.1:9/v1",
                                                         "--options", '{"dependancy": "paper"}')
    assert "unknown preset 'authors' for viescore" in error("--metric", "viescore", "--preset", "authors")
    assert "CLIP model folder" in error("--metric", "clip_score", "--judge", str(tmp_path / "no-clip"))
    assert sorted(p.name for p in run.path.iterdir()) == before  # no evaluation folder, no journal


# -- VQAScore and CLIPScore, a user's module, the report and the export ---------------------------------------

MODULE = '''
import datasets
import evaluate
import numpy as np
from PIL import Image


class {cls}(evaluate.Metric):
    """The mean brightness of each image (a user's own metric)."""

    def _info(self):
        return evaluate.MetricInfo(description="brightness", citation="", inputs_description="images and prompts",
                                   features=datasets.Features({{"predictions": datasets.Value("string"),
                                                                "references": datasets.Value("string")}}))

    def _compute(self, predictions, references, scale=1.0):
        scores = [float(np.asarray(Image.open(p).convert("L")).mean() / 255 * scale) for p in predictions]
        return {returned}
'''


def user_module(folder: Path, name: str, returned: str) -> Path:
    folder = folder / name
    folder.mkdir(parents=True)
    cls = "".join(part.title() for part in name.split("_"))
    (folder / f"{name}.py").write_text(MODULE.format(cls=cls, returned=returned))
    return folder


def test_a_users_module_scores_a_run_and_one_without_per_image_scores_is_refused(tmp_path, capsys):
    run = run_with_images(tmp_path / "run")
    good = user_module(tmp_path, "brightness", '{"scores": scores, "brightness": sum(scores) / len(scores)}')
    assert cli.main(["evaluate", "--run", str(run.path), "--metric", str(good), "--options", '{"scale": 2.0}',
                     "--no-progress"]) == 0
    scores = Run.open(run.path).scores("brightness")
    assert scores["metric"] == str(good.resolve()) and scores["judge"]["backend"] == "evaluate"
    assert [r.score for r in Run.open(run.path).results("brightness")] == pytest.approx(
        [2 * v / 255 for v in BRIGHTNESS[:3]], abs=1e-6)

    bad = user_module(tmp_path, "summary_only", '{"accuracy": sum(scores) / len(scores)}')
    assert cli.main(["evaluate", "--run", str(run.path), "--metric", str(bad), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "the metric module" in err and "returned no per-image scores (its keys: ['accuracy'])" in err
    assert "'scores': one number per image" in err  # what it must return
    assert not (run.path / "evaluations" / "summary_only" / "results.jsonl").exists()


def test_vqascore_and_clip_score_as_evaluations_of_a_run(tmp_path, tiny_models):
    run = run_with_images(tmp_path / "run")
    vqa = run.evaluate(ScriptedJudge(probabilities=brightness), metric="vqascore", cache=False, progress=False)
    assert vqa["metric"] == "vqascore" and vqa["evaluation"] == "vqascore-scripted-scripted"
    assert vqa["aggregate"]["vqascore"] == pytest.approx(np.mean(BRIGHTNESS[:3]) / 255)
    clip = run.evaluate(str(tiny_models["clip"]), metric="clip_score", options={"definition": "torchmetrics"},
                        progress=False)
    assert clip["evaluation"] == "clip_score-clip" and clip["judge"]["backend"] == "clip"
    assert clip["judge"]["model_sha256"]  # a local CLIP folder recorded by its files' hash
    assert clip["aggregate"]["definition"] == "torchmetrics" and clip["num_failed"] == 0
    assert sorted(Run.open(run.path).evaluations()) == ["clip_score-clip", "vqascore-scripted-scripted"]


def test_report_and_export_show_other_metrics_beside_the_benchmarks_own(tmp_path, browser, capsys):
    from t2ireason.exports import export_results
    from t2ireason.report.writer import write_report

    run = run_with_images(tmp_path / "run")
    run.evaluate(ScriptedJudge(checklist_reply), name="own", options={"structured_output": True}, cache=False,
                 progress=False)
    run.evaluate(ScriptedJudge(probabilities=brightness), metric="vqascore", cache=False, progress=False)
    vie = ScriptedJudge(lambda r: PQ_REPLY if "naturalness" in r.messages[-1].text else SC_REPLY)
    run.evaluate(vie, metric="viescore", cache=False, progress=False)

    assert cli.main(["report", str(run.path)]) == 0  # as found: KeyError 'dimensions'
    report = write_report([run], tmp_path / "report")
    md = report["markdown"]
    own, vqa, vie_at = (md.index(h) for h in ("## WorldGenBench\n", "## WorldGenBench prompts · VQAScore",
                                              "## WorldGenBench prompts · VIEScore"))
    assert own < vie_at and own < vqa  # the benchmark's own first, each other metric in a section of its own
    paper = md[own:min(vqa, vie_at)]
    assert "vqascore" not in paper.lower() and "VIEScore" not in paper  # never among the paper's rows
    assert "| run | 74.8 [74.8, 74.8] |" in md[vie_at:]  # VIEScore 0-100
    csv = (tmp_path / "report" / "tables.csv").read_text()
    assert "VQAScore: P(Yes), 0-1,run,VQAScore," in csv.replace('"', "") and "VIEScore (0-100),run,VIEScore," in csv
    assert "VIEScore" in (tmp_path / "report" / "tables.tex").read_text()
    page = browser.new_page()
    try:
        page.goto((tmp_path / "report" / "report.html").as_uri())
        headings = page.locator("h2").all_inner_texts()
        assert any("WorldGenBench prompts · VIEScore" in h for h in headings)
        assert any("WorldGenBench prompts · VQAScore" in h for h in headings)
        assert page.locator("text=The image shows what the prompt asks.").count() >= 1  # VIEScore's reasoning shown
    finally:
        page.close()

    folder = export_results([run], tmp_path / "export", license="cc-by-4.0")
    configs = sorted(p.name for p in (folder / "data").iterdir())
    assert configs == ["worldgenbench", "worldgenbench-viescore", "worldgenbench-vqascore"]
    import datasets

    rows = datasets.load_dataset(str(folder), "worldgenbench-viescore", split="test")
    assert set(rows["metric"]) == {"viescore"} and len(rows) == 3
    card = (folder / "README.md").read_text()
    assert "| `worldgenbench-vqascore` | WorldGenBench | `vqascore` | 3 |" in card


# the DSG of the authors' notebook (t2i_eval_example.ipynb), in their output format
DSG_REPLIES = {"Task: given input prompts, describe each scene": "1 | entity - whole (dog)\n2 | entity - whole (hat)\n"
               "3 | attribute - color (hat, red)",
               "Task: given input prompts and tuples, describe the parent": "1 | 0\n2 | 0\n3 | 2",
               "Task: given input prompts and skill-specific tuples, re-write": "1 | Is there a dog?\n2 | Is there a hat?\n"
               "3 | Is the hat red?"}


def dsg_judge(written: list[str]) -> ScriptedJudge:
    """Writes each prompt's DSG (counted in ``written``) and answers: no hat in the second image."""
    return ScriptedJudge(dsg_reply(written))


def dsg_reply(written: list[str]):
    def reply(request):
        text = request.messages[0].text
        task = next((t for t in DSG_REPLIES if text.startswith(t)), None)
        if task is not None:
            written.append(task)
            return DSG_REPLIES[task]
        dark = np.asarray(request.messages[0].images[0].image).mean() < 100
        question = text.rsplit("Question: ", 1)[1]
        return "no" if dark and question.startswith("Is there a hat?") else "Yes."  # normalised as the authors do

    return reply


def test_dsg_as_an_evaluation_writes_each_prompts_questions_once_and_keeps_them(tmp_path):
    run = run_with_images(tmp_path / "run", limit=2)
    written: list[str] = []
    cache = tmp_path / "cache" / "judge_cache.sqlite"
    first = run.evaluate(dsg_judge(written), metric="dsg", cache=cache, progress=False)
    assert first["metric"] == "dsg" and first["judge"]["questions_by"]["backend"] == "scripted"
    # the dark first image has no hat, so its colour question fails with its parent; the bright one holds all three
    assert [r.score for r in run.results(first["evaluation"])] == pytest.approx([1 / 3, 1.0])
    assert len(written) == 2 * 3 and (tmp_path / "cache" / "criteria.sqlite").is_file()
    again = run.evaluate(dsg_judge(written), metric="dsg", name="dsg-again", cache=str(cache), progress=False,
                         options={"dependency": "none"})
    assert len(written) == 6  # kept: no prompt's questions written twice
    assert [r.score for r in run.results(again["evaluation"])] == pytest.approx([2 / 3, 1.0])


def test_dsg_questions_that_failed_are_recorded_once_and_asked_again_with_retry_failed(tmp_path, monkeypatch):
    """A prompt whose DSG could not be written fails its images once: a second evaluation reads the failure (no
    request); ``retry_failed`` (``evaluate --retry-failed``) scores those images again and asks for their
    questions again (behind no response cache: behind one, a deterministic LLM gives its kept replies again)."""
    from t2ireason.baselines.questions import Questions

    run = run_with_images(tmp_path / "run", limit=2)
    written: list[str] = []
    broken = {"on": True}
    good = dsg_reply(written)

    def reply(request):
        if broken["on"] and request.messages[0].text.startswith("Task: given input prompts, describe each scene"):
            written.append("broken")
            return "no tuples today"
        return good(request)

    def sampled():
        return ScriptedJudge(reply, sampling=Sampling(temperature=1.0))

    # no response cache (it would give a deterministic LLM's kept replies again); the questions' store in tmp_path
    monkeypatch.setenv("T2IREASON_CACHE", str(tmp_path / "cache"))
    cache = False
    first = run.evaluate(sampled(), metric="dsg", cache=cache, progress=False)
    assert first["num_failed"] == 2 and written == ["broken"] * 6  # 2 prompts, each asked and re-asked twice
    again = run.evaluate(sampled(), metric="dsg", name="dsg-again", cache=cache, progress=False)
    assert again["num_failed"] == 2 and len(written) == 6  # the failures read back: nothing asked
    failed = run.results("dsg-again")
    assert all("not asked again" in r.failure and r.replies == ["no tuples today"] * 3 for r in failed)

    asked_again = []
    rows = Questions.rows
    monkeypatch.setattr(Questions, "rows", lambda self, rows_, judge, retry_failed=False: (
        asked_again.append(retry_failed), rows(self, rows_, judge, retry_failed))[1])
    broken["on"] = False
    retried = run.evaluate(sampled(), metric="dsg", name="dsg-again", cache=cache, progress=False,
                           retry_failed=True)
    assert asked_again == [True] and retried["retried"] == 2 and retried["num_failed"] == 0


@pytest.mark.slow
def test_a_tiny_real_judge_scores_a_run_with_viescore_and_dsg(tmp_path, tiny_models, capsys):
    """The real local path (transformers, constrained decoding for VIEScore's JSON): every image scored or failed
    with its reason, never a silent zero; a random model's DSG tuples do not parse: each image's failure says so."""
    from t2ireason.testing import tiny_judge_kwargs

    run = run_with_images(tmp_path / "run", limit=2)
    judge = ["--judge", f"hf:{tiny_models['vlm']}", "--judge-kwargs",
             json.dumps({"device": "cpu", **tiny_judge_kwargs(tiny_models["vlm"])})]
    cache = ["--cache", str(tmp_path / "cache.sqlite")]
    assert cli.main(["evaluate", "--run", str(run.path), "--metric", "viescore", *judge, *cache, "--options",
                     '{"structured_output": true}', "--no-progress"]) == 0
    scores = Run.open(run.path).scores("viescore-hf-vlm")
    assert scores["num_failed"] == 0 and 0 <= scores["aggregate"]["viescore"] <= 100
    code = cli.main(["evaluate", "--run", str(run.path), "--metric", "dsg", *judge, *cache, "--options",
                     '{"max_reasks": 0}', "--no-progress"])
    dsg = Run.open(run.path).scores("dsg-hf-vlm")
    assert dsg["metric"] == "dsg" and dsg["num_images"] == 2
    failed = [r for r in Run.open(run.path).results("dsg-hf-vlm") if r.score is None]
    assert all("DSG" in r.failure for r in failed) and code == (1 if len(failed) == 2 else 0)


def test_metric_scorers_take_the_runs_rows_as_prompts():
    bench = get_benchmark("t2i-reasonbench")
    row = {"dimension": "idiom", "id": 1, "prompt": "a picture of the idiom"}
    scorer = metric_scorer("VIEScore", bench)
    results = scorer.score([row], [Image.new("RGB", (8, 8))],
                           ScriptedJudge(lambda r: PQ_REPLY if "naturalness" in r.messages[-1].text else SC_REPLY))
    assert (results[0].id, results[0].prompt, results[0].config) == ("idiom-0001", "a picture of the idiom", "idiom")
    assert metric_scorer("t2i_reasonscore", bench) is None and metric_scorer(None, bench) is None


def test_the_help_names_every_other_metrics_presets():
    from t2ireason.commands.evaluate import OTHER_PRESETS
    from t2ireason.evaluation_metrics import BUILT_IN

    said = {}
    for part in OTHER_PRESETS.split("; "):
        names, presets = part.split(": ")
        for name in names.split(", "):
            said[name] = presets
    for name in BUILT_IN:
        scorer = metric_scorer(name)
        assert said[name] == ", ".join(p + (" (default)" if p == scorer.default_preset and len(scorer.presets) > 1
                                            else "") for p in scorer.presets), name
