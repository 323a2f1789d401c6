"""Generation: per-image seeds, sharding over two CPU processes, resuming after a kill, the manifest."""

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from t2ireason.data import load_rows, plan_jobs
from t2ireason.generation import GenerationConfig, image_seed, is_readable_image

ROOT = Path(__file__).resolve().parents[1]
BENCH = "t2i-reasonbench"


def _env():
    # one thread per process: a thread-count change can move a pixel by one level (testing.md)
    return {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}


def _cli(model, out, *extra):
    return ["generators/generate.py", "--benchmark", BENCH, "--model", str(model), "--out", str(out),
            "--steps", "2", "--height", "64", "--width", "64", "--no-progress", *extra]


def _pixels(folder: Path) -> dict[str, np.ndarray]:
    return {p.relative_to(folder).as_posix(): np.asarray(Image.open(p))
            for p in sorted(folder.rglob("*.png"))}


def test_seeds_depend_on_the_image_not_the_run():
    rows = load_rows(BENCH)
    jobs = plan_jobs(BENCH, rows, images_per_prompt=2)
    assert len(jobs) == 2 * len(rows)
    assert jobs[0].seed == image_seed(BENCH, jobs[0].prompt_id, 0)
    # the same image gets the same seed whatever the order or subset of rows
    again = {(j.prompt_id, j.sample): j.seed for j in plan_jobs(BENCH, rows[::-1][:3], images_per_prompt=2)}
    for j in jobs:
        if (j.prompt_id, j.sample) in again:
            assert again[(j.prompt_id, j.sample)] == j.seed
    assert len({j.seed for j in jobs}) == len(jobs)
    assert plan_jobs(BENCH, rows, base_seed=1)[0].seed != jobs[0].seed
    # official layout: <dimension>/0001.png
    assert all(j.file.endswith(".png") for j in jobs)


def test_rewritten_prompts_are_joined_by_any_id_a_t2i_row_goes_by():
    """Issue 34.7: T2I-ReasonBench ids come in three forms, the row id (idiom-0001, results, manifests,
    rewrites), the release's id (1, the dataset's id column, pipeline_prompts/) and the image (idiom/0001.png):
    each is taken for the one row id, and a row left without its rewritten prompt is an error, never drawn
    from its original prompt in silence."""
    from t2ireason.benchmarks import get_benchmark

    bench = get_benchmark(BENCH)
    rows = load_rows(BENCH)
    idiom = [r for r in rows if r["dimension"] == "idiom"]
    for name in (lambda r: r["id"], lambda r: str(r["id"]), lambda r: f"idiom/{r['name']}.png",
                 lambda r: bench.row_id(r)):
        jobs = plan_jobs(BENCH, idiom, prompts={name(r): f"explicit {r['name']}" for r in idiom})
        assert [(j.prompt_id, j.prompt) for j in jobs] == [(bench.row_id(r), f"explicit {r['name']}") for r in idiom]
    ids = bench.row_ids(rows)
    assert ids.get("idiom/0002.png") == ids.get("idiom-0002") == "idiom-0002" and ids.get("idiom-0999") is None
    with pytest.raises(ValueError, match=r"t2i-reasonbench id 1 names 4 rows \(entity-0001, idiom-0001, "
                                         r"scientific-0001, textual-0001\): name each by its row id"):
        plan_jobs(BENCH, rows, prompts={r["id"]: "x" for r in rows})
    with pytest.raises(ValueError, match=r"3 of 4 rows of t2i-reasonbench have no rewritten prompt \(idiom-0002, "
                                         r"idiom-0003, idiom-0004\); the prompts given name rows such as 'idiom/0001.png'"):
        plan_jobs(BENCH, idiom, prompts={"idiom/0001.png": "x", "textual-0002": "y"})
    with pytest.raises(ValueError, match="give row idiom-0001 two different values, under 1 and 'idiom-0001'"):
        plan_jobs(BENCH, idiom, prompts={**{r["id"]: "x" for r in idiom}, "idiom-0001": "y"})


