"""The HTTP transport on its own (t2ireason.transport), against the local test server: what a protocol other
than chat (an image-generation API's ``POST /images/generations``) gets from it without copying any of it."""

import base64
import logging

import pytest

from t2ireason.testing_http import Fail, JSONBody, serve
from t2ireason.transport import HTTPStatus, Transport, json_bytes, transient

pytest.importorskip("aiohttp")

KEY = "sk-test-SECRET-0123456789abcdef"
PNG = base64.b64encode(b"\x89PNG not really").decode()


def _transport(server, **kw):
    kw.setdefault("api_key", KEY)
    kw.setdefault("backoff_base", 0.01)
    kw.setdefault("backoff_max", 0.02)
    return Transport(server.base_url, name="ImagesClient(test)", model="image-model", **kw)


def test_a_json_post_to_another_path_is_retried_with_the_key_and_its_reply_read(caplog):
    generated = {"created": 0, "data": [{"b64_json": PNG}]}
    with caplog.at_level(logging.WARNING), serve([Fail(503, "warming up", retry_after=0.05), JSONBody(generated)]) \
            as server, _transport(server) as transport:
        reply = transport.post_json("/images/generations", {"model": "image-model", "prompt": "a red cube"})
    assert reply == generated
    first, second = server.requests
    assert first.path == second.path == "/v1/images/generations"
    assert second.body == {"model": "image-model", "prompt": "a red cube"}
    assert second.headers["authorization"] == f"Bearer {KEY}"
    assert "ImagesClient(test): HTTP 503: warming up; retry 1 of 6" in caplog.text and KEY not in caplog.text


def test_a_batch_of_requests_to_another_path_with_a_protocols_own_reading():
    """A protocol is a body, a path and a reading of the reply: run_batch keeps every request in flight
    (bounded), in order, failures raised as what they are."""
    def answer(r):
        return Fail(400, "prompt refused") if r.body["prompt"] == "refused" else \
            JSONBody({"data": [{"b64_json": base64.b64encode(r.body["prompt"].encode()).decode()}]})

    def generate(prompt):
        return transport.post("/images/generations", json_bytes({"model": "image-model", "prompt": prompt}),
                              read=lambda reply: base64.b64decode(reply["data"][0]["b64_json"]))

    seen = {}
    with serve(answer) as server, _transport(server, max_concurrency=2) as transport:
        prompts = [f"prompt {i}" for i in range(6)]
        images = transport.run_batch(prompts, generate, on_result=seen.setdefault)
        assert images == [p.encode() for p in prompts] and seen == dict(enumerate(images))
        assert server.max_in_flight <= 2
        with pytest.raises(HTTPStatus) as refused:
            transport.run_batch(["refused"], generate)
    error = transport.describe(refused.value)
    assert error == "HTTP 400: bad request (not retried): prompt refused" and not transient(refused.value)
    assert len([r for r in server.requests if r.body["prompt"] == "refused"]) == 1


def test_a_missing_endpoint_is_named_with_its_path():
    with serve(Fail(404, "no such route")) as server, _transport(server) as transport:
        with pytest.raises(HTTPStatus) as missing:
            transport.post_json("/images/edits", {"prompt": "x"})
    assert transport.describe(missing.value) == (f"HTTP 404: not found: model 'image-model' or endpoint "
                                                 f"{server.base_url}/images/edits: no such route")


def test_a_closed_transport_says_so():
    with serve() as server:
        transport = _transport(server)
        transport.close()
        with pytest.raises(RuntimeError, match=r"ImagesClient\(test\) is closed"):
            transport.post_json("/images/generations", {})


@pytest.mark.timeout(60)
def test_a_ctrl_c_the_kernel_gave_another_thread_still_stops_a_request_waited_for(sigint_raises):
    """A request waited for on the transport's loop: Ctrl-C delivered to another of the process's threads used to be
    lost until the request ended (a hung server: never); the wait is made of short ticks, so it is raised here."""
    import asyncio
    import signal
    import threading
    import time

    transport = Transport("http://127.0.0.1:9/v1", name="Transport(test)")

    def send_from_another_thread():
        time.sleep(0.3)
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    sender = threading.Thread(target=send_from_another_thread)
    sender.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            transport.run(asyncio.sleep(600))  # a reply that never comes
    finally:
        sender.join()
        transport.close()
