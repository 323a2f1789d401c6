"""What a run keeps on disk, and how, when things go wrong (issues 34 and 35): every reply the run
received kept in its own journal (a resume after a refused key, a kill -9 or SIGTERM never asks
twice, whatever the sampling), records written whole or not at all (a full disk names its file and
leaves no torn line), SIGTERM handled as Ctrl-C, nothing created before an error, and files that
honour the umask."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.runs import Run
from t2ireason.testing_http import Answer, Fail, Hang, serve

ROOT = Path(__file__).resolve().parents[1]
STRUCTURED = '{"structured_output": true}'


def _env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), **extra}


def _run_with_images(folder: Path, limit: int = 6) -> Run:
    """A run of the shipped R2I-Bench sample with a small PNG where the official layout puts each image."""
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
    """A benchmark image's request (not the pre-flight's probe, not the endpoint check)."""
    return bool(request.image_urls) and "ok" not in _schema(request).get("properties", {})


def _reply(request) -> Answer:
    """Every question of the R2I-Bench schema (or the probe's) passed."""
    return Answer(json.dumps({k: 1 for k in _schema(request).get("properties", {"ok": 1})}))


def _scorable(run: Run) -> int:
    return sum(1 for row in run.rows() if row["questions"])


def _evaluate_argv(run: Run, server, *extra: str) -> list[str]:
    """The R2I-Bench paper preset's judge (GPT-4o at temperature 0.1, no seed: no reply is cached)
    behind the local server, one request at a time so what was answered is exact."""
    return ["evaluate", "--run", str(run.path), "--judge", f"openai:gpt-4o@{server.base_url}", "--preset", "paper",
            "--options", STRUCTURED, "--judge-kwargs", '{"max_concurrency": 1}', "--name", "s", "--no-progress",
            *extra]


def _wait_for(condition, what: str, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(0.02)


def _journal_lines(run: Run) -> int:
    file = run.evaluation_dir("s") / "replies.jsonl"
    return file.read_bytes().count(b"\n") if file.is_file() else 0


# -- 35.2: a resume never buys a reply twice ----------------------------------------------------------

def test_a_refused_key_mid_run_then_a_fixed_key_asks_only_what_is_missing(tmp_path, capsys, monkeypatch):
    """As found: the R2I presets sample (temperature 0.1, no seed), so no reply was cached; after a 401 the
    unfinished chunk's replies were all bought again (24 of 24), while the message said they were kept."""
    run = _run_with_images(tmp_path / "run", limit=8)
    scorable = _scorable(run)
    answered: list[str] = []  # the image requests the server answered (paid for), in order
    phases: list[list[str]] = [[], []]

    def behaviour(request):
        if not _is_image_request(request):
            return _reply(request)
        key = request.headers.get("authorization")
        phase = 0 if key == "Bearer old-key" else 1
        phases[phase].append(request.text)
        if phase == 0 and len(phases[0]) > 3:  # the key is revoked after three images
            return Fail(401, "Incorrect API key provided")
        answered.append(request.text)
        return _reply(request)

    with serve(behaviour, models=["gpt-4o"]) as server:
        argv = _evaluate_argv(run, server, "--cache", str(tmp_path / "cache.sqlite"))  # the cache is on
        monkeypatch.setenv("OPENAI_API_KEY", "old-key")
        assert cli.main(argv) == 2
        err = capsys.readouterr().err
        assert "HTTP 401" in err and "refused the credentials" in err
        results = run.evaluation_dir("s") / "results.jsonl"
        assert not results.exists() or not results.read_text()  # one chunk, unfinished: no image recorded
        monkeypatch.setenv("OPENAI_API_KEY", "new-key")
        assert cli.main(argv) == 0
        out = capsys.readouterr().out
    assert len(phases[0]) == 4 and len(answered) == scorable  # no reply paid for twice
    assert set(phases[1]).isdisjoint(phases[0][:3]) and phases[0][3] in phases[1]  # only what was missing...
    assert len(phases[1]) == len(set(phases[1])) == scorable - 3  # ...each once
    assert "3 replies received before reused" in out
    scores = Run.open(run.path).scores("s")
    assert scores["num_images"] == 8 and scores["aggregate"]["r2i_score"] == pytest.approx(100.0)
    assert not (run.evaluation_dir("s") / "replies.jsonl").exists()  # a finished evaluation needs no journal


def _interrupted(run: Run, answered: int, stop) -> tuple[subprocess.Popen, str, list[str], list[str], subprocess.CompletedProcess]:
    """`t2ireason evaluate` in its own process against a judge that answers the first ``answered`` image
    requests and then hangs; once their replies are in the run's journal, ``stop(proc)``; then the same
    command again, with the judge answering. Returns the stopped process and its stderr, the image requests
    asked before and after, and the resumed command."""
    hang = {"on": True}
    asked: list[str] = []

    def behaviour(request):
        if not _is_image_request(request):
            return _reply(request)
        asked.append(request.text)
        return Hang(600) if hang["on"] and len(asked) > answered else _reply(request)

    with serve(behaviour, models=["gpt-4o"]) as server:
        argv = [sys.executable, "-m", "t2ireason.cli", *_evaluate_argv(run, server, "--no-cache")]
        proc = subprocess.Popen(argv, env=_env(OPENAI_API_KEY="k"), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)
        try:
            _wait_for(lambda: len(asked) > answered or proc.poll() is not None, "the request left hanging")
            _wait_for(lambda: _journal_lines(run) >= answered or proc.poll() is not None,
                      f"{answered} replies in the journal", timeout=30)
            stop(proc)
            err = proc.communicate(timeout=120)[1]
        finally:
            if proc.poll() is None:
                proc.kill()
        first = list(asked)
        asked.clear()
        hang["on"] = False
        resumed = subprocess.run(argv, env=_env(OPENAI_API_KEY="k"), capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    return proc, err, first, asked, resumed


def test_a_kill_9_mid_evaluation_then_resume_asks_only_the_unanswered(tmp_path):
    run = _run_with_images(tmp_path / "run", limit=8)
    proc, _, first, again, _ = _interrupted(run, 4, lambda p: p.kill())  # kill -9: no clean-up of any kind
    assert proc.returncode == -signal.SIGKILL
    assert len(first) == 5 and first[4] in again  # the one in flight is asked again...
    assert set(again).isdisjoint(first[:4])  # ...the four answered before it never
    assert len(again) == len(set(again)) == _scorable(run) - 4
    assert Run.open(run.path).scores("s")["aggregate"]["r2i_score"] == pytest.approx(100.0)


# -- 35.9: SIGTERM is Ctrl-C --------------------------------------------------------------------------

def test_sigterm_stops_cleanly_says_how_to_resume_and_exits_143(tmp_path):
    """As found: SIGTERM (how Slurm and Kubernetes pre-empt a job) killed at once, saying nothing."""
    run = _run_with_images(tmp_path / "run", limit=6)
    seen = {}

    def terminate(proc):
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        seen["finished"] = Run.open(run.path).manifest["evaluations"]["s"]["finished"]

    proc, err, first, again, _ = _interrupted(run, 2, terminate)
    assert proc.returncode == 143, err
    lines = [x for x in err.splitlines() if x.strip()]
    assert lines == ["terminated (SIGTERM): finished work is kept; run the same command again to resume"], err
    assert seen["finished"] is None  # not finished, and said so
    assert set(again).isdisjoint(first[:2])  # the two replies received before are not bought again
    final = Run.open(run.path)
    assert final.manifest["evaluations"]["s"]["finished"] and final.scores("s")["num_images"] == 6


# -- 35.8: records whole or not at all -----------------------------------------------------------------

def _limit_file_size(limit: int):
    """A child process whose files cannot grow past ``limit`` bytes (RLIMIT_FSIZE): writes past it are cut
    short, then fail with EFBIG, as on a full disk, without needing one."""
    def apply():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # the error, not the signal's default (death)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_write_cut_short_leaves_no_torn_line_and_names_the_file(tmp_path):
    run = _run_with_images(tmp_path / "run", limit=8)
    with serve(_reply, models=["gpt-4o"]) as server:
        argv = [sys.executable, "-m", "t2ireason.cli", *_evaluate_argv(run, server, "--no-cache", "--chunk-size", "1")]
        proc = subprocess.run(argv, env=_env(OPENAI_API_KEY="k"), capture_output=True, text=True, timeout=300,
                              preexec_fn=_limit_file_size(5000))
        lines = [x for x in proc.stderr.splitlines() if x.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
        folder = run.evaluation_dir("s")
        assert lines[0].startswith(f"error: cannot write {folder}/") and "File too large" in lines[0], lines
        results = folder / "results.jsonl"
        text = results.read_text() if results.is_file() else ""
        assert text == "" or text.endswith("\n")
        kept = [json.loads(x) for x in text.splitlines()]  # every line whole
        assert all(x["key"] for x in kept)
        journal = folder / "replies.jsonl"
        assert not journal.is_file() or journal.read_bytes().endswith(b"\n")
        done = subprocess.run(argv, env=_env(OPENAI_API_KEY="k"), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert Run.open(run.path).scores("s")["num_images"] == 8


def _tmpfs(folder: Path, size: str):
    folder.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"mounting a small tmpfs needs root: {proc.stderr.decode().strip()}")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a tmpfs is Linux's")
def test_a_full_disk_is_one_line_naming_the_file_and_freeing_space_lets_it_finish(tmp_path):
    """A real full disk (a small tmpfs), holding the run and its response cache."""
    disk = tmp_path / "disk"
    _tmpfs(disk, "8m")
    try:
        run = _run_with_images(disk / "run", limit=15)
        cache = disk / "cache.sqlite"

        def long_reply(request):  # as long as a judgement with its reasoning, to fill the disk
            reply = _reply(request)
            return reply if not _is_image_request(request) else Answer(" " * 50_000 + reply.text)

        filler = disk / "filler"  # (greedy sampling: the replies go to the cache too)
        with serve(long_reply, models=["test"]) as server:
            argv = ["evaluate", "--run", str(run.path), "--judge", f"openai:test@{server.base_url}", "--options",
                    STRUCTURED, "--judge-kwargs", '{"sampling": {"temperature": 0}}', "--name", "s", "--no-progress",
                    "--chunk-size", "2", "--cache", str(cache)]
            free = os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize
            filler.write_bytes(b"\0" * max(0, free - 120_000))  # about 120 KB left
            proc = subprocess.run([sys.executable, "-m", "t2ireason.cli", *argv], env=_env(OPENAI_API_KEY="k"),
                                  capture_output=True, text=True, timeout=300)
            lines = [x for x in proc.stderr.splitlines() if x.strip()]
            assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
            assert str(disk) in lines[0] and ("full" in lines[0] or "No space left" in lines[0]), lines
            results = run.evaluation_dir("s") / "results.jsonl"
            text = results.read_text() if results.is_file() else ""
            assert text == "" or text.endswith("\n")
            assert all(json.loads(x)["key"] for x in text.splitlines())
            filler.unlink()  # space freed: the same command finishes
            done = subprocess.run([sys.executable, "-m", "t2ireason.cli", *argv], env=_env(OPENAI_API_KEY="k"),
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
        assert Run.open(run.path).scores("s")["num_images"] == 15
    finally:
        subprocess.run(["umount", "-l", str(disk)], capture_output=True)


def test_a_torn_last_line_of_an_older_run_is_reported_and_cut(tmp_path, caplog):
    from t2ireason.judges.scripted import ScriptedJudge

    run = _run_with_images(tmp_path / "run", limit=4)
    judge = ScriptedJudge(lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]}))
    run.evaluate(judge, options={"structured_output": True}, name="s", cache=False, progress=False)
    file = run.evaluation_dir("s") / "results.jsonl"
    whole = file.read_text().splitlines(keepends=True)
    file.write_text("".join(whole[:-1]) + whole[-1][:40])  # as an older version left a crash mid-write
    (run.evaluation_dir("s") / "scores.json").unlink()
    with caplog.at_level("WARNING"):
        assert len(run.results("s")) == 3  # read as it is: the torn line left out
    assert f"{file} ends with a torn line" in caplog.text
    assert file.read_text().endswith(whole[-1][:40])  # a reader changes nothing
    asked = len(judge.requests)
    run.evaluate(judge, options={"structured_output": True}, name="s", cache=False, progress=False)
    assert file.read_text().count("\n") == 4 and all(json.loads(x) for x in file.read_text().splitlines())
    assert len(judge.requests) == asked + 1  # the torn line's image, scored again


def test_a_damaged_line_before_the_last_is_an_error_not_a_silent_loss(tmp_path):
    from t2ireason.judges.scripted import ScriptedJudge
    from t2ireason.runs import RunError

    run = _run_with_images(tmp_path / "run", limit=4)
    judge = ScriptedJudge(lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]}))
    run.evaluate(judge, options={"structured_output": True}, name="s", cache=False, progress=False)
    file = run.evaluation_dir("s") / "results.jsonl"
    lines = file.read_text().splitlines(keepends=True)
    file.write_text(lines[0] + "{not json\n" + "".join(lines[1:]))
    before = file.read_bytes()
    with pytest.raises(RunError, match=rf"{file}, line 2, is not a JSON record"):
        run.results("s")
    assert file.read_bytes() == before  # nothing after it was cut off


