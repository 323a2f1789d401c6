"""VLLMJudge's translation to and from vLLM, tested without vLLM: a fake ``vllm``
module records what the judge asks and answers with objects shaped like
vLLM's ``RequestOutput`` / ``CompletionOutput`` / ``Logprob``."""

import math
import sys
import types
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
from PIL import Image

from t2ireason.judges import ChatRequest, JudgeError, Sampling, load_judge
from t2ireason.judges.vllm_judge import VLLMJudge

VOCAB = {"Yes": 1, " Yes": 2, "No": 3, ".": 4}


@dataclass
class Logprob:  # vllm.logprobs.Logprob
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class SamplingParams:
    def __init__(self, **kwargs):
        self.kwargs = kwargs


class StructuredOutputsParams:
    def __init__(self, json=None, **kwargs):
        self.json = json


class Tokenizer:
    def encode(self, text, add_special_tokens=True):
        return [VOCAB[text]] if text in VOCAB else [ord(c) for c in text]


class LLM:
    """Answers each conversation with ``LLM.script(conversation, params)`` ->
    (text, [(token, {candidate: logprob})...] or None)."""

    script = staticmethod(lambda conversation, params: ("ok", None))

    def __init__(self, model, **kwargs):
        self.model, self.kwargs, self.calls = model, kwargs, []

    def get_tokenizer(self):
        return Tokenizer()

    def chat(self, messages, sampling_params=None, use_tqdm=True, **kwargs):
        self.calls.append({"messages": messages, "params": sampling_params, "use_tqdm": use_tqdm, **kwargs})
        outputs = []
        for conversation, params in zip(messages, sampling_params):
            text, steps = self.script(conversation, params)
            ids = [VOCAB.get(tok, 99) for tok, _ in steps] if steps else [VOCAB.get(text, 99)]
            logprobs = None
            if steps and params.kwargs.get("logprobs"):
                logprobs = [{VOCAB.get(c, 100 + r): Logprob(lp, r + 1, c)
                             for r, (c, lp) in enumerate(sorted(top.items(), key=lambda kv: -kv[1]))}
                            for _, top in steps]
            outputs.append(SimpleNamespace(
                prompt_token_ids=list(range(7)),
                outputs=[SimpleNamespace(text=text, token_ids=ids, logprobs=logprobs, finish_reason="stop")]))
        return outputs


@pytest.fixture
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    sampling_params = types.ModuleType("vllm.sampling_params")
    vllm.LLM, vllm.SamplingParams, vllm.sampling_params = LLM, SamplingParams, sampling_params
    sampling_params.SamplingParams, sampling_params.StructuredOutputsParams = SamplingParams, StructuredOutputsParams
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling_params)
    monkeypatch.setattr(LLM, "script", staticmethod(lambda conversation, params: ("ok", None)))
    return LLM


