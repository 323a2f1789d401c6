"""OpenAIJudge over real HTTP against the local test server (t2ireason.testing_http)."""

import asyncio
import base64
import concurrent.futures
import io
import json
import logging
import math
import re
import threading
import urllib.request

import pytest
from PIL import Image

from t2ireason.judges import (
    ChatRequest,
    JudgeAuthError,
    JudgeError,
    JudgeUnavailable,
    Sampling,
    load_judge,
    user,
    validate_judge,
)
from t2ireason.judges.base import AnswerQuery
from t2ireason.judges.openai_judge import DEFAULT_MAX_RETRY_AFTER, OpenAIJudge, answer_logprob
from t2ireason.testing_http import Answer, Disconnect, Drip, Fail, Hang, Huge, Malformed, serve

pytest.importorskip("aiohttp")

KEY = "sk-test-SECRET-0123456789abcdef"


def _image(color=(200, 30, 30), size=(24, 16)):
    return Image.new("RGB", size, color)


def _judge(server, **kw):
    kw.setdefault("api_key", KEY)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.05)
    kw.setdefault("timeout", 5)
    return OpenAIJudge("test-model", base_url=server.base_url, **kw)


def test_chat_sends_image_as_data_url_and_turns():
    with serve(Answer("A red square.")) as server, _judge(server) as judge:
        req = ChatRequest.simple(_image(), "What is shown?", system_prompt="You are a careful judge.")
        [reply] = judge.chat([req])
    assert reply.ok and reply.text == "A red square." and reply.finish_reason == "stop"
    assert reply.usage["total_tokens"] == reply.usage["prompt_tokens"] + reply.usage["completion_tokens"]
    body = server.requests[0].body
    assert body["model"] == "test-model"
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][0]["content"] == "You are a careful judge."
    parts = body["messages"][1]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"] and parts[1]["text"] == "What is shown?"
    url = parts[0]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    decoded = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert decoded.size == (24, 16) and decoded.convert("RGB").getpixel((3, 3)) == (200, 30, 30)
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_jpeg_and_pixel_budget():
    with serve() as server, _judge(server, image_format="JPEG", max_pixels=96) as judge:
        judge.chat([ChatRequest.simple(_image(size=(24, 16)), "q")])
    url = server.requests[0].image_urls[0]
    assert url.startswith("data:image/jpeg;base64,")
    img = Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))
    assert img.format == "JPEG" and img.width * img.height <= 96


def test_multi_turn_conversation():
    with serve(lambda r: f"turn {len(r.messages)}") as server, _judge(server) as judge:
        first = ChatRequest.simple(_image(), "Describe it.")
        [r1] = judge.chat([first])
        [r2] = judge.chat([first.then(r1.text, "Now rate it 0-10.")])
    assert (r1.text, r2.text) == ("turn 1", "turn 3")
    msgs = server.requests[1].body["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == "turn 1" and msgs[2]["content"] == "Now rate it 0-10."


def test_sampling_sent_and_recorded():
    s = Sampling(temperature=0.3, top_p=0.9, max_tokens=77, seed=5)
    with serve() as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("hi", sampling=s)])
        judge.max_tokens_param = "max_completion_tokens"
        judge.chat([ChatRequest.simple("hi again")])
    body = server.requests[0].body
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"]) == (0.3, 0.9, 77, 5)
    assert "max_completion_tokens" not in body and "logprobs" not in body
    assert reply.sampling == s.to_dict()
    default = server.requests[1].body  # judge default: greedy, no seed, newer-OpenAI token field
    assert default["temperature"] == 0.0 and "seed" not in default
    assert default["max_completion_tokens"] == 1024 and "max_tokens" not in default


def test_official_openai_endpoint_defaults(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(JudgeError, match="OPENAI_API_KEY"):
        OpenAIJudge("gpt-4.1")
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    judge = OpenAIJudge("gpt-4.1")
    assert judge.max_tokens_param == "max_completion_tokens"
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(JudgeError, match="GEMINI_API_KEY"):
        OpenAIJudge("gemini-2.5-pro", base_url="https://generativelanguage.googleapis.com/v1beta/openai/")


def test_json_schema_as_response_format_and_auto_fallback():
    schema = {"title": "Score reply", "type": "object", "properties": {"score": {"type": "integer"}}}
    with serve('{"score": 7}') as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("rate", json_schema=schema)])
    rf = server.requests[0].body["response_format"]
    assert reply.text == '{"score": 7}'
    assert rf == {"type": "json_schema", "json_schema": {"name": "Score_reply", "schema": schema}}

    with serve() as server, _judge(server, structured_output=False) as judge:
        judge.chat([ChatRequest.simple("rate", json_schema=schema)])
    assert "response_format" not in server.requests[0].body

    # a server that rejects response_format: "auto" retries without it and stops sending it
    def strict(r):
        return Fail(400, "response_format is not supported") if "response_format" in r.body else '{"score": 3}'

    with serve(strict) as server, _judge(server) as judge:
        replies = judge.chat([ChatRequest.simple("rate", json_schema=schema)])
        replies += judge.chat([ChatRequest.simple("rate again", json_schema=schema)])
    assert [r.text for r in replies] == ['{"score": 3}'] * 2
    assert ["response_format" in r.body for r in server.requests] == [True, False, False]

    with serve(strict) as server, _judge(server, structured_output=True) as judge:
        [reply] = judge.chat([ChatRequest.simple("rate", json_schema=schema)])
    assert not reply.ok and "HTTP 400" in reply.error and len(server.requests) == 1