# -- 34.2: nothing created before an error -------------------------------------------------------------

def _images(folder: Path, limit: int = 2) -> Path:
    from t2ireason.data import load_rows

    bench = get_benchmark("r2i-bench")
    for row in load_rows(bench, None, None, limit=limit):
        path = folder / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16)).save(path)
    return folder


def test_evaluate_with_no_key_or_a_judge_that_cannot_score_creates_nothing(tmp_path, capsys):
    images = _images(tmp_path / "images")
    run = tmp_path / "run"
    base = ["evaluate", "--run", str(run), "--benchmark", "r2i-bench", "--limit", "2", "--images", str(images),
            "--no-progress"]
    env = {k: v for k, v in _env().items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "t2ireason.cli", *base, "--judge", "openai:gpt-4o"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "no API key for 'gpt-4o'" in proc.stderr, proc.stderr
    assert not run.exists()  # no run.json, rows.parquet or .locks/
    refusing = lambda r: Fail(400, "this model does not take image input") if r.image_urls else Answer("ok")  # noqa: E731
    with serve(refusing) as server:
        assert cli.main([*base, "--judge", f"openai:test-model@{server.base_url}", "--no-cache"]) == 2
    assert "cannot answer a request with an image" in capsys.readouterr().err
    assert not run.exists()


def test_export_to_a_malformed_repository_id_writes_nothing(tmp_path, capsys):
    from t2ireason.judges.scripted import ScriptedJudge

    run = _run_with_images(tmp_path / "run", limit=2)
    run.evaluate(ScriptedJudge(lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]})),
                 options={"structured_output": True}, name="s", cache=False, progress=False)
    out = tmp_path / "export"
    code = cli.main(["export", str(run.path), "--out", str(out), "--license", "cc-by-4.0", "--repo", "<org>/x"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "'<org>/x' is not a Hub repository id" in err, err
    assert not out.exists()


# -- 34.9: files a team on a shared file system can read -----------------------------------------------

@pytest.fixture
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


@pytest.mark.parametrize("umask", [0o022, 0o027], indirect=True, ids=["022", "027"])
def test_run_files_and_built_datasets_honour_the_umask(tmp_path, umask):
    from t2ireason.build import build_dataset
    from t2ireason.data import plan_jobs
    from t2ireason.generation import GenerationConfig, save_image_atomic, write_manifest
    from t2ireason.judges.scripted import ScriptedJudge

    run = Run.create(tmp_path / "run", "r2i-bench", limit=3)
    jobs = plan_jobs("r2i-bench", run.rows())
    for job in jobs:
        save_image_atomic(Image.new("RGB", (16, 16)), run.images_dir / job.file)
    write_manifest(jobs, GenerationConfig(model="m"), run.images_dir)
    run.evaluate(ScriptedJudge(lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]})),
                 options={"structured_output": True}, name="s", cache=False, progress=False)
    bench = get_benchmark("r2i-bench")
    built = tmp_path / "built"
    build_dataset(bench, bench.sample_path(), built, license=None if bench.license else "cc-by-4.0")
    files = [run.path / "run.json", run.path / "rows.parquet", run.images_dir / "metadata.parquet",
             run.images_dir / jobs[0].file, run.evaluation_dir("s") / "scores.json",
             run.evaluation_dir("s") / "results.jsonl", *[p for p in built.rglob("*") if p.is_file()]]
    folders = [built, *[p for p in built.rglob("*") if p.is_dir()], run.evaluation_dir("s")]
    assert {f"{p.relative_to(tmp_path)}: {p.stat().st_mode & 0o777:o}" for p in files} == {
        f"{p.relative_to(tmp_path)}: {0o666 & ~umask:o}" for p in files}
    assert {f"{p.relative_to(tmp_path)}: {p.stat().st_mode & 0o777:o}" for p in folders} == {
        f"{p.relative_to(tmp_path)}: {0o777 & ~umask:o}" for p in folders}