def test_the_release_pipeline_prompts_are_drawn_with_generate_prompts(tmp_path):
    """The authors' pipeline_prompts/<dimension>_pipeline_prompts.json ({"id": 1, "reason": [...],
    "reason_prompt": ...}) is a --prompts file for the rows of its dimension."""
    from t2ireason.commands.options import load_prompt_overrides as _load_prompt_overrides

    idiom = [r for r in load_rows(BENCH) if r["dimension"] == "idiom"]
    records = [{"id": r["id"], "reason": ["why"], "reason_prompt": f"explicit {r['id']}"} for r in idiom]
    (tmp_path / "idiom_pipeline_prompts.json").write_text(json.dumps(records))
    prompts = _load_prompt_overrides(str(tmp_path / "idiom_pipeline_prompts.json"))
    assert [j.prompt for j in plan_jobs(BENCH, idiom, prompts=prompts)] == [f"explicit {r['id']}" for r in idiom]
    (tmp_path / "twice.jsonl").write_text('{"id": 1, "prompt": "a"}\n{"id": 1, "prompt": "b"}\n')
    with pytest.raises(SystemExit, match="gives id 1 two different prompts"):
        _load_prompt_overrides(str(tmp_path / "twice.jsonl"))


def test_plan_refuses_duplicates_and_takes_rewritten_prompts():
    rows = load_rows(BENCH)
    with pytest.raises(ValueError, match="duplicate prompt id"):
        plan_jobs(BENCH, rows + rows[:1])
    rid = plan_jobs(BENCH, rows[:1])[0].prompt_id
    assert plan_jobs(BENCH, rows[:1], prompts={rid: "an explicit drawing"})[0].prompt == "an explicit drawing"
    with pytest.raises(ValueError, match="images_per_prompt"):
        GenerationConfig(model="x", images_per_prompt=0)


@pytest.mark.slow
def test_two_processes_make_the_same_images_as_one(tiny_models, tmp_path):
    if shutil.which("torchrun", path=str(Path(sys.executable).parent)) is None:
        pytest.fail("torchrun is not installed next to the interpreter")
    torchrun = str(Path(sys.executable).parent / "torchrun")
    one, two = tmp_path / "one", tmp_path / "two"
    subprocess.run([sys.executable, *_cli(tiny_models["sd"], one, "--images-per-prompt", "2", "--limit", "6")],
                   cwd=ROOT, env=_env(), check=True, timeout=300)
    subprocess.run([torchrun, "--nproc_per_node", "2", "--master_port", "29517",
                    *_cli(tiny_models["sd"], two, "--images-per-prompt", "2", "--limit", "6")],
                   cwd=ROOT, env=_env(), check=True, timeout=300)
    a, b = _pixels(one), _pixels(two)
    assert len(a) == 12 and a.keys() == b.keys()  # none missing, none twice
    for name in a:
        assert np.array_equal(a[name], b[name]), name

    import datasets

    manifest = datasets.load_dataset(str(two), split="train")
    assert manifest.num_rows == 12
    assert {"image", "prompt_id", "seed", "prompt", "generation", "sample"} <= set(manifest.column_names)
    assert len(set(zip(manifest["prompt_id"], manifest["sample"]))) == 12
    assert manifest[0]["image"].size == (64, 64)


