"""Run folders and the command line over them: `t2ireason run` end to end with the tiny
generator and judge, resuming an interrupted evaluation, re-scoring with another judge,
reports side by side (tables, plots, HTML in a real browser), the Hub export, clear errors."""

from __future__ import annotations

import csv
import json
import math

import datasets
import pytest
from huggingface_hub import DatasetCard

from t2ireason import cli, testing
from t2ireason.benchmarks.r2i_bench import BENCHMARK as R2I
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult
from t2ireason.runs import Run, RunError, export_results, write_report

SAMPLE = str(R2I.sample_path())


def _judge_args(tiny_models, tmp_path):
    kwargs = {"device": "cpu", **testing.tiny_judge_kwargs(tiny_models["vlm"])}
    return ["--judge", f"hf:{tiny_models['vlm']}", "--judge-kwargs", json.dumps(kwargs),
            "--options", '{"structured_output": true}', "--cache", str(tmp_path / "cache.sqlite")]


@pytest.fixture(scope="module")
def cli_run(tiny_models, tmp_path_factory):
    """`t2ireason run` on the R2I-Bench sample release: build, generate, evaluate, report."""
    tmp = tmp_path_factory.mktemp("cli-run")
    out = tmp / "tiny-sd"
    argv = ["run", "--benchmark", "r2i-bench", "--source", SAMPLE, "--license", "apache-2.0", "--out", str(out),
            "--model", str(tiny_models["sd"]), "--steps", "2", "--height", "64", "--width", "64",
            "--batch-size", "4", "--no-progress", *_judge_args(tiny_models, tmp)]
    return out, argv


@pytest.mark.slow
def test_run_end_to_end(cli_run, capsys):
    out, argv = cli_run
    assert cli.main(argv) == 0
    printed = capsys.readouterr().out
    run = Run.open(out)
    rows = run.rows()
    assert run.manifest["data"] == "./data" and run.manifest["built_from"].endswith("r2i-bench")
    assert run.manifest["generation"]["model"].endswith("sd") and run.manifest["t2ireason_version"]
    [name] = run.evaluations()
    entry = run.manifest["evaluations"][name]
    assert entry["finished"] and entry["judge"]["backend"] == "hf" and entry["judge"]["structured_output"]
    assert entry["settings"]["options"] == {"structured_output": True}
    assert entry["judge"]["sampling"]["seed"] == 0  # the judge's parameters are recorded

    # every prompt has its image in the official layout and one scored result, none twice
    assert len(list((out / "images").rglob("*.png"))) == len(rows) == 15
    lines = (run.evaluation_dir(name) / "results.jsonl").read_text().splitlines()
    assert len(lines) == len(rows) == len({json.loads(x)["key"] for x in lines})
    scores = run.scores(name)
    unscorable = scores["aggregate"]["num_unscorable"]
    assert unscorable == sum(1 for r in rows if not r["questions"]) > 0  # the sample's quirk, kept and flagged
    assert scores["num_failed"] == unscorable  # the tiny judge answered every scorable image under the schema

    # the printed table is the paper's Table 3, computed from the per-image results on disk
    results = run.results(name)
    scored = [r.score for r in results if r.score is not None]
    overall = 100 * sum(scored) / len(scored)
    assert "R2I-Bench Table 3: R2I-Score" in printed and f"| tiny-sd | {overall:.1f} [" in printed
    with open(out / "report" / "tables.csv") as f:
        table = list(csv.DictReader(f))
    cell = next(r for r in table if r["table"] == "R2I-Bench Table 3: R2I-Score" and r["column"] == "Overall")
    assert math.isclose(float(cell["value"]), overall) and float(cell["ci_low"]) <= overall <= float(cell["ci_high"])
    for f in ("report/report.html", "report/tables.md", "report/plots/r2i-bench_bars.png",
              "report/plots/r2i-bench_radar.png", "report/plots/r2i-bench_scores.png"):
        assert (out / f).is_file(), f
    assert f"HTML report: {out / 'report' / 'report.html'}" in printed

    # run again: nothing is regenerated or re-scored
    assert cli.main(argv) == 0
    again = capsys.readouterr().out
    assert "0 generated, 15 already done" in again
    assert (run.evaluation_dir(name) / "results.jsonl").read_text().splitlines() == lines


def _r2i_reply(request):
    """All questions scored 1, except question 1 scored 0 when the prompt mentions a fruit."""
    keys = list(request.json_schema["properties"])
    text = request.messages[-1].text
    return json.dumps({k: (0 if k == keys[0] and "fruit" in text else 1) for k in keys})


