"""Run folders and the command line over them: `t2ireason run` end to end with the tiny
generator and judge, resuming an interrupted evaluation, re-scoring with another judge,
reports side by side (tables, plots, HTML in a real browser), the Hub export, clear errors."""

from __future__ import annotations

import csv
import json
import math

import datasets
import pytest
from _browser import wait_until
from huggingface_hub import DatasetCard

from t2ireason import cli, testing
from t2ireason.benchmarks.r2i_bench import BENCHMARK as R2I
from t2ireason.exports import export_results
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.report.writer import write_report
from t2ireason.results import ImageResult
from t2ireason.runs import Run, RunError

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
    for f in ("report/report.html", "report/tables.md", "report/tables.tex", "report/plots/r2i-bench_table3_bars.png",
              "report/plots/r2i-bench_table3_bars.pdf", "report/plots/r2i-bench_table3_radar.pdf",
              "report/plots/r2i-bench_scores.png"):
        assert (out / f).is_file(), f
    assert "\\toprule" in (out / "report" / "tables.tex").read_text()
    assert f"HTML report: {out / 'report' / 'report.html'}" in printed
    # issue 40: every row says how it was measured; the tiny judge on the sample is not the paper's protocol
    assert all(r["judge"] == "hf:vlm" and r["preset"] == "paper" and r["comparable"].startswith("no: ")
               and r["coverage"] for r in table)
    assert {(r["images"], r["coverage"]) for r in table if r["table"] == "R2I-Bench Table 3: R2I-Score"} == {
        ("12 of 2,968", "12 of 15 images scored (3 not scorable (no questions))")}
    commonsense = {r["images"] for r in table if r["table"] == "R2I-Bench: Commonsense by subcategory"}
    assert commonsense == {"2 of 695"}  # the category's images of the release's (Table 18's scope)
    reasons = cell["comparable"]
    assert reasons.startswith("no: judge hf:vlm (the paper's: GPT-4o, temperature 0.1)"), reasons
    for said in ("scoring options on top of the preset: structured_output", "temperature 1.0 (the paper's: 0.1)",
                 "questions: the sample shipped with t2i-reason, not the release's",
                 "12 of 2,968 images scored"):
        assert said in reasons, said
    # beside the paper's rows it is not ranked among them: below them, under its own heading, never bold
    published = write_report([run], out / "published", published=True)
    table3 = published["markdown"].split("### R2I-Bench Table 3: R2I-Score")[1].split("###")[0]
    assert table3.index("| GPT-Image-1 [paper] |") < table3.index("| *Runs measured otherwise: not ranked* |") \
        < table3.index("| tiny-sd |")
    assert "measured as the paper's rows: no (judge hf:vlm" in table3
    assert "$^\\dagger$" in published["tables_tex"].read_text()

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
    assert [p.name for p in report["html"]] == ["report.html"]  # one page compares them

    page = browser.new_page()
    errors = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report["html"][0].as_uri())
    page.wait_for_load_state("load")
    assert page.evaluate("window.__pwned") is None and evil in page.locator("#gallery").text_content()  # raw replies
    # one card per prompt, each holding both models' images with their scores
    assert page.locator("#gallery .card").count() == len(a.image_items())
    assert page.locator("#gallery .card .entry").count() == 2 * len(a.image_items())
    assert page.locator("#gallery .card").first.locator(".model").all_inner_texts() == ["model-a", "model-b"]
    # both models in every paper table, each table's figures beside it, images from relative paths
    assert page.locator("#table-1 tbody tr").count() == 2
    assert page.locator("table.paper").count() == len(report["markdown"].split("### ")) - 1
    assert page.evaluate("Array.from(document.querySelectorAll('.figures img')).every(i => i.naturalWidth > 500)")
    assert page.locator(".figures img").first.get_attribute("src").startswith("plots/")
    # the gallery's images load lazily, below the figures: load them all, then check each
    page.evaluate("document.querySelectorAll('#gallery img').forEach(i => i.loading = 'eager')")
    wait_until(page, "Array.from(document.querySelectorAll('#gallery img')).every(i => i.complete)")
    assert page.evaluate("Array.from(document.querySelectorAll('#gallery img')).every(i => i.naturalWidth === 64)")
    assert page.locator("table.runs tbody tr").count() == 2 and str(tmp_path) not in page.content()
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
    assert (tmp_path / "report" / "plots" / "mt2ie_mt2ie-out.pdf").is_file()


