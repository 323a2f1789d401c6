"""The `t2ireason` command line: a fast --help that imports nothing heavy, every bad input one
`error:` line (exit 2) before anything is created, float options checked, float16 refused on CPU,
scoring with an HTTP judge end to end without evaluate or torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.benchmarks import get_benchmark
from t2ireason.runs import Run

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("datasets", "scipy", "torch", "transformers", "evaluate", "diffusers", "pandas")


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def t2ireason(*args: str) -> subprocess.CompletedProcess:
    """The command as a user runs it, in its own process."""
    return subprocess.run([sys.executable, "-m", "t2ireason.cli", *args], env=_env(), capture_output=True,
                          text=True, timeout=300)


def one_error_line(proc: subprocess.CompletedProcess) -> str:
    """The single `error:` line a bad input gets, and exit status 2 (no traceback)."""
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert "Traceback" not in proc.stderr and len(lines) == 1, proc.stderr
    return lines[0]


def run_with_images(folder: Path, benchmark: str = "r2i-bench", limit: int = 4, name: str | None = None) -> Run:
    """A run of the shipped sample with a small PNG where the official layout puts each image."""
    run = Run.create(folder, benchmark, limit=limit, name=name)
    bench = get_benchmark(benchmark)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (40 * i % 256, 90, 160)).save(path)
    return run


def scripted_reply(schema: dict) -> str:
    """A valid structured reply for an R2I-Bench or WorldGenBench schema: every item passes."""
    props = schema["properties"]
    if "answers" in props:
        return json.dumps({"answers": [1] * props["answers"]["minItems"]})
    return json.dumps({k: 1 for k in props})


# -- help, and what it imports ----------------------------------------------------------------------

def test_help_imports_none_of_the_libraries_the_steps_need():
    code = ("import sys\nfrom t2ireason import cli\ntry:\n    cli.main(['--help'])\nexcept SystemExit:\n    pass\n"
            f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert "evaluate " in out.stdout and "export " in out.stdout  # every command is listed
    assert out.stdout.strip().endswith("LOADED []")


def test_evaluate_help_lists_every_benchmarks_presets(capsys):
    with pytest.raises(SystemExit):
        cli.main(["evaluate", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "prism-bench: paper (default), official, qwen" in text
    assert "t2i-reasonbench: paper (default), official" in text and "--retry-failed" in text


# -- bad input: one line, nothing created ------------------------------------------------------------

def in_process_error(capsys, *argv: str) -> str:
    """``cli.main(argv)`` in this process: exit status 2 and one `error:` line."""
    assert cli.main(list(argv)) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


@pytest.mark.slow
def test_bad_judges_are_refused_before_anything_is_created(tmp_path, capsys):
    run = tmp_path / "run"
    base = ["evaluate", "--run", str(run), "--benchmark", "r2i-bench", "--limit", "2"]
    # as users run it: its own process, one line, exit status 2
    assert "did you mean 'openai:gpt-4o'" in one_error_line(t2ireason(*base, "--judge", "openai-gpt-4o"))
    assert "'/nonexistent' does not exist" in one_error_line(t2ireason(*base, "--judge", "hf:/nonexistent"))
    http = ["--judge", "openai:m@http://127.0.0.1:9/v1"]
    line = in_process_error(capsys, *base, *http, "--judge-kwargs", '{"max_concurency": 8}')
    assert "'max_concurency'" in line and "did you mean 'max_concurrency'" in line
    line = in_process_error(capsys, *base, "--judge", "gemini:flash")
    assert "unknown judge backend 'gemini'" in line and "hf, openai, vllm" in line
    line = in_process_error(capsys, *base, *http, "--judge-kwargs", '{"sampling": {"temperature": "hot"}}')
    assert "judge_kwargs.sampling.temperature must be a finite number, got 'hot'" in line
    line = in_process_error(capsys, *base, *http, "--options", '{"strucured_output": true}')
    assert "strucured_output" in line and "structured_output" in line
    assert not run.exists()  # no run folder, no empty evaluation folder


def test_bad_scoring_settings_leave_an_existing_run_untouched(tmp_path, capsys):
    run = run_with_images(tmp_path / "run", limit=2)
    before = (run.path / "run.json").read_text()
    spec = ["--judge", "openai:m@http://127.0.0.1:9/v1"]
    for extra, said in [(["--preset", "qwen"], "unknown preset 'qwen' for r2i-bench; known: paper, official"),
                        (["--options", '{"max_reask": 3}'], "max_reask"),
                        (["--judge-kwargs", '{"sampling": 5}'], "judge_kwargs.sampling must be an object"),
                        (["--judge-kwargs", '{"sampling": {"top_p": 0}}'], "top_p must be in (0, 1]")]:
        assert cli.main(["evaluate", "--run", str(run.path), *spec, *extra]) == 2
        assert said in capsys.readouterr().err
    assert not (run.path / "evaluations").exists() and (run.path / "run.json").read_text() == before


def test_an_evaluation_name_cannot_leave_the_run(tmp_path, capsys):
    run = run_with_images(tmp_path / "run", limit=2)
    code = cli.main(["evaluate", "--run", str(run.path), "--judge", "openai:m@http://127.0.0.1:9/v1",
                     "--name", "../../escaped"])
    assert code == 2 and "leaves the folder" in capsys.readouterr().err
    assert not (tmp_path / "escaped").exists() and not (run.path / "evaluations").exists()
    assert Run.open(run.path).manifest["evaluations"] == {}


def test_float_options_must_be_finite_and_float16_needs_a_gpu(tmp_path, capsys):
    out = tmp_path / "images"
    base = ["generate", "--benchmark", "r2i-bench", "--model", str(tmp_path / "no-model"), "--out", str(out)]
    proc = t2ireason(*base, "--guidance", "nan")
    assert proc.returncode == 2 and "argument --guidance: must be a finite number, got 'nan'" in proc.stderr
    for argv, said in [(["--guidance", "inf"], "must be a finite number, got 'inf'"),
                       (["--guidance", "-1"], "must be >= 0, got -1"),
                       (["--pipeline-kwargs", '{"eta": NaN}'], "NaN is not a number JSON allows")]:
        with pytest.raises(SystemExit) as exit_:
            cli.main([*base, *argv])
        assert exit_.value.code == 2 and said in capsys.readouterr().err
    line = in_process_error(capsys, *base, "--dtype", "float16")
    assert "float16 needs a GPU" in line and "use float32" in line
    assert not out.exists()


def test_generation_config_refuses_what_the_command_line_refuses():
    from t2ireason.generation import GenerationConfig, check_dtype

    with pytest.raises(ValueError, match="guidance must be a finite number"):
        GenerationConfig(model="m", guidance=float("nan"))
    with pytest.raises(ValueError, match="height must be >= 1"):
        GenerationConfig(model="m", height=0)
    with pytest.raises(ValueError, match="float16 needs a GPU"):
        check_dtype("float16", "cpu")
    check_dtype("bfloat16", "cpu")
    check_dtype("float16", "cuda:0")


# -- scoring over HTTP, as users run it ------------------------------------------------------------------

@pytest.mark.slow
def test_http_judged_evaluate_imports_neither_evaluate_nor_torch(tmp_path):
    from t2ireason.testing_http import serve

    run = run_with_images(tmp_path / "run", limit=3)
    argv = ["evaluate", "--run", str(run.path), "--options", '{"structured_output": true}', "--no-cache",
            "--no-progress", "--judge"]
    watched = [*HEAVY, "transformers.pipelines"]
    code = ("import json, sys\nfrom t2ireason import cli\n"
            f"status = cli.main({argv!r} + [sys.argv[1]])\n"
            f"print('LOADED', json.dumps(sorted(m for m in {watched!r} if m in sys.modules)))\n"
            "sys.exit(status)")

    def answer(request):
        return scripted_reply(request.body["response_format"]["json_schema"]["schema"])

    with serve(answer, models=["tiny"]) as server:  # the judge's endpoint check finds its model listed
        proc = subprocess.run([sys.executable, "-c", code, f"openai:tiny@{server.base_url}"], env=_env(),
                              capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    loaded = json.loads(proc.stdout.split("LOADED", 1)[1])
    assert not {"torch", "transformers", "transformers.pipelines", "evaluate"} & set(loaded)
    scored = [x for x in run.rows() if x["questions"]]
    assert len(server.requests) == 1 + len(scored)  # the pre-flight's probe, then one request an image
    assert "coverage: 3 of 3 images scored by openai:tiny (" in proc.stdout
    scores = Run.open(run.path).scores("openai-tiny")
    assert scores["num_images"] == 3 and scores["aggregate"]["r2i_score"] == pytest.approx(100.0)


OUTAGE_SCRIPT = """
import sys
import t2ireason.judges
from t2ireason import cli
from t2ireason.judges import JudgeUnavailable
from t2ireason.judges.scripted import ScriptedJudge


