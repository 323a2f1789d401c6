"""Every metric's Space builds and serves: ``metrics/publish_spaces.py`` ships the package inside
the Space and writes installable requirements; a fresh virtualenv installs a published Space's
requirements (with the gradio of the cards, as the Hub's builder does) and its ``app.py`` serves a
score on 127.0.0.1 through Gradio's HTTP API, with a judge on 127.0.0.1 too. The same virtualenv
then installs the wheel with the README's install line."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from _dist import ROOT, distributions
from huggingface_hub import SpaceCard
from PIL import Image

METRICS_DIR = ROOT / "metrics"


def _publish_module():
    spec = importlib.util.spec_from_file_location("publish_spaces", METRICS_DIR / "publish_spaces.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pub = _publish_module()
FOLDERS = pub.metric_folders()


class FakeApi:
    def __init__(self, **kwargs):
        self.kwargs, self.calls = kwargs, []

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))

    def upload_folder(self, *, folder_path, repo_id, **kwargs):
        files = {p.relative_to(folder_path).as_posix(): p.read_bytes() for p in Path(folder_path).rglob("*") if p.is_file()}
        self.calls.append(("upload_folder", repo_id, files, kwargs))


# -- what a Space holds ----------------------------------------------------------------------------


def test_every_metric_folder_is_a_space():
    assert {f.name for f in FOLDERS} >= {"vqascore", "clip_score", "meta_evaluation", "r2i_score", "prism_score",
                                          "t2i_reasonscore", "knowledge_checklist_score"}
    for folder in FOLDERS:
        app = (folder / "app.py").read_text()
        # the module comes from the Space's own file, never from a Hub lookup by bare name
        assert f'HERE / "{folder.name}.py"' in app and "evaluate.load(" not in app, folder.name
        assert "launch_gradio_widget" not in app  # evaluate 0.4.6's widget needs gradio 3's gr.inputs
        assert "__main__" in app and "demo.launch()" in app
        assert any(pub.PACKAGE_LINE.match(line) for line in (folder / "requirements.txt").read_text().splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("folder", FOLDERS, ids=[f.name for f in FOLDERS])
def test_a_space_ships_the_package_and_installable_requirements(folder, tmp_path):
    wheel = distributions()["wheel"]
    files = pub.space_files(folder, wheel=wheel)
    assert {f"{folder.name}.py", "app.py", "README.md", "requirements.txt"} <= set(files)
    # the package as the wheel holds it, its data included
    assert {"t2ireason/__init__.py", "t2ireason/spaces.py", "t2ireason/metric.py",
            f"t2ireason/metrics/{folder.name}/{folder.name}.py", "t2ireason/report/templates/report.html.j2"} <= set(files)
    assert any(p.startswith("t2ireason/templates/") for p in files) and any(p.startswith("t2ireason/samples/") for p in files)
    requirements = [ln for ln in files["requirements.txt"].decode().splitlines() if ln and not ln.startswith("#")]
    assert not any(re.match(r"t2i[-_]reason\b", ln, re.I) for ln in requirements)  # no index serves it
    assert {"evaluate==0.4.6", "torch>=2.4"} <= set(requirements)
    assert any(ln.startswith("transformers") for ln in requirements)
    # the openai extra (OpenAI-compatible judges) brings the HTTP client the judge speaks through: aiohttp
    assert any(ln.startswith("aiohttp") for ln in requirements) == ("[openai]" in (folder / "requirements.txt").read_text())
    # the card goes up as it is: its front matter is the Space's configuration
    card = SpaceCard(files["README.md"].decode())
    assert card.data.sdk == "gradio" and card.data.sdk_version == pub.GRADIO_VERSION and card.data.app_file == "app.py"
    assert files["README.md"] == (folder / "README.md").read_bytes()


def test_a_space_without_a_gpu_takes_torchs_cpu_build(tmp_path):
    """As found (issue 34 item 10): a metric Space on the Hub's default CPU hardware installed PyPI's CUDA
    torch (6.3 GB) to call an API judge. Its requirements take torch from PyTorch's CPU index, unless its
    card suggests GPU hardware."""
    for folder in FOLDERS:
        lines = pub.space_requirements(folder, requirement="t2i-reason==0.1.0").splitlines()
        assert "--extra-index-url https://download.pytorch.org/whl/cpu" in lines, folder.name
    gpu = tmp_path / "prism_score"
    shutil.copytree(METRICS_DIR / "prism_score", gpu)
    card = (gpu / "README.md").read_text()
    (gpu / "README.md").write_text(card.replace("app_file: app.py\n", "app_file: app.py\nsuggested_hardware: a10g-small\n"))
    assert pub.has_gpu(gpu) and not pub.has_gpu(METRICS_DIR / "prism_score")
    assert "download.pytorch.org" not in pub.space_requirements(gpu, requirement="t2i-reason==0.1.0")


def test_a_space_can_require_the_package_from_an_index_instead():
    files = pub.space_files(METRICS_DIR / "vqascore", requirement="t2i-reason[openai]==0.1.0")
    assert not any(p.startswith("t2ireason/") for p in files)
    assert "t2i-reason[openai]==0.1.0" in files["requirements.txt"].decode().splitlines()


def test_publish_creates_the_space_and_replaces_its_files():
    api = FakeApi()
    sent = pub.publish(METRICS_DIR / "meta_evaluation", "me/meta_evaluation", api, requirement="t2i-reason==0.1.0")
    (op1, repo1, kw1), (op2, repo2, files, kw2) = api.calls
    assert (op1, repo1, kw1) == ("create_repo", "me/meta_evaluation",
                                 {"repo_type": "space", "space_sdk": "gradio", "private": False, "exist_ok": True})
    assert (op2, repo2, kw2["repo_type"], kw2["delete_patterns"]) == ("upload_folder", "me/meta_evaluation", "space", "*")
    assert files == sent and set(files) == {"README.md", "app.py", "requirements.txt", "meta_evaluation.py"}


def test_publish_cli(monkeypatch, capsys, tmp_path):
    import huggingface_hub

    made = []
    monkeypatch.setattr(huggingface_hub, "HfApi", lambda **kw: made.append(FakeApi(**kw)) or made[-1])
    monkeypatch.setattr(huggingface_hub, "get_token", lambda: None)
    req = ["--requirement", "t2i-reason==0.1.0"]
    with pytest.raises(SystemExit):
        pub.main(["--org", "me", *req])
    assert "no Hub token" in capsys.readouterr().err and not made
    with pytest.raises(SystemExit):
        pub.main(req)
    assert "give --org" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        pub.main(["--out", str(tmp_path), "--wheel", str(tmp_path / "none.whl")])
    assert "does not exist" in capsys.readouterr().err

    assert pub.main(["--org", "me", "--only", "clip_score", "--dry-run", *req]) == 0
    out = capsys.readouterr().out
    assert "would create/update space me/clip_score" in out and "sdk_version: " + pub.GRADIO_VERSION in out and not made

    monkeypatch.setattr(huggingface_hub, "get_token", lambda: "hf_secret_token")
    assert pub.main(["--org", "me", "--only", "clip_score", "meta_evaluation", "--private", *req]) == 0
    (api,) = made
    assert [c[:2] for c in api.calls] == [("create_repo", "me/clip_score"), ("upload_folder", "me/clip_score"),
                                          ("create_repo", "me/meta_evaluation"), ("upload_folder", "me/meta_evaluation")]
    assert api.calls[0][2]["private"] is True
    assert "hf_secret_token" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        pub.main(["--org", "me", "--only", "nope", "--dry-run", *req])

    assert pub.main(["--out", str(tmp_path / "spaces"), "--only", "vqascore", *req]) == 0
    assert (tmp_path / "spaces" / "vqascore" / "app.py").is_file()


# -- a fresh virtualenv installs a Space and serves it ---------------------------------------------


#: a fresh virtualenv takes about 3 minutes (torch from the local wheel, then downloads), more on a busy machine
VENV_TIMEOUT = pytest.mark.timeout(1800)


def _pip_install(python, *args, **kwargs):
    """pip into a test's virtualenv, without pip's cache: the wheels are installed once, and caching them
    would leave GB more on a CI disk."""
    return _run([python, "-m", "pip", "install", "--quiet", "--no-cache-dir", *args], **kwargs)


def _run(args, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def space_venv(tmp_path_factory):
    """A fresh virtualenv holding a published Space's requirements and the cards' gradio, and the
    Spaces of vqascore and prism_score written as publish_spaces.py uploads them. torch is the
    build this test session runs on (the pinned CPU build here), installed first, as the Makefile does."""
    import torch

    root = tmp_path_factory.mktemp("space")
    wheel = distributions()["wheel"]
    spaces = {f.name: pub.write_space(f, root / f.name, wheel=wheel) for f in FOLDERS}
    venv = root / "venv"
    _run([sys._base_executable, "-m", "venv", str(venv)], timeout=300)
    python = venv / "bin" / "python"
    started = time.perf_counter()
    _pip_install(python, f"torch=={torch.__version__}", timeout=1200)
    torch_seconds = time.perf_counter() - started
    # as the Hub's builder does: the Space's requirements and the SDK's gradio, in one resolution; PyTorch's
    # CPU index, which the requirements name, is out of reach here: its build is the one installed above
    requirements = (spaces["vqascore"] / "requirements.txt").read_text()
    assert f"--extra-index-url {pub.CPU_TORCH_INDEX}\n" in requirements
    here = root / "requirements-offline.txt"
    here.write_text(requirements.replace(f"--extra-index-url {pub.CPU_TORCH_INDEX}\n", ""))
    _pip_install(python, "-r", str(here), f"gradio=={pub.GRADIO_VERSION}", timeout=1800)
    print(f"space venv: torch {torch_seconds:.0f} s, requirements and gradio "
          f"{time.perf_counter() - started - torch_seconds:.0f} s")
    yield {"python": python, "spaces": spaces, "root": root, "wheel": wheel}
    shutil.rmtree(venv)  # about 2 GB; pytest would keep it with the session's other temporary files


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServedSpace:
    """``python app.py`` in the Space's folder, listening on 127.0.0.1, stopped on exit."""

    def __init__(self, python: Path, folder: Path):
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the Space's own files
        env.update(GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(self.port), GRADIO_ANALYTICS_ENABLED="False",
                   GRADIO_SSR_MODE="False", HF_HUB_OFFLINE="1", HF_HUB_DISABLE_TELEMETRY="1", OPENAI_API_KEY="sk-test")
        self.log = folder / "app.log"
        self.process = subprocess.Popen([str(python), "app.py"], cwd=folder, env=env, stdout=self.log.open("w"),
                                        stderr=subprocess.STDOUT)

    def __enter__(self):
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"app.py exited {self.process.returncode}:\n{self.log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{self.url}/gradio_api/info", timeout=2) as r:
                    self.info = json.load(r)
                    return self
            except OSError:
                time.sleep(0.5)
        raise AssertionError(f"app.py did not listen within 180 s:\n{self.log.read_text()[-3000:]}")

    def __exit__(self, *exc):
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


