"""Every generator behind one interface: the spec strings, the pre-flight (one line before any folder), the
OpenAI Images API over real HTTP against a local server (well-behaved, 429 with Retry-After, 500s, a refusal,
`url` replies, a hang), your own python function, a tiny random Janus through `hf:<folder>`, and a kill -9
mid-generation that a re-run finishes with the images an uninterrupted run makes."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import datasets
import pyarrow.parquet as pq
import pytest
import torch
from PIL import Image

from t2ireason import cli
from t2ireason.data import load_rows, plan_jobs
from t2ireason.generation import (
    GenerationConfig,
    GeneratorError,
    GeneratorSpec,
    GeneratorUnavailable,
    generate,
    read_failures,
)
from t2ireason.testing_http import ChatServer, Fail, Hang, Images, serve

ROOT = Path(__file__).resolve().parents[1]
BENCH = "r2i-bench"
#: the transport's limits, short: a hang or a failure costs a test well under a second
FAST = {"timeout": 1.0, "backoff_base": 0.01, "backoff_max": 0.05}
SAFETY = "Your request was rejected as a result of our safety system."


def _jobs(limit: int, per: int = 1):
    return plan_jobs(BENCH, load_rows(BENCH, limit=limit), images_per_prompt=per)


def _bytes(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*.png"))}


def _free_port() -> int:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manifest(folder: Path) -> dict[str, dict]:
    return {r["file_name"]: r for r in pq.read_table(folder / "metadata.parquet").to_pylist()}


# -- specs -----------------------------------------------------------------------------------------------------

def test_specs_name_the_backend_model_and_endpoint_and_hide_credentials():
    assert (GeneratorSpec.parse("stabilityai/sd-turbo").backend, GeneratorSpec.parse("stabilityai/sd-turbo").model) \
        == ("diffusers", "stabilityai/sd-turbo")
    assert GeneratorSpec.parse("diffusers:./models/sd").model == "./models/sd"
    assert GeneratorSpec.parse("hf:deepseek-community/Janus-Pro-7B").backend == "hf"
    assert GeneratorSpec.parse("python:my_pkg.models:draw").model == "my_pkg.models:draw"
    api = GeneratorSpec.parse("openai:dall-e-3")
    assert (api.model, api.base_url, api.seedable) == ("dall-e-3", None, False)
    # the judges' rule for the base URL: it starts at the first '@' before http(s)://, its user:password@ kept
    spec = GeneratorSpec.parse("openai:gpt-image-1@http://user:s3cret@host:8000/v1")
    assert (spec.model, spec.base_url) == ("gpt-image-1", "http://user:s3cret@host:8000/v1")
    for shown in (str(spec), repr(spec), json.dumps(spec.identity())):
        assert "s3cret" not in shown
    assert spec.identity() == {"backend": "openai", "model": "gpt-image-1", "seedable": False,
                               "base_url": "http://host:8000/v1"}
    with pytest.raises(GeneratorError, match=r"unknown generator backend 'opnai'.*did you mean 'openai'"):
        GeneratorSpec.parse("opnai:gpt-image-1")
    with pytest.raises(GeneratorError, match=r"python:<module>:<callable>"):
        GeneratorSpec.parse("python:draw")
    with pytest.raises(GeneratorError, match="names no model"):
        GeneratorSpec.parse("hf:")


# -- checked before any folder is made ----------------------------------------------------------------------

def _generate_cli(tmp_path, capsys, *args: str) -> tuple[int, str]:
    out = tmp_path / "out"
    rc = cli.main(["generate", "--benchmark", BENCH, "--limit", "2", "--out", str(out), "--no-progress", *args])
    err = capsys.readouterr().err
    assert not out.exists(), "nothing is made before the generator is known to work"
    return rc, err


def test_a_generator_that_cannot_work_is_one_line_before_any_folder(tmp_path, capsys, tiny_models, monkeypatch):
    monkeypatch.chdir(tmp_path)
    cases = [
        (["--model", "opnai:gpt-image-1"], "unknown generator backend 'opnai'"),
        (["--model", "python:no_such_module_here:draw"], "cannot import 'no_such_module_here'"),
        (["--model", f"openai:gpt-image-1@http://127.0.0.1:{_free_port()}/v1"], "cannot answer: cannot connect"),
        (["--model", "openai:gpt-image-1"], "no API key for 'gpt-image-1' at api.openai.com: set OPENAI_API_KEY"),
        (["--model", f"hf:{tiny_models['vlm']}"], "does not generate images in transformers"),
        (["--model", f"hf:{tmp_path / 'nowhere'}"], "no folder"),
        (["--model", "openai:gpt-image-1@http://127.0.0.1:9/v1", "--steps", "4"],
         "the openai generator cannot take --steps"),
        (["--model", "openai:gpt-image-1@http://127.0.0.1:9/v1", "--generator-kwargs", '{"max_concurency": 2}'],
         "takes no option 'max_concurency' (did you mean 'max_concurrency'?)"),
    ]
    for args, said in cases:
        rc, err = _generate_cli(tmp_path, capsys, *args)
        assert rc == 2 and err.startswith("error: ") and said in err and len(err.strip().splitlines()) == 1, err
    with serve(Images(), models=["dall-e-3"]) as server:  # a server that lists its models, not this one
        rc, err = _generate_cli(tmp_path, capsys, "--model", f"openai:gpt-image-1@{server.base_url}")
        assert rc == 2 and "does not list a model named 'gpt-image-1'; it serves dall-e-3" in err
    with serve(Images(), list_models=401) as server:  # a refused key, never shown
        rc, err = _generate_cli(tmp_path, capsys, "--model", f"openai:gpt-image-1@{server.base_url}",
                                "--generator-kwargs", '{"api_key": "sk-test-0123456789abcdef"}')
        assert rc == 2 and "refused the credentials" in err and "0123456789abcdef" not in err
        assert server.requests == [] and server.model_requests == 1  # the check asked for no image


# -- the OpenAI Images API ------------------------------------------------------------------------------------

def _behaviour(rows: list[dict]):
    """Per prompt: 429 with Retry-After then images; two 500s then `url` replies; a refusal; a hang then
    images; a reply with one image of the two asked for."""
    by_prompt = {row["prompt"]: i for i, row in enumerate(rows)}

    def act(request):
        i, attempt = by_prompt[request.prompt], request.attempt
        if i == 0:
            return Fail(429, "rate limited", retry_after=0.3) if attempt == 0 else Images()
        if i == 1:
            return Fail(500, "upstream failed") if attempt < 2 else Images(url=True)
        if i == 2:
            return Fail(400, SAFETY)
        if i == 3:
            return Hang(30) if attempt == 0 else Images()
        return Images(count=1)

    return act


def test_openai_images_api_over_real_http(tmp_path):
    rows = load_rows(BENCH, limit=5)
    jobs = plan_jobs(BENCH, rows, images_per_prompt=2)
    out, key = tmp_path / "images", "sk-test-a1b2c3d4e5f6a7b8"
    with serve(_behaviour(rows), models=["gpt-image-1"]) as server:
        config = GenerationConfig(model=f"openai:gpt-image-1@{server.base_url}", images_per_prompt=2, height=16,
                                  width=24, quality="high")
        counts = generate(jobs, config, out, progress=False, api_key=key, max_concurrency=2, **FAST)
        asked = {rows[i]["prompt"]: [r for r in server.requests if r.prompt == rows[i]["prompt"]] for i in range(5)}
        assert counts == {"generated": 7, "skipped": 0, "failed": 3, "failed_before": 0}
        # one request per prompt (n = its two samples), the run's settings mapped, in bounded concurrency
        first = asked[rows[0]["prompt"]][0].body
        assert first == {"model": "gpt-image-1", "prompt": rows[0]["prompt"], "n": 2, "size": "24x16", "quality": "high"}
        assert server.max_in_flight <= 2
        # retried as the transport retries a judge's request: after the Retry-After, after 500s, after a hang
        assert [len(asked[rows[i]["prompt"]]) for i in range(5)] == [2, 3, 1, 2, 1]
        r429 = asked[rows[0]["prompt"]]
        assert r429[1].received_at - r429[0].received_at >= 0.29
        # url replies fetched from the server that linked them, with the API's key (its own origin)
        assert len(server.downloads) == 2 and server.downloads[0]["authorization"] == f"Bearer {key}"
    files = _bytes(out)
    assert len(files) == 7 and all(Image.open(out / f).size == (24, 16) for f in files)
    manifest = _manifest(out)
    assert all(r["seed"] is None for r in manifest.values())  # an API takes no seed: recorded as not seeded
    extra = json.loads(manifest[jobs[0].file]["extra"])
    assert extra["revised_prompt"] == f"revised: {rows[0]['prompt']}" and extra["usage"]["output_tokens"] == 200
    failures = read_failures(out)
    refused = [f for f in failures.values() if f["kind"] == "refused"]
    assert [f["file_name"] for f in refused] == [jobs[4].file, jobs[5].file]
    assert all(SAFETY in f["failure"] and not f["retryable"] for f in refused)
    short = failures[jobs[9].file]
    assert short["kind"] == "error" and short["retryable"] and "returned 1 of the 2 images" in short["failure"]
    assert len(failures) == 3 and not (out / jobs[4].file).exists()
    for path in out.rglob("*"):  # the key reaches no file
        assert not path.is_file() or key.encode() not in path.read_bytes(), path

    # a re-run pays for nothing: the finished images and the refusals are kept, nothing is asked
    with serve(Images(), models=["gpt-image-1"]) as server:
        config = GenerationConfig(model=f"openai:gpt-image-1@{server.base_url}", images_per_prompt=2, height=16,
                                  width=24, quality="high")
        counts = generate(jobs, config, out, progress=False, **FAST)
        assert counts == {"generated": 0, "skipped": 7, "failed": 0, "failed_before": 3}
        assert server.requests == []
        # --retry-failed draws again the image whose failure was transient, not the refused ones
        counts = generate(jobs, config, out, progress=False, retry_failed=True, **FAST)
        assert counts == {"generated": 1, "skipped": 7, "failed": 0, "failed_before": 2}
        assert [r.prompt for r in server.requests] == [rows[4]["prompt"]] and server.requests[0].body["n"] == 1
    assert set(read_failures(out)) == {jobs[4].file, jobs[5].file} and len(_bytes(out)) == 8


def test_a_refusal_is_told_by_its_code_or_a_policys_words_not_by_any_not_allowed(tmp_path):
    """Found in review: an ordinary 400 whose message said "not allowed" (an invalid size) was labelled a
    content policy's refusal; a refusal known by its error code alone (GPT-Image-1's moderation_blocked) was not."""
    rows = load_rows(BENCH, limit=4)
    replies = [Fail(400, "Invalid value: size 13x13 is not allowed"),
               Fail(400, "Your request was blocked.", code="moderation_blocked"),
               Fail(400, SAFETY, code="content_policy_violation"),
               Fail(400, "The response was filtered due to the prompt triggering Azure OpenAI's content management "
                         "policy.")]
    by_prompt = {row["prompt"]: reply for row, reply in zip(rows, replies)}
    jobs = plan_jobs(BENCH, rows)
    with serve(lambda r: by_prompt[r.prompt], models=["gpt-image-1"]) as server:
        generate(jobs, GenerationConfig(model=f"openai:gpt-image-1@{server.base_url}"), tmp_path / "out",
                 progress=False, **FAST)
    failures = read_failures(tmp_path / "out")
    assert [failures[j.file]["kind"] for j in jobs] == ["error", "refused", "refused", "refused"]
    assert not any(f["retryable"] for f in failures.values())  # a 400 is asked again by no one


def test_links_to_another_origin_are_fetched_without_the_key(tmp_path):
    key = "sk-test-0f1e2d3c4b5a6978"
    with serve(Images()) as files, serve(Images(url=True), models=["dall-e-3"]) as api:
        files.files = api.files  # the API's images, served by another origin
        api.behaviour = Images(url=True, url_base=files.base_url)
        config = GenerationConfig(model=f"openai:dall-e-3@{api.base_url}")
        counts = generate(_jobs(2), config, tmp_path, progress=False, api_key=key, **FAST)
        assert counts == {"generated": 2, "skipped": 0}
        assert [r.headers["authorization"] for r in api.requests] == [f"Bearer {key}"] * 2
        assert len(files.downloads) == 2 and not any("authorization" in h for h in files.downloads)
        # DALL-E 3 draws one image a request, asked as base64 unless a link is what the server gives
        assert {(r.body["n"], r.body["response_format"]) for r in api.requests} == {(1, "b64_json")}


def test_an_endpoint_that_stops_answering_ends_the_generation_keeping_what_was_made(tmp_path):
    jobs = _jobs(4)
    with serve([Images(), Hang(30)], models=["gpt-image-1"]) as server:
        config = GenerationConfig(model=f"openai:gpt-image-1@{server.base_url}")
        with pytest.raises(GeneratorUnavailable, match=r"cannot answer: timed out.*Images made before are kept"):
            generate(jobs, config, tmp_path, progress=False, max_concurrency=1, max_retries=1, **FAST)
        assert len(_bytes(tmp_path)) == 1 and not (tmp_path / "metadata.parquet").exists()
        server.behaviour = Images()  # back: the same command goes on from where it stopped
        assert generate(jobs, config, tmp_path, progress=False, **FAST) == {"generated": 3, "skipped": 1}


# -- your own function ----------------------------------------------------------------------------------------

def _module(tmp_path: Path, body: str) -> str:
    name = f"t2i_test_generator_{uuid.uuid4().hex[:8]}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    return name


def test_python_generator_gets_prompts_seeds_and_settings_and_records_what_it_cannot_draw(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # imported from the working folder, as `python -m` would
    name = _module(tmp_path, """
        import json
        from PIL import Image
        from t2ireason.generation import GenerationRefused

        CALLS = []

        def draw(prompts, seeds, **settings):
            CALLS.append((list(prompts), list(seeds), settings))
            out = []
            for prompt, seed in zip(prompts, seeds):
                if "fruit" in prompt:
                    out.append(GenerationRefused("my model will not draw fruit"))
                elif "maple" in prompt:
                    out.append(ValueError("out of paint"))
                else:
                    out.append({"image": Image.new("RGB", (8, 8), (seed % 256, 0, 0)), "steps_taken": 3})
            return out
        """)
    jobs = _jobs(5)
    config = GenerationConfig(model=f"python:{name}:draw", batch_size=2, height=8, width=8, guidance=3.5,
                              pipeline_kwargs={"style": "flat"})
    counts = generate(jobs, config, tmp_path / "out", progress=False)
    assert counts == {"generated": 3, "skipped": 0, "failed": 2, "failed_before": 0}
    calls = sys.modules[name].CALLS
    assert [len(p) for p, _, _ in calls] == [2, 2, 1]  # batch_size prompts a call
    assert [s for _, seeds, _ in calls for s in seeds] == [j.seed for j in jobs]  # each image's own seed
    assert calls[0][2] == {"style": "flat", "guidance_scale": 3.5, "height": 8, "width": 8}
    failures = read_failures(tmp_path / "out")
    kinds = {f["prompt"]: (f["kind"], f["failure"]) for f in failures.values()}
    assert sorted(kinds.values()) == [("error", "ValueError: out of paint"), ("refused", "my model will not draw fruit")]
    manifest = _manifest(tmp_path / "out")
    assert all(json.loads(r["extra"]) == {"steps_taken": 3} and r["seed"] is not None for r in manifest.values())

    # a run records the generator, with its module's SHA-256 (a function's name says nothing of its code)
    import hashlib

    from t2ireason.runs import Run

    run = Run.create(tmp_path / "run", BENCH, limit=2)
    run.generate(GenerationConfig(model=f"python:{name}:draw"), progress=False)
    assert run.manifest["generator"] == {
        "backend": "python", "model": f"{name}:draw", "seedable": True,
        "module_sha256": "sha256:" + hashlib.sha256((tmp_path / f"{name}.py").read_bytes()).hexdigest()}

    broken = _module(tmp_path, "def draw(prompts, seeds):\n    return 'not a list'\n")
    with pytest.raises(GeneratorError, match="returned a str; it must return a list"):
        generate(jobs, GenerationConfig(model=f"python:{broken}:draw"), tmp_path / "broken", progress=False)


def test_generate_into_a_folder_made_with_other_settings_is_refused_and_the_same_settings_resume(
        tmp_path, capsys, monkeypatch):
    """As found in review: `t2ireason generate --out X` run again with another seed (or model) added its images
    to the ones already there, rewrote generation_config.json to the new settings and listed both in one
    manifest, as if one model had made them all."""
    monkeypatch.chdir(tmp_path)
    name = _module(tmp_path, """
        from PIL import Image

        def draw(prompts, seeds):
            return [Image.new("RGB", (8, 8), (seed % 256, 0, 0)) for seed in seeds]
        """)
    out = tmp_path / "out"

    def gen(*args: str) -> tuple[int, str]:
        rc = cli.main(["generate", "--benchmark", BENCH, "--limit", "2", "--out", str(out), "--no-progress",
                       "--model", f"python:{name}:draw", *args])
        return rc, capsys.readouterr().err

    assert gen("--seed", "1") == (0, "")
    made, config = _bytes(out), (out / "generation_config.json").read_text()
    rc, err = gen("--seed", "2", "--limit", "3")
    assert rc == 2 and err.startswith("error: ") and len(err.strip().splitlines()) == 1, err
    assert "made with other settings (they differ in seed" in err and "generation_config.json" in err
    assert _bytes(out) == made and (out / "generation_config.json").read_text() == config  # nothing touched
    assert gen("--seed", "1", "--limit", "3") == (0, "")  # the same settings: a resume, one more prompt
    assert len(_bytes(out)) == 3 and {k: v for k, v in _bytes(out).items() if k in made} == made

    (out / "generation_config.json").write_text("{not json")
    rc, err = gen("--seed", "1")
    assert rc == 2 and "generation_config.json cannot be read" in err


# -- Janus through hf:<folder> -------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def janus(tmp_path_factory):
    from t2ireason.testing_families import build_tiny_janus

    return build_tiny_janus(tmp_path_factory.mktemp("janus") / "janus")


def test_a_tiny_janus_generates_through_hf_folder_a_seed_per_image(janus, tmp_path, capsys):
    out = tmp_path / "janus-images"
    assert cli.main(["generate", "--benchmark", BENCH, "--limit", "3", "--out", str(out), "--model", f"hf:{janus}",
                     "--batch-size", "2", "--no-progress"]) == 0
    assert "3 generated" in capsys.readouterr().out
    images = _bytes(out)
    assert len(images) == 3 and all(Image.open(out / f).size == (16, 16) for f in images)
    assert len(set(images.values())) == 3
    manifest = _manifest(out)
    assert json.loads(next(iter(manifest.values()))["generation"])["generator"] == {
        "backend": "hf", "model": str(janus), "seedable": True}
    # each image from its own seed: the last image alone, drawn again, is the same
    jobs = _jobs(3)
    assert generate(jobs[2:], GenerationConfig(model=f"hf:{janus}"), tmp_path / "alone", progress=False) == {
        "generated": 1, "skipped": 0}
    assert _bytes(tmp_path / "alone")[jobs[2].file] == images[jobs[2].file]
    with pytest.raises(GeneratorError, match="the hf generator cannot take --height"):
        generate(jobs, GenerationConfig(model=f"hf:{janus}", height=32), tmp_path / "sized", progress=False)


# -- kill -9 --------------------------------------------------------------------------------------------------

def _run_cli(args: list[str], cwd: Path, *, kill_after: tuple[Path, int] | None = None) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "t2ireason.cli", *args], cwd=cwd, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill_after is None:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
        return
    folder, n = kill_after
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None and len(list(folder.rglob("*.png"))) < n:
        time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["python", "openai"])
def test_kill_9_mid_generation_then_a_rerun_gives_the_images_of_an_uninterrupted_run(backend, tmp_path):
    if backend == "python":
        name = _module(tmp_path, """
            import time

            import numpy as np
            from PIL import Image

            def draw(prompts, seeds):
                time.sleep(0.15)
                return [{"image": Image.fromarray(np.random.default_rng(s).integers(0, 255, (16, 16, 3), dtype=np.uint8)),
                         "drawn_by": "me"} for s in seeds]
            """)
        model, server = f"python:{name}:draw", None
    else:
        server = ChatServer(Images(delay=0.15), models=["gpt-image-1"]).start()
        model = f"openai:gpt-image-1@{server.base_url}"
    try:
        args = ["generate", "--benchmark", BENCH, "--limit", "8", "--images-per-prompt", "2", "--model", model,
                "--generator-kwargs", json.dumps({"max_concurrency": 1} if server else {}), "--no-progress"]
        _run_cli([*args, "--out", str(tmp_path / "ref")], tmp_path)
        expected = _bytes(tmp_path / "ref")
        run = tmp_path / "run"
        _run_cli([*args, "--out", str(run)], tmp_path, kill_after=(run, 5))
        done = _bytes(run)
        assert 0 < len(done) < len(expected) == 16, "the kill should land mid-run"
        assert all(expected[f] == data for f, data in done.items()) and not (run / "metadata.parquet").exists()
        _run_cli([*args, "--out", str(run)], tmp_path)
    finally:
        if server is not None:
            server.stop()
    assert _bytes(run) == expected and not list(run.rglob(".tmp-*"))
    def said(folder: Path) -> dict[str, dict]:  # what the backend said besides each image (its reply's time aside)
        return {f: {k: v for k, v in json.loads(r["extra"]).items() if k != "created"}
                for f, r in _manifest(folder).items()}

    # kept for every image, those finished before the kill too
    assert said(run) == said(tmp_path / "ref") and all(said(run).values())


# -- a run of an API model, to a report beside the paper's rows ----------------------------------------------

def _api(request):
    """Chat completions: every question of the schema answered 1 (the pre-flight's {"ok": true}); image
    generations: a refusal for the prompt about a fruit, a 500 then images for the next, images otherwise."""
    if request.path.endswith("/chat/completions"):
        props = request.body["response_format"]["json_schema"]["schema"]["properties"]
        return json.dumps({k: True if v.get("type") == "boolean" else 1 for k, v in props.items()})
    if "fruit" in request.prompt:
        return Fail(400, SAFETY)
    return Fail(500) if request.attempt == 0 and "maple" in request.prompt else Images(url=request.index % 2 == 0)


@pytest.mark.slow
def test_run_of_an_api_model_to_a_report_beside_the_papers_rows(tmp_path, capsys, browser):
    out = tmp_path / "gpt-image-run"
    with serve(_api, models=["gpt-image-1", "judge-model"]) as server:
        user_url = server.base_url.replace("http://", "http://tester:s3cret-pw@")
        argv = ["run", "--benchmark", BENCH, "--limit", "6", "--out", str(out), "--run-name", "my-gpt-image",
                "--model", f"openai:gpt-image-1@{user_url}", "--height", "16", "--width", "16",
                "--generator-kwargs", json.dumps(FAST), "--judge", f"openai:judge-model@{server.base_url}",
                "--options", '{"structured_output": true}', "--no-cache", "--no-progress"]
        assert cli.main(argv) == 1  # a partial evaluation (an image refused): said, and exit 1 (issue 40)
        printed, err = capsys.readouterr()
        assert "error: a partial evaluation: 1 of 6 images were never made (1 not generated" in err
        argv.append("--allow-failed")  # accepted as partial from here on
        generated = [r for r in server.requests if r.path.endswith("/images/generations")]
        assert all(r.headers["authorization"].startswith("Basic ") for r in generated)
    assert "5 generated, 0 already done, 1 could not be made" in printed and "coverage: 3 of 6 images scored (1 not generated, 2 not scorable" in printed
    assert cli.main(argv) == 0  # the server is gone: a re-run with nothing left to do contacts none
    assert "0 generated, 5 already done, 1 could not be made" in capsys.readouterr().out
    from t2ireason.runs import Run

    run = Run.open(out)
    assert run.manifest["generator"] == {"backend": "openai", "model": "gpt-image-1", "seedable": False,
                                         "base_url": server.base_url}
    [name] = run.evaluations()
    scores = run.scores(name)
    assert scores["num_images"] == 6 and scores["num_not_generated"] == 1
    [refused] = [r for r in run.results(name) if r.context.get("not_generated")]
    assert refused.failure.startswith("not generated (refused): HTTP 400") and refused.score is None
    assert "fruit" in refused.prompt and refused.replies == []  # the judge was not asked about an image never made
    for path in out.rglob("*"):  # the base URL's password reaches no file of the run
        assert not path.is_file() or b"s3cret-pw" not in path.read_bytes(), path
    from t2ireason.exports import export_results

    exported = datasets.load_dataset(str(export_results([run], tmp_path / "api-model-export", license="cc-by-4.0")),
                                     BENCH, split="test")
    assert [r["failure"].startswith("not generated") for r in exported if r["image"] is None] == [True]

    assert cli.main(["report", str(out), "--published"]) == 0
    tables = (out / "report" / "tables.md").read_text()
    overall = scores["aggregate"]["overall"]["mean"]
    assert f"| my-gpt-image | {overall:.1f} [" in tables and "| GPT-Image-1 [paper] | 77.0 |" in tables
    assert "| DALL-E-3 [paper] | 71.0 | 78.0 |" in tables  # the paper's 0-1 on the run's 0-100
    assert "judged by GPT-4o, temperature 0.1" in tables
    # judged by another model, on 5 of the release's 2,968 prompts: not ranked among the paper's rows
    assert re.search(r"measured as the paper's rows: no \(judge openai:judge-model@127\.0\.0\.1:\d+ \(the paper's: "
                     r"GPT-4o, temperature 0\.1\)", tables)
    assert (out / "report" / "plots" / "r2i-bench_table3_standing.png").is_file()

    page = browser.new_page()
    page.goto((out / "report" / "report.html").as_uri())
    page.wait_for_load_state("load")
    rows = page.locator("#table-1 tbody tr:not(.group)").all_inner_texts()
    assert rows[0].startswith("SD3-medium [paper]") and len(rows) == 18 and rows[-1].startswith("my-gpt-image")
    assert page.locator("#table-1 tr.apart").count() == 1
    runs = page.locator("table.runs").inner_text()
    assert "the 17 rows marked [paper] of R2I-Bench Table 3" in runs and "GPT-4o, temperature 0.1" in runs
    assert "not generated (refused)" in page.locator("#gallery").inner_text()
    page.close()


@pytest.mark.slow
def test_the_mt2ie_agent_draws_with_any_generator_from_the_command_line(tmp_path, tiny_models, capsys, monkeypatch):
    from t2ireason.benchmarks.mt2ie import BENCHMARK as MT2IE

    monkeypatch.chdir(tmp_path)
    name = _module(tmp_path, """
        from PIL import Image

        def draw(prompts, seeds):
            return [Image.new("RGB", (32, 32), (s % 256, 40, 90)) for s in seeds]
        """)
    out = tmp_path / "mt2ie"
    rc = cli.main(["mt2ie", "--model", f"mine=python:{name}:draw", "--generator-kwargs", 'other={"x": 1}',
                   "--out", str(tmp_path / "none"), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "--generator-kwargs names no model given with --model: other (the models: mine)" in err, err
    assert not (tmp_path / "none").exists()
    key = "sk-test-mt2ie-0123456789"
    with serve(lambda r: Fail(400, SAFETY) if r.index == 0 else Images(), models=["gpt-image-1"]) as server:
        # the API generator's own options and quality, as `generate` takes them (found in review: mt2ie had none)
        rc = cli.main(["mt2ie", "--model", f"mine=python:{name}:draw", "--model",
                       f"api=openai:gpt-image-1@{server.base_url}", "--judge", f"hf:{tiny_models['vlm']}",
                       "--judge-kwargs", '{"device": "cpu"}', "--no-cache", "--out", str(out), "--iterations", "1",
                       "--seeds", "0", "--seed-prompts-per-seed", "2", "--no-progress", "--quality", "api=high",
                       "--generator-kwargs", "api=" + json.dumps({"api_key": key, "max_concurrency": 1})])
        assert len(server.requests) == 2
        assert all(r.body["quality"] == "high" and r.headers["authorization"] == f"Bearer {key}"
                   for r in server.requests)
    assert not any(key.encode() in p.read_bytes() for p in out.rglob("*") if p.is_file())  # no key in any file
    # a refused image is a row without a score, not a crash; and the model's answer, not an error: exit 0
    # (issue 43: exit 1 before)
    assert rc == 0, capsys.readouterr()
    rows = {(r["model"], r["seed_prompt_id"]): r for r in MT2IE.read_release(out).configs["runs"]}
    assert len(rows) == 4 and sum(r["failure"] is not None for r in rows.values()) == 1
    [refused] = [r for r in rows.values() if r["failure"]]
    assert refused["model"] == "api" and refused["failure"].startswith("refused by the model: HTTP 400")
    assert SAFETY in refused["failure"] and refused["score"] is None
    summary = json.loads((out / "summary.json").read_text())
    assert (summary["failed"], summary["refused"]) == (0, 1) and summary["refusals"][0]["id"] == refused["id"]
    assert all(0 <= r["score"] <= 1 for r in rows.values() if r["failure"] is None)


def test_drawing_in_process_leaves_the_callers_gradients_on(janus, tiny_models, tmp_path):
    """As found merging the rewards: the diffusers and Janus backends switched gradients off for the whole
    thread (``torch.set_grad_enabled(False)`` on load), so a training loop that drew its samples in-process
    then failed its backward pass ('element 0 of tensors does not require grad')."""
    import torch

    from t2ireason.generation import generate

    jobs = plan_jobs(BENCH, load_rows(BENCH)[:2])
    for model, extra in ((str(tiny_models["sd"]), {"steps": 2, "height": 64, "width": 64}), (f"hf:{janus}", {})):
        assert torch.is_grad_enabled()
        out = tmp_path / model.replace(":", "_").replace("/", "_")
        assert generate(jobs, GenerationConfig(model=model, batch_size=2, **extra), out, progress=False)["generated"] == 2
        assert torch.is_grad_enabled(), model
        weight = torch.ones(2, requires_grad=True)
        (weight * 3).sum().backward()  # a training step after drawing
        assert weight.grad.tolist() == [3.0, 3.0]


def test_a_drawer_refuses_a_setting_its_backend_cannot_take(tmp_path, monkeypatch):
    """Found in review: a Drawer (the MT2IE agent's from Python, the data engine's) reached its backend
    without the settings check the pre-flight makes, so `quality` for a python model (or `steps` for an API)
    was dropped in silence and the images drawn without it."""
    from t2ireason.generation import Drawer

    monkeypatch.chdir(tmp_path)
    name = _module(tmp_path, """
        from PIL import Image

        def draw(prompts, seeds):
            return [Image.new("RGB", (8, 8)) for _ in prompts]
        """)
    with pytest.raises(GeneratorError, match=r"the python generator cannot take --quality \('high'\)"):
        Drawer(GenerationConfig(model=f"python:{name}:draw", quality="high"), device="cpu")(["a cat"], [1])
    assert len(Drawer(GenerationConfig(model=f"python:{name}:draw"), device="cpu")(["a cat"], [1])) == 1


def test_a_drawer_refuses_prompts_and_seeds_of_different_lengths(tmp_path, monkeypatch):
    """Found in review: the prompts were zipped with the seeds, so a missing seed dropped its prompt in silence
    (the caller got fewer images than prompts, or a None in the last place)."""
    from t2ireason.generation import Drawer

    monkeypatch.chdir(tmp_path)
    name = _module(tmp_path, """
        from PIL import Image

        def draw(prompts, seeds):
            return [Image.new("RGB", (8, 8)) for _ in prompts]
        """)
    drawer = Drawer(GenerationConfig(model=f"python:{name}:draw"), device="cpu")
    with pytest.raises(ValueError, match="2 prompts and 1 seeds; give one seed per prompt"):
        drawer(["a cat", "a dog"], [1])
    assert [image.size for image in drawer(["a cat", "a dog"], [1, 2])] == [(8, 8), (8, 8)]


@pytest.mark.skipif(torch.cuda.is_available(), reason="float16 is refused only without a GPU")
def test_float16_for_a_janus_on_the_cpu_is_refused_before_any_folder(janus, tmp_path, capsys):
    """Found in review: only a diffusers pipeline's float16 was refused in the pre-flight and before the
    output folder; an `hf:` model's was refused when it loaded, after `generate` had made the folder."""
    rc, err = _generate_cli(tmp_path, capsys, "--model", f"hf:{janus}", "--dtype", "float16")
    assert rc == 2 and "dtype float16 needs a GPU" in err and len(err.strip().splitlines()) == 1, err
    with pytest.raises(ValueError, match="dtype float16 needs a GPU"):
        generate(_jobs(1), GenerationConfig(model=f"hf:{janus}", dtype="float16"), tmp_path / "direct", progress=False)
    assert not (tmp_path / "direct").exists()


def test_the_mt2ie_agent_stops_at_a_refused_key_and_a_rerun_draws_those_rows(tmp_path):
    """Found in review: the agent took a generator that cannot be used at all (here a refused key) for each
    row's failure, asked again prompt by prompt, saved the rows as done and went on: a re-run never drew them.
    It ends the run as `generate` does, the rows made before kept, and the re-run draws the rest."""
    from t2ireason.benchmarks.mt2ie import BENCHMARK as MT2IE
    from t2ireason.benchmarks.mt2ie.store import Store
    from t2ireason.judges.scripted import ScriptedJudge
    from t2ireason.mt2ie import run_mt2ie

    key = {"refused": True}
    pool = [{"id": f"s{k}", "category": "animals", "prompt": p} for k, p in enumerate(["a dog", "a cat"], 1)]
    judge = ScriptedJudge(lambda r: "Prompt: a dog", probabilities=lambda q: 0.9)
    with serve(lambda r: Fail(401, "invalid api key") if key["refused"] else Images(), models=["gpt-image-1"]) as server:
        models = {"api": f"openai:gpt-image-1@{server.base_url}"}
        kwargs = dict(out_dir=tmp_path, iterations=1, seeds=[0], seed_prompts_per_seed=2, progress=False)
        with pytest.raises(GeneratorError, match="refused the credentials"):
            run_mt2ie(models, judge, pool, **kwargs)
        assert Store(tmp_path).done == {}  # no row saved as done: the re-run draws them
        key["refused"] = False
        summary = run_mt2ie(models, judge, pool, **kwargs)
    rows = MT2IE.read_release(tmp_path).configs["runs"]
    assert summary["failed"] == 0 and len(rows) == 2 and all(r["score"] == 0.9 and r["image"] for r in rows)
