"""The engine on datatrove's executors: the same release however the work is split into tasks and worker
processes, after workers are killed at random moments, on a (fake) Slurm cluster with a pre-empted task,
and through datatrove's inference runner against a local OpenAI-compatible server."""

import contextlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow.parquet as pq
import pytest

from t2ireason.engine import EngineConfig, EngineError, Local, Server, Slurm, Sources, Workdir, run_engine
from t2ireason.judges.scripted import ScriptedJudge

from . import fake_slurm
from .conftest import read_release, run_scripted, same_release
from .scripted import THRESHOLDS, Replies, ScriptedDrawer, input_paths, make_inputs

pytestmark = pytest.mark.slow  # worker processes

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


@pytest.fixture
def worker_env(monkeypatch):
    """What worker processes (forkserver children, Slurm jobs) need to import the scripted judge and drawer."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(ROOT), str(TESTS), os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("OMP_NUM_THREADS", "1")


@pytest.fixture(scope="module")
def scripted_reference(tmp_path_factory):
    """The release with the model-free drawer, one task on one worker, in this process."""
    root = tmp_path_factory.mktemp("scripted-reference")
    make_inputs(root / "inputs")
    result, _ = run_scripted(root, ScriptedDrawer(), executor=Local(tasks=1, workers=1))
    assert result.complete
    return SimpleNamespace(root=root, result=result, rows=read_release(root / "out"),
                           provenance=read_release(root / "out", "provenance"))


def test_four_tasks_on_two_workers_make_the_same_release(scripted_reference, tmp_path, worker_env):
    """tasks 4 / workers 2 against the reference's tasks 1 / workers 1: the same release, field for field and
    pixel for pixel, the work done by two worker processes, each keeping one GPU of its own, each stage's
    statistics the same."""
    make_inputs(tmp_path / "inputs")
    pids, gpus = tmp_path / "pids", tmp_path / "gpus"
    result, _ = run_scripted(tmp_path, ScriptedDrawer(), replies=Replies(pids=str(pids), gpus=str(gpus)),
                             executor=Local(tasks=4, workers=2, gpus=["3", "5"]))
    assert result.complete and [s.tasks for s in result.stages] == [4] * 9 + [1]
    same_release(tmp_path / "out", scripted_reference)
    workers = set(pids.read_text().split())
    assert len(workers) == 2 and str(os.getpid()) not in workers
    assert {w for s in result.stages[:-1] for _, w, _, _ in s.timeline} == {0, 1}
    gpu_of = dict(line.split() for line in set(gpus.read_text().splitlines()))  # a worker's GPU never changes
    assert gpu_of.keys() == workers and sorted(gpu_of.values()) == ["3", "5"]
    ours = {s.stage: s.stats for s in result.stages}
    theirs = {s.stage: s.stats for s in scripted_reference.result.stages}
    for stage in ("prompts", "quality", "scoring", "captions", "gcot", "original", "translate"):
        for key in ("records in", "kept", "dropped", "questions", "requests"):
            assert ours[stage].get(key) == theirs[stage].get(key), (stage, key)


def _readable(work: Path) -> None:
    """Every shard file of every stage reads whole: a kill never leaves a partial one under its name."""
    for path in work.glob("[0-9][0-9]-*/shard-*.parquet"):
        pq.read_table(path)


@contextlib.contextmanager
def _running(command: list[str], env: dict):
    """The command in a session of its own; whatever is left of it at the end is killed (a failed test
    leaves no worker behind)."""
    proc = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        yield proc
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


_MAIN_JUDGE_SCRIPT = """
import sys
import time
from pathlib import Path

from engine.scripted import THRESHOLDS, ScriptedDrawer, input_paths, reply
from t2ireason.engine import EngineConfig, Local, Sources, run_engine
from t2ireason.judges.scripted import ScriptedJudge


class MyReplies:  # defined in the user's script: its workers have no such __main__
    def __call__(self, request):
        time.monotonic()  # a global of this script
        return reply(request)


if __name__ == "__main__":
    root = Path(sys.argv[1])
    result = run_engine(root / "work", Sources(**input_paths(root / "inputs")),
                        EngineConfig(shard_size=5, thresholds=THRESHOLDS, review_size=3),
                        judge=ScriptedJudge(replies=MyReplies()), drawer=ScriptedDrawer(),
                        executor=Local(workers=2), out=root / "out", license="apache-2.0", progress=False)
    print([s.failures for s in result.stages])
    sys.exit(0 if result.complete else 1)