def _sample_run(tmp_path, tiny_models, name="model-a"):
    run = Run.create(tmp_path / name, "r2i-bench", limit=6, name=name)
    from t2ireason.generation import GenerationConfig

    run.generate(GenerationConfig(model=str(tiny_models["sd"]), steps=2, height=64, width=64, batch_size=6),
                 progress=False)
    return run


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_interrupted_evaluation_resumes_without_rescoring(tmp_path, tiny_models):
    run = _sample_run(tmp_path, tiny_models)
    reference = _sample_run(tmp_path, tiny_models, "reference")
    options = {"structured_output": True}
    ref = reference.evaluate(ScriptedJudge(_r2i_reply), options=options, name="s", cache=False, progress=False)

    calls = []

    def dies_on_the_third(request):
        calls.append(request)
        if len(calls) == 3:
            raise Interrupt  # the process dies mid-evaluation
        return _r2i_reply(request)

    with pytest.raises(Interrupt):
        run.evaluate(ScriptedJudge(dies_on_the_third, batch_size=1), options=options, name="s", cache=False,
                     chunk_size=2, progress=False)
    saved = (run.evaluation_dir("s") / "results.jsonl").read_text().splitlines()
    assert len(saved) == 2  # the first chunk was on disk before the crash
    with open(run.evaluation_dir("s") / "results.jsonl", "a") as f:
        f.write('{"key": "torn')  # and a torn line from the crash is cut off, not read

    second = ScriptedJudge(_r2i_reply)
    scores = run.evaluate(second, options=options, name="s", cache=False, chunk_size=2, progress=False)
    asked = {r.metadata["id"] for r in second.requests}
    first_ids = {json.loads(x)["id"] for x in saved}
    remaining = {R2I.row_id(row) for _, row, _ in run.image_items() if row["questions"]} - first_ids
    assert asked == remaining  # only what was not finished is asked again
    assert scores["aggregate"]["r2i_score"] == pytest.approx(ref["aggregate"]["r2i_score"])
    assert [r.score for r in run.results("s")] == [r.score for r in reference.results("s")]

    # an image deleted after generation is named as missing, not scored as a failure
    gone = run.images_dir / run.image_items()[0][0]
    kept = gone.read_bytes()
    gone.unlink()
    with pytest.raises(RunError, match=r"1 of 6 prompts have no image"):
        run.evaluate(ScriptedJudge(_r2i_reply), options=options, name="s", cache=False, progress=False)
    gone.write_bytes(kept)

    # the same name with other settings is refused; another judge is another evaluation beside it
    with pytest.raises(RunError, match="was made with other settings"):
        run.evaluate(ScriptedJudge(_r2i_reply), options={}, name="s", cache=False, progress=False)
    run.evaluate(ScriptedJudge(lambda r: json.dumps({k: 0.5 for k in r.json_schema["properties"]}), model="half"),
                 options=options, cache=False, progress=False)
    assert run.evaluations() == ["s", "scripted-half"]
    assert run.scores("scripted-half")["aggregate"]["r2i_score"] == pytest.approx(50.0)


@pytest.mark.slow
def test_reports_side_by_side_and_in_a_browser(tmp_path, tiny_models, browser):
    a, b = _sample_run(tmp_path, tiny_models, "model-a"), _sample_run(tmp_path, tiny_models, "model-b")
    evil = "<script>window.__pwned = 1</script>"
    a.evaluate(ScriptedJudge(lambda r: _r2i_reply(r) + " " + evil), options={"structured_output": True},
               cache=False, progress=False)
    b.evaluate(ScriptedJudge(lambda r: json.dumps({k: 0 for k in r.json_schema["properties"]})),
               options={"structured_output": True}, cache=False, progress=False)
    report = write_report([a, b], tmp_path / "compare")
    table = report["markdown"]
    assert "| model-a |" in table and "| model-b | 0.0 [0.0, 0.0] |" in table  # one row per model
    assert [p.name for p in report["html"]] == ["model-a.html", "model-b.html"]

    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report["html"][0].as_uri())
    page.wait_for_load_state("load")
    assert page.evaluate("window.__pwned") is None and evil in page.locator("#gallery").text_content()  # raw replies
    assert page.locator("#gallery .card").count() == len(a.image_items())
    # both models in the summary table, images load from relative paths
    assert page.locator("#summary tbody tr").count() == 2
    assert page.evaluate("Array.from(document.querySelectorAll('#gallery img')).every(i => i.naturalWidth === 64)")
    page.select_option("#filter-config", "commonsense")
    assert page.locator("#gallery .card:not(.hidden)").count() == sum(
        1 for _, row, _ in a.image_items() if row["category"] == "commonsense")
    assert errors == []
    page.close()


