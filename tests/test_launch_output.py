"""Issue 50: what a launch (torchrun, two processes on CPU) says. An error every process meets is said once, not
once a process, with no Python traceback of the project's own (torchrun's summary of the failed launch is its
own); a launch refused by the evaluation's lock says so once; a launch that finds the work done says what it did
(nothing), not the shares of the launch that scored the images."""

from __future__ import annotations

import subprocess

import pytest
from test_parallel import ROOT, TORCHRUN, _answer, _argv, _env, _free_port, _run_with_images

from t2ireason import cli
from t2ireason.testing_http import serve


def _launched(argv: list[str]) -> subprocess.CompletedProcess:
    if not TORCHRUN.is_file():
        pytest.fail("torchrun is not installed next to the interpreter")
    return subprocess.run([str(TORCHRUN), "--nproc_per_node", "2", "--master_addr", "127.0.0.1", "--master_port",
                           str(_free_port()), "-m", "t2ireason.cli", "--", *argv], cwd=ROOT, env=_env(),
                          capture_output=True, text=True, timeout=280)


def _ours(stderr: str) -> str:
    """What the processes wrote, without torchrun's own report of the failed launch."""
    return stderr.split("Traceback (most recent call last):\n  File")[0] if "ChildFailedError" in stderr else stderr


@pytest.mark.slow
def test_an_error_of_every_process_is_said_once(tmp_path):
    run = _run_with_images(tmp_path / "run", limit=2)
    done = _launched(["evaluate", "--run", str(run.path), "--metric", "vqa_score", "--judge",
                      "openai:gpt-4o@http://127.0.0.1:9/v1", "--no-cache"])
    assert done.returncode != 0
    assert done.stderr.count("error: unknown metric 'vqa_score'") == 1, done.stderr  # once a process before
    assert "t2ireason" not in _ours(done.stderr).split("error: unknown metric")[1].split("\n", 1)[1], done.stderr
    done = _launched(["evaluate", "--run", str(run.path), "--no-such-option"])
    assert done.returncode != 0 and done.stderr.count("unknown option --no-such-option") == 1, done.stderr


@pytest.mark.slow
def test_a_launch_refused_by_the_lock_says_it_once(tmp_path):
    run = _run_with_images(tmp_path / "run", limit=2)
    with serve(_answer) as server, run.lock("evaluation-s", 1, "held by the test"):
        done = _launched(_argv(run.path, server, "--lock-timeout", "0.2"))
    assert done.returncode != 0
    assert done.stderr.count("is being scored by another process") == 1, done.stderr  # twice before
    assert "Traceback" not in _ours(done.stderr), done.stderr


@pytest.mark.slow
def test_a_launch_that_finds_the_work_done_says_it_did_nothing(tmp_path, capsys):
    run = _run_with_images(tmp_path / "run", limit=4)
    with serve(_answer) as server:
        first = _launched(_argv(run.path, server))
        assert first.returncode == 0, first.stderr[-3000:]
        assert "judged by process 0:" in first.stdout
        # issue 51: a launch over an API judge only adds each process's start-up: said once, with what to do instead
        assert first.stdout.count("note: 2 processes over an API judge (openai:)") == 1, first.stdout
        assert "max_concurrency" in first.stdout.split("note: 2 processes")[1].split("\n")[0]
        again = _launched(_argv(run.path, server))
        assert again.returncode == 0, again.stderr[-3000:]
        assert "judged by" not in again.stdout and "finished before: nothing left to score" in again.stdout, again.stdout
        assert again.stdout.count("images scored") == 1
        assert cli.main(_argv(run.path, server)) == 0  # one process: the same
    said = capsys.readouterr().out
    assert "judged by" not in said and "finished before: nothing left to score" in said
    assert "over an API judge" not in said  # one process: nothing to say