@pytest.mark.slow
def test_killed_run_resumes_to_the_complete_identical_set(tiny_models, tmp_path):
    ref, run = tmp_path / "ref", tmp_path / "run"
    args = ("--images-per-prompt", "3", "--limit", "8")
    subprocess.run([sys.executable, *_cli(tiny_models["sd"], ref, *args)], cwd=ROOT, env=_env(), check=True, timeout=300)
    expected = _pixels(ref)

    proc = subprocess.Popen([sys.executable, *_cli(tiny_models["sd"], run, *args)], cwd=ROOT, env=_env(),
                            start_new_session=True)
    deadline = time.time() + 240
    while time.time() < deadline and len(list(run.rglob("*.png"))) < 3 and proc.poll() is None:
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = len([p for p in run.rglob("*.png") if is_readable_image(p)])
    assert 0 < done_before < len(expected), "the kill should land mid-run"
    assert not (run / "metadata.parquet").exists()
    # a torn file left by a crash is not counted as done
    torn = next(iter(expected))
    (run / torn).parent.mkdir(parents=True, exist_ok=True)
    (run / torn).write_bytes(b"\x89PNG\r\n\x1a\n half an image")

    out = subprocess.run([sys.executable, *_cli(tiny_models["sd"], run, *args)], cwd=ROOT, env=_env(),
                         check=True, timeout=300, capture_output=True, text=True)
    assert "already done" in out.stdout
    got = _pixels(run)
    assert got.keys() == expected.keys()
    for name in expected:
        assert np.array_equal(got[name], expected[name]), name
    assert not list(run.rglob(".tmp-*")), "no temporary files are left behind"


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.png"))}


def test_threaded_writes_give_the_same_bytes_and_an_interrupted_run_resumes(tiny_models, tmp_path, monkeypatch):
    """PNGs written by the pool while the next batch draws are byte for byte those of inline saving; an
    interruption mid-run keeps every image drawn before it, and a rerun regenerates only the rest,
    including a file cut short (a PNG without its end, which PIL would still decode)."""
    import threading

    from t2ireason.generation import generate, load_pipeline
    from t2ireason.generation import store as generation  # the image writer's module

    config = GenerationConfig(model=str(tiny_models["sd"]), steps=2, height=64, width=64, batch_size=2)
    jobs = plan_jobs(BENCH, load_rows(BENCH)[:5])  # batches of 2, 2 and a tail of 1
    pipe = load_pipeline(config, "cpu")
    inline, threaded = tmp_path / "inline", tmp_path / "threaded"
    assert generate(jobs, config, inline, pipeline=pipe, progress=False, writers=0)["generated"] == 5
    writers = []

    def save(image, path):
        writers.append(threading.current_thread().name)
        real_save(image, path)

    real_save = generation.save_image_atomic
    monkeypatch.setattr(generation, "save_image_atomic", save)
    assert generate(jobs, config, threaded, pipeline=pipe, progress=False, writers=3)["generated"] == 5
    assert len(writers) == 5 and all(name.startswith("image-writer") for name in writers)
    monkeypatch.undo()
    expected = _bytes(inline)
    assert len(expected) == 5 and _bytes(threaded) == expected
    assert len(set(expected.values())) == 5

    class Interrupted:  # the pipeline, interrupted (Ctrl-C) while it draws the third batch
        def __init__(self):
            self.calls = 0

        def __call__(self, **kwargs):
            self.calls += 1
            if self.calls == 3:
                raise KeyboardInterrupt
            return pipe(**kwargs)

    run = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        generate(jobs, config, run, pipeline=Interrupted(), progress=False, writers=3)
    done = _bytes(run)
    assert len(done) == 4 and all(expected[name] == data for name, data in done.items())  # none lost, none torn
    assert not list(run.rglob(".tmp-*"))
    # one finished image cut short after its pixels (a copy that stopped): not done, drawn again
    cut = next(iter(done))
    (run / cut).write_bytes(expected[cut][:-12])
    assert not is_readable_image(run / cut)
    counts = generate(jobs, config, run, pipeline=pipe, progress=False, writers=3)
    assert counts == {"generated": 2, "skipped": 3}
    assert _bytes(run) == expected


def test_the_registry_makes_every_backend_a_spec_names():
    from t2ireason.generation import BACKENDS, GeneratorSpec, backend_class
    from t2ireason.generation.base import Generator
    from t2ireason.generation.spec import BACKEND_NAMES

    assert set(BACKENDS) == set(BACKEND_NAMES)
    for name in BACKEND_NAMES:
        cls = backend_class(GeneratorSpec(name, "m"))
        assert issubclass(cls, Generator) and cls.backend == name