"""


def test_a_judge_defined_in_the_users_script_runs_in_the_workers(scripted_reference, tmp_path, worker_env):
    """A judge class written in the user's own script (``__main__``), using that script's imports, runs in
    the worker processes: its globals travel with it."""
    make_inputs(tmp_path / "inputs")
    script = tmp_path / "curate.py"
    script.write_text(_MAIN_JUDGE_SCRIPT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    same_release(tmp_path / "out", scripted_reference)


def test_kill_9_of_workers_at_random_moments(scripted_reference, tmp_path):
    """Five runs, each with a worker killed (SIGKILL) at a random moment: each run ends by itself, the killed
    task left incomplete while the others go on; then the same command: nothing lost, nothing twice, the
    same release, and no temporary file of a killed write read or left behind."""
    make_inputs(tmp_path / "inputs")
    pids = tmp_path / "pids"
    command = [sys.executable, str(TESTS / "engine" / "_engine_run.py"), str(tmp_path), "--workers", "2",
               "--shard-size", "8", "--delay", "0.04", "--pids", str(pids)]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(TESTS)]), "OMP_NUM_THREADS": "1"}
    rng = random.Random(2024)
    killed = 0
    for _ in range(5):
        pids.write_text("")
        with _running(command, env) as proc:
            deadline = time.monotonic() + 60
            while not pids.read_text().strip() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)  # until a worker answers its first question
            time.sleep(rng.uniform(0.0, 1.5))
            victims = [int(p) for p in pids.read_text().split()]
            if victims and proc.poll() is None:
                try:
                    os.kill(victims[-1], signal.SIGKILL)
                    killed += 1
                except ProcessLookupError:
                    pass
            out, _ = proc.communicate(timeout=120)  # the run ends by itself: no wait for the dead worker's task
        assert proc.returncode in (0, 1), out
        _readable(tmp_path / "work")
    assert killed >= 3
    # a partial write of a killed task: a temporary file, never a shard under its name; never read
    work = Workdir(tmp_path / "work")
    (work.stage_dir("quality") / ".tmp-killed.part").write_bytes(b"PAR1 half a parquet file")
    (work.root / "images" / ".tmp-killed.part").write_bytes(b"\x89PNG half")
    with _running(command[:-4], env) as final:
        out, _ = final.communicate(timeout=180)
    assert final.returncode == 0, out
    same_release(tmp_path / "out", scripted_reference)
    assert not list(work.root.rglob(".tmp-*")) and not list((tmp_path / "out").rglob(".tmp-*"))
    assert len(read_release(tmp_path / "out", "provenance")) == 24


def test_slurm_job_arrays_with_a_preempted_task(scripted_reference, tmp_path, monkeypatch, worker_env):
    """The whole engine submitted as Slurm job arrays to a fake sbatch that runs them here: each stage's
    array after the one before (afterok), the quality stage's first task killed mid-work (pre-empted) and
    requeued; the same release. Then the same command again submits nothing, and a run is refused while
    jobs of the work folder are still queued."""
    make_inputs(tmp_path / "inputs")
    state, started = tmp_path / "slurm", tmp_path / "quality-started"
    for key, value in fake_slurm.install(tmp_path / "bin", state).items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("FAKE_SLURM_PREEMPT", f"quality:0:{started}")
    slurm = Slurm(partition="gpu", time="2:00:00", tasks=2, gpus_per_task=1, cpus_per_task=4, mem_per_cpu_gb=3,
                  sbatch_args={"account": "t2i", "exclusive": ""}, logs=str(tmp_path / "slurm-logs"))

    def submit():
        return run_engine(tmp_path / "work", Sources(**input_paths(tmp_path / "inputs")),
                          EngineConfig(shard_size=8, thresholds=THRESHOLDS, review_size=3),
                          judge=ScriptedJudge(replies=Replies(delay=0.1, pids=str(started), stage="quality")),
                          cache=tmp_path / "cache.sqlite", drawer=ScriptedDrawer(), executor=slurm,
                          out=tmp_path / "out", license="apache-2.0", progress=False)

    started.write_text("")
    result = submit()
    jobs = [json.loads(line) for line in (state / "jobs.jsonl").read_text().splitlines()]
    stages = [j for j in jobs if not j["options"].get("job-name", "").endswith(("export", "release"))
              and "merge_stats" not in (state / f"job-{j['id']}.sh").read_text()]
    names = [j["name"] for j in stages]
    assert names == [f"flux-engine-{s}" for s in ("prompts", "synthesis", "quality", "scoring", "captions", "gcot",
                                                  "original", "translate")]
    by_name = {j["name"]: j for j in jobs if "merge_stats" not in (state / f"job-{j['id']}.sh").read_text()}
    chain = [by_name[n] for n in (*names, "flux-engine-export", "flux-engine-release")]
    assert chain[0]["dependency"] is None
    for before, after in zip(chain, chain[1:]):  # each array after the one before, only if it succeeded
        assert after["dependency"] == f"afterok:{before['id']}"
    assert all(j["state"] == "COMPLETED" for j in jobs), [(j["name"], j["state"], j["tasks"]) for j in jobs]
    assert by_name["flux-engine-quality"]["tasks"] == {"0": ["PREEMPTED", 0], "1": [0]}
    assert result.jobs == [str(j["id"]) for j in chain]

    script = (state / f"job-{by_name['flux-engine-quality']['id']}.sh").read_text()
    work = tmp_path / "work"
    for line in ("#SBATCH --array=0-1", "#SBATCH --partition=gpu", "#SBATCH --time=2:00:00", "#SBATCH --gpus=1",
                 "#SBATCH --cpus-per-task=4", "#SBATCH --mem-per-cpu=3G", "#SBATCH --requeue",
                 "#SBATCH --account=t2i", "#SBATCH --exclusive", "#SBATCH --job-name=flux-engine-quality",
                 f"#SBATCH --output={tmp_path / 'slurm-logs' / 'quality'}/%A_%a.out",
                 f'export PATH="{Path(sys.executable).parent}:$PATH"',
                 f"launch_pickled_pipeline {work / '03-quality' / 'logs' / 'executor.pik'}"):
        assert line in script, line
    export = (state / f"job-{by_name['flux-engine-release']['id']}.sh").read_text()
    assert "#SBATCH --array=0-0" in export and "--gpus" not in export  # the export needs no GPU
    same_release(tmp_path / "out", scripted_reference)
    summary = {s.stage: s for s in submit().stages}  # everything completed: nothing is submitted again
    assert len((state / "jobs.jsonl").read_text().splitlines()) == len(jobs)
    assert summary["quality"].complete and summary["quality"].stats["records in"] == 22

    (state / "queue").write_text(f"{chain[3]['id']}\n")  # a job of this work folder still in the queue
    with pytest.raises(EngineError, match=rf"jobs {chain[3]['id']} of this work folder are still queued"):
        submit()


def test_inference_runner_against_a_local_endpoint(tmp_path):
    """The prompts and quality stages through datatrove's inference runner (server_type "endpoint") against
    the project's OpenAI-compatible test server: replies parsed and re-asked as on the judge path, a server
    error counted (datatrove's failed requests and the engine's backend errors) and either left for the next
    run or recorded on its record, never dropped silently."""
    from t2ireason.testing_http import Fail, serve

    (tmp_path / "captions.txt").write_text("".join(f"laion caption {i}\n" for i in range(6)))
    healthy = {"value": False}

    def behave(req):
        conversation = json.dumps(req.messages)
        if "image_url" in conversation:  # the quality filter looks at the image
            return json.dumps({"blur": False, "artifacts": False, "structural_errors": False, "verdict": "accept",
                               "reason": "clean"})
        caption = re.search(r"laion caption \d", conversation).group(0)
        if caption == "laion caption 2" and not healthy["value"]:
            return Fail(503, "overloaded")
        if caption == "laion caption 4":
            return "I cannot tell."
        return json.dumps({"prompt": f"A detailed photograph of {caption}."})

    def run(root, **kw):
        return run_engine(root / "work", Sources(captions=str(tmp_path / "captions.txt")),
                          EngineConfig(shard_size=3, **kw), judge=f"openai:test-model@{server.base_url}",
                          cache=root / "cache.sqlite", server=Server("endpoint", {"max_concurrent_generations": 4}),
                          drawer=ScriptedDrawer(), until="quality", progress=False)

    with serve(behave) as server:
        result = run(tmp_path / "retry")
        prompts = {s.stage: s for s in result.stages}["prompts"]
        assert not result.complete and prompts.completed == 1  # the task of shard 1 completed
        (why,) = prompts.failures.values()
        assert "ShardsLeft" in why and "503" in why
        sent = len(server.requests)
        healthy["value"] = True  # the server recovers: the same command finishes the task
        result = run(tmp_path / "retry")
        assert result.complete
        rewrites = [r.text for r in server.requests[sent:] if "image_url" not in json.dumps(r.messages)]
        assert len(rewrites) == 1 and '"laion caption 2"' in rewrites[0]  # the rest came from the response cache
        records = {r["id"]: r for r in Workdir(tmp_path / "retry" / "work").records("quality")}
        assert records["laion-00000002"]["prompt"] == "A detailed photograph of laion caption 2."

        healthy["value"] = False
        result = run(tmp_path / "record", on_judge_error="record")
        assert result.complete
        stats = {s.stage: s.stats for s in result.stages}
        assert stats["prompts"]["backend errors"] == 1 and stats["prompts"]["unparsable answers"] == 1
        assert stats["prompts"]["failed_requests"] == 1 and stats["prompts"]["successful_requests"] == 7
        assert stats["prompts"]["re-asks"] == 2 and stats["quality"]["records in"] == 4
        records = {r["id"]: r for r in Workdir(tmp_path / "record" / "work").records("quality")}
        assert len(records) == 6  # failures are recorded on their records, never dropped silently
        failed = records["laion-00000002"]["events"]
        assert records["laion-00000002"]["dropped_by"] == "prompts" and failed[0]["action"] == "failed"
        assert "503" in failed[0]["detail"]
        unparsable = json.loads(records["laion-00000004"]["events"][0]["detail"])
        assert unparsable["replies"] == ["I cannot tell."] * 3
        assert [e["action"] for e in records["laion-00000000"]["events"]] == ["passed"]


def test_the_inference_runner_runs_where_an_event_loop_is_running(tmp_path):
    """As found (a test order in which playwright's sync API had left a loop running): from a Jupyter notebook,
    whose cells run inside an event loop, every task of the prompts stage failed with "asyncio.run() cannot be
    called from a running event loop" (datatrove's inference runner starts its own)."""
    import asyncio
    import concurrent.futures

    from t2ireason.testing_http import serve

    (tmp_path / "captions.txt").write_text("".join(f"laion caption {i}\n" for i in range(3)))

    def behave(req):
        caption = re.search(r"laion caption \d", json.dumps(req.messages))[0]
        return json.dumps({"prompt": f"A photograph of {caption}."})

    async def notebook_cell():  # a cell's code calls the engine as it is, without await
        return run_engine(tmp_path / "work", Sources(captions=str(tmp_path / "captions.txt")),
                          EngineConfig(shard_size=3), judge=f"openai:test-model@{server.base_url}",
                          cache=tmp_path / "cache.sqlite", server=Server("endpoint", {}), drawer=ScriptedDrawer(),
                          until="prompts", progress=False)

    with serve(behave) as server, concurrent.futures.ThreadPoolExecutor(1) as notebook:
        # the notebook's loop in a thread of its own: this one may run playwright's already
        result = notebook.submit(asyncio.run, notebook_cell()).result()
    prompts = {s.stage: s for s in result.stages}["prompts"]
    assert result.complete and prompts.completed == 1 and not prompts.failures, prompts.failures
    assert len(server.requests) == 3


def test_an_export_killed_before_its_card_is_finished_by_the_same_command(scripted_reference, tmp_path):
    """The release folder holds the export's first files but no statistics yet (the export was killed):
    it is still this work folder's release, finished by the same command, not refused as someone else's."""
    import shutil

    make_inputs(tmp_path / "inputs")
    result, _ = run_scripted(tmp_path, ScriptedDrawer())
    assert result.complete
    (tmp_path / "out" / "statistics.json").unlink()
    (tmp_path / "out" / "README.md").unlink()
    shutil.rmtree(tmp_path / "work" / "09-release" / "logs" / "card" / "completions")
    result, asked = run_scripted(tmp_path, ScriptedDrawer())
    assert result.complete and not asked and result.statistics["kept"] == 18
    same_release(tmp_path / "out", scripted_reference)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "notes.txt").write_text("not a release")
    with pytest.raises(EngineError, match="is not empty and was not written by the engine"):
        run_scripted(tmp_path, ScriptedDrawer(), out="elsewhere")