def test_logprobs_mapped():
    top = [{"Yes": -0.2, "No": -1.8, "Maybe": -4.0}, {".": -0.01, "!": -5.0}]
    with serve(Answer("Yes.", top_logprobs=top)) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q", top_logprobs=2)])
    body = server.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 2
    assert [t.token for t in reply.logprobs] == ["Yes", "."]
    assert reply.logprobs[0].logprob == -0.2 and reply.logprobs[0].top == {"Yes": -0.2, "No": -1.8}


def test_slow_replies_keep_order_and_call_on_reply():
    def slow(r):  # later requests answer sooner, so completion order differs from request order
        n = int(r.text)
        return Answer(f"answer {n}", delay=0.05 * (6 - n))

    seen = {}
    with serve(slow) as server, _judge(server, max_concurrency=6) as judge:
        replies = judge.chat([ChatRequest.simple(str(n)) for n in range(6)],
                             on_reply=lambda i, r: seen.setdefault(i, r.text))
    assert [r.text for r in replies] == [f"answer {n}" for n in range(6)]
    assert seen == {n: f"answer {n}" for n in range(6)}
    assert len(server.requests) == 6


def test_429_retry_after_is_honoured():
    behaviour = [Fail(429, "rate limited", retry_after=1), Answer("fine")]
    with serve(behaviour) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.ok and reply.text == "fine"
    first, second = server.requests
    # backoff_max is 0.05 s, so only the server's Retry-After explains this gap
    assert second.received_at - first.received_at >= 0.95


def test_backoff_is_exponential_with_full_jitter_capped_and_yields_to_retry_after():
    import types

    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", backoff_base=0.5, backoff_max=3.0)
    plain = RuntimeError("connection reset")
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]:
        waits = [judge.transport._wait(plain, attempt) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits) and max(waits) > 0.8 * ceiling  # full jitter up to the cap
    told = RuntimeError("429")
    told.response = types.SimpleNamespace(headers={"retry-after": "7"})
    assert judge.transport._wait(told, 1) == 7.0
    told.response.headers = {"retry-after-ms": "250", "retry-after": "7"}
    assert judge.transport._wait(told, 5) == 0.25
    judge.close()


def test_500_retried_then_success_and_persistent_500_is_a_reply_error():
    def flaky(r):
        if "doomed" in r.text:
            return Fail(500, "internal error")
        return Fail(503, "overloaded") if r.attempt < 2 else Answer(f"ok {r.text}")

    with serve(flaky) as server, _judge(server, max_retries=3) as judge:
        replies = judge.chat([ChatRequest.simple("a"), ChatRequest.simple("doomed"), ChatRequest.simple("b")])
    assert [r.text for r in replies] == ["ok a", "", "ok b"]
    assert replies[1].error.startswith("HTTP 500: ") and "internal error" in replies[1].error
    assert "(4 attempts in " in replies[1].error and replies[1].transient
    assert sum(r.text == "doomed" for r in server.requests) == 4  # 1 + max_retries
    assert sum(r.text == "a" for r in server.requests) == 3


def test_non_retryable_client_errors_fail_fast():
    with serve(Fail(404, "The model `test-model` does not exist")) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert len(server.requests) == 1
    assert reply.error.startswith("HTTP 404: not found: model 'test-model'") and "does not exist" in reply.error
    assert not reply.transient


