"""What the response cache does with a reply an evaluation could not read.

Issue 40 item 5: a failure must never be served as an answer, and an evaluation must say when its replies (and
failures) came from the cache. Issue 50: deleting such a reply (``reject``) re-bought every re-asked
conversation on every later evaluation (8 images scored three times: 32, 16 and 16 requests), and an evaluation
with ``missing: fail`` deleted replies another evaluation used. Now a reply is a fact about its request: the
cache keeps it, and each evaluation reads it with its own rules (a re-ask, ``missing: answered`` or ``fail``), so
a deterministic judge is never asked the same thing twice, and what an evaluation could not read is counted."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.data import load_rows
from t2ireason.judges.cache import CachedJudge, ResponseCache
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run
from t2ireason.testing_http import Answer, serve


def _prose_then_json(request) -> str:
    """A deterministic judge whose first reply is prose, and whose reply to the re-ask is the JSON."""
    if any(m.role == "assistant" for m in request.messages):
        return json.dumps({"justification": "fits", "score": 8})
    return "I would say the score is eight out of ten."


def test_a_re_asked_conversation_is_bought_once(tmp_path):
    bench = get_benchmark("prism-bench")
    rows = load_rows(bench, limit=2)
    images = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    paid, scores = [], []
    for _ in range(3):
        inner = ScriptedJudge(_prose_then_json)
        judge = CachedJudge(inner, tmp_path / "c.sqlite")
        scores.append([r.score for r in bench.score(rows, images, judge, progress=False)])
        paid.append(len(inner.requests))
        judge.close()
    assert paid == [8, 0, 0]  # 4 first asks and their 4 re-asks, then nothing: every reply is in the cache
    assert scores == [[0.8, 0.8]] * 3
    assert len(ResponseCache(tmp_path / "c.sqlite")) == 8  # the prose replies kept beside the JSON ones
    assert judge.stats()["rejected"] == judge.stats()["rejected_cached"] == 4  # read again, never an answer


def test_an_unreadable_cached_reply_is_never_an_answer(tmp_path):
    """PRISM-Bench's official protocol (no re-ask): a reply the authors' script skips stays that image's
    failure on every evaluation, from the cache, and is counted; the cache does not turn it into a score."""
    bench = get_benchmark("prism-bench")
    rows = load_rows(bench, limit=2)
    images = [Image.new("RGB", (16, 16), c) for c in ("red", "blue")]
    garbage = ScriptedJudge(lambda r: "no comment")
    first = bench.score(rows, images, CachedJudge(garbage, tmp_path / "c.sqlite"), protocol="official")
    assert all(r.failed for r in first) and len(garbage.requests) == 4
    again = CachedJudge(ScriptedJudge([]), tmp_path / "c.sqlite")  # asks nothing: the replies are facts
    second = bench.score(rows, images, again, protocol="official")
    assert all(r.failed and r.score is None for r in second)
    assert again.hits == 4 and again.rejected_cached == 4


def _r2i_rows(n: int = 3) -> list[dict]:
    bench = get_benchmark("r2i-bench")
    return [row for row in load_rows(bench, limit=20) if len(row["questions"] or []) >= 2][:n]


def _first_question_only(request) -> str:
    """Answers the first question the request names and never the others, however often it is re-asked."""
    keys = list(request.json_schema["properties"])
    return json.dumps({keys[0]: 1})


def test_r2i_missing_answered_is_served_from_the_cache_and_missing_fail_deletes_nothing(tmp_path):
    bench = get_benchmark("r2i-bench")
    rows = _r2i_rows()
    images = [Image.new("RGB", (16, 16), (60 * i, 90, 160)) for i in range(len(rows))]

    def evaluate(missing: str) -> tuple[int, list]:
        inner = ScriptedJudge(_first_question_only)
        judge = CachedJudge(inner, tmp_path / "c.sqlite")
        results = bench.score(rows, images, judge, missing=missing, structured_output=True, progress=False)
        judge.close()
        return len(inner.requests), [r.score for r in results]

    asked, answered = evaluate("answered")
    assert asked == 3 * len(rows) and all(s is not None for s in answered)  # each asked, then re-asked twice
    assert evaluate("answered") == (0, answered)  # the official preset's rule, from the cache
    asked, failed = evaluate("fail")
    assert asked == 0 and failed == [None] * len(rows)  # the same replies, read by this evaluation's rule
    assert evaluate("answered") == (0, answered)  # the replies the failing evaluation used are still there


_WORKER = textwrap.dedent("""
    import json, sys, time
    from pathlib import Path
    from PIL import Image
    from t2ireason.benchmarks import get_benchmark
    from t2ireason.data import load_rows
    from t2ireason.judges.cache import CachedJudge
    from t2ireason.judges.scripted import ScriptedJudge

    def reply(request):
        if any(m.role == "assistant" for m in request.messages):
            return json.dumps({"justification": "fits", "score": 8})
        return "I would say the score is eight out of ten."

    cache, go = sys.argv[1], Path(sys.argv[2])
    bench = get_benchmark("prism-bench")
    rows = load_rows(bench, limit=3)
    images = [Image.new("RGB", (16, 16), (60 * i, 90, 160)) for i in range(3)]
    while not go.exists():
        time.sleep(0.01)
    inner = ScriptedJudge(reply)
    judge = CachedJudge(inner, cache)
    scores = [r.score for r in bench.score(rows, images, judge, progress=False)]
    judge.close()
    print(json.dumps({"asked": len(inner.requests), "scores": scores}))
