"""OpenAIJudge over real HTTP against the local test server (t2ireason.testing_http)."""

import asyncio
import base64
import io
import json
import logging
import math
import urllib.request

import pytest
from PIL import Image

from t2ireason.judges import ChatRequest, JudgeError, Sampling, load_judge
from t2ireason.judges.base import AnswerQuery
from t2ireason.judges.openai_judge import OpenAIJudge, answer_logprob
from t2ireason.testing_http import Answer, Fail, Hang, Malformed, serve

pytest.importorskip("openai")

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
        waits = [judge._wait(plain, attempt) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits) and max(waits) > 0.8 * ceiling  # full jitter up to the cap
    told = RuntimeError("429")
    told.response = types.SimpleNamespace(headers={"retry-after": "7"})
    assert judge._wait(told, 1) == 7.0
    told.response.headers = {"retry-after-ms": "250", "retry-after": "7"}
    assert judge._wait(told, 5) == 0.25
    judge.close()


def test_500_retried_then_success_and_persistent_500_is_a_reply_error():
    def flaky(r):
        if "doomed" in r.text:
            return Fail(500, "internal error")
        return Fail(503, "overloaded") if r.attempt < 2 else Answer(f"ok {r.text}")

    with serve(flaky) as server, _judge(server, max_retries=3) as judge:
        replies = judge.chat([ChatRequest.simple("a"), ChatRequest.simple("doomed"), ChatRequest.simple("b")])
    assert [r.text for r in replies] == ["ok a", "", "ok b"]
    assert replies[1].error.startswith("HTTP 500 after 4 attempts") and "internal error" in replies[1].error
    assert sum(r.text == "doomed" for r in server.requests) == 4  # 1 + max_retries
    assert sum(r.text == "a" for r in server.requests) == 3


def test_non_retryable_client_errors_fail_fast():
    with serve(Fail(404, "The model `test-model` does not exist")) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert len(server.requests) == 1
    assert reply.error.startswith("HTTP 404: not found: model 'test-model'") and "does not exist" in reply.error


def test_hung_request_times_out_then_retried():
    with serve([Hang(30), Answer("late but fine")]) as server, _judge(server, timeout=0.5) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "late but fine" and len(server.requests) == 2

    with serve(Hang(30)) as server, _judge(server, timeout=0.3, max_retries=1) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error == "timed out after 0.3 s after 2 attempts" and len(server.requests) == 2


def test_malformed_json_retried_then_recorded():
    with serve([Malformed(), Answer("recovered")]) as server, _judge(server) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.text == "recovered" and len(server.requests) == 2

    with serve(Malformed('{"unexpected": true}')) as server, _judge(server, max_retries=1) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert not reply.ok and reply.error.startswith("malformed response after 2 attempts")


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
        with pytest.raises(JudgeError, match="refuses logprobs"):
            judge.yes_probability([_image()], ["q"])
    with serve(Answer("Yes", no_logprobs=True)) as server, _judge(server) as judge:
        with pytest.raises(JudgeError, match="returned no log-probabilities"):
            judge.yes_probability([_image()], ["q"])
    with pytest.raises(JudgeError, match="only its beginning"):
        answer_logprob({"Photo": -0.1, "A": -3.0}, "Photosynthesis")
    assert answer_logprob({"yes": -0.1}, "Yes") == -math.inf


def test_api_key_never_leaks(caplog):
    echo = Fail(401, f"Incorrect API key provided: {KEY}")
    with caplog.at_level(logging.DEBUG), serve([Fail(500, f"oops {KEY}"), echo]) as server:
        judge = load_judge(f"openai:test-model@{server.base_url}", api_key=KEY, backoff_base=0.01, backoff_max=0.02)
        [reply] = judge.chat([ChatRequest.simple("q")])
        judge.close()
    assert isinstance(judge, OpenAIJudge) and judge.base_url == server.base_url
    assert reply.error.startswith("HTTP 401 after 2 attempts: authentication failed")
    assert "OPENAI_API_KEY" in reply.error
    for text in (repr(judge), str(judge.identity()), reply.error, str(reply.to_dict()), caplog.text):
        assert KEY not in text
    assert "retry 1 of 6" in caplog.text  # the retry was logged, without the key
    assert judge.identity()["base_url"] == server.base_url


def test_chat_from_inside_a_running_event_loop():
    with serve(lambda r: r.text[::-1]) as server, _judge(server) as judge:
        async def notebook_cell():
            return judge.chat([ChatRequest.simple("abc"), ChatRequest.simple("xyz")])

        replies = asyncio.run(notebook_cell())
    assert [r.text for r in replies] == ["cba", "zyx"]


def test_invalid_arguments():
    with pytest.raises(ValueError, match="max_concurrency"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", max_concurrency=0)
    with pytest.raises(ValueError, match="structured_output"):
        OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", structured_output="yes")


def test_connection_refused_is_a_reply_error():
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    judge = OpenAIJudge("m", base_url=f"http://127.0.0.1:{port}/v1", max_retries=1, backoff_base=0.01)
    [reply] = judge.chat([ChatRequest.simple("q")])
    judge.close()
    assert reply.error.startswith(f"cannot connect to http://127.0.0.1:{port}/v1 after 2 attempts")


def test_extra_body_is_merged_into_every_request():
    extra = {"top_k": 1, "chat_template_kwargs": {"enable_thinking": False}}
    with serve() as server, _judge(server, extra_body=extra) as judge:
        judge.chat([ChatRequest.simple("q"), ChatRequest.simple(_image(), "q2", top_logprobs=3)])
    for r in server.requests:
        assert r.body["top_k"] == 1 and r.body["chat_template_kwargs"] == {"enable_thinking": False}
        assert "extra_body" not in r.body and r.body["model"] == "test-model"
    assert server.requests[1].body["top_logprobs"] == 3


def test_without_aiohttp_the_default_transport_behaves_the_same(monkeypatch):
    import openai

    pytest.importorskip("aiohttp")
    with OpenAIJudge("m", base_url="http://127.0.0.1:9/v1") as judge:  # aiohttp where installed
        assert type(judge._client._client).__name__ == "_InstalledAioHttpClient"
    def missing(**kwargs):
        raise RuntimeError("To use the aiohttp client you must have installed the package with the `aiohttp` extra")

    monkeypatch.setattr(openai, "DefaultAioHttpClient", missing)
    with serve([Fail(429, retry_after=0), Hang(30), Answer("fine")]) as server, _judge(server, timeout=0.3) as judge:
        assert judge._client._client.__class__.__name__ != "_InstalledAioHttpClient"
        [reply] = judge.chat([ChatRequest.simple(_image(), "q")])
    assert reply.text == "fine" and len(server.requests) == 3
    with serve(Hang(30)) as server, _judge(server, timeout=0.3, max_retries=0) as judge:
        [reply] = judge.chat([ChatRequest.simple("q")])
    assert reply.error == "timed out after 0.3 s"
    test_connection_refused_is_a_reply_error()


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