@pytest.mark.slow
def test_demo_runs_the_loop_offline(tmp_path, tiny_models, capsys):
    from t2ireason import demo

    # the demo builds its own tiny models: point it at the session's to save the build
    (tmp_path / "models").symlink_to(tiny_models["vlm"].parent, target_is_directory=True)
    assert demo.main(["--out", str(tmp_path), "--benchmarks", "worldgenbench", "--limit", "4"]) == 0
    printed = capsys.readouterr().out
    assert "P(Yes) = " in printed and "parsed: {'score':" in printed
    assert "VIEScore (the paper's t2i prompts" in printed and "  SC " in printed and "reasoning: " in printed
    assert "WorldGenBench Table 2: knowledge checklist score, humanities" in printed
    report = tmp_path / "runs" / "worldgenbench" / "report" / "report.html"
    assert report.is_file() and str(report) in printed
    scores = Run.open(tmp_path / "runs" / "worldgenbench").scores("tiny-judge")
    assert scores["num_images"] == 4 and scores["num_failed"] == 0
    vie = Run.open(tmp_path / "runs" / "worldgenbench").scores("viescore-tiny-judge")  # another metric, beside it
    assert vie["metric"] == "viescore" and vie["num_images"] == 4
    assert "### VIEScore (0-100)" in printed and "WorldGenBench prompts · VIEScore" in report.read_text()


# -- hardening: paths, one writer, failures retried, nothing thrown away ------------------------------------

def _images_for(run: Run) -> Run:
    """A small PNG where the official layout puts each of the run's images (no generation needed)."""
    from PIL import Image

    for i, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (37 * i % 256, 80, 200)).save(path)
    return run


def _hostile_dataset(folder, bench_name="worldgenbench", bad_id="../../outside/x"):
    """A dataset folder in the Hub layout whose first row's id climbs out of any folder."""
    from t2ireason.benchmarks import get_benchmark
    from t2ireason.data import load_rows

    bench = get_benchmark(bench_name)
    yaml = ["---", "configs:"]
    for config in bench.configs:
        rows = load_rows(bench, configs=[config])
        if config == bench.configs[0]:
            rows[0]["id"] = bad_id
        datasets.Dataset.from_list(rows, features=bench.features).to_parquet(str(folder / config / "test.parquet"))
        yaml += [f"- config_name: {config}", "  data_files:", "  - split: test", f"    path: {config}/*.parquet"]
    (folder / "README.md").write_text("\n".join([*yaml, "---", ""]))
    return folder


def test_ids_and_names_that_leave_their_folder_are_refused(tmp_path, capsys):
    data = _hostile_dataset(tmp_path / "data")
    out = tmp_path / "a" / "b" / "images"
    (tmp_path / "m").mkdir()  # a pipeline folder as far as the early checks see; refused before it loads
    (tmp_path / "m" / "model_index.json").write_text("{}")
    code = cli.main(["generate", "--benchmark", "worldgenbench", "--data", str(data), "--model", str(tmp_path / "m"),
                     "--out", str(out), "--limit", "2", "--no-progress"])
    assert code == 2 and "'humanities/../../outside/x.png' leaves the folder" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "a" / "outside").exists()  # nothing written, inside or out

    run = Run.create(tmp_path / "run", "worldgenbench", data=data, limit=2)
    from t2ireason.files import UnsafePath
    from t2ireason.generation import GenerationConfig

    with pytest.raises(UnsafePath, match="leaves the folder"):
        run.generate(GenerationConfig(model="m"), progress=False)
    assert Run.open(run.path).manifest["generation"] is None  # refused before anything was recorded
    with pytest.raises(UnsafePath, match="leaves the folder"):
        run.image_items()  # an image made elsewhere is not looked for outside the image folder either
    with pytest.raises(UnsafePath, match="leaves the folder"):
        run.evaluation_dir("../../x")
    for name in (".", "", ".hidden"):
        with pytest.raises(RunError, match="an evaluation name is a folder name"):
            run.evaluation_dir(name)