""")


@pytest.mark.slow
def test_four_processes_over_one_cache_buy_each_reply_once(tmp_path):
    """Four processes score the same images at once, three rounds: after the first, none asks the judge (before,
    each process deleted the first replies the others had just stored, and they bought them again)."""
    script, cache = tmp_path / "worker.py", tmp_path / "c.sqlite"
    script.write_text(_WORKER)
    paid = []
    for round_ in range(3):
        go = tmp_path / f"go{round_}"
        procs = [subprocess.Popen([sys.executable, str(script), str(cache), str(go)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        go.touch()
        outs = []
        for proc in procs:
            out, err = proc.communicate(timeout=180)
            assert proc.returncode == 0, err
            outs.append(json.loads(out))
        assert all(o["scores"] == [0.8] * 3 for o in outs)
        paid.append(sum(o["asked"] for o in outs))
    assert 12 <= paid[0] <= 4 * 12 and paid[1:] == [0, 0]


# -- through the command line: what an evaluation says ---------------------------------------------------


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


def _argv(run: Run, server, name: str, cache: Path | None) -> list[str]:
    """R2I-Bench's paper preset at temperature 0 (deterministic: its replies are cached)."""
    return ["evaluate", "--run", str(run.path), "--judge", f"openai:gpt-4o@{server.base_url}", "--preset", "paper",
            "--options", '{"structured_output": true}', "--judge-kwargs", '{"sampling": {"temperature": 0}}',
            "--name", name, *(["--cache", str(cache)] if cache else ["--no-cache"]), "--no-progress"]


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


def test_failures_from_the_cache_are_said_and_no_cache_asks_again(judge_server, tmp_path, capsys, monkeypatch):
    server, state = judge_server
    run, cache = _run_with_images(tmp_path / "run"), tmp_path / "cache.sqlite"
    scorable = sum(1 for row in run.rows() if row["questions"])
    monkeypatch.setenv("OPENAI_API_KEY", "k")

    assert cli.main(_argv(run, server, "old", cache)) == 1  # every image failed: the judge answered garbage
    assert state["asked"] == 3 * scorable  # each image asked, then re-asked twice
    assert len(ResponseCache(cache)) == 3 * scorable  # every reply kept: a fact about its request
    capsys.readouterr()

    state.update(fixed=True, asked=0)
    assert cli.main(_argv(run, server, "replayed", cache)) == 1  # the same requests: the same replies, failed again
    assert state["asked"] == 0
    scores = Run.open(run.path).scores("replayed")
    assert scores["num_failed"] == len(run.rows())  # never an answer
    assert scores["response_cache"] == {"file": str(cache), "replies": 3 * scorable, "unread": 3 * scorable}
    out = capsys.readouterr().out
    assert (f"{3 * scorable} replies from the response cache {cache}, {3 * scorable} of them not read (re-asked "
            "or failed) (--refresh-cache asks the judge again and keeps its new replies)") in out

    assert cli.main(_argv(run, server, "new", None)) == 0  # --no-cache: the fixed judge is asked, nothing kept
    assert state["asked"] == scorable
    assert Run.open(run.path).scores("new")["aggregate"]["r2i_score"] == pytest.approx(100.0)


def test_refresh_cache_asks_a_fixed_judge_again_and_keeps_its_new_replies(judge_server, tmp_path, monkeypatch):
    """A judge fixed under the same name: --refresh-cache replaces its old replies, so that every later evaluation
    sharing the cache reads the new ones without asking (with --no-cache each would ask again)."""
    server, state = judge_server
    run, cache = _run_with_images(tmp_path / "run"), tmp_path / "cache.sqlite"
    scorable = sum(1 for row in run.rows() if row["questions"])
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    assert cli.main(_argv(run, server, "old", cache)) == 1  # garbage, kept in the cache
    state.update(fixed=True, asked=0)

    assert cli.main([*_argv(run, server, "refreshed", cache), "--refresh-cache"]) == 0
    assert state["asked"] == scorable  # asked again, once an image
    assert cli.main(_argv(run, server, "later", cache)) == 0
    assert state["asked"] == scorable  # nothing bought twice: the new replies came from the cache
    later = Run.open(run.path).scores("later")
    assert later["aggregate"]["r2i_score"] == pytest.approx(100.0)
    assert later["response_cache"]["replies"] == scorable and not later["response_cache"]["unread"]