def test_hung_request_times_out_then_retried():
    with serve([Hang(30), Answer("late but fine")]) as server, _judge(server, timeout=0.5) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "late but fine" and len(server.requests) == 2

    with serve(Hang(30)) as server, _judge(server, timeout=0.3, max_retries=1, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error.startswith("timed out: no complete reply within 0.3 s (timeout) (2 attempts in ")
    assert reply.transient and len(server.requests) == 2


def test_malformed_json_retried_then_recorded():
    with serve([Malformed(), Answer("recovered")]) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "recovered" and len(server.requests) == 2

    with serve(Malformed('{"unexpected": true}')) as server, _judge(server, max_retries=1) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert not reply.ok and reply.error.startswith("malformed response: ") and "(2 attempts in " in reply.error
    assert reply.transient


def test_refusal_is_a_reply_error_and_not_retried():
    body = json.dumps({"id": "c1", "object": "chat.completion", "created": 0, "model": "test-model",
                       "choices": [{"index": 0, "finish_reason": "stop",
                                    "message": {"role": "assistant", "content": None, "refusal": "I can't judge that."}}]})
    with serve(Malformed(body)) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error == "refused: I can't judge that." and reply.text == "" and reply.finish_reason == "stop"
    assert len(server.requests) == 1


def test_concurrency_bound_holds():
    with serve(Answer("ok", delay=0.1)) as server, _judge(server, max_concurrency=4) as judge:
        replies = judge.chat([ChatRequest.simple(f"q{i}") for i in range(24)])
        with urllib.request.urlopen(f"{server.base_url}/_stats") as resp:
            stats = json.load(resp)
    assert all(r.ok for r in replies) and len(server.requests) == 24
    assert server.max_in_flight == 4
    assert stats == {"requests": 24, "max_in_flight": 4}


def test_image_encoded_once_for_many_requests(monkeypatch):
    saves = []
    original = Image.Image.save
    monkeypatch.setattr(Image.Image, "save", lambda self, *a, **k: (saves.append(1), original(self, *a, **k))[1])
    from t2ireason.images import as_image

    image = as_image(_image())
    with serve() as server, _judge(server, max_concurrency=8) as judge:
        judge.chat([ChatRequest.simple(image, f"question {i}") for i in range(20)])
    assert len(saves) == 1
    assert len({r.image_urls[0] for r in server.requests}) == 1 and len(server.requests) == 20


def test_yes_probability_from_top_logprobs():
    def vqa(r):
        if "dog" in r.text:
            return Answer("Yes", top_logprobs=[{"Yes": math.log(0.6), " Yes": math.log(0.1), "No": math.log(0.3)}])
        return Answer("No", top_logprobs=[{"No": math.log(0.9), "no": math.log(0.1)}])

    with serve(vqa) as server, _judge(server) as judge:
        p = judge.yes_probability([_image(), _image()], ["Is there a dog?", "Is there a cat?"])
        [lp] = judge._answer_logprobs([AnswerQuery(_image(), "Is there a dog?", answer="No")])
    assert p[0] == pytest.approx(0.7) and p[1] == 0.0
    assert lp == pytest.approx(math.log(0.3))
    body = server.requests[0].body
    assert body["max_tokens"] == 1 and body["temperature"] == 0.0
    assert body["logprobs"] is True and body["top_logprobs"] == 20
    assert [p["type"] for p in body["messages"][0]["content"]] == ["image_url", "text"]


def test_answer_probability_errors():
    with serve() as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="several tokens"):
            judge.answer_probability([AnswerQuery(_image(), "q", answer="Yes indeed")])
        assert server.requests == []
    with serve(Fail(400, "logprobs are not supported with this model")) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="the server refused the log-probabilities asked for"):
            judge.yes_probability([_image()], ["q"])
    with serve(Answer("Yes", no_logprobs=True)) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="without the log-probabilities it asked for"):
            judge.yes_probability([_image()], ["q"])
    with pytest.raises(JudgeError, match="only its beginning"):
        answer_logprob({"Photo": -0.1, "A": -3.0}, "Photosynthesis")
    assert answer_logprob({"yes": -0.1}, "Yes") == -math.inf


def test_api_key_never_leaks(caplog):
    echo = Fail(401, f"Incorrect API key provided: {KEY}")
    with caplog.at_level(logging.DEBUG), serve([Fail(500, f"oops {KEY}"), echo]) as server:
        judge = load_judge(f"openai:test-model@{server.base_url}", api_key=KEY, backoff_base=0.01, backoff_max=0.02,
                           check=False)
        with pytest.raises(JudgeAuthError) as refused:
            judge.chat([ChatRequest.simple("q")])
        judge.close()
    assert isinstance(judge, OpenAIJudge) and judge.base_url == server.base_url
    error = str(refused.value)
    assert "HTTP 401: authentication failed" in error and "(2 attempts in " in error and "OPENAI_API_KEY" in error
    for text in (repr(judge), str(judge.identity()), error, caplog.text):
        assert KEY not in text
    assert "retry 1 of 6" in caplog.text  # the retry was logged, without the key
    assert judge.identity()["base_url"] == server.base_url


def test_chat_from_inside_a_running_event_loop():
    with serve(lambda r: r.text[::-1]) as server, _judge(server) as judge:
        async def notebook_cell():
            return judge.chat([ChatRequest.simple("abc"), ChatRequest.simple("xyz")])

        # in a thread of its own: a session's playwright (the report tests) keeps a loop running in this one
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            replies = pool.submit(asyncio.run, notebook_cell()).result()
    assert [r.text for r in replies] == ["cba", "zyx"]