def _r2i_run(tmp_path, name="r", limit=6):
    return _images_for(Run.create(tmp_path / name, "r2i-bench", limit=limit, name=name))


STRUCTURED = {"structured_output": True}


def test_a_finished_evaluation_resumes_without_data_judge_or_aggregate(tmp_path, monkeypatch):
    run = _r2i_run(tmp_path)
    aggregates = []
    real = type(R2I).aggregate
    monkeypatch.setattr(type(R2I), "aggregate", lambda self, *a, **k: aggregates.append(1) or real(self, *a, **k))
    first = run.evaluate(ScriptedJudge(_r2i_reply), options=STRUCTURED, name="s", cache=False, chunk_size=2,
                         progress=False)
    assert len(aggregates) == 1  # three chunks, one aggregate: at the end

    import t2ireason.data
    import t2ireason.judges

    def must_not(*a, **k):
        raise AssertionError("a finished evaluation reads no dataset and loads no judge")

    monkeypatch.setattr(t2ireason.data, "load_rows", must_not)
    monkeypatch.setattr(t2ireason.judges, "load_judge", must_not)
    again = Run.open(run.path).evaluate(ScriptedJudge(_r2i_reply), options=STRUCTURED, name="s", cache=False,
                                        progress=False)
    assert len(aggregates) == 1 and again["aggregate"] == first["aggregate"] and again["retried"] == 0


def test_retry_failed_scores_again_only_what_the_outage_failed(tmp_path, capsys, monkeypatch):
    run = _r2i_run(tmp_path)
    spec = "openai:judge@http://127.0.0.1:9/v1"
    import t2ireason.judges

    judges = []

    def load(spec, *, cache=None, **kwargs):
        judges.append(ScriptedJudge(_r2i_reply, model="judge"))
        return judges[-1]

    monkeypatch.setattr(t2ireason.judges, "load_judge", load)
    argv = ["evaluate", "--run", str(run.path), "--judge", spec, "--options", json.dumps(STRUCTURED), "--no-cache",
            "--no-progress", "--name", "s"]
    assert cli.main(argv) == 0
    # an outage during that evaluation: two scorable images failed for a transient cause (as a benchmark
    # records it: no score, ImageResult.retryable), one image failed for its reply (not retryable)
    file = run.evaluation_dir("s") / "results.jsonl"
    lines = [json.loads(x) for x in file.read_text().splitlines()]
    scorable = [x for x in lines if x["questions"]]
    for x, retryable in zip(scorable[:3], (True, True, False)):
        x.update(score=None, retryable=retryable, failure="judge: connection refused" if retryable else "bad reply")
    file.write_text("".join(json.dumps(x) + "\n" for x in lines))
    (run.evaluation_dir("s") / "scores.json").unlink()  # as the interrupted evaluation left it

    assert cli.main(argv) == 1  # images failed because the judge was unreachable: not a success
    said = capsys.readouterr().out
    assert "2 failed because the judge was unreachable: run again with --retry-failed" in said
    assert cli.main([*argv, "--allow-failed"]) == 0
    capsys.readouterr()
    assert cli.main([*argv, "--retry-failed"]) == 0
    said = capsys.readouterr().out
    assert "2 failed images scored again" in said and "unreachable" not in said
    asked = [r.metadata["id"] for r in judges[-1].requests if "id" in r.metadata]  # (not the pre-flight's probe)
    assert sorted(asked) == sorted(x["id"] for x in scorable[:2])  # the transient failures only, each once
    kept = [json.loads(x) for x in file.read_text().splitlines()]
    assert len(kept) == len(lines) and len({x["key"] for x in kept}) == len(lines)  # one line per image
    scores = Run.open(run.path).scores("s")
    assert scores["num_retryable"] == 0 and scores["num_failed"] == 1 + sum(not x["questions"] for x in lines)


class _Outage(ScriptedJudge):
    """Answers the first ``n`` requests, then the endpoint is gone."""

    def __init__(self, n):
        super().__init__(_r2i_reply, batch_size=1, model="judge")
        self.n = n

    def _chat_batch(self, requests):
        from t2ireason.judges import JudgeUnavailable

        if len(self.requests) >= self.n:
            raise JudgeUnavailable("the judge at http://127.0.0.1:9/v1 is unreachable: connection refused")
        return super()._chat_batch(requests)


