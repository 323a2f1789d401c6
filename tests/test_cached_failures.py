"""No failure replayed as an answer (issue 40 item 5). As found: after a judge server that answered garbage was
fixed, `t2ireason evaluate --name new` gave the same failures in 2.7 s without a request: the failed replies came
from the response cache, and nothing said so. Now a reply that failed validation is forgotten by the cache (the
evaluation's own journal still keeps it for its resume), one found in a cache written before that rule is asked
again, and each evaluation says how many replies came from the cache and how to ask again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.cache import CachedJudge, ResponseCache
from t2ireason.judges.stored import StoredJudge
from t2ireason.runs import Run
from t2ireason.testing_http import Answer, serve


def _run_with_images(folder: Path, limit: int = 6) -> Run:
    run = Run.create(folder, "r2i-bench", limit=limit)
    bench = get_benchmark("r2i-bench")
    for i, row in enumerate(run.rows()):
        path = run.images_dir / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (40 * i % 256, 90, 160)).save(path)
    return run


def _schema(request) -> dict:
    return request.body.get("response_format", {}).get("json_schema", {}).get("schema", {})


def _is_image_request(request) -> bool:
    return bool(request.image_urls) and "ok" not in _schema(request).get("properties", {})


def _argv(run: Run, server, name: str, cache: Path) -> list[str]:
    """R2I-Bench's paper preset at temperature 0 (deterministic: its replies are cached)."""
    return ["evaluate", "--run", str(run.path), "--judge", f"openai:gpt-4o@{server.base_url}", "--preset", "paper",
            "--options", '{"structured_output": true}', "--judge-kwargs", '{"sampling": {"temperature": 0}}',
            "--name", name, "--cache", str(cache), "--no-progress"]


@pytest.fixture
def judge_server():
    """A server answering garbage to every image request until ``fixed``; it counts them."""
    state = {"fixed": False, "asked": 0}

    def behaviour(request):
        if not _is_image_request(request):  # the pre-flight's probe is answered
            return Answer(json.dumps({k: True for k in _schema(request).get("properties", {"ok": 1})}))
        state["asked"] += 1
        if not state["fixed"]:
            return Answer("I would rather not say.")
        return Answer(json.dumps({k: 1 for k in _schema(request).get("properties", {})}))

    with serve(behaviour, models=["gpt-4o"]) as server:
        yield server, state


def test_a_failed_reply_is_not_served_from_the_cache_to_another_evaluation(judge_server, tmp_path, capsys,
                                                                           monkeypatch):
    server, state = judge_server
    run, cache = _run_with_images(tmp_path / "run"), tmp_path / "cache.sqlite"
    scorable = sum(1 for row in run.rows() if row["questions"])
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    assert cli.main(_argv(run, server, "old", cache)) == 1  # every image failed: the judge answered garbage
    asked_garbage = state["asked"]
    assert asked_garbage == 3 * scorable  # each image asked, then re-asked twice
    assert len(ResponseCache(cache)) == 0  # none of those failures kept for another evaluation
    capsys.readouterr()

    state.update(fixed=True, asked=0)
    assert cli.main(_argv(run, server, "new", cache)) == 0
    assert state["asked"] == scorable  # the fixed judge is asked, not its failures replayed
    scores = Run.open(run.path).scores("new")
    assert scores["aggregate"]["r2i_score"] == pytest.approx(100.0)
    assert scores["response_cache"] == {"file": str(cache), "replies": 0, "stale_failures_asked_again": 0}
    assert "from the response cache" not in capsys.readouterr().out

    state["asked"] = 0
    assert cli.main(_argv(run, server, "again", cache)) == 0  # a third evaluation: every reply from the cache
    assert state["asked"] == 0
    assert Run.open(run.path).scores("again")["response_cache"]["replies"] == scorable
    out = capsys.readouterr().out
    assert f"{scorable} replies from the response cache {cache} (--no-cache asks the judge again)" in out


def test_a_failure_kept_by_an_older_cache_is_asked_again_and_counted(judge_server, tmp_path, capsys, monkeypatch):
    """A cache written before failures were forgotten holds them: each is found as it comes back from the
    cache, forgotten, asked again, and counted."""
    server, state = judge_server
    run, cache = _run_with_images(tmp_path / "run"), tmp_path / "cache.sqlite"
    scorable = sum(1 for row in run.rows() if row["questions"])
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with monkeypatch.context() as old_version:  # a version that kept every reply
        old_version.setattr(CachedJudge, "reject", StoredJudge.reject)
        assert cli.main(_argv(run, server, "old", cache)) == 1
    assert len(ResponseCache(cache)) == 3 * scorable
    capsys.readouterr()

    state.update(fixed=True, asked=0)
    assert cli.main(_argv(run, server, "new", cache)) == 0
    assert state["asked"] == scorable  # each first question asked again (its re-asks are never reached)
    scores = Run.open(run.path).scores("new")
    assert scores["aggregate"]["r2i_score"] == pytest.approx(100.0) and scores["num_reasks"] == 0
    assert scores["response_cache"]["stale_failures_asked_again"] == scorable
    assert f"{scorable} failed replies found in the cache, asked again" in capsys.readouterr().out


def test_prisms_official_protocol_keeps_in_the_cache_only_what_the_authors_script_counts(tmp_path):
    """The official protocol asks no re-ask: a reply the authors' script skips is that evaluation's outcome,
    but it is not kept for another; the next evaluation asks the judge again."""
    from t2ireason.data import load_rows
    from t2ireason.judges.scripted import ScriptedJudge

    bench = get_benchmark("prism-bench")
    rows = load_rows(bench, limit=2)
    images = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    garbage = ScriptedJudge(lambda r: "no comment")
    first = bench.score(rows, images, CachedJudge(garbage, tmp_path / "c.sqlite"), protocol="official")
    assert all(r.failed for r in first) and len(garbage.requests) == 4  # skipped, as the authors' script does
    fixed = ScriptedJudge(lambda r: '{"justification": "fine", "score": 8}')
    again = bench.score(rows, images, CachedJudge(fixed, tmp_path / "c.sqlite"), protocol="official")
    assert len(fixed.requests) == 4 and [r.score for r in again] == [0.8, 0.8]
    cached = CachedJudge(ScriptedJudge([]), tmp_path / "c.sqlite")  # asks nothing: every answer is cached now
    assert [r.score for r in bench.score(rows, images, cached, protocol="official")] == [0.8, 0.8]
    assert cached.hits == 4