CLIENT = """
import json, sys
from gradio_client import Client, handle_file
args = json.loads(sys.argv[1])
inputs = [handle_file(a["file"]) if isinstance(a, dict) else a for a in args["inputs"]]
print(json.dumps(Client(args["url"], verbose=False).predict(*inputs, api_name=args["api"])))
"""


def _predict(python: Path, url: str, api: str, *inputs) -> dict:
    """A call through Gradio's HTTP API with gradio's own client (it uploads the image first)."""
    done = _run([python, "-c", CLIENT, json.dumps({"url": url, "api": api, "inputs": inputs})], timeout=300)
    return json.loads(done.stdout.strip().splitlines()[-1])


def _predict_error(python: Path, url: str, api: str, *inputs) -> str:
    """The error a call through Gradio's HTTP API gets: what the page shows in its red box."""
    done = subprocess.run([python, "-c", CLIENT, json.dumps({"url": url, "api": api, "inputs": inputs})],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0, done.stdout
    return done.stderr.strip().splitlines()[-1]


@pytest.mark.slow
@VENV_TIMEOUT
def test_the_space_does_not_install_the_package(space_venv):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run([space_venv["python"], "-m", "pip", "show", "t2i-reason"], capture_output=True, text=True,
                          env=env)
    assert done.returncode != 0 and "not found" in done.stderr  # what the apps import is the package shipped in the Space's folder


BUILD_EVERY_APP = """
import json, runpy, sys
endpoints = {}
for folder in json.loads(sys.argv[1]):
    sys.path.insert(0, folder)
    app = runpy.run_path(folder + "/app.py", run_name="space_app")  # built, not launched
    endpoints[folder.rsplit("/", 1)[-1]] = sorted(app["demo"].get_api_info()["named_endpoints"])
    assert sys.modules["t2ireason"].__file__.startswith(folder), sys.modules["t2ireason"].__file__
    for name in [m for m in sys.modules if m == "t2ireason" or m.startswith("t2ireason.")]:
        del sys.modules[name]  # the next Space imports its own copy
    sys.path.remove(folder)
print(json.dumps(endpoints))
"""


@pytest.mark.slow
@VENV_TIMEOUT
def test_every_space_app_builds_from_its_own_files(space_venv):
    """Each app.py builds its Gradio app with the cards' gradio and the package shipped in its folder."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(GRADIO_ANALYTICS_ENABLED="False", HF_HUB_OFFLINE="1")
    folders = [str(space_venv["spaces"][f.name]) for f in FOLDERS]
    done = _run([space_venv["python"], "-c", BUILD_EVERY_APP, json.dumps(folders)], env=env, timeout=600)
    endpoints = json.loads(done.stdout.strip().splitlines()[-1])
    assert endpoints == {f.name: ["/compute"] if f.name == "meta_evaluation" else ["/score"] for f in FOLDERS}


@pytest.mark.slow
@VENV_TIMEOUT
def test_the_vqascore_space_serves_a_score(space_venv, tmp_path):
    from t2ireason.testing_http import Answer, serve

    image = tmp_path / "red.png"
    Image.new("RGB", (24, 24), "red").save(image)
    with serve(Answer("Yes", top_logprobs=[{"Yes": -0.1, "No": -2.3}])) as judge, \
            ServedSpace(space_venv["python"], space_venv["spaces"]["vqascore"]) as space:
        assert "/score" in space.info["named_endpoints"]
        out = _predict(space_venv["python"], space.url, "/score",
                       {"file": str(image)}, "a red square", f"openai:test-model@{judge.base_url}")
        # the project's own clear messages reach the page, not a bare "Error": a judge error at load...
        said = _predict_error(space_venv["python"], space.url, "/score", {"file": str(image)}, "a red square",
                              "openai:test-model@notaurl")
        assert "AppError" in said and "base URL" in said and "notaurl" in said, said
        # ... and one while scoring: a server that ignores the log-probabilities VQAScore asks for
        with serve(Answer("Yes", no_logprobs=True)) as bare:
            said = _predict_error(space_venv["python"], space.url, "/score", {"file": str(image)}, "a red square",
                                  f"openai:test-model@{bare.base_url}")
        assert "without the log-probabilities it asked for" in said, said
    assert out["scores"] == pytest.approx([0.904837], abs=1e-5) and out["num_failed"] == 0
    assert out["judge"]["model"] == "test-model"
    request = judge.requests[0]
    assert 'Does this figure show "a red square"?' in request.text and len(request.image_urls) == 1


@pytest.mark.slow
@VENV_TIMEOUT
def test_the_prism_score_space_scores_a_benchmark_row(space_venv, tmp_path):
    from t2ireason.data import load_rows
    from t2ireason.testing_http import Answer, serve

    image = tmp_path / "picture.png"
    Image.new("RGB", (24, 24), "blue").save(image)
    row = load_rows("prism-bench")[0]
    reply = json.dumps({"justification": "One sentence.", "score": 7})
    with serve(Answer(reply)) as judge, ServedSpace(space_venv["python"], space_venv["spaces"]["prism_score"]) as space:
        assert "/score" in space.info["named_endpoints"]
        out = _predict(space_venv["python"], space.url, "/score",
                       {"file": str(image)}, json.dumps(row, default=str), f"openai:test-model@{judge.base_url}", "paper")
    assert out["num_failed"] == 0 and out["scores"] == [pytest.approx(0.7)]  # the per-image reward, 0-1
    assert out["per_image"][0]["id"] == str(row["id"]) and len(judge.requests) == 2  # alignment and aesthetics


@pytest.mark.slow
@VENV_TIMEOUT
def test_the_readme_install_line_works_from_the_wheel(space_venv, tmp_path):
    """The README's line, run where ``python -m build`` left the wheel, installs a working package:
    the command, and a metric found by its bare name in the installed files."""
    readme = (ROOT / "README.md").read_text()
    (line,) = re.findall(r"^pip install (.*dist/t2i_reason-.*\.whl.*?)(?:\s+#.*)?$", readme, re.M)
    wheel = space_venv["wheel"]
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / wheel.name).write_bytes(wheel.read_bytes())
    # the argument as the shell pasted there gives it (the README names the wheel by a pattern, `ls dist/...`)
    spec = _run(["bash", "-c", f"printf %s {line}"], cwd=tmp_path, timeout=60).stdout
    assert (tmp_path / spec.split("[")[0]).is_file(), f"the README's line names {spec}, not the wheel {wheel.name}"
    python = space_venv["python"]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _pip_install(python, spec, cwd=tmp_path, env=env, timeout=900)
    assert "usage: t2ireason" in _run([python.parent / "t2ireason", "--help"], env=env, timeout=300).stdout
    check = ("import t2ireason, pathlib; path = pathlib.Path(t2ireason.__file__).parent;"
             "assert 'site-packages' in str(path), path;"
             "assert not (path / 'metrics').is_symlink() and (path / 'metrics/vqascore/vqascore.py').is_file();"
             "m = t2ireason.load_metric('meta_evaluation');"
             "print(round(m.compute(predictions=[0.1, 0.4, 0.35, 0.8], references=[1, 2, 3, 4])['kendall_tau'], 4))")
    assert _run([python, "-c", check], env=env, cwd=tmp_path, timeout=300).stdout.split()[-1] == "0.6667"


@pytest.mark.slow
def test_publishing_without_a_wheel_builds_one(tmp_path, capsys):
    assert pub.main(["--out", str(tmp_path), "--only", "meta_evaluation"]) == 0
    space = tmp_path / "meta_evaluation"
    assert (space / "t2ireason" / "metric.py").is_file() and (space / "meta_evaluation.py").is_file()
    assert "t2i-reason ships in this Space" in (space / "requirements.txt").read_text()
    assert f"wrote {space}" in capsys.readouterr().out