def test_a_judge_outage_ends_the_evaluation_with_its_cause_and_keeps_finished_chunks(tmp_path, capsys, monkeypatch):
    run = _r2i_run(tmp_path)
    import t2ireason.judges

    monkeypatch.setattr(t2ireason.judges, "load_judge", lambda spec, cache=None, **kw: _Outage(3))  # 1: the probe
    argv = ["evaluate", "--run", str(run.path), "--judge", "openai:judge@http://127.0.0.1:9/v1", "--options",
            json.dumps(STRUCTURED), "--no-cache", "--no-progress", "--name", "s", "--chunk-size", "2"]
    assert cli.main(argv) == 2
    err = [x for x in capsys.readouterr().err.splitlines() if x.strip()]
    assert len(err) == 1 and err[0].startswith("error: the judge at http://127.0.0.1:9/v1 is unreachable")
    kept = (run.evaluation_dir("s") / "results.jsonl").read_text().splitlines()
    assert len(kept) >= 2 and "run the same command again" in err[0]
    assert not (run.evaluation_dir("s") / "scores.json").exists()

    back = ScriptedJudge(_r2i_reply, model="judge")
    monkeypatch.setattr(t2ireason.judges, "load_judge", lambda spec, cache=None, **kw: back)
    assert cli.main(argv) == 0
    done = {json.loads(x)["id"] for x in kept}
    asked = {r.metadata["id"] for r in back.requests if "id" in r.metadata}  # (not the probe)
    assert asked and asked.isdisjoint(done)  # what was kept is not asked again
    assert Run.open(run.path).scores("s")["num_images"] == 6


EVALUATE_SCRIPT = """
import json, sys, time
from pathlib import Path
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run, RunError

run_dir, name, gate = sys.argv[1], sys.argv[2], Path(sys.argv[3])

def reply(request):
    (gate.parent / f"{name}.started").touch()
    while not gate.exists():  # hold the evaluation open until the test lets it finish
        time.sleep(0.05)
    return json.dumps({k: 1 for k in request.json_schema["properties"]})

try:
    scores = Run.open(run_dir).evaluate(ScriptedJudge(reply, model="judge"), options={"structured_output": True},
                                        name=name, cache=False, progress=False, lock_timeout=float(sys.argv[4]))
except RunError as e:
    print(f"error: {e}", file=sys.stderr)
    sys.exit(2)
print(scores["num_images"])
"""


@pytest.mark.slow
def test_two_processes_on_one_run_never_judge_twice_and_both_are_recorded(tmp_path):
    import os
    import subprocess
    import sys
    import time
    from pathlib import Path

    run = _r2i_run(tmp_path, limit=4)
    script, gate = tmp_path / "evaluate.py", tmp_path / "gate"
    script.write_text(EVALUATE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}

    def start(name, timeout="30"):
        return subprocess.Popen([sys.executable, str(script), str(run.path), name, str(gate), timeout], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    first = start("a")
    deadline = time.monotonic() + 120
    while not (tmp_path / "a.started").exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "a.started").exists(), first.communicate()
    # a second process on the same evaluation waits, then stops clearly: nothing is judged twice
    second = start("a", timeout="0.5")
    out, err = second.communicate(timeout=120)
    assert second.returncode == 2 and "is being scored by another process" in err, err
    # another evaluation of the same run goes on beside it; both end up in run.json
    other = start("b")
    gate.touch()
    for proc in (first, other):
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    final = Run.open(run.path)
    assert set(final.manifest["evaluations"]) == {"a", "b"}
    assert all(final.manifest["evaluations"][n]["finished"] for n in ("a", "b"))
    for n in ("a", "b"):
        keys = [json.loads(x)["key"] for x in (final.evaluation_dir(n) / "results.jsonl").read_text().splitlines()]
        assert len(keys) == len(set(keys)) == 4
    report = write_report([final], tmp_path / "report")
    assert "r · a" in report["html"][0].read_text() and "r · b" in report["html"][0].read_text()  # both shown