@pytest.mark.parametrize("option, value, message", [
    ("max_concurrency", 0, "max_concurrency must be a whole number >= 1, got 0"),
    ("structured_output", "yes", "structured_output must be True, False or 'auto'"),
    ("timeout", -1, "timeout must be a number of seconds > 0"),
    ("deadline", float("nan"), "deadline must be a number of seconds > 0"),
    ("max_reply_bytes", 0, "max_reply_bytes must be a whole number of bytes >= 1"),
    ("on_unavailable", "ignore", "on_unavailable must be 'raise' or 'record'"),
    ("image_format", "BMP", "image_format must be None"),
])
def test_invalid_arguments_are_named_at_construction_and_by_validate_judge(option, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", **{option: value})
    with pytest.raises(JudgeError, match=re.escape(message)):
        validate_judge("openai:m@http://127.0.0.1:9/v1", {option: value})


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_a_reply_error():
    port = _free_port()
    judge = OpenAIJudge("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01, check=False,
                        on_unavailable="record")
    [reply] = judge.chat([ChatRequest.simple("q")])
    judge.close()
    assert reply.error.startswith(f"cannot connect to http://127.0.0.1:{port}/v1: ")
    assert "Connect" in reply.error and "(2 attempts in " in reply.error and reply.transient


def test_extra_body_is_merged_into_every_request():
    extra = {"top_k": 1, "chat_template_kwargs": {"enable_thinking": False}}
    with serve() as server, _judge(server, extra_body=extra) as judge:
        judge.chat([ChatRequest.simple("q"), ChatRequest.simple(_image(), "q2", top_logprobs=3)])
    for r in server.requests:
        assert r.body["top_k"] == 1 and r.body["chat_template_kwargs"] == {"enable_thinking": False}
        assert "extra_body" not in r.body and r.body["model"] == "test-model"
    assert server.requests[1].body["top_logprobs"] == 3


def test_missing_aiohttp_says_how_to_install_from_a_checkout(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "aiohttp", None)  # makes `import aiohttp` fail
    with pytest.raises(JudgeError, match=r"needs aiohttp: from a checkout of t2i-reason, pip install -e '\.\[openai\]'"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1")


def test_error_bodies_of_every_shape_are_read(monkeypatch):
    """OpenAI's {"error": {"message"}}, FastAPI's {"detail"}, plain text: the message is what the server said."""
    from t2ireason.transport import error_message as _error_message

    assert _error_message(b'{"error": {"message": "model overloaded", "code": 503}}') == "model overloaded"
    assert _error_message(b'{"detail": "Not Found"}') == "Not Found"
    assert _error_message(b'{"object": "error", "message": "bad image"}') == "bad image"
    assert _error_message(b"<html>502 Bad Gateway</html>") == "<html>502 Bad Gateway</html>"
    assert _error_message(b"") == "(empty body)"


def test_judges_never_closed_leave_nothing_behind_at_exit(tmp_path):
    """A judge dropped while its loop runs, and one still open at exit: closed quietly, no
    'Unclosed client session' or finalizer errors on stderr."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "unclosed.py"
    script.write_text(textwrap.dedent("""
        import gc
        from t2ireason.judges import ChatRequest, load_judge
        from t2ireason.testing_http import serve

        with serve() as server:
            kept = load_judge(f"openai:m@{server.base_url}")
            print(kept.chat([ChatRequest.simple("hi")])[0].text)
            dropped = load_judge(f"openai:m@{server.base_url}")
            dropped.chat([ChatRequest.simple("hi")])
            del dropped
            gc.collect()
            print(kept.chat([ChatRequest.simple("again")])[0].text)
    """))
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.split() == ["ok", "ok"]
    assert done.stderr == ""


def test_closed_judge_says_so():
    with serve() as server:
        judge = _judge(server)
        judge.chat([ChatRequest.simple("q")])
        judge.close()
        with pytest.raises(JudgeError, match="is closed"):
            judge.chat([ChatRequest.simple("q")])


# -- issue 16: the HTTP judge always comes back ------------------------------------


@pytest.mark.timeout(60)
def test_a_retry_after_beyond_the_cap_ends_the_request_at_once():
    """Retry-After: 3600 was obeyed (six retries: six hours). Beyond max_retry_after the request
    fails at once, with the wait the server asked for in the error."""
    assert DEFAULT_MAX_RETRY_AFTER == 60
    with serve(Fail(429, "quota exceeded", retry_after=3600)) as server, \
            _judge(server, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert len(server.requests) == 1 and reply.transient
    assert reply.error.startswith("HTTP 429: ") and "quota exceeded" in reply.error
    assert reply.error.endswith("no more retries: the server asked to wait 3600 s (Retry-After), "
                                "more than max_retry_after=60 s")
    # a wait within the cap is obeyed (test_429_retry_after_is_honoured); a lower cap refuses it
    with serve(Fail(429, retry_after=1)) as server, _judge(server, max_retry_after=0.5) as judge:
        with pytest.raises(JudgeUnavailable, match=r"asked to wait 1 s \(Retry-After\), more than max_retry_after"):
            judge.chat([ChatRequest.simple("q")])
    assert len(server.requests) == 1


@pytest.mark.timeout(60)
def test_the_deadline_bounds_a_request_with_all_its_retries_and_waits():
    with serve(Fail(503, "overloaded", retry_after=0.2)) as server, \
            _judge(server, max_retries=100, deadline=1, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert 2 <= len(server.requests) <= 6  # 1 s of 0.2 s waits, not 101 attempts
    assert reply.error.startswith("HTTP 503: ") and f"({len(server.requests)} attempts in " in reply.error
    assert "no more retries: the request's deadline of 1 s" in reply.error and reply.transient
    # the deadline also cuts the attempt that is on the wire when it passes
    with serve(Hang(30)) as server, _judge(server, timeout=20, deadline=0.5, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error == ("timed out: no complete reply within the 0.5 s left of the request's deadline; "
                           "no more retries: the request's deadline of 0.5 s has passed")
    assert len(server.requests) == 1


@pytest.mark.timeout(60)
def test_the_timeout_bounds_the_whole_attempt_not_the_gaps_between_reads():
    """A server dripping a byte every 0.1 s kept a request open far past its timeout: each byte
    reset the client's read time-out."""
    with serve(Drip(interval=0.1, count=40)) as server, \
            _judge(server, timeout=0.5, max_retries=0, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert not reply.ok and reply.error == "timed out: no complete reply within 0.5 s (timeout)" and reply.transient
    with serve(Drip(interval=0.1, count=40)) as server, _judge(server, timeout=0.5, max_retries=1) as judge:
        with pytest.raises(JudgeUnavailable, match=r"no complete reply within 0\.5 s \(timeout\) \(2 attempts in"):
            judge.chat([ChatRequest.simple("q")])
    assert len(server.requests) == 2
    with serve(Drip(interval=0.05, count=4, text="slow but whole")) as server, _judge(server, timeout=5) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "slow but whole"  # a trickle that ends in time is a reply


@pytest.mark.parametrize("declare_length", [False, True])
def test_a_reply_larger_than_the_limit_is_refused_unread(declare_length):
    with serve(Huge(5_000_000, declare_length=declare_length)) as server, \
            _judge(server, max_reply_bytes=1_000_000) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "" and "over the judge's limit of 1000000 bytes (max_reply_bytes)" in reply.error
    assert ("announced 5000" in reply.error) is declare_length
    assert len(server.requests) == 1 and reply.transient  # not retried: it would come back as large
    with serve(Huge(500_000)) as server, _judge(server, max_reply_bytes=1_000_000) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert len(reply.text) == 500_000  # under the limit: read as usual


@pytest.mark.parametrize("url, message", [
    ("notaurl", "it has no http:// or https:// scheme"),
    ("ftp://host/v1", "its scheme is 'ftp'"),
    ("http://", "it has no host"),
    ("http://localhost:port/v1", "is not a valid URL"),
])
def test_a_base_url_that_cannot_work_is_refused_at_load(url, message):
    """openai:m@notaurl retried until killed."""
    with pytest.raises(JudgeError, match=re.escape(message)) as info:
        load_judge(f"openai:m@{url}")
    assert "e.g. http://localhost:8000/v1" in str(info.value)
    with pytest.raises(JudgeError, match=re.escape(message) + r".*what follows the last '@' is the base URL"):
        validate_judge(f"openai:m@{url}")
    with pytest.raises(JudgeError, match=re.escape(message)):
        validate_judge("openai:m", {"base_url": url})


def test_a_dropped_connection_is_reported_as_such_with_the_time_it_took():
    """The aiohttp transport reports a dropped connection as a connect time-out: the message said
    'timed out after 5 s' when the failure came after 0.2 s."""
    with serve(Disconnect(delay=0.2)) as server, _judge(server, timeout=5, max_retries=0,
                                                         on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error.startswith(f"connection to {server.base_url} failed after 0.")
    assert "ServerDisconnectedError" in reply.error and "timed out" not in reply.error and reply.transient


# -- issue 17: a judge that cannot answer says so at once ----------------------------


@pytest.mark.timeout(60)
def test_nothing_listening_is_one_clear_error_before_any_request():
    port = _free_port()
    judge = load_judge(f"openai:m@http://127.0.0.1:{port}/v1")  # building it contacts nothing
    with pytest.raises(JudgeUnavailable) as info, judge:
        judge.chat([ChatRequest.simple("q") for _ in range(8)])
    message = str(info.value)
    assert f"cannot connect to http://127.0.0.1:{port}/v1" in message and "attempts" not in message  # no retries
    assert "listing the served models" in message and "check=False skips this check" in message


def test_nothing_listening_ends_a_metric_computation_with_the_cause(tmp_path):
    """evaluate.load("metrics/...", judge="openai:...@<nothing>"): scores=[None] after 100 s of
    silent retries per image; now the compute raises, naming the endpoint."""
    from PIL import Image as PILImage

    from t2ireason import load_metric

    port = _free_port()
    metric = load_metric("vqascore", judge=f"openai:m@http://127.0.0.1:{port}/v1", cache=False)
    with pytest.raises(JudgeUnavailable, match=f"cannot connect to http://127.0.0.1:{port}/v1"):
        metric.compute(predictions=[PILImage.new("RGB", (8, 8))], references=["a red square"])


def test_the_model_must_be_served():
    with serve(models=["org/judge-7b", "org/judge-72b"]) as server:
        with pytest.raises(JudgeError, match=r"does not serve a model named 'org/judge-27b'; it serves org/judge-7b, "
                                             r"org/judge-72b \(did you mean 'org/judge-7b'\?\)") as info:
            OpenAIJudge("org/judge-27b", base_url=server.base_url).chat([ChatRequest.simple("q")])
        assert not isinstance(info.value, JudgeUnavailable)
        assert server.model_requests == 1 and len(server.requests) == 1  # the list, then one one-token request
        assert server.requests[0].body["max_tokens"] == 1
        with OpenAIJudge("org/judge-72b", base_url=server.base_url) as judge:
            assert [r.text for r in judge.chat([ChatRequest.simple("q"), ChatRequest.simple("r")])] == ["ok", "ok"]
            judge.chat([ChatRequest.simple("again")])
        assert server.model_requests == 2 and len(server.requests) == 4  # listed: checked once, no test request


def test_a_server_without_a_model_list_is_checked_with_one_tiny_request():
    with serve(list_models=False) as server, _judge(server) as judge:
        judge.chat([ChatRequest.simple("q")])
        judge.chat([ChatRequest.simple("q2")])
    probe, first, second = server.requests
    assert probe.body["max_tokens"] == 1 and probe.body["messages"][0]["content"] == "Reply with OK."
    assert (first.text, second.text) == ("q", "q2")
    with serve(list_models=False, models=["other"]) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="does not serve a model named 'test-model'"):
            judge.chat([ChatRequest.simple("q")])


def test_a_model_list_the_server_fails_to_give_is_no_list():
    """``transformers serve`` answers GET /v1/models with HTTP 500 when its Hub cache folder does not
    exist (tests/judges/test_transformers_serve.py); the one-token request decides, at once."""
    with serve(list_models=500) as server, _judge(server) as judge:
        assert judge.chat([ChatRequest.simple("q")])[0].ok
    assert server.model_requests == 1  # not asked again: the probe follows
    probe, first = server.requests
    assert probe.body["max_tokens"] == 1 and first.text == "q"
    with serve(list_models=500, models=["other"]) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="does not serve a model named 'test-model'"):
            judge.check()


def test_a_refused_key_is_one_clear_error_and_check_false_skips_the_check():
    def auth(r):
        return Fail(401, "invalid api key")

    with serve(auth, list_models=False) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="authentication failed") as info:
            judge.chat([ChatRequest.simple("q")])
    assert not isinstance(info.value, JudgeUnavailable) and len(server.requests) == 1 and KEY not in str(info.value)
    with serve() as server, _judge(server, check=False) as judge:
        judge.chat([ChatRequest.simple("q")])
    assert server.model_requests == 0 and len(server.requests) == 1
    with serve() as server, _judge(server, check=False) as judge:
        judge.check()  # on demand
    assert server.model_requests == 1


def test_an_outage_during_a_batch_ends_it_keeping_the_replies_before():
    down = [Answer("first"), Answer("second"), Fail(503, "server is shutting down")]
    seen = {}
    with serve(down) as server, _judge(server, max_concurrency=1, max_retries=2) as judge:
        with pytest.raises(JudgeUnavailable, match=r"HTTP 503: .*server is shutting down \(3 attempts in .*"
                                                   r"on_unavailable='record'"):
            judge.chat([ChatRequest.simple(f"q{i}") for i in range(10)], on_reply=lambda i, r: seen.setdefault(i, r))
        sent = len(server.requests)
        with pytest.raises(JudgeUnavailable):  # the loop has run on since: nothing of the ended batch went out
            judge.chat([ChatRequest.simple("after")])
        assert {r.text for r in server.requests[sent:]} == {"after"}
    assert {i: r.text for i, r in seen.items()} == {0: "first", 1: "second"}

    with serve(down) as server, _judge(server, max_concurrency=1, max_retries=2, on_unavailable="record") as judge:
        replies = judge.chat([ChatRequest.simple(f"q{i}") for i in range(4)])
    assert [r.text for r in replies[:2]] == ["first", "second"]
    assert all(r.error.startswith("HTTP 503") and r.transient for r in replies[2:])


@pytest.mark.parametrize("status, transient", [(400, False), (404, False), (422, False),
                                               (500, True), (502, True), (503, True), (429, True)])
def test_transient_marks_failures_of_the_server_not_of_the_request(status, transient):
    with serve([Fail(status, "no")]) as server, _judge(server, max_retries=1, on_unavailable="record") as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert not reply.ok and reply.transient is transient
    assert len(server.requests) == (2 if transient else 1)


@pytest.mark.parametrize("status", [401, 403])
def test_refused_credentials_end_the_batch_and_are_never_a_replys_failure(status):
    """The key's failure, not the request's: raised (a JudgeUnavailable: finished work kept) even with
    on_unavailable='record', never returned as a reply that a caller would record or cache."""
    seen = {}
    with serve([Answer("first"), Fail(status, "no")]) as server, \
            _judge(server, max_concurrency=1, on_unavailable="record") as judge:
        with pytest.raises(JudgeAuthError, match=f"refused the credentials: HTTP {status}") as info:
            judge.chat([ChatRequest.simple(f"q{i}") for i in range(4)], on_reply=lambda i, r: seen.setdefault(i, r))
        assert len(server.requests) == 2  # not retried, and nothing more sent
    assert isinstance(info.value, JudgeUnavailable) and {i: r.text for i, r in seen.items()} == {0: "first"}


def test_a_transport_failure_is_never_asked_again_as_a_question():
    from t2ireason.parsing import ReplyParseError, ask_structured

    def parse(text):
        raise ReplyParseError("never reached")

    with serve(Fail(500, "boom")) as server, _judge(server, max_retries=2) as judge:
        [result] = ask_structured(judge, [ChatRequest.simple("q")], parse, max_reasks=3)
    assert not result.ok and result.transient and len(result.replies) == 1
    assert len(server.requests) == 3  # the backend's 1 + 2 retries, no re-ask round


def test_a_server_ignoring_logprobs_is_named_as_such():
    with serve(Answer("Yes", no_logprobs=True)) as server, _judge(server) as judge:
        with pytest.raises(JudgeError) as info:
            judge.yes_probability([_image()], ["q"])
    message = str(info.value)
    assert f"the server at {server.base_url} answered test-model's one-token request without the " \
           "log-probabilities it asked for (logprobs=true, top_logprobs=20): it ignores those fields" in message
    assert "reasoning" not in message
    with serve(Fail(400, "logprobs are not supported with reasoning models")) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="the server refused the log-probabilities asked for"):
            judge.yes_probability([_image()], ["q"])


