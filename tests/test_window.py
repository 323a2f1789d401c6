"""An HTTP judge's concurrency across chunks (issue 35, item 5) and against a server that answers one request
at a time (issue 34, item 8): chunks in a rolling window keep ``max_concurrency`` requests in flight with the
default chunk size; a server overwhelmed gets fewer, then more again as it answers, and the run says so."""

from __future__ import annotations

import json
import logging
import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.runs import Run
from t2ireason.testing_http import Answer, Fail, serve
from t2ireason.window import in_window, window_width

R2I = get_benchmark("r2i-bench")
#: R2I-Bench's replies asked with a JSON schema, which the test server's replies follow
STRUCTURED = {"structured_output": True}


def run_with_samples(folder, samples: int) -> Run:
    """The shipped R2I-Bench sample with ``samples`` images a prompt, listed in the generation manifest."""
    run = Run.create(folder, "r2i-bench")
    run.images_dir.mkdir(parents=True, exist_ok=True)
    records = []
    for n, row in enumerate(run.rows()):
        for s in range(samples):
            name = f"{n:03d}_{s}.png"
            Image.new("RGB", (16, 16), (n * 9 % 256, s * 30, 90)).save(run.images_dir / name)
            records.append({"file_name": name, "prompt_id": R2I.row_id(row), "sample": s})
    pq.write_table(pa.Table.from_pylist(records), run.images_dir / "metadata.parquet")
    return run


def r2i_reply(request) -> str:
    """A valid R2I-Bench reply: every question of the structured request scored 1 (the pre-flight's: ok).
    Every request carries its schema (``STRUCTURED``)."""
    return json.dumps({k: 1 for k in request.body["response_format"]["json_schema"]["schema"]["properties"]})


def test_the_judges_concurrency_stays_full_across_chunks(tmp_path):
    run = run_with_samples(tmp_path / "run", samples=7)  # 105 images: chunks of 32, 32, 32, 9
    with serve(lambda r: Answer(r2i_reply(r), delay=2.0)) as server:
        scores = run.evaluate(f"openai:test-model@{server.base_url}", judge_kwargs={"max_concurrency": 64},
                              options=STRUCTURED, cache=False, progress=False)  # the default chunk_size, 32
    assert server.max_in_flight == 64  # not one chunk's 32
    assert scores["num_images"] == 105 and "concurrency" not in scores  # never cut
    lines = (run.evaluation_dir(scores["evaluation"]) / "results.jsonl").read_text().splitlines()
    results = [json.loads(line) for line in lines]
    assert sorted(r["key"] for r in results) == sorted(key for key, _, _ in run.image_items())
    assert all(r["score"] is not None or r["failure"].startswith("unscorable") for r in results)


def test_a_server_answering_one_request_at_a_time_gets_fewer_then_more(tmp_path, caplog):
    """45 requests at once at a server that answers one at a time in 50 ms: past a timeout of 0.5 s, those
    queued time out, and their retries queue behind what the server still answers for requests given up
    on (without adapting: 8 of 45 answered, whatever the retries); fewer in flight, every image is
    scored, and the cuts are said and recorded."""
    run = run_with_samples(tmp_path / "run", samples=3)  # 45 images, all in flight at once
    kwargs = {"max_concurrency": 64, "timeout": 0.5, "max_retries": 10, "backoff_base": 0.05, "backoff_max": 0.5}
    with caplog.at_level(logging.WARNING, logger="t2ireason.transport"), \
            serve(lambda r: Answer(r2i_reply(r), delay=0.05), one_at_a_time=True) as server:
        scores = run.evaluate(f"openai:test-model@{server.base_url}", judge_kwargs=kwargs, options=STRUCTURED,
                              cache=False, progress=False)
    assert scores["num_images"] == 45 and scores["num_retryable"] == 0
    assert scores["num_failed"] == sum(3 for row in run.rows() if not row["questions"])  # unscorable rows only
    record = scores["concurrency"]
    assert record["max_concurrency"] == 64 and record["lowest"] < 32 and record["cuts"] >= 2
    assert "timed out: no complete reply within 0.5 s (timeout); at most 32 requests in flight now (was 64)" \
        in caplog.text
    assert json.loads((run.evaluation_dir(scores["evaluation"]) / "scores.json").read_text())["concurrency"] == record


def test_in_window_keeps_width_chunks_in_flight_and_hands_each_back_when_done():
    started, lock, release = [], threading.Lock(), {n: threading.Event() for n in range(5)}

    def work(n):
        with lock:
            started.append(n)
        release[n].wait(10)
        if n == 1:
            raise ValueError("chunk 1 failed")
        return n * 10

    release[2].set()
    release[0].set()
    window = in_window(work, range(5), 3)
    got = [next(window), next(window)]
    assert sorted(got) == [(0, 0), (2, 20)] and started[:3] == [0, 1, 2]  # 3 at once; 3 and 4 follow
    release[3].set()
    release[1].set()  # fails: nothing new starts; those in flight are handed back, then the failure
    release[4].set()
    rest = []
    with pytest.raises(ValueError, match="chunk 1 failed"):
        rest.extend(window)
    assert set(started) <= {0, 1, 2, 3, 4} and all(n * 10 == r for n, r in rest)
    assert list(in_window(lambda n: -n, [1, 2], 1)) == [(1, -1), (2, -2)]  # one at a time, in order


