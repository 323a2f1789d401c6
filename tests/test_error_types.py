"""R2I-Bench Figure 6 (section 4.4): each failed image of a run given one of the paper's three error types by a
judge with the project's prompt (the paper publishes none), kept beside the evaluation, asked once, and tabulated in
the report: error type x count and share (scripted judges, and one over HTTP)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from t2ireason import cli
from t2ireason.benchmarks.r2i_bench.errors import ERROR_TYPES
from t2ireason.error_types import type_errors
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.report.writer import write_report
from t2ireason.runs import RunError
from t2ireason.testing_http import serve
from tests.study.runs import EVALUATION, scored_run

KINDS = list(ERROR_TYPES)


def kind_of(text: str) -> str:
    """The scripted judge's type for a request: by the prompt's length, so that the three types all occur."""
    prompt = text.split("Prompt: ", 1)[1].split("\n", 1)[0]
    return KINDS[len(prompt) % 3]


def judge_reply(request) -> str:
    return json.dumps({"reason": "scripted", "error_type": kind_of(request.messages[-1].text)})


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return scored_run(tmp_path_factory.mktemp("errors"), "r2i-bench", "model-a")


def test_each_failed_image_gets_one_of_the_papers_types_once(run, tmp_path):
    results = run.results(EVALUATION)
    failed = [r for r in results if r.score is not None and r.score < 0.5]
    assert failed and len(failed) < len(results)  # some failure cases, and some not
    judge = ScriptedJudge(judge_reply, model="typist")
    data = type_errors(run, EVALUATION, judge, cache=False, chunk_size=3)
    assert len(judge.requests) == len(failed) == len(data["items"])
    request = judge.requests[0]
    assert request.images and request.json_schema["properties"]["error_type"]["enum"] == KINDS
    text = request.messages[-1].text
    assert "What the correct image shows: " in text and "did not fully pass" in text
    assert Counter(a["error_type"] for a in data["items"].values()) == Counter(
        kind_of(r.messages[-1].text) for r in judge.requests)
    assert data["judge"] == "scripted:typist" and data["threshold"] == 0.5
    # asked once: a second call asks nothing; another judge or threshold is refused, never mixed in
    assert type_errors(run, EVALUATION, judge, cache=False) == data and len(judge.requests) == len(failed)
    with pytest.raises(RunError, match="delete it to give them with scripted:other"):
        type_errors(run, EVALUATION, ScriptedJudge(judge_reply, model="other"), cache=False)
    # the report's table: error type x count and share, the failed images counted
    report = write_report([run], tmp_path / "report")
    assert "R2I-Bench Figure 6: error types of failed images" in report["markdown"]
    counts = Counter(a["error_type"] for a in data["items"].values())
    row = next(line for line in report["markdown"].splitlines() if line.startswith("| model-a |")
               and f"| {len(failed)} |" in line)
    for kind in KINDS:
        assert f"| {counts[kind]} | {100 * counts[kind] / len(failed):.1f} |" in row


def test_the_prompt_says_it_is_the_projects():
    from importlib import resources

    header = (resources.files("t2ireason") / "templates" / "r2i_bench" / "error_type.txt").read_text("utf-8")
    assert "THE PROJECT'S OWN PROMPT" in header and "publishes no prompt" in header


def test_the_errors_command_over_http(tmp_path, capsys):
    run = scored_run(tmp_path, "r2i-bench", "model-b")

    def reply(request):
        if "Classify the main reason" in request.text:
            return json.dumps({"reason": "scripted", "error_type": kind_of(request.text)})
        return json.dumps({"answer": "yes"})  # the backend's probe

    with serve(reply) as server:
        code = cli.main(["errors", "--run", str(run.path), "--judge", f"openai:typist@{server.base_url}", "--no-cache"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "R2I-Bench Figure 6: error types of failed images" in out and "Reasoning errors %" in out
    assert cli.main(["errors", "--run", str(run.path), "--judge", "openai:x@http://127.0.0.1:9", "--threshold",
                     "0.7"]) == 2
    assert "delete it to give them" in capsys.readouterr().err