def test_a_server_ignoring_response_format_is_noticed(caplog):
    schema = {"title": "Score", "type": "object", "properties": {"score": {"type": "integer"}}}
    with caplog.at_level(logging.WARNING), serve('{"score": 7}') as server, _judge(server) as judge:
        judge.chat([ChatRequest.simple("rate", json_schema=schema)])
    assert not judge.structured_output_ignored and "ignored response_format" not in caplog.text
    with caplog.at_level(logging.WARNING), serve("The score is 7.") as server, _judge(server) as judge:
        replies = judge.chat([ChatRequest.simple("rate", json_schema=schema) for _ in range(3)])
    assert [r.text for r in replies] == ["The score is 7."] * 3  # still the caller's to parse (and re-ask)
    assert judge.structured_output_ignored and "response_format" in server.requests[0].body
    assert caplog.text.count("the server ignored response_format (a JSON schema)") == 1


# -- issue 18: images never block the client ------------------------------------------


def test_a_file_image_is_sent_as_its_own_bytes_without_decoding_or_encoding(tmp_path, monkeypatch):
    from t2ireason.images import as_image

    path = tmp_path / "generated.png"
    _image(size=(64, 48)).save(path, optimize=True)
    image = as_image(path)
    saves = []
    monkeypatch.setattr(Image.Image, "save", lambda *a, **k: saves.append(1))
    with serve() as server, _judge(server) as judge:
        judge.chat([ChatRequest.simple(image, f"q{i}") for i in range(4)])
    assert saves == []
    urls = {r.image_urls[0] for r in server.requests}
    assert len(urls) == 1 and base64.b64decode(urls.pop().split(",", 1)[1]) == path.read_bytes()