def test_a_damaged_journal_is_said_before_the_judge_is_loaded_or_asked(tmp_path):
    """A reply journal changed by something else: one error naming it, before the judge is loaded, probed or
    left open, and before the evaluation is recorded as started."""
    run = _run_with_images(tmp_path / "run")
    folder = run.evaluation_dir("s")
    folder.mkdir(parents=True)
    (folder / "replies.jsonl").write_text('{"key": "k"}\n{"key": "k", "reply": {"text": "x"}}\n')
    with serve(_reply) as server:
        with pytest.raises(ValueError, match=r"replies\.jsonl, line 1, is not a journaled reply"):
            run.evaluate(f"openai:gpt-4o@{server.base_url}", options=json.loads(STRUCTURED), name="s",
                         judge_kwargs={"api_key": "sk-test"}, progress=False, cache=False)
        assert server.received == 0  # not even the pre-flight's probe
    assert "s" not in Run.open(run.path).manifest["evaluations"]


def test_a_judge_loaded_for_an_evaluation_is_closed_whatever_ends_it(tmp_path, monkeypatch):
    """run.json locked by another process past its time-out, after the judge was loaded and probed: the
    error is raised and the judge the evaluation loaded is closed (its connections and event loop ended)."""
    import t2ireason.judges as judges
    from t2ireason.runs import RunError

    run = _run_with_images(tmp_path / "run")
    loaded = []
    load = judges.load_judge
    monkeypatch.setattr(judges, "load_judge", lambda *a, **k: loaded.append(load(*a, **k)) or loaded[-1])

    def locked(change):
        raise RunError(f"{run.path / 'run.json'} stayed locked by another process")

    monkeypatch.setattr(run, "update", locked)
    with serve(_reply) as server:
        with pytest.raises(RunError, match="stayed locked"):
            run.evaluate(f"openai:gpt-4o@{server.base_url}", options=json.loads(STRUCTURED), name="s",
                         judge_kwargs={"api_key": "sk-test"}, progress=False, cache=False)
        assert server.received  # loaded and probed before the manifest was to record it
    assert len(loaded) == 1 and loaded[0].transport.closed