@pytest.mark.slow
def test_export_of_runs_of_two_benchmarks_with_one_name(tmp_path):
    from t2ireason.files import model_fingerprint

    judge_folder = tmp_path / "judges" / "my-judge"
    judge_folder.mkdir(parents=True)
    (judge_folder / "config.json").write_text('{"layers": 2}')

    def reply(request):
        props = request.json_schema["properties"]
        return json.dumps({"answers": [1] * props["answers"]["minItems"]} if "answers" in props
                          else {k: 1 for k in props})

    runs = []
    for bench in ("r2i-bench", "worldgenbench"):  # both runs are called "sd" (their folders' name)
        run = _images_for(Run.create(tmp_path / bench / "sd", bench, limit=3))
        run.evaluate(ScriptedJudge(reply, model=str(judge_folder)), options=STRUCTURED, name="j", cache=False,
                     progress=False)
        runs.append(run)
    out = tmp_path / "export"
    with pytest.raises(RunError, match="no finished evaluation 'nope'"):
        export_results(runs, out, license="cc-by-4.0", evaluation="nope")
    assert not out.exists()  # a refused export leaves no folder behind
    export_results(runs, out, license="cc-by-4.0")
    card = DatasetCard.load(out / "README.md")
    assert {c["config_name"] for c in card.data.configs} == {"r2i-bench", "worldgenbench"}
    rows = datasets.load_dataset(str(out), "worldgenbench", split="test")
    assert rows.num_rows == 3 and set(rows["model"]) == {"sd"}
    # the judge by a name anyone can use, and its files' hash: never the local path
    assert set(rows["judge"]) == {"scripted:my-judge"}
    assert set(rows["judge_revision"]) == {model_fingerprint(judge_folder)}
    import pyarrow.parquet as pq

    for file in out.rglob("*.parquet"):
        assert str(tmp_path).encode() not in file.read_bytes(), file
    assert pq.read_table(next(out.rglob("*.parquet"))).num_rows == 3


def test_export_into_a_folder_holding_another_export_is_refused(tmp_path):
    """A second export over a first would leave the first's Parquet files in the configs it shares (its
    data files: data/<config>/*.parquet) under a card that counts only the new rows: refused, the first kept."""
    def reply(request):
        props = request.json_schema["properties"]
        return json.dumps({"answers": [1] * props["answers"]["minItems"]} if "answers" in props
                          else {k: 1 for k in props})

    runs = []
    for name in ("a", "b"):
        run = _images_for(Run.create(tmp_path / name, "r2i-bench", limit=2))
        run.evaluate(ScriptedJudge(reply), options=STRUCTURED, name="j", cache=False, progress=False)
        runs.append(run)
    out = export_results(runs, tmp_path / "export", license="cc-by-4.0")
    with pytest.raises(RunError, match="output folder .*export is not empty"):
        export_results(runs[:1], out, license="cc-by-4.0")
    import pyarrow.parquet as pq

    files = sorted((out / "data" / "r2i-bench").glob("*.parquet"))
    assert [f.name for f in files] == ["a.parquet", "b.parquet"]  # the first export, whole
    assert [pq.read_table(f, columns=["model"]).column(0).to_pylist() for f in files] == [["a", "a"], ["b", "b"]]
    (tmp_path / "empty").mkdir()
    assert export_results(runs[:1], tmp_path / "empty", license="cc-by-4.0") == tmp_path / "empty"


