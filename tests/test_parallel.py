"""Judging split over the processes of a launch (issue 41 item 4): two processes started by torchrun (gloo, on
CPU) each judge a share of the images, and together write what one process writes (the same results, in the
same order, and the same scores), with which process judged how many recorded; a rank killed with SIGKILL
leaves a launch that the next one resumes without asking any question twice; the lock is the launch's (its
processes cooperate) and still refuses another command on the same evaluation.

Each launch costs seconds (two interpreters, torch, gloo), so the launches are shared between assertions: one
launch killed mid-way, one that resumes it to the end."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.runs import Run
from t2ireason.testing_http import Answer, Hang, serve

ROOT = Path(__file__).resolve().parents[1]
TORCHRUN = Path(sys.executable).parent / "torchrun"


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "OPENAI_API_KEY": "k"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_with_images(folder: Path, limit: int) -> Run:
    """A run of the shipped R2I-Bench sample with a distinct small PNG where each image goes."""
    run = Run.create(folder, "r2i-bench", limit=limit)
    bench = get_benchmark("r2i-bench")
    for i, row in enumerate(run.rows()):
        path = run.images_dir / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (37 * i % 256, 90, 160)).save(path)
    return run


def _schema(request) -> dict:
    return request.body.get("response_format", {}).get("json_schema", {}).get("schema", {})


def _is_image_request(request) -> bool:
    return bool(request.image_urls) and "ok" not in _schema(request).get("properties", {})


def _answer(request, delay: float = 0.0) -> Answer:
    """Each question scored 0, 0.5 or 1 by a hash of the question and the image: scores differ from image to
    image, the same in any process."""
    image = request.image_urls[0] if request.image_urls else ""
    levels = {k: (0, 0.5, 1)[hashlib.sha256(f"{k}{image}".encode()).digest()[0] % 3]
              for k in _schema(request).get("properties", {"ok": 1})}
    return Answer(json.dumps(levels), delay=delay)


def _argv(run: Path, server, *extra: str) -> list[str]:
    """The R2I-Bench paper preset (GPT-4o at temperature 0.1, no seed: nothing is cached, the journals alone
    keep the replies) behind the local server, one request at a time per process."""
    return ["evaluate", "--run", str(run), "--judge", f"openai:gpt-4o@{server.base_url}", "--preset", "paper",
            "--options", '{"structured_output": true}', "--judge-kwargs", '{"max_concurrency": 1}', "--name", "s",
            "--no-progress", "--chunk-size", "2", *extra]


def _launch(argv: list[str]) -> subprocess.Popen:
    return subprocess.Popen([str(TORCHRUN), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                             str(_free_port()), "-m", "t2ireason.cli", "--", *argv], cwd=ROOT, env=_env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(condition, what: str, proc: subprocess.Popen, timeout: float = 180.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if proc.poll() is not None:
            out, err = proc.communicate()
            raise AssertionError(f"the launch ended ({proc.returncode}) before {what}:\n{out[-3000:]}\n{err[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(0.05)


def _journaled(run: Path) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (run / "evaluations" / "s").glob("replies*.jsonl"))


def _rank_pid(launcher: int, rank: int) -> int:
    import psutil  # accelerate's own dependency

    for child in psutil.Process(launcher).children(recursive=True):
        try:
            if child.environ().get("RANK") == str(rank):
                return child.pid
        except psutil.Error:
            continue
    raise AssertionError(f"no process of rank {rank} under the launcher {launcher}")


def _results(run: Path) -> list[dict]:
    lines = (run / "evaluations" / "s" / "results.jsonl").read_text().splitlines()
    return [{k: r[k] for k in ("key", "id", "score", "subscores", "failure")} for r in map(json.loads, lines)]


@pytest.mark.slow
def test_two_processes_judge_a_share_each_and_a_killed_rank_resumes_without_asking_twice(tmp_path, capsys):
    if not TORCHRUN.is_file():
        pytest.fail("torchrun is not installed next to the interpreter")
    one, two = _run_with_images(tmp_path / "one", 10).path, _run_with_images(tmp_path / "two", 10).path
    answered: list[str] = []  # the image requests the server answered (paid for), by their messages
    state = {"stop_when": None, "hang": False, "delay": 0.0}

    def behaviour(request):
        if not _is_image_request(request):
            return _answer(request)
        if state["stop_when"] is not None and state["stop_when"]():
            state["hang"] = True  # from now on nothing is answered: no reply is on its way when a rank is killed
        if state["hang"]:
            return Hang(600)
        answered.append(json.dumps(request.messages, sort_keys=True))
        return _answer(request, delay=state["delay"])

    with serve(behaviour, models=["gpt-4o"]) as server:
        assert cli.main(_argv(one, server)) == 0  # one process: the reference
        reference = json.loads((one / "evaluations" / "s" / "scores.json").read_text())
        scorable = len(answered)
        assert [(s["rank"], s["images"]) for s in reference["processes"]] == [(0, 10)] and scorable >= 6
        answered.clear()

        # a launch of two, one of its processes killed once a chunk is saved and more replies are journaled
        folder = two / "evaluations" / "s"
        state.update(delay=0.1, stop_when=lambda: len(answered) >= 3 and any(
            p.stat().st_size for p in folder.glob("results.rank-*.jsonl")))
        launch = _launch(_argv(two, server))
        _wait_for(lambda: state["hang"] and _journaled(two) == len(answered), "a chunk saved, replies journaled",
                  launch)
        os.kill(_rank_pid(launch.pid, 1), signal.SIGKILL)
        launch.communicate(timeout=120)
        assert launch.returncode != 0  # torchrun ends the other process too
        assert not (folder / "scores.json").exists()
        before = list(answered)

        # the same launch again resumes; meanwhile another command on the evaluation is refused
        state.update(stop_when=None, hang=False, delay=0.5)
        launch = _launch(_argv(two, server, "--lock-timeout", "60"))
        _wait_for(lambda: len(answered) > len(before), "the resumed launch asking", launch)
        assert cli.main(_argv(two, server, "--lock-timeout", "0.2")) == 2
        assert "is being scored by another process" in capsys.readouterr().err
        out, err = launch.communicate(timeout=300)
        assert launch.returncode == 0, err[-3000:]

    assert len(answered) == len(set(answered)) == scorable  # every question asked once over both launches
    scores = json.loads((two / "evaluations" / "s" / "scores.json").read_text())
    assert scores["aggregate"] == reference["aggregate"] and scores["num_failed"] == reference["num_failed"]
    assert _results(two) == _results(one)  # the same lines, in the same order
    shares = scores["processes"]
    assert [s["rank"] for s in shares] == [0, 1] and all(s["images"] > 0 for s in shares)  # each judged some
    assert sum(s["images"] for s in shares) < 10  # the killed launch's scored chunks were kept
    assert "judged by process 0:" in out and out.count("coverage: ") == 1  # said once, by the main process
    assert sorted(p.name for p in folder.iterdir()) == ["image_sizes.json", "results.jsonl", "scores.json"]  # journals gone


@pytest.mark.slow
def test_mt2ie_chains_split_over_two_processes_make_what_one_process_makes(tmp_path):
    """MT2IE's runs (a model and a chain of prompts each) shared by two processes: the same rows, prompts,
    images and ranking as one process, in the same files, each process having run some."""
    if not TORCHRUN.is_file():
        pytest.fail("torchrun is not installed next to the interpreter")
    from test_mt2ie_agent import _job

    one, two = tmp_path / "one", tmp_path / "two"
    expected = _job(one)
    script = tmp_path / "job.py"
    script.write_text("import runpy, sys\n"
                      f"runpy.run_path({str(ROOT / 'tests' / 'test_mt2ie_agent.py')!r})['_job'](sys.argv[1])\n")
    launch = subprocess.run([str(TORCHRUN), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                             str(_free_port()), str(script), str(two)], cwd=ROOT, env=_env(), capture_output=True,
                            text=True, timeout=300)
    assert launch.returncode == 0, launch.stderr[-3000:]
    for name in ("runs/a.jsonl", "runs/b.jsonl", "prompt_chains.jsonl", "seed_prompts.jsonl"):
        assert (two / name).read_text() == (one / name).read_text(), name
    pngs = sorted(p.relative_to(one) for p in one.rglob("*.png"))
    assert pngs == sorted(p.relative_to(two) for p in two.rglob("*.png")) and len(pngs) == 64
    assert all((two / p).read_bytes() == (one / p).read_bytes() for p in pngs)
    summary = json.loads((two / "summary.json").read_text())
    assert summary["table"] == json.loads(json.dumps(expected["table"])) and summary["new"] == expected["new"] == 64
    assert [s["rank"] for s in summary["processes"]] == [0, 1] and all(s["runs"] > 0 for s in summary["processes"])
    assert not (two / ".processes").exists()  # merged into the folder's own files


@pytest.mark.slow
def test_another_metrics_evaluation_is_split_over_a_launch_as_the_benchmarks_own(tmp_path):
    """``evaluate --metric viescore`` in a launch of two: each process judges its share of the images, and together
    they write what one process writes."""
    if not TORCHRUN.is_file():
        pytest.fail("torchrun is not installed next to the interpreter")
    one, two = _run_with_images(tmp_path / "one", 6).path, _run_with_images(tmp_path / "two", 6).path

    def behaviour(request):
        if "naturalness" in request.text:
            return Answer('{"score": [7, 8], "reasoning": "pq"}')
        image = request.image_urls[0] if request.image_urls else ""
        return Answer(json.dumps({"score": [hashlib.sha256(image.encode()).digest()[0] % 11], "reasoning": "sc"}))

    with serve(behaviour, models=["gpt-4o"]) as server:
        argv = lambda run: ["evaluate", "--run", str(run), "--metric", "viescore", "--judge",  # noqa: E731
                            f"openai:gpt-4o@{server.base_url}", "--judge-kwargs", '{"max_concurrency": 1}', "--name",
                            "s", "--no-progress", "--chunk-size", "2", "--no-cache"]
        assert cli.main(argv(one)) == 0
        launch = _launch(argv(two))
        out, err = launch.communicate(timeout=300)
        assert launch.returncode == 0, err[-3000:]
    scores = json.loads((two / "evaluations" / "s" / "scores.json").read_text())
    reference = json.loads((one / "evaluations" / "s" / "scores.json").read_text())
    assert scores["metric"] == "viescore" and scores["aggregate"] == reference["aggregate"]
    assert _results(two) == _results(one)
    assert [s["rank"] for s in scores["processes"]] == [0, 1] and all(s["images"] == 3 for s in scores["processes"])


def test_a_local_judge_goes_to_its_processs_device_and_a_vllm_judge_is_refused_in_a_launch(tmp_path):
    from t2ireason.judges import JudgeError, on_device

    folder = tmp_path / "model"
    assert on_device(f"hf:{folder}", {"dtype": "bfloat16"}, "cuda:1") == {"dtype": "bfloat16", "device": "cuda:1"}
    assert on_device(f"hf:{folder}", {"device_map": "auto"}, "cuda:1") == {"device_map": "auto"}  # placed by the user
    assert on_device(f"hf:{folder}", {}, None) == {}  # one process: the judge's own default
    assert on_device("openai:gpt-4o", {"max_concurrency": 8}, "cuda:1") == {"max_concurrency": 8}
    with pytest.raises(JudgeError, match=r"tensor_parallel_size.*vllm serve org/big --data-parallel-size N"):
        on_device("vllm:org/big", {}, "cuda:1")
    assert on_device("vllm:org/big", {}, None) == {}  # one process: vLLM spreads itself


def test_a_plain_process_is_a_launch_of_one(monkeypatch):
    from t2ireason.processes import Processes, processes

    monkeypatch.delenv("WORLD_SIZE", raising=False)
    procs = processes()
    assert (procs.rank, procs.count, procs.is_main, procs.device) == (0, 1, True, None)
    assert procs.share([1, 2, 3]) == [1, 2, 3] and procs.gather("x") == ["x"] and procs.broadcast(5) == 5
    with Processes().main_holds(open(__file__)) as held:  # the lock entered and left by the process itself
        assert held is None


def test_scores_record_each_process_judging_cpu_beside_its_seconds(tmp_path, monkeypatch):
    """`processes[].cpu_seconds`: the CPU time the process spent judging its share (issue 51: the data-parallel
    figure reads it beside the wall seconds, which load on a shared machine bends)."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    run = _run_with_images(tmp_path / "one", 3).path
    with serve(_answer, models=["gpt-4o"]) as server:
        assert cli.main(_argv(run, server)) == 0
    [share] = json.loads((run / "evaluations" / "s" / "scores.json").read_text())["processes"]
    assert share["rank"] == 0 and share["images"] == 3
    assert isinstance(share["cpu_seconds"], float) and 0 < share["cpu_seconds"] and share["seconds"] > 0