def test_scored_images_are_not_held_in_memory_once_on_disk(tmp_path, monkeypatch):
    """Issue 51: each chunk's results go to results.jsonl and are not held besides (the evaluation's memory
    grew with every image's questions and replies); what is left when scoring ends, before the final merge
    reads the file back, holds no image's record."""
    import tracemalloc

    from t2ireason import run_files
    from t2ireason.judges.scripted import ScriptedJudge

    run = _run_with_images(tmp_path / "run", limit=12)
    live = {}
    finish = run_files.EvaluationFiles.finish

    def at_the_end_of_scoring(self, order):
        snapshot = tracemalloc.take_snapshot().filter_traces([tracemalloc.Filter(True, "*/t2ireason/files.py")])
        # the records made for results.jsonl (jsonable, in files.py) by _score that are still alive
        live["bytes"] = sum(s.size for s in snapshot.statistics("traceback")
                            if any("run_evaluation.py" in f.filename for f in s.traceback)
                            and not any(f.filename.endswith("/runs.py") for f in s.traceback))  # not the rows
        return finish(self, order)

    monkeypatch.setattr(run_files.EvaluationFiles, "finish", at_the_end_of_scoring)
    reply = lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]})  # noqa: E731
    tracemalloc.start(20)
    try:
        scores = run.evaluate(ScriptedJudge(reply), options={"structured_output": True}, name="s", cache=False,
                              chunk_size=2, progress=False)
    finally:
        tracemalloc.stop()
    assert scores["num_images"] == 12 and scores["num_failed"] < 12
    assert live["bytes"] < 2_000, live  # 12 images' records are about 20 KB