def test_export_writes_the_hub_eval_results_of_each_model(tmp_path):
    """`.eval_results/<benchmark>.yaml` for each model repository, in the Hub's format (read back
    with huggingface_hub's own parser): one entry per config scored, the dataset's id and commit,
    the metric's headline over that config as the evaluation aggregated it, and what made it."""
    import yaml
    from huggingface_hub import parse_eval_result_entries

    from t2ireason.publish import folder_files

    def reply(request):
        props = request.json_schema["properties"]
        return json.dumps({"answers": [1, 0] * props["answers"]["minItems"]} if "answers" in props
                          else {k: i % 2 for i, k in enumerate(props)})

    runs = []
    for bench in ("r2i-bench", "worldgenbench"):
        run = _images_for(Run.create(tmp_path / bench / "sd", bench, limit=4))
        run.evaluate(ScriptedJudge(reply), options=STRUCTURED, name="j", cache=False, progress=False)
        runs.append(run)
    commit = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(RunError, match="names \\['prism-bench'\\], which no run exported here scored"):
        export_results(runs, tmp_path / "bad", license="cc-by-4.0", benchmark_datasets={"prism-bench": "o/p"})
    out = export_results(runs, tmp_path / "export", license="cc-by-4.0", repo_id="me/results",
                         benchmark_datasets={"r2i-bench": f"org/r2i-bench@{commit}"})

    [file] = (out / "eval_results").glob("*/.eval_results/*.yaml")
    assert file.relative_to(out).as_posix() == "eval_results/sd/.eval_results/r2i-bench.yaml"
    entries = parse_eval_result_entries(yaml.safe_load(file.read_text()))
    results = runs[0].results("j")
    configs = list(dict.fromkeys(r.config for r in results))
    assert [e.task_id for e in entries] == [c for c in R2I.configs if c in configs]  # the eval.yaml task ids
    for e in entries:
        mine = [r for r in results if r.config == e.task_id]
        expected = R2I.aggregate(mine, structured_output=True)["r2i_score"]
        assert e.dataset_id == "org/r2i-bench" and e.dataset_revision == commit
        assert e.value == pytest.approx(expected, abs=1e-4) and 0 <= e.value <= 100
        assert e.source_url == "https://huggingface.co/datasets/me/results"
        assert "r2i_score" in e.notes and "preset paper" in e.notes and "first 4 rows only" in e.notes
    # the run took a limit: no "all" entry, which would claim the whole benchmark
    assert "all" not in [e.task_id for e in entries]
    # WorldGenBench's rows came from the shipped sample, no Hub dataset: said, not guessed
    assert "--benchmark-dataset worldgenbench=" in (out / "eval_results_skipped.txt").read_text()
    # for model repositories, not uploaded with the results dataset
    assert not any(".eval_results" in f for f in folder_files(out))


def test_lone_surrogates_in_replies_are_stored_and_written_safely(tmp_path):
    """As found: a lone surrogate (``\\ud800``) in a reply or a judge's reason aborted the evaluation with a
    UTF-8 error and, once cached, every re-run. The cache, results.jsonl and scores.json keep it (escaped),
    the report shows U+FFFD, the export takes it."""
    run = _images_for(Run.create(tmp_path / "sd", "prism-bench", limit=2))
    reply = '{"justification": "odd \\ud800 text", "score": 7}\n\ud800'  # escaped in the JSON, raw after it
    cache = tmp_path / "cache.sqlite"
    first = run.evaluate(ScriptedJudge(lambda r: reply, model="j"), name="a", cache=str(cache), progress=False)
    assert first["num_failed"] == 0 and first["aggregate"]["prism_score"] == pytest.approx(70.0)
    [result, _] = run.results("a")
    assert result.replies[0] == reply and result.questions[0].reasoning == "odd \ud800 text"
    # again from the cache alone: the judge is never asked
    again = run.evaluate(ScriptedJudge([], model="j"), name="b", cache=str(cache), progress=False)
    assert again["aggregate"] == first["aggregate"] and run.results("b")[0].replies[0] == reply
    page = write_report([run], tmp_path / "report")["html"][0].read_text(encoding="utf-8")
    assert "odd \ufffd text" in page
    folder = export_results([run], tmp_path / "export", license="cc-by-4.0", evaluation="a")
    assert datasets.load_dataset(str(folder), "prism-bench", split="test").num_rows == 2


@pytest.mark.parametrize("benchmark", ["worldgenbench", "r2i-bench", "t2i-reasonbench", "prism-bench"])
def test_a_report_where_every_image_failed(tmp_path, benchmark):
    """As found: `t2ireason report` (and `run`) crashed with an IndexError when every WorldGenBench image
    failed: its paper tables left out a domain with nothing counted. Each benchmark's tables are there,
    with empty cells, and the failures counted."""
    run = _images_for(Run.create(tmp_path / "sd", benchmark, limit=2))
    scores = run.evaluate(ScriptedJudge(lambda r: "I cannot tell.", model="j"), name="a", cache=False,
                          options={"max_reasks": 0}, progress=False)
    assert scores["num_failed"] == 2
    assert run.bench.paper_tables(scores["aggregate"], "sd")
    report = write_report([run], tmp_path / "report")
    assert "| sd |" in report["markdown"] and report["html"][0].is_file()