def test_images_are_encoded_off_the_event_loop_once_each(monkeypatch):
    from t2ireason.images import JudgeImage, as_image

    threads = []
    original = JudgeImage.encoded
    monkeypatch.setattr(JudgeImage, "encoded",
                        lambda self, *a, **k: (threads.append(threading.current_thread().name), original(self, *a, **k))[1])
    images = [as_image(_image(color=(i, 0, 0))) for i in range(3)]
    with serve() as server, _judge(server, max_concurrency=4) as judge:
        judge.chat([ChatRequest.simple(img, f"q{k}") for img in images for k in range(5)])
    assert len(threads) == 3 and all(t.startswith("t2ireason-encode") for t in threads)
    assert len({r.image_urls[0] for r in server.requests}) == 3 and len(server.requests) == 15


def test_the_body_sent_is_the_request_as_json():
    """Data URLs are spliced into the body bytes: the server must receive exactly the request."""
    schema = {"title": "Reply", "type": "object"}
    req = ChatRequest.simple(_image(), 'Rate "this" \u00e9\n', _image(color=(1, 2, 3)), "and this",
                             system_prompt="Be strict.", json_schema=schema, top_logprobs=3,
                             sampling=Sampling(seed=4)).then('{"score": 1}', "Again?")
    with serve() as server, _judge(server, extra_body={"top_k": 1}) as judge:
        judge.chat([req])
        expected = judge._request_body(req, req.sampling, True)
    assert server.requests[0].body == expected
    assert expected["messages"][1]["content"][1] == {"type": "text", "text": 'Rate "this" \u00e9\n'}


