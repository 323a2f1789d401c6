"""A Slurm stand-in for the tests: ``sbatch``, ``srun``, ``scontrol`` and ``squeue`` on PATH.

``sbatch`` records its arguments and the script, then runs the job at once, in this process's turn: each
index of the ``#SBATCH --array`` with ``SLURM_ARRAY_TASK_ID``, ``SLURM_JOB_ID`` and ``--export``'s
variables set, as Slurm would. A job runs only when its ``--dependency`` is satisfied (``afterok``: the job
completed; ``afterany``: it ended); otherwise it never runs, like Slurm's DependencyNeverSatisfied.

Pre-emption: with ``FAKE_SLURM_PREEMPT=<job name part>:<array index>:<file>``, the first run of that array
task is killed (SIGKILL to its process group, as at the end of Slurm's grace time) as soon as ``<file>``
grows (the task has started working), then run again if the script asks for ``--requeue``, else failed.

Everything is logged under ``$FAKE_SLURM_STATE``: ``jobs.jsonl`` (one line per job: id, arguments,
dependencies, script, state, per-task attempts) and ``job-<id>.sh``.
"""

import json
import os
import re
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

STATE = Path(os.environ.get("FAKE_SLURM_STATE", "/tmp/fake-slurm"))


def _jobs() -> list[dict]:
    path = STATE / "jobs.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.is_file() else []


def _satisfied(dependency: str | None) -> bool:
    states = {str(j["id"]): j["state"] for j in _jobs()}
    for part in filter(None, (dependency or "").split(",")):
        kind, _, ids = part.partition(":")
        for job in ids.split(":"):
            if kind == "afterok" and states.get(job) != "COMPLETED":
                return False
            if kind == "afterany" and states.get(job) not in ("COMPLETED", "FAILED"):
                return False
    return True


def _run_task(script: Path, env: dict, preempt: tuple[str, str, Path] | None, output: str) -> tuple[int, bool]:
    """Run one array task, its output into ``output`` (``#SBATCH --output`` with %A and %a filled in);
    returns (exit code, whether it was pre-empted)."""
    log = Path(output.replace("%A", env["SLURM_ARRAY_JOB_ID"]).replace("%a", env["SLURM_ARRAY_TASK_ID"]))
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a") as out:
        proc = subprocess.Popen(["bash", str(script)], env=env, start_new_session=True, stdout=out,
                                stderr=subprocess.STDOUT)
    if preempt is None:
        return proc.wait(), False
    watched = preempt[2]
    start = watched.stat().st_size if watched.is_file() else 0
    while proc.poll() is None:
        if watched.is_file() and watched.stat().st_size > start:
            time.sleep(0.3)
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return -9, True
        time.sleep(0.05)
    return proc.returncode, False


def sbatch(args: list[str]) -> int:
    STATE.mkdir(parents=True, exist_ok=True)
    script_path = Path(args[-1])
    text = script_path.read_text()
    job_id = 1000 + len(_jobs())
    saved = STATE / f"job-{job_id}.sh"
    saved.write_text(text)
    options = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", text, re.M))
    dependency = next((a.split("=", 1)[1] for a in args[:-1] if a.startswith("--dependency=")), None)
    export = next((a.split("=", 1)[1] for a in args[:-1] if a.startswith("--export=")), "ALL")
    first, last = (int(x) for x in options.get("array", "0-0").split("%")[0].split("-"))
    record = {"id": job_id, "args": args[:-1], "name": options.get("job-name"), "dependency": dependency,
              "options": options, "state": "PENDING", "tasks": {}}
    print(f"Submitted batch job {job_id}", flush=True)
    if not _satisfied(dependency):
        record["state"] = "DEPENDENCY_NEVER_SATISFIED"
    else:
        env = {**os.environ, "SLURM_JOB_ID": str(job_id), "SLURM_ARRAY_JOB_ID": str(job_id),
               "SLURM_NODELIST": "localhost", "SLURM_JOB_NAME": options.get("job-name", "")}
        env.update(kv.split("=", 1) for kv in export.split(",") if "=" in kv)
        preempt = os.environ.get("FAKE_SLURM_PREEMPT")
        target = preempt.split(":", 2) if preempt else None
        output = options.get("output", str(STATE / "slurm-%A_%a.out"))

        def run(index: int) -> list:
            task_env = {**env, "SLURM_ARRAY_TASK_ID": str(index)}
            hit = target and target[0] in (options.get("job-name") or "") and int(target[1]) == index
            code, preempted = _run_task(saved, task_env, (target[0], target[1], Path(target[2])) if hit else None,
                                        output)
            attempts = ["PREEMPTED" if preempted else code]
            if preempted and "requeue" in options:
                code, _ = _run_task(saved, {**task_env, "SLURM_RESTART_COUNT": "1"}, None, output)
                attempts.append(code)
            return attempts

        with ThreadPoolExecutor(max_workers=last - first + 1) as pool:  # the array's tasks run at once
            record["tasks"] = dict(zip(map(str, range(first, last + 1)), pool.map(run, range(first, last + 1))))
        ok = all(attempts[-1] == 0 for attempts in record["tasks"].values())
        record["state"] = "COMPLETED" if ok else "FAILED"
    with (STATE / "jobs.jsonl").open("a") as f:
        f.write(json.dumps(record) + "\n")
    return 0


def srun(args: list[str]) -> int:
    """``srun [-l] [-n N] [--opt=value] command...``: run the command (one task, this node)."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-n", "-N", "-c") else 1
    return subprocess.call(args[i:])


def scontrol(args: list[str]) -> int:
    if args[:2] == ["show", "hostnames"]:
        print("localhost")
        return 0
    with (STATE / "scontrol.log").open("a") as f:
        f.write(" ".join(args) + "\n")
    return 0


def squeue(args: list[str]) -> int:
    """The jobs listed in ``$FAKE_SLURM_STATE/queue`` (one id a line) are still queued or running."""
    queue = STATE / "queue"
    if queue.is_file():
        sys.stdout.write(queue.read_text())
    return 0


def install(bin_dir: Path, state: Path) -> dict[str, str]:
    """Executables ``sbatch``, ``srun``, ``scontrol``, ``squeue`` in ``bin_dir``; returns the environment
    variables to set (PATH first)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name in ("sbatch", "srun", "scontrol", "squeue"):
        path = bin_dir / name
        path.write_text(f"#!/bin/sh\nexec {sys.executable} {Path(__file__).resolve()} {name} \"$@\"\n")
        path.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "FAKE_SLURM_STATE": str(state)}


if __name__ == "__main__":
    command = sys.argv[1]
    sys.exit({"sbatch": sbatch, "srun": srun, "scontrol": scontrol, "squeue": squeue}[command](sys.argv[2:]))