def test_window_width_follows_the_judges_concurrency():
    from t2ireason.judges.scripted import ScriptedJudge

    http = type("HTTPJudge", (), {"max_concurrency": 64})()
    assert window_width(http, 32) == 3 and window_width(http, 64) == 2 and window_width(http, 100) == 2
    assert window_width(ScriptedJudge(["x"]), 32) == 1  # a judge answering a batch at a time: in order


def test_an_interrupted_window_stops_at_once_and_its_chunks_end_with_the_judge(tmp_path, sigint_raises):
    """Ctrl-C while three chunks wait for a server that does not answer: the evaluation stops at once,
    and closing the judge ends the chunks' threads (none is left waiting for replies that never come)."""
    import os
    import signal

    from t2ireason.testing_http import Hang

    run = run_with_samples(tmp_path / "run", samples=7)
    chunks: list[threading.Thread] = []

    def hanging(request):
        if "Is this image gray?" in request.text:  # the pre-flight
            return Answer(r2i_reply(request))
        if request.index == 40:  # more than a chunk's requests in flight: the chunks' threads, then Ctrl-C
            chunks.extend(t for t in threading.enumerate() if t.name.startswith("t2ireason-chunk"))
            os.kill(os.getpid(), signal.SIGINT)
        return Hang(120)

    with serve(hanging) as server:
        with pytest.raises(KeyboardInterrupt):
            run.evaluate(f"openai:test-model@{server.base_url}", judge_kwargs={"max_concurrency": 64, "timeout": 100},
                         options=STRUCTURED, cache=False, progress=False)
        assert len(chunks) == 3  # 64 in flight: three chunks of 32 at once
        for thread in chunks:
            thread.join(30)  # the server still hangs: only the judge's closing ends them
        assert not any(t.is_alive() for t in chunks)
    assert Run.open(run.path).manifest["evaluations"]  # started, not finished: the same command resumes


def test_chunks_in_a_window_journal_every_reply_so_a_resume_after_a_refused_key_asks_none_twice(tmp_path,
                                                                                               monkeypatch):
    """Three chunks in flight at once (their threads journaling replies as they arrive) when the key is refused:
    the resume with a new key asks only what was never answered, each once, and counts what the journal gave."""
    from t2ireason.judges import JudgeAuthError

    run = run_with_samples(tmp_path / "run", samples=2)  # 30 images: chunks of 4, three in flight (concurrency 8)
    answered: list[str] = []  # the image requests answered (paid for)
    lock = threading.Lock()

    def behaviour(request):
        if "Is this image gray?" in request.text or not request.image_urls:  # the pre-flight, the endpoint check
            return Answer(r2i_reply(request))
        with lock:
            if request.headers.get("authorization") == "Bearer old-key" and len(answered) >= 10:
                return Fail(401, "Incorrect API key provided")
            answered.append(request.text + "".join(request.image_urls))  # the samples of a prompt: by their image
        return Answer(r2i_reply(request))

    def evaluate():
        return run.evaluate(f"openai:gpt-4o@{server.base_url}", preset="paper", judge_kwargs={"max_concurrency": 8},
                            options=STRUCTURED, name="s", chunk_size=4, cache=False, progress=False)

    with serve(behaviour, models=["gpt-4o"]) as server:
        monkeypatch.setenv("OPENAI_API_KEY", "old-key")
        with pytest.raises(JudgeAuthError):
            evaluate()
        first = len(answered)
        journal = run.evaluation_dir("s") / "replies.jsonl"
        assert first >= 10 and journal.read_bytes().count(b"\n") == first  # each reply journaled by its chunk
        results = run.evaluation_dir("s") / "results.jsonl"
        saved = sum(json.loads(line)["score"] is not None for line in results.read_text().splitlines()) \
            if results.exists() else 0  # the chunks finished before the refusal: asked no more
        monkeypatch.setenv("OPENAI_API_KEY", "new-key")
        scores = evaluate()
    scorable = sum(2 for row in run.rows() if row["questions"])
    assert len(answered) == len(set(answered)) == scorable  # none paid for twice
    assert scores["num_images"] == 30 and scores["num_failed"] == 30 - scorable
    assert scores["reused"] == first - saved  # every journaled reply of an unsaved chunk, counted
    assert not journal.exists()


@pytest.mark.timeout(60)
def test_a_ctrl_c_the_kernel_gave_another_thread_still_stops_the_window(sigint_raises):
    """As found in CI: Ctrl-C delivered to one of the process's other threads (a server thread sent it here) never
    woke the main thread blocked waiting for a chunk; the evaluation hung. The waits are made of short ticks."""
    import signal

    release = threading.Event()

    def send_from_another_thread():
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)  # to this thread, not the main one

    sender = threading.Thread(target=send_from_another_thread)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            list(in_window(lambda chunk: release.wait(600), [1, 2, 3], 2))  # never, unless the interrupt is lost
    finally:
        release.set()
        sender.join()