@pytest.mark.slow
def test_export_as_a_hub_dataset(tmp_path, tiny_models, capsys):
    run = _sample_run(tmp_path, tiny_models)
    run.evaluate(ScriptedJudge(_r2i_reply), options={"structured_output": True}, name="s", cache=False,
                 progress=False)
    folder = export_results([run], tmp_path / "export", license="cc-by-4.0")
    card = DatasetCard.load(folder / "README.md")
    assert card.data.license == "cc-by-4.0" and card.data.configs[0]["config_name"] == "r2i-bench"
    rows = datasets.load_dataset(str(folder), "r2i-bench", split="test")
    results = run.results("s")
    assert rows.num_rows == len(results) and rows[0]["image"].size == (64, 64)
    assert rows["score"] == [r.score for r in results]
    first = rows[0]["questions"][0]
    assert first["question"] == results[0].questions[0].question and first["score"] == results[0].questions[0].score

    # the command line builds the same folder and, with --dry-run, lists what it would push (nothing sent)
    code = cli.main(["export", str(run.path), "--out", str(tmp_path / "cli-export"), "--license", "cc-by-4.0",
                     "--repo", "me/results", "--dry-run"])
    assert code == 0
    printed = capsys.readouterr().out
    assert "would upload" in printed and "me/results" in printed


def test_clear_errors(tmp_path, capsys):
    def fails(argv, message):
        assert cli.main(argv) == 2
        assert message in capsys.readouterr().err

    fails(["evaluate", "--run", str(tmp_path / "nothing"), "--judge", "hf:x"], "is not a run folder (no run.json)")
    fails(["evaluate", "--run", str(tmp_path / "r"), "--limit", "3", "--judge", "hf:x"],
          "--data, --configs, --limit and --data-revision describe a new run: give --benchmark too")
    fails(["report", str(tmp_path / "a"), str(tmp_path / "b")], "say where with --out")
    with pytest.raises(SystemExit):
        cli.main(["run", "--benchmark", "mt2ie", "--out", str(tmp_path), "--model", "m"])
    assert "invalid choice: 'mt2ie'" in capsys.readouterr().err

    run = Run.create(tmp_path / "r", "r2i-bench", limit=2)
    with pytest.raises(RunError, match="holds a run of other rows .*limit: the run has 2, asked 3"):
        Run.create(tmp_path / "r", "r2i-bench", limit=3)
    assert Run.create(tmp_path / "r", "r2i-bench", limit=2).manifest == run.manifest  # same rows: reopened
    with pytest.raises(RunError, match=r"2 of 2 prompts have no image in .*generate them first"):
        run.image_items()
    with pytest.raises(RunError, match="no finished evaluation 'x'"):
        run.scores("x")
    with pytest.raises(RunError, match="has no judged metric to run"):
        Run.create(tmp_path / "m", "mt2ie")


def test_results_round_trip_through_the_run_files(tmp_path):
    r = ImageResult(id="1", prompt="p", score=math.nan, subscores={"a": math.inf})
    from t2ireason.files import jsonable

    assert jsonable(r)["score"] is None and jsonable(r)["subscores"] == {"a": None}


def test_mt2ie_rankings_in_the_report(tmp_path):
    from t2ireason.mt2ie import rank_models

    # two models, two seeds: "good" wins both seeds, "bad" loses both; one failed row is left out
    rows = [{"model": m, "mode": "iterative", "seed": s, "iteration": i, "score": v, "difficulty": 3.0}
            for m, base in (("good", 0.8), ("bad", 0.4)) for s in (0, 1) for i, v in enumerate((base, base + 0.1))]
    rows.append({"model": "bad", "mode": "iterative", "seed": 1, "iteration": 2, "score": None, "difficulty": None})
    table = rank_models(rows, reference=["good", "bad"])
    folder = tmp_path / "mt2ie-out"
    (folder / "runs").mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"table": table}))
    report = write_report([folder], tmp_path / "report")
    md = report["markdown"]
    assert "MT2IE ranking (iterative, score)" in md
    assert "| good | 0.850 | 0.000 | 1.000 | 0.000 | 0 |" in md and "| bad | 0.450 | 0.000 | 2.000 | 0.000 | 1 |" in md
    assert "Kendall's tau vs the reference ranking: 1.000" in md
    assert (tmp_path / "report" / "plots" / "mt2ie_mt2ie-out.png").is_file()


@pytest.mark.slow
def test_demo_runs_the_loop_offline(tmp_path, tiny_models, capsys):
    from t2ireason import demo

    # the demo builds its own tiny models: point it at the session's to save the build
    (tmp_path / "models").symlink_to(tiny_models["vlm"].parent, target_is_directory=True)
    assert demo.main(["--out", str(tmp_path), "--benchmarks", "worldgenbench", "--limit", "4"]) == 0
    printed = capsys.readouterr().out
    assert "P(Yes) = " in printed and "parsed: {'score':" in printed
    assert "WorldGenBench Table 2: knowledge checklist score, humanities" in printed
    report = tmp_path / "runs" / "worldgenbench" / "report" / "report.html"
    assert report.is_file() and str(report) in printed
    scores = Run.open(tmp_path / "runs" / "worldgenbench").scores("tiny-judge")
    assert scores["num_images"] == 4 and scores["num_failed"] == 0