# -- issue 35 item 10: a base URL with user:password@ ---------------------------------


def test_a_base_url_with_credentials_authenticates_with_them_alone_and_never_says_them(caplog, monkeypatch):
    """openai:m@http://user:pass@host/v1 was split at the URL's own '@'; given whole, aiohttp refused a URL's
    credentials beside the Bearer header. The credentials are the Authorization header (HTTP Basic), alone."""
    from urllib.parse import quote

    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # a key in the environment does not go with them
    password = "p@ss:w0rd-SECRET"
    token = base64.b64encode(f"judge:{password}".encode()).decode()
    with caplog.at_level(logging.DEBUG), serve([Fail(500, f"oops {password} {token}"), Answer("fine")]) as server:
        url = server.base_url.replace("http://", f"http://judge:{quote(password, safe='')}@")
        with load_judge(f"openai:test-model@{url}", backoff_base=0.01, backoff_max=0.02) as judge:
            [reply] = judge.chat([ChatRequest.simple("q")])
        with pytest.raises(JudgeError, match=r"carries user:password@ and an api_key is given too"):
            OpenAIJudge("test-model", base_url=url, api_key=KEY)
    assert reply.ok and reply.text == "fine" and judge.model == "test-model"
    assert [r.headers["authorization"] for r in server.requests] == [f"Basic {token}"] * 2
    assert judge.identity()["base_url"] == server.base_url and "retry 1 of 6" in caplog.text
    for text in (repr(judge), str(judge.identity()), caplog.text):
        assert password not in text and quote(password, safe="") not in text and token not in text


