"""Issue 50: what a new user's second day found in the command line, each said before anything is paid or made: a
reference ranking naming a model not run, a mistyped (or not loadable) TIFA question filter, `--ratings` swallowing
the runs, an unknown metric or option without a "did you mean", CLIPScore given an API judge."""

from __future__ import annotations

import json
from pathlib import Path

from test_cli import run_with_images  # the tests folder is on the path (no __init__.py)

from t2ireason import cli
from t2ireason.testing_http import Answer, serve


def test_a_reference_naming_a_model_not_run_fails_before_anything_is_drawn_or_judged(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t2i_counting_draw.py").write_text(
        "from PIL import Image\nCALLS = []\n"
        "def draw(prompts, seeds):\n    CALLS.append(len(prompts))\n    return [Image.new('RGB', (8, 8)) for _ in prompts]\n")
    with serve(Answer("Yes", top_logprobs=[{"Yes": -0.1, "No": -2.3}])) as judge:
        rc = cli.main(["mt2ie", "--model", "a=python:t2i_counting_draw:draw", "--model",
                       "b=python:t2i_counting_draw:draw", "--judge", f"openai:test-model@{judge.base_url}",
                       "--no-cache", "--out", str(tmp_path / "out"), "--iterations", "1", "--seeds", "0",
                       "--seed-prompts-per-seed", "1", "--reference", "a,c", "--no-progress"])
        asked = len(judge.requests)
    err = capsys.readouterr().err
    assert rc == 2 and "the reference ranking names 1 of the models and 'c', not among them" in err and "(a, b)" in err, err
    assert asked == 0 and not (tmp_path / "out").exists()  # the whole run was drawn and judged before
    import sys

    assert sys.modules.get("t2i_counting_draw") is None or sys.modules["t2i_counting_draw"].CALLS == []


def test_a_reference_typo_is_told_with_the_closest_model():
    import pytest

    from t2ireason.benchmarks.mt2ie.rankings import check_reference

    with pytest.raises(ValueError, match=r"'sdxl-turbo' \(did you mean 'sdxl_turbo'\?\)"):
        check_reference(["sdxl_turbo", "sdxl-turbo"], ["sdxl_turbo", "flux"])
    check_reference({"sdxl_turbo": 1.0, "flux": 2.0, "dall-e-3": 3.0}, ["sdxl_turbo", "flux"])  # a published table
    with pytest.raises(ValueError, match="names 1 of the models"):
        check_reference({"flux": 2.0, "dall-e-3": 3.0}, ["sdxl_turbo", "flux"])


def _tifa(tmp_path: Path, capsys, question_filter: str) -> tuple[int, str, int, Path]:
    run = run_with_images(tmp_path / "run", limit=2)
    with serve("yes") as llm:
        rc = cli.main(["evaluate", "--run", str(run.path), "--metric", "tifa", "--judge",
                       f"openai:gpt-4o@{llm.base_url}", "--no-cache", "--no-progress", "--options",
                       json.dumps({"question_filter": question_filter})])
        asked = len(llm.requests)
    return rc, capsys.readouterr().err, asked, run.path


def test_a_mistyped_tifa_question_filter_fails_before_the_evaluation_is_made_or_a_question_paid(tmp_path, capsys):
    rc, err, asked, run = _tifa(tmp_path, capsys, "unifiedq")
    assert rc == 2 and "question_filter" in err and "did you mean 'unifiedqa'?" in err, err
    assert asked == 0 and not (run / "evaluations").exists()  # 16 question-writing requests and a folder before
    assert json.loads((run / "run.json").read_text())["evaluations"] == {}


def test_the_authors_qa_model_not_in_the_cache_offline_fails_before_anything_is_paid(tmp_path, capsys, monkeypatch):
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "empty-hub-cache"))
    rc, err, asked, run = _tifa(tmp_path, capsys, "unifiedqa")
    assert rc == 2 and "allenai/unifiedqa-v2-t5-large-1363200" in err and "HF_HUB_OFFLINE" in err, err
    assert asked == 0 and not (run / "evaluations").exists()


def test_agreement_takes_the_runs_after_a_ratings_folder(tmp_path, capsys):
    """`agreement --ratings studies/r2i/ratings runs/a runs/b` said "the following arguments are required: runs":
    --ratings took every value after it."""
    args = cli.build_parser("agreement").parse_args(
        ["agreement", "--ratings", "studies/r2i/ratings", "runs/a", "runs/b"])
    assert args.runs == ["runs/a", "runs/b"] and args.ratings == ["studies/r2i/ratings"]
    args = cli.build_parser("agreement").parse_args(
        ["agreement", "--ratings", "r1.json", "--ratings", "r2.json", "--evaluation", "e1", "--evaluation", "e2",
         "runs/a", "runs/b"])
    assert args.runs == ["runs/a", "runs/b"] and args.ratings == ["r1.json", "r2.json"]
    assert args.evaluation == ["e1", "e2"]
    assert cli.main(["agreement", "--ratings", str(tmp_path / "studies/r2i/ratings"), str(tmp_path / "runs/a"),
                     str(tmp_path / "runs/b")]) == 2
    err = capsys.readouterr().err
    assert "required" not in err and err.count("\n") == 1, err  # what is wrong with the folders, not the line's shape


def _evaluate_error(tmp_path: Path, capsys, *argv: str) -> str:
    run = tmp_path / "run"
    if not run.exists():
        run_with_images(run, limit=2)
    with serve("yes") as server:
        assert cli.main(["evaluate", "--run", str(run), "--no-cache", "--no-progress", *argv]) == 2
        assert not server.requests
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_an_unknown_metric_or_option_gets_a_did_you_mean(tmp_path, capsys):
    judge = ["--judge", "openai:gpt-4o@http://127.0.0.1:9/v1"]
    assert "unknown metric 'vqa_score' (did you mean 'vqascore'?)" in _evaluate_error(
        tmp_path, capsys, "--metric", "vqa_score", *judge)
    assert "unknown metric 'CLIPScore' (did you mean 'clip_score'?)" in _evaluate_error(
        tmp_path, capsys, "--metric", "CLIPScore")
    said = _evaluate_error(tmp_path, capsys, *judge, "--options", '{"max_reask": 3}')
    assert "unknown option(s) ['max_reask'] (did you mean 'max_reasks' for 'max_reask'?)" in said
    said = _evaluate_error(tmp_path, capsys, "--metric", "viescore", *judge, "--options", '{"max_reask": 3}')
    assert "(did you mean 'max_reasks' for 'max_reask'?)" in said


def test_clip_score_with_an_api_judge_says_it_takes_a_clip_model(tmp_path, capsys):
    said = _evaluate_error(tmp_path, capsys, "--metric", "clip_score", "--judge", "openai:gpt-4o")
    assert "clip_score scores with a local CLIP model, not a judge" in said and "does not exist" not in said
    assert "openai/clip-vit-base-patch32" in said