def test_memory_freed_by_each_saved_chunk_is_given_back_to_the_system(tmp_path, monkeypatch):
    """Issue 51: the images, request bodies and replies of a chunk are freed on the window's threads, whose malloc
    arenas kept them resident (about 10 KB an image scored): glibc is asked to give them back once a chunk is on
    disk, and on glibc (the CI's Linux) the call is there to make."""
    import platform

    from t2ireason import run_evaluation
    from t2ireason.judges.scripted import ScriptedJudge

    if platform.libc_ver()[0] == "glibc":
        assert run_evaluation._malloc_trim() is not None
    trims = []
    monkeypatch.setattr(run_evaluation, "_malloc_trim", lambda: lambda pad: trims.append(pad))
    monkeypatch.setattr(run_evaluation, "_last_trim", {"at": -math.inf, "seconds": 0.0})
    run = _run_with_images(tmp_path / "run", limit=12)
    reply = lambda r: json.dumps({k: 1 for k in r.json_schema["properties"]})  # noqa: E731
    scores = run.evaluate(ScriptedJudge(reply), options={"structured_output": True}, name="s", cache=False,
                          chunk_size=2, progress=False)
    assert scores["num_images"] == 12 and trims == [0] * 6  # one a chunk


def test_a_trim_that_takes_long_is_not_repeated_until_twenty_times_its_time_has_passed(monkeypatch):
    """In a process with a large heap (a test session, a training loop) a trim takes 10 to 80 ms: trimming after
    every chunk would cost more than it gives, so at most 5% of the time goes to it."""
    from t2ireason import run_evaluation

    trims = []
    monkeypatch.setattr(run_evaluation, "_malloc_trim", lambda: lambda pad: (trims.append(pad), time.sleep(0.01)))
    monkeypatch.setattr(run_evaluation, "_last_trim", {"at": -math.inf, "seconds": 0.0})
    run_evaluation.give_back_freed_memory()
    run_evaluation.give_back_freed_memory()  # within 20 x 10 ms of the first: not made
    assert len(trims) == 1
    monkeypatch.setitem(run_evaluation._last_trim, "at", time.monotonic() - 0.3)
    run_evaluation.give_back_freed_memory()
    assert len(trims) == 2


def test_finish_puts_the_results_in_order_reading_them_whole_only_when_it_must(tmp_path, caplog):
    """Issue 51: the end of an evaluation reads results.jsonl a line at a time; the records are read whole (and
    the file written again) only when it is out of order, holds an image twice (the last line wins) or ends in a
    torn line (left out and said)."""
    from t2ireason.run_files import EvaluationFiles

    files = EvaluationFiles(tmp_path / "e")
    files.folder.mkdir()
    files.results.write_text('{"key": "a", "score": 1}\n{"key": "b", "score": 2}\n')
    written = files.results.stat().st_ino
    files.finish(["a", "b"])
    assert files.results.stat().st_ino == written  # in order, once each: left as it is
    assert list(files.in_order()) == [("a", {"score": 1}), ("b", {"score": 2})]

    files.results.write_text('{"key": "b", "score": 2}\n{"key": "a", "score": 1}\n{"key": "a", "score": 3}\n'
                             '{"key": "c", "sco')
    files.finish(["a", "b", "c"])
    assert list(files.in_order()) == [("a", {"score": 3}), ("b", {"score": 2})]
    assert "torn line" in caplog.text