def test_an_empty_top_logprobs_list_is_read_from_the_generated_token_or_refused():
    """A server that gives the generated token's own log-probability with an empty ``top_logprobs``
    list: the answer's probability when that token is the answer (VQAScore through the metric, not
    a silent 0 for every image), else the server is refused as one that gives no log-probabilities."""
    from t2ireason import load_metric
    from t2ireason.judges import preflight

    yes = Answer("Yes", top_logprobs=[{"Yes": -0.1}], no_alternatives=True)
    with serve(yes) as server, _judge(server) as judge:
        preflight(judge, structured=False, probabilities=True)
        assert judge.yes_probability([_image()], ["Is it red?"]) == [pytest.approx(math.exp(-0.1))]
        metric = load_metric("vqascore", judge=judge, cache=False, progress=False)
        out = metric.compute(predictions=[_image()] * 3, references=["a cat", "a dog", "a car"])
    assert server.requests[-1].body["top_logprobs"] == 20
    assert out["scores"] == [pytest.approx(math.exp(-0.1))] * 3
    with serve(Answer("No", top_logprobs=[{"No": -0.2}], no_alternatives=True)) as server, _judge(server) as judge:
        with pytest.raises(JudgeError) as info:
            judge.yes_probability([_image()], ["Is it red?"])
        with pytest.raises(JudgeError, match="cannot give the answer probabilities VQAScore needs"):
            preflight(judge, structured=False, probabilities=True)
    assert "only its generated token 'No' with an empty top_logprobs list" in str(info.value)
    assert "no answer probability can be read through it" in str(info.value)


def test_a_model_the_server_does_not_serve_is_named_before_response_format_is_blamed(caplog):
    """A server (or proxy) that lists its models and answers another model's requests with a 400: the
    endpoint check names the model and what is served, before any request with a JSON schema; a 400
    that asking without response_format does not cure is not blamed on response_format."""
    from t2ireason.judges import preflight

    schema = {"title": "Score", "type": "object", "properties": {"score": {"type": "integer"}}}
    with caplog.at_level(logging.WARNING), serve(models=["org/judge-7b", "org/judge-72b"],
                                                 unknown_model_status=400) as server:
        with OpenAIJudge("org/judge-27b", base_url=server.base_url) as judge, pytest.raises(JudgeError) as info:
            preflight(judge)
    assert "does not serve a model named 'org/judge-27b'; it serves org/judge-7b, org/judge-72b" in str(info.value)
    assert "response_format" not in caplog.text and "response_format" not in str(info.value)
    assert all("response_format" not in r.body for r in server.requests)  # only the one-token probe went out
    # no list to go by: the 400 comes back as the request's error, response_format kept
    refusing = Fail(400, "Invalid model name passed in model=org/judge-27b")
    with caplog.at_level(logging.WARNING), serve(refusing, list_models=False) as server, \
            _judge(server, max_retries=0) as judge:
        [reply] = judge.chat([ChatRequest.simple("rate", json_schema=schema)])
        assert judge._structured_ok
    assert not reply.ok and "Invalid model name passed in model=org/judge-27b" in reply.error
    assert "rejected response_format" not in caplog.text


def test_openai_base_url_from_the_environment_is_the_judges_endpoint(monkeypatch):
    """``OPENAI_BASE_URL`` naming a server of one's own: no OpenAI key asked for, its token field, and an identity
    (the cache's key) that names it, never OpenAI's endpoint (whose cached replies it would otherwise share)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with serve(Answer("fine")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        judge = OpenAIJudge("gpt-4.1", check=False)
        try:
            assert judge.max_tokens_param == "max_tokens"
            assert judge.identity()["base_url"] == server.base_url
            assert judge.chat([ChatRequest(messages=(user("hi"),))])[0].text == "fine"
        finally:
            judge.close()
