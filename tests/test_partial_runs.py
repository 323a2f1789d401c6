"""An evaluation that did not score every image says so everywhere (issue 40 item 4): the tables, the figures, the
HTML headline, scores.json and .eval_results show the images scored of the run's, an image never made (a
generation failure, an image missing from the folder) counting as not scored; `t2ireason run` and `evaluate`
exit 1 on a partial evaluation, naming how many and how to go on, unless --allow-failed."""

from __future__ import annotations

import csv
import json
import re

import pytest

from t2ireason import cli
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import coverage
from t2ireason.runs import Run, RunError
from t2ireason.testing_http import Fail, Images, serve

#: the transport's limits, short, one image at a time (the API answers the first three requests), and an
#: endpoint that cannot answer recorded as each image's failure rather than stopping the generation
FAST = {"timeout": 1.0, "backoff_base": 0.01, "backoff_max": 0.05, "max_retries": 1, "max_concurrency": 1,
        "on_unavailable": "record"}
QUOTA = "You exceeded your current quota, please check your plan and billing details."


class QuotaAfterThree:
    """Chat completions: every question of the schema answered 1 (the pre-flight's {"ok": true}); image
    generations: three images, then the quota is spent."""

    def __init__(self):
        self.images = 0

    def __call__(self, request):
        if request.path.endswith("/chat/completions"):
            props = request.body["response_format"]["json_schema"]["schema"]["properties"]
            return json.dumps({k: True if v.get("type") == "boolean" else 1 for k, v in props.items()})
        self.images += 1
        return Images() if self.images <= 3 else Fail(429, QUOTA, code="insufficient_quota")


def test_an_image_api_that_stopped_after_3_of_10_images_is_a_partial_evaluation_that_exits_1(tmp_path, capsys):
    """The issue's case: an image API that stopped after 3 of 10 images (its quota spent) gave R2I-Score 100.0
    from those 3 and exit 0; tables.md did not mention the 7."""
    out = tmp_path / "quota-run"
    with serve(QuotaAfterThree(), models=["gpt-image-1", "judge-model"]) as server:
        argv = ["run", "--benchmark", "r2i-bench", "--limit", "10", "--out", str(out), "--run-name", "api-model",
                "--model", f"openai:gpt-image-1@{server.base_url}", "--height", "16", "--width", "16",
                "--generator-kwargs", json.dumps(FAST), "--judge", f"openai:judge-model@{server.base_url}",
                "--options", '{"structured_output": true}', "--no-cache", "--no-progress"]
        rc = cli.main(argv)
    printed = capsys.readouterr()
    assert rc == 1, printed.err
    assert "error: a partial evaluation: 7 of 10 images were never made (7 not generated" in printed.err
    assert "--allow-failed" in printed.err and "--retry-failed" in printed.err
    assert "coverage: 3 of 10 images scored (7 not generated)" in printed.out
    run = Run.open(out)
    [name] = run.evaluations()
    scores = run.scores(name)
    assert scores["coverage"] == {"images": 10, "scored": 3, "not_generated": 7, "missing": 0, "unreadable": 0,
                                  "unscorable": 0, "excluded": 0, "failed": 0, "text": "3 of 10 images scored (7 not generated)"}
    assert scores["aggregate"]["overall"]["mean"] == 100.0  # the three it scored: said with what it did not
    # the tables, the CSV, the figures' titles and the page's headline say 3 of 10
    tables = (out / "report" / "tables.md").read_text()
    assert "of the run's own, 3 of 10 images scored (7 not generated)" in tables
    with open(out / "report" / "tables.csv") as f:
        row = next(r for r in csv.DictReader(f) if r["model"] == "api-model" and r["column"] == "Overall")
    assert row["images"] == "3 of 2,968" and row["coverage"] == "3 of 10 images scored (7 not generated)"
    assert re.match(r"no: judge openai:judge-model@127\.0\.0\.1:\d+ \(the paper's: GPT-4o, temperature 0\.1\)",
                    row["comparable"])
    assert "3 of 2,968 images scored (7 not generated, 2,958 not in the run)" in row["comparable"]
    page = (out / "report" / "report.html").read_text()
    assert "images scored</b>: api-model (R2I-Bench): 3 of 10 images scored (7 not generated)" in page
    # the Hub's evaluation results say it too
    from t2ireason.exports import eval_result_entries

    said = {e.task_id: e.notes.split("; ")[1] for e in eval_result_entries(run, name, "me/r2i-bench")}
    assert said["commonsense"] == "2 of 2 images scored"
    assert said["compositional"] == "1 of 2 images scored (1 not generated)"
    # accepted as partial: exit 0, and nothing asked again (the server is gone)
    assert cli.main([*argv, "--allow-failed"]) == 0
    assert "coverage: 3 of 10 images scored" in capsys.readouterr().out


def _official_layout_run(tmp_path, n_images: int) -> Run:
    """A run of the R2I-Bench sample's first 6 prompts whose image folder holds only the first ``n_images``."""
    from PIL import Image

    run = Run.create(tmp_path / "folder-run", "r2i-bench", limit=6, name="folder-run")
    for i, row in enumerate(run.rows()[:n_images]):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (40 * i, 90, 150)).save(path)
    return run


def test_images_missing_from_the_folder_stop_the_evaluation_or_count_as_not_scored(tmp_path):
    """Without --allow-failed, images missing from the folder are said before the judge is asked; with it (the
    library's allow_missing), they count as not scored, in scores.json and every table."""
    run = _official_layout_run(tmp_path, 4)
    judge = ScriptedJudge(lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]}))
    with pytest.raises(RunError, match=r"2 of 6 prompts have no image .* or count them as not scored "
                                       r"\(evaluate --allow-failed\)"):
        run.evaluate(judge, options={"structured_output": True}, cache=False, progress=False)
    scores = run.evaluate(judge, options={"structured_output": True}, cache=False, progress=False,
                          allow_missing=True)
    assert scores["num_images"] == 6 and scores["num_not_generated"] == 2
    assert scores["coverage"]["missing"] == 2
    assert scores["coverage"]["text"] == "4 of 6 images scored (2 missing from the image folder)"
    missing = [r for r in run.results(scores["evaluation"]) if r.context.get("not_generated") == "missing"]
    assert len(missing) == 2 and all(r.failure.startswith("not generated (missing): no file at") for r in missing)
    assert coverage(run.results(scores["evaluation"]))["missing"] == 2


def test_evaluate_exits_1_on_missing_images_and_counts_them_with_allow_failed(tmp_path, capsys):
    run = _official_layout_run(tmp_path, 4)
    with serve(lambda r: json.dumps({k: 1 for k in r.body["response_format"]["json_schema"]["schema"]["properties"]}),
               models=["judge-model"]) as server:
        argv = ["evaluate", "--run", str(run.path), "--judge", f"openai:judge-model@{server.base_url}",
                "--options", '{"structured_output": true}', "--no-cache", "--no-progress"]
        assert cli.main(argv) == 2  # said before the judge is asked: how many, and how to go on
        err = capsys.readouterr().err
        assert "2 of 6 prompts have no image" in err and "--allow-failed" in err
        assert cli.main([*argv, "--allow-failed"]) == 0
    assert "coverage: 4 of 6 images scored (2 missing from the image folder)" in capsys.readouterr().out