def test_missing_vllm_says_how_to_install_from_a_checkout(monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # makes `import vllm` fail
    with pytest.raises(JudgeError, match=r"from a checkout of t2i-reason, pip install -e '\.\[vllm\]'") as info:
        load_judge("vllm:org/model")
    assert "t2i-reason[vllm]" not in str(info.value)  # no index serves that name


def test_images_reach_the_engine_as_they_are_unless_a_budget_is_asked(fake_vllm):
    """The decoded picture itself, at its own size: no resizing, no encoding, unless max_pixels."""
    from t2ireason.images import as_image

    image = as_image(Image.new("RGB", (1024, 768), (10, 200, 10)))
    parts = []
    for judge in (VLLMJudge("m"), VLLMJudge("m", max_pixels=1024 * 768 // 4)):
        judge.chat([ChatRequest.simple(image, "q")])
        [[message]] = judge._llm.calls[0]["messages"]
        parts += [p for p in message["content"] if p["type"] == "image_pil"]
    as_is, budget = parts
    assert as_is["image_pil"] is image.image and as_is["image_pil"].size == (1024, 768)
    assert budget["image_pil"].size == (512, 384)


@pytest.mark.parametrize("option, value", [("batch_size", 0), ("max_pixels", 0), ("batch_size", "8")])
def test_bad_options_are_named(fake_vllm, option, value):
    from t2ireason.judges import validate_judge

    with pytest.raises(JudgeError, match=f"vllm judge's {option} must be"):
        validate_judge("vllm:m", {option: value})
    with pytest.raises(JudgeError, match=f"vllm judge's {option} must be"):
        VLLMJudge("m", **{option: value})


def test_engine_built_from_spec(fake_vllm):
    judge = load_judge("vllm:org/model", revision="abc123", tensor_parallel_size=2, max_model_len=4096)
    assert isinstance(judge, VLLMJudge)
    assert judge._llm.model == "org/model"
    assert judge._llm.kwargs == {"revision": "abc123", "tensor_parallel_size": 2, "max_model_len": 4096}
    assert judge.identity() == {"backend": "vllm", "model": "org/model", "revision": "abc123", "max_pixels": None}


def test_chat_translation(fake_vllm):
    fake_vllm.script = staticmethod(
        lambda conv, params: ('{"score": 4}', [("Yes", {"Yes": -0.1, " Yes": -2.5, "No": -3.0}), (".", {".": -0.01})]))
    schema = {"type": "object", "properties": {"score": {"type": "integer"}}}
    image = Image.new("RGB", (64, 32), (10, 200, 10))
    s = Sampling(temperature=0.5, top_p=0.95, max_tokens=99, seed=3)
    judge = VLLMJudge("org/model", max_pixels=512)
    req = ChatRequest.simple(image, "Rate it.", system_prompt="Be strict.", sampling=s, json_schema=schema,
                             top_logprobs=2)
    [reply] = judge.chat([req])

    [call] = judge._llm.calls
    assert call["use_tqdm"] is False
    [conversation] = call["messages"]
    assert conversation[0] == {"role": "system", "content": "Be strict."}
    img_part, text_part = conversation[1]["content"]
    assert text_part == {"type": "text", "text": "Rate it."}
    assert img_part["type"] == "image_pil" and img_part["uuid"] == req.images[0].digest
    assert img_part["image_pil"].size == (32, 16)  # 2048 px scaled into the 512 px budget
    [params] = call["params"]
    assert params.kwargs["structured_outputs"].json == schema
    assert {k: params.kwargs[k] for k in ("temperature", "top_p", "max_tokens", "seed", "logprobs")} == \
        {"temperature": 0.5, "top_p": 0.95, "max_tokens": 99, "seed": 3, "logprobs": 2}

    assert reply.ok and reply.text == '{"score": 4}' and reply.finish_reason == "stop"
    assert reply.sampling == s.to_dict()
    assert reply.usage == {"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}
    assert [t.token for t in reply.logprobs] == ["Yes", "."]
    assert reply.logprobs[0].logprob == -0.1 and reply.logprobs[0].top == {"Yes": -0.1, " Yes": -2.5, "No": -3.0}


def test_plain_requests_use_defaults_and_no_structured_output(fake_vllm):
    judge = VLLMJudge("m", structured_output=False, sampling=Sampling(max_tokens=10))
    [reply] = judge.chat([ChatRequest.simple("hi", json_schema={"type": "object"})])
    [params] = judge._llm.calls[0]["params"]
    assert params.kwargs == {"temperature": 0.0, "top_p": 1.0, "max_tokens": 10, "seed": None}
    assert judge._llm.calls[0]["messages"][0] == [{"role": "user", "content": "hi"}]
    assert reply.text == "ok" and reply.logprobs is None


def test_one_bad_request_does_not_fail_the_batch(fake_vllm):
    def script(conversation, params):
        if "too long" in conversation[-1]["content"]:
            raise ValueError("prompt is longer than max_model_len")
        return conversation[-1]["content"].upper(), None

    fake_vllm.script = staticmethod(script)
    judge = VLLMJudge("m")
    replies = judge.chat([ChatRequest.simple("a"), ChatRequest.simple("too long"), ChatRequest.simple("b")])
    assert [r.text for r in replies] == ["A", "", "B"]
    assert replies[1].error == "ValueError: prompt is longer than max_model_len"
    assert len(judge._llm.calls) == 4  # the batch, then each request alone


def test_yes_probability_from_one_token_logprobs(fake_vllm):
    def script(conversation, params):
        question = conversation[0]["content"][1]["text"]
        top = {"Yes": math.log(0.5), " Yes": math.log(0.2), "No": math.log(0.3)} if "dog" in question \
            else {"No": math.log(0.95), "Maybe": math.log(0.05)}
        return max(top, key=top.get), [(max(top, key=top.get), top)]

    fake_vllm.script = staticmethod(script)
    judge = VLLMJudge("m")
    p = judge.yes_probability([Image.new("RGB", (8, 8))] * 2, ["A dog?", "A cat?"])
    assert p[0] == pytest.approx(0.7) and p[1] == 0.0
    [params, _] = judge._llm.calls[0]["params"]
    assert {k: params.kwargs[k] for k in ("temperature", "max_tokens", "logprobs")} == \
        {"temperature": 0.0, "max_tokens": 1, "logprobs": 20}


def test_multi_token_answer_is_refused(fake_vllm):
    judge = VLLMJudge("m")
    from t2ireason.judges import AnswerQuery

    with pytest.raises(JudgeError, match="is 10 tokens"):
        judge.answer_probability([AnswerQuery(Image.new("RGB", (8, 8)), "q", answer="Yes please")])
    assert judge._llm.calls == []
