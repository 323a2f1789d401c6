"""The HTTP judge against ``transformers serve`` itself (transformers' own OpenAI-compatible server),
serving the tiny LLaVA-layout judge of ``t2ireason.testing`` from its folder, offline, on 127.0.0.1.

Its ``GET /v1/models`` lists the models of the Hub cache and, in transformers 5.23, answers HTTP 500 when
the cache folder does not exist (as on a fresh machine serving a local folder): the endpoint check must
take that as a server without a usable model list and decide with a one-token request, as the README
promises."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from t2ireason.judges import ChatRequest, Sampling, load_judge

pytest.importorskip("fastapi")  # transformers[serving]: fastapi, uvicorn, openai
pytest.importorskip("openai")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tiny_models, tmp_path_factory):
    """``transformers serve <tiny judge folder>`` with a Hub cache folder that does not exist."""
    cli = shutil.which("transformers", path=str(Path(sys.executable).parent)) or shutil.which("transformers")
    if cli is None:
        pytest.skip("the transformers command is not installed")
    home = tmp_path_factory.mktemp("serve") / "hf-home-never-created"
    port = _free_port()
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_CACHE": str(home / "hub"), "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "OMP_NUM_THREADS": "1"}
    log = tmp_path_factory.mktemp("serve-log") / "serve.log"
    with log.open("w") as out:
        process = subprocess.Popen([cli, "serve", "--host", "127.0.0.1", "--port", str(port), "--device", "cpu",
                                    str(tiny_models["vlm"])], env=env, stdout=out, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            if process.poll() is not None:
                pytest.fail(f"transformers serve exited {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(f"{base}/health", timeout=2).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    pytest.fail(f"transformers serve did not listen within 120 s:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield f"{base}/v1", str(tiny_models["vlm"]), home
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_transformers_serve_is_checked_with_one_tiny_request_when_its_model_list_fails(served):
    base_url, model, home = served
    # transformers 5.23 answers HTTP 500 here (no Hub cache folder): the case as found. Later releases may
    # list the models instead; either way the judge must pass its check and answer. The 500 path itself is
    # also pinned with the local test server (test_openai_judge.py), whatever transformers does.
    try:
        urllib.request.urlopen(f"{base_url}/models", timeout=30).close()
    except urllib.error.HTTPError as error:
        assert error.code == 500 and not (home / "hub").exists()
    with load_judge(f"openai:{model}@{base_url}", timeout=120) as judge:
        judge.check()  # was: JudgeUnavailable "cannot answer: HTTP 500 ... (while listing the served models)"
        (reply,) = judge.chat([ChatRequest.simple("Reply with OK.", sampling=Sampling(max_tokens=2))])
    assert reply.ok and reply.error is None