class Down(ScriptedJudge):
    def _chat_batch(self, requests):
        raise JudgeUnavailable("the judge at http://127.0.0.1:9/v1 is unreachable:\\nconnection refused")


t2ireason.judges.load_judge = lambda spec, cache=None, **kwargs: Down([], model="judge")
t2ireason.judges.preflight_spec = lambda *args, **kwargs: None  # the outage comes after the probe
sys.exit(cli.main(sys.argv[1:]))
"""


@pytest.mark.slow
def test_a_judge_outage_is_one_error_line_and_a_failing_exit_status(tmp_path):
    run = run_with_images(tmp_path / "run", limit=2)
    proc = subprocess.run([sys.executable, "-c", OUTAGE_SCRIPT, "evaluate", "--run", str(run.path), "--judge",
                           "openai:judge@http://127.0.0.1:9/v1", "--no-cache", "--no-progress"],
                          env=_env(), capture_output=True, text=True, timeout=300)
    line = one_error_line(proc)
    assert line.startswith("error: the judge at http://127.0.0.1:9/v1 is unreachable: connection refused")
    assert "0 of 2 images scored and kept; run the same command again" in line


def test_a_refused_key_stops_the_evaluation_and_a_good_key_goes_on(tmp_path, capsys, monkeypatch):
    """As found: a 401 during scoring showed only "N failed", recorded as the judgements' failures, which no
    re-run (not even --retry-failed) asked again. Now it ends the evaluation with its cause, records nothing,
    and the same command with the key fixed scores what is left."""
    from t2ireason.testing_http import Answer, Fail, serve

    run = run_with_images(tmp_path / "run", limit=3)
    scored = sum(1 for row in run.rows() if row["questions"])
    asked: list[str] = []

    def answer(request):
        asked.append(request.headers.get("authorization", ""))
        if request.headers.get("authorization") != "Bearer good-key" or len(asked) == 3:  # revoked mid-run (the
            # first request is the pre-flight's probe)
            return Fail(401, "Incorrect API key provided")
        return Answer(scripted_reply(request.body["response_format"]["json_schema"]["schema"]))

    with serve(answer, models=["tiny"]) as server:
        # one request at a time: the chunks in order (an HTTP judge scores several chunks at once), so the
        # third request is the second image's
        argv = ["evaluate", "--run", str(run.path), "--judge", f"openai:tiny@{server.base_url}", "--chunk-size", "1",
                "--judge-kwargs", '{"max_concurrency": 1}',
                "--options", '{"structured_output": true}', "--cache", str(tmp_path / "cache.sqlite"), "--no-progress"]
        monkeypatch.setenv("OPENAI_API_KEY", "good-key")
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "HTTP 401: authentication failed" in err and "Incorrect API key provided" in err
        assert f"1 of {scored} images scored and kept" in err and "good-key" not in err
        assert len(Run.open(run.path).results("openai-tiny")) == 1  # the refused image is not recorded
        monkeypatch.setenv("OPENAI_API_KEY", "bad-key")
        assert cli.main(argv) == 2 and "authentication failed" in capsys.readouterr().err
        monkeypatch.setenv("OPENAI_API_KEY", "good-key")
        assert cli.main(argv) == 0
    scores = Run.open(run.path).scores("openai-tiny")
    assert scores["num_images"] == 3 and scores["num_failed"] == 3 - scored
    assert scores["aggregate"]["r2i_score"] == pytest.approx(100.0)


def test_an_api_key_given_as_an_option_is_never_written_or_printed(tmp_path, capsys):
    """As found: `--judge-kwargs '{"api_key": ...}'` was written to run.json and scores.json, and a password
    in the judge's URL was echoed on stderr. Both are masked where judge settings are recorded or named; a
    new key for the same evaluation is the same settings."""
    from t2ireason.testing_http import Answer, Fail, serve

    run = run_with_images(tmp_path / "run", limit=2)
    keys = ["sk-first-key-0123456789", "sk-second-key-0123456789"]

    def answer(request):
        if request.headers.get("authorization") not in {f"Bearer {k}" for k in keys}:
            return Fail(401, "no")
        return Answer(scripted_reply(request.body["response_format"]["json_schema"]["schema"]))

    with serve(answer, models=["tiny"]) as server:
        for key in keys:  # the second: nothing left to do, and no "other settings"
            argv = ["evaluate", "--run", str(run.path), "--judge", f"openai:tiny@{server.base_url}", "--judge-kwargs",
                    json.dumps({"api_key": key}), "--options", '{"structured_output": true}', "--no-cache",
                    "--no-progress"]
            assert cli.main(argv) == 0, capsys.readouterr().err
    printed = capsys.readouterr()
    written = b"".join(p.read_bytes() for p in run.path.rglob("*") if p.is_file())
    for key in keys:
        assert key.encode() not in written and key not in printed.out + printed.err
    assert Run.open(run.path).manifest["evaluations"]["openai-tiny"]["settings"]["judge_kwargs"] == {"api_key": "***"}

    spec = "openai:tiny@https://me:pass-word-42@127.0.0.1:9/v1"
    assert cli.main(["evaluate", "--run", str(run.path), "--judge", spec, "--no-cache", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "pass-word-42" not in err and "https://***@127.0.0.1:9/v1" in err


@pytest.mark.parametrize("where", ["a file that is not a database", "a folder", "a path under a file",
                                   "a folder that cannot be written"])
def test_a_cache_that_cannot_be_used_is_one_error_line(tmp_path, capsys, where):
    """As found: --cache pointing at a file or an unwritable folder gave a traceback (sqlite3's)."""
    text = tmp_path / "notes.txt"
    text.write_text("not a database\n")
    cache = {"a file that is not a database": text, "a folder": tmp_path,
             "a path under a file": text / "cache.sqlite",
             "a folder that cannot be written": Path("/proc/t2ireason-cache.sqlite")}[where]
    if where == "a folder that cannot be written" and not Path("/proc/self").is_dir():
        pytest.skip("needs Linux's /proc, where no file can be created")
    run = run_with_images(tmp_path / "run", limit=2)
    code = cli.main(["evaluate", "--run", str(run.path), "--judge", "openai:m@http://127.0.0.1:9/v1", "--cache",
                     str(cache), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"error: the response cache {cache} cannot be used: ") and "--no-cache" in err
    assert text.read_text() == "not a database\n" and not Run.open(run.path).manifest["evaluations"]


# -- issue 25: every mistake caught before the expensive work, nothing created ---------------------------

def _nothing_generated(server) -> None:
    """The judge was asked only the pre-flight's few tiny requests: no image of the benchmark's."""
    assert len(server.requests) <= 2 and all(r.text.startswith(("Is this image gray?", "Is grass green?"))
                                              or r.text == "Reply with OK." for r in server.requests)


@pytest.mark.slow
def test_a_judge_that_cannot_score_stops_the_run_before_any_image_is_generated(tiny_models, tmp_path, capsys):
    from t2ireason.testing_http import Answer, Fail, serve

    out = tmp_path / "run"
    base = ["run", "--benchmark", "r2i-bench", "--limit", "2", "--out", str(out), "--model", str(tiny_models["sd"]),
            "--steps", "1", "--height", "32", "--width", "32", "--no-progress"]
    # no API key: said at once, as users run it (its own process)
    env = {k: v for k, v in _env().items() if k != "OPENAI_API_KEY"}
    proc = subprocess.run([sys.executable, "-m", "t2ireason.cli", *base, "--judge", "openai:gpt-4o"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert "no API key for 'gpt-4o' at api.openai.com: set OPENAI_API_KEY" in one_error_line(proc)
    assert not out.exists()
    # a text-only model behind an OpenAI-compatible server: the images scoring sends are refused
    text_only = lambda r: Fail(400, "this model does not take image input") if r.image_urls else Answer("ok")  # noqa: E731
    with serve(text_only) as server:
        line = in_process_error(capsys, *base, "--judge", f"openai:test-model@{server.base_url}", "--no-cache")
    assert "cannot answer a request with an image and a JSON schema" in line and "does not take image input" in line
    assert not out.exists()
    _nothing_generated(server)
    # a run whose evaluation is finished asks nothing (a cached re-run contacts no server)
    scripted = json.dumps({"answers": [1]})
    with serve(Answer(scripted)) as server:
        assert cli.main([*base, "--judge", f"openai:test-model@{server.base_url}", "--no-cache"]) in (0, 1)
        asked = len(server.requests)
        assert (out / "images").is_dir() and asked > 2  # the pre-flight, then the benchmark's requests
        cli.main([*base, "--judge", f"openai:test-model@{server.base_url}", "--no-cache"])
        assert len(server.requests) == asked


@pytest.mark.slow
def test_mt2ie_against_a_server_without_log_probabilities_draws_nothing(tiny_models, tmp_path, capsys):
    from t2ireason.testing_http import Answer, serve

    out = tmp_path / "mt2ie"
    with serve(Answer("a red cube on a table", no_logprobs=True)) as server:
        line = in_process_error(capsys, "mt2ie", "--model", f"tiny={tiny_models['sd']}", "--judge",
                                f"openai:test-model@{server.base_url}", "--no-cache", "--out", str(out),
                                "--iterations", "1", "--seeds", "0", "--steps", "1", "--no-progress")
    assert "cannot give the answer probabilities VQAScore needs" in line and "without the log-probabilities" in line
    assert not out.exists()
    _nothing_generated(server)


def test_evaluate_and_the_engine_ask_the_judge_before_any_work(tiny_models, tmp_path, capsys):
    """``evaluate`` would fail every image's request one by one, ``engine run`` would draw every image
    before its quality filter met a judge without images or JSON: one probe says it first."""
    from t2ireason.testing_http import Answer, Fail, serve

    def refusing(request):  # a text model without structured output behind an OpenAI-compatible server
        if request.image_urls:
            return Fail(400, "this model does not take image input")
        if "response_format" in request.body:
            return Fail(400, "response_format is not supported by this server")
        return Answer("ok")

    run = run_with_images(tmp_path / "run")
    with serve(refusing) as server:
        url = f"openai:test-model@{server.base_url}"
        line = in_process_error(capsys, "evaluate", "--run", str(run.path), "--judge", url, "--no-cache")
        assert "cannot answer a request with an image and a JSON schema" in line
        assert not Run.open(run.path).manifest["evaluations"] and not (run.path / "evaluations").exists()
        _nothing_generated(server)
        server.requests.clear()
        engine = ["engine", "run", "--work", str(tmp_path / "w"), "--sample", "--model", str(tiny_models["sd"]),
                  "--license", "apache-2.0", "--no-progress"]
        line = in_process_error(capsys, *engine, "--judge", url)
        assert "cannot answer a request with an image and a JSON schema" in line
        _nothing_generated(server)
    assert not (tmp_path / "w").exists()
    with serve(Fail(401, "Incorrect API key provided")) as server:  # the text model's key is refused
        line = in_process_error(capsys, *engine, "--judge", f"hf:{tiny_models['vlm']}", "--llm",
                                f"openai:test-model@{server.base_url}")
        assert "refused the credentials" in line and "Incorrect API key provided" in line, line
        _nothing_generated(server)
    assert not (tmp_path / "w").exists()


def _built(folder: Path, benchmark: str) -> Path:
    from t2ireason.build import build_dataset

    bench = get_benchmark(benchmark)
    build_dataset(bench, bench.sample_path(), folder, license=None if bench.license else "cc-by-4.0")
    return folder


def test_mistyped_or_mismatched_folders_are_one_line_and_create_nothing(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _built(Path("data/r2i-bench"), "r2i-bench")
    _built(Path("data/prism-bench"), "prism-bench")
    (tmp_path / "models" / "sd").mkdir(parents=True)
    (tmp_path / "models" / "sd" / "model_index.json").write_text("{}")
    judge = ["--judge", "openai:m@http://127.0.0.1:9/v1", "--no-cache"]
    run = ["run", "--benchmark", "r2i-bench", "--out", "run", "--limit", "2", *judge]
    line = in_process_error(capsys, *run, "--data", "data/r2i-bnech", "--model", "models/sd")
    assert line == ("error: --data: no folder 'data/r2i-bnech' (did you mean 'data/r2i-bench'?); give a folder built "
                    "by `t2ireason build r2i-bench --out <folder>`, a Hub dataset id, or nothing for the shipped sample")
    line = in_process_error(capsys, *run, "--data", "data/prism-bench", "--model", "models/sd")
    assert "data/prism-bench was built for prism-bench; build r2i-bench into its own folder" in line
    assert "BuilderConfig" not in line
    line = in_process_error(capsys, *run, "--data", "data/r2i-bench", "--model", "models/sdd")
    assert "--model: no folder 'models/sdd' (did you mean 'models/sd'?)" in line
    line = in_process_error(capsys, *run, "--model", "someorg/not-downloaded")  # offline, not in the cache
    assert "someorg/not-downloaded is not in the local Hugging Face cache and HF_HUB_OFFLINE is set" in line
    # a Hub dataset id that cannot be read (offline, not in the cache; online: a mistyped or private one) was
    # found only at the first row read, after run.json was written
    line = in_process_error(capsys, *run, "--data", "someorg/r2i-bnech", "--model", "models/sd")
    assert line.startswith("error: --data: someorg/r2i-bnech is no folder here, and no Hub dataset that can be read ("
                           ) and "OfflineModeIsEnabled" in line and "--data-revision" in line
    # scoring a run never generated: said before run.json is written
    line = in_process_error(capsys, "evaluate", "--run", "run", "--benchmark", "r2i-bench", *judge)
    assert "no images to score in run/images: generate them first" in line
    line = in_process_error(capsys, "evaluate", "--run", "run", "--benchmark", "prism-bench", "--data",
                            "data/r2i-bench", "--images", "data", *judge)
    assert "data/r2i-bench was built for r2i-bench" in line
    line = in_process_error(capsys, "generate", "--benchmark", "r2i-bench", "--data", "data/r2i-bnech",
                            "--model", "models/sd", "--out", "images")
    assert "did you mean 'data/r2i-bench'?" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "models"]  # no run folder, no images


def test_a_command_line_mistake_is_one_line_naming_it(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    proc = t2ireason("run", "--benchmark", "r2i-bench", "--out", "x", "--modle", "m", "--judge", "openai:m")
    assert proc.returncode == 2 and proc.stderr.splitlines() == [  # was 18 lines of usage naming --model as missing
        "t2ireason run: error: unknown option --modle (did you mean --model?) (options: t2ireason run --help)"]
    for argv, said in [(["evaluate", "--run", "x", "--benchmark", "r2i-bnch"],
                        "t2ireason evaluate: error: argument --benchmark: invalid choice: 'r2i-bnch'"),
                       (["engine", "run", "--wrok", "w"], "t2ireason engine run: error: unknown option --wrok "
                                                          "(did you mean --work?) (options: t2ireason engine run --help)")]:
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        lines = capsys.readouterr().err.splitlines()
        assert exit_.value.code == 2 and len(lines) == 1 and lines[0].startswith(said), lines
    assert list(tmp_path.iterdir()) == []
    assert cli.main([]) == 2  # bare `t2ireason`: the commands, as git lists them, not "required: COMMAND"
    listed = capsys.readouterr().err
    assert listed.startswith("usage: t2ireason") and all(f" {c} " in listed for c in ("run", "evaluate", "engine"))


def test_slurm_without_sbatch_is_said_before_any_stage_folder(tiny_models, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "bin-without-slurm"))
    (tmp_path / "captions.txt").write_text("a red apple on a table\n")
    line = in_process_error(capsys, "engine", "run", "--work", str(tmp_path / "w"), "--captions",
                            str(tmp_path / "captions.txt"), "--judge", "openai:m@http://127.0.0.1:9/v1",
                            "--model", str(tiny_models["sd"]), "--license", "apache-2.0", "--executor", "slurm",
                            "--partition", "gpu")
    assert "Slurm's sbatch, which is not on this machine's PATH" in line and "--executor local" in line
    assert not (tmp_path / "w").exists()


def test_a_hub_data_id_is_asked_once_a_process_and_a_failure_again(monkeypatch):
    """`t2ireason run --data <hub id>` checks it before anything is made, where the run is made and where the
    rows are read: the Hub is asked for its configs once; an id that could not be read is asked again."""
    import datasets

    from t2ireason import data

    asked = []

    def config_names(repo_id, revision=None):
        asked.append((repo_id, revision))
        if repo_id == "someorg/down":
            raise ConnectionError(f"Couldn't reach '{repo_id}' on the Hub")
        return ["commonsense", "mathematical"]

    monkeypatch.setattr(datasets, "get_dataset_config_names", config_names)
    data._hub_config_names.cache_clear()
    for _ in range(3):
        data.check_data("r2i-bench", "someorg/r2i", ["mathematical"], revision="v1")
    with pytest.raises(ValueError, match="someorg/r2i has no config logical of r2i-bench"):  # (the cached list)
        data.check_data("r2i-bench", "someorg/r2i", ["logical"], revision="v1")
    for _ in range(2):
        with pytest.raises(ValueError, match="no Hub dataset that can be read"):
            data.check_data("r2i-bench", "someorg/down")
    data._hub_config_names.cache_clear()
    assert asked == [("someorg/r2i", "v1"), ("someorg/down", None), ("someorg/down", None)]


# -- issue 34 item 4: whole option names, "did you mean" wherever an option is unknown, why a run failed, `| head`

def test_a_truncated_option_is_unknown_not_taken_for_another(tmp_path, capsys):
    """As found: `--judge-kwarg` was silently taken for `--judge-kwargs` (argparse's allow_abbrev), and would
    have been for any other option it began; every parser takes whole names only, subcommands' included."""
    def said(argv):
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        assert exit_.value.code == 2
        return capsys.readouterr().err.strip()

    line = said(["evaluate", "--run", str(tmp_path / "r"), "--judge", "scripted:x", "--judge-kwarg", "{}"])
    assert line.startswith("t2ireason evaluate: error: unknown option --judge-kwarg (did you mean --judge-kwargs?)")
    assert said(["engine", "run", "--wor", "w"]).startswith(
        "t2ireason engine run: error: unknown option --wor (did you mean --work?)")

    def parsers(parser):
        yield parser
        for action in parser._actions:
            if isinstance(action, cli.argparse._SubParsersAction):
                for sub in action.choices.values():
                    yield from parsers(sub)

    every = list(parsers(cli.build_parser("*")))
    assert len(every) > len(cli.COMMANDS) and not [p.prog for p in every if p.allow_abbrev]
    # the scripts in datasets_scripts/ parse as the command does
    from t2ireason.commands import datasets as build

    with pytest.raises(SystemExit):
        build.main(build.add_build_args, build.run_build, ["r2i-bench", "--out", str(tmp_path / "b"), "--licens", "mit"])
    assert "unknown option --licens (did you mean --license?)" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_an_unknown_option_after_every_required_one_gets_did_you_mean(tmp_path, capsys):
    """As found: once a subcommand had all it requires, an unknown option went up to the top-level parser,
    which said `unrecognized arguments: --judge-kwrags {}` with no suggestion."""
    for argv, said in [(["report", str(tmp_path / "r"), "--evaluaton", "x"],
                        "t2ireason report: error: unknown option --evaluaton (did you mean --evaluation?)"),
                       (["run", "--benchmark", "r2i-bench", "--out", "x", "--model", "m", "--judge-kwrags", "{}"],
                        "t2ireason run: error: unknown option --judge-kwrags (did you mean --judge-kwargs?)"),
                       (["report", str(tmp_path / "r"), "--embed-images", "extra"],
                        "t2ireason report: error: unrecognized arguments: extra")]:
        with pytest.raises(SystemExit) as exit_:
            cli.main(argv)
        lines = capsys.readouterr().err.splitlines()
        assert exit_.value.code == 2 and len(lines) == 1 and lines[0].startswith(said), lines
    assert list(tmp_path.iterdir()) == []


def test_a_run_where_every_image_failed_says_why(tmp_path, capsys):
    """As found: exit 1 with only "4 failed" on stdout. Now a line on stderr: how many, the first failure's
    cause, and where each failure is recorded."""
    from t2ireason.testing_http import Answer, serve

    run = run_with_images(tmp_path / "run", limit=3)
    asked = []

    def answer(request):
        asked.append(1)  # the pre-flight's probe gets a reply it can read; scoring gets none
        return Answer(json.dumps({"answers": [1]}) if len(asked) == 1 else "I cannot tell.")

    with serve(answer, models=["tiny"]) as server:
        code = cli.main(["evaluate", "--run", str(run.path), "--judge", f"openai:tiny@{server.base_url}",
                         "--options", '{"structured_output": true, "max_reasks": 0}', "--no-cache", "--no-progress"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]
    first = Run.open(run.path).results("openai-tiny")[0]
    assert err.startswith("error: every image failed (3 of 3); the first, ")
    assert f"{first.id}: {' '.join(first.failure.split())[:60]}" in err
    assert err.endswith(f"is in {run.path / 'evaluations' / 'openai-tiny' / 'results.jsonl'}")


@pytest.mark.slow
def test_a_finished_build_piped_into_head_exits_0_without_a_traceback(tmp_path):
    """As found: `t2ireason build ... | head` printed a BrokenPipeError and exited 2 after the build had
    finished. The reader is gone before the first line here (its end of the pipe closed before the start)."""
    read, write = os.pipe()
    os.close(read)
    bench = get_benchmark("r2i-bench")
    out = tmp_path / "built"
    try:
        proc = subprocess.run([sys.executable, "-m", "t2ireason.cli", "build", "r2i-bench", "--source",
                               str(bench.sample_path()), "--out", str(out), "--license", "mit"],
                              env=_env(), stdout=write, stderr=subprocess.PIPE, text=True, timeout=300)
    finally:
        os.close(write)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert (out / "README.md").is_file() and (out / "build_report.json").is_file()


def test_evaluate_names_the_image_files_that_are_missing(tmp_path, capsys):
    """Issue 34 item 5, on the command line: how many prompts have no image, and the first paths looked at."""
    run = run_with_images(tmp_path / "run", limit=4)
    items = run.image_items()
    for _, _, path in items[1:3]:
        path.unlink()
    line = in_process_error(capsys, "evaluate", "--run", str(run.path), "--judge", "openai:m@http://127.0.0.1:9/v1")
    assert f"2 of 4 prompts have no image in {run.images_dir}" in line
    assert f"no file at {items[1][2]}, {items[2][2]})" in line
