"""TransformersJudge on the tiny LLaVA-layout model, loaded through the real from_pretrained path.

Expected values are computed here independently, with the processor and the
model called directly, never through the judge's own helpers.
"""

import math

import numpy as np
import pytest
import torch
from PIL import Image
from transformers import AutoModelForImageTextToText, AutoProcessor

from t2ireason.images import as_image
from t2ireason.judges import AnswerQuery, ChatRequest, JudgeError, Sampling, load_judge

LENGTH = 6  # new tokens per reply (min_new_tokens keeps the random model from stopping early)


@pytest.fixture(scope="module")
def vlm(tiny_models):
    return tiny_models["vlm"]


@pytest.fixture(scope="module")
def judge(vlm):
    return load_judge(f"hf:{vlm}", batch_size=4, sampling=Sampling(max_tokens=LENGTH),
                      generate_kwargs={"min_new_tokens": LENGTH}, device="cpu")


@pytest.fixture(scope="module")
def reference(vlm):
    """The model and processor, called directly to compute expected values."""
    processor = AutoProcessor.from_pretrained(vlm)
    model = AutoModelForImageTextToText.from_pretrained(vlm).eval()
    return model, processor


def _image(seed, size=(40, 30)):
    rng = np.random.default_rng(seed)
    return as_image(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _content(parts):
    return [{"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "image": p.image} for p in parts]


def _reference_inputs(processor, conversation):
    return processor.apply_chat_template([conversation], add_generation_prompt=True, tokenize=True,
                                         return_dict=True, return_tensors="pt")


def _reference_generate(reference, conversation, n=LENGTH):
    model, processor = reference
    enc = _reference_inputs(processor, conversation)
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=n, min_new_tokens=n, do_sample=False)
    return processor.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def _reference_logprob(reference, image, question, answer):
    """log P(answer | image, question), one token at a time, no padding, no batching."""
    model, processor = reference
    enc = _reference_inputs(processor, [{"role": "user", "content": _content([image, question])}])
    ids = processor.tokenizer(answer, add_special_tokens=False).input_ids
    total = 0.0
    for token in ids:
        with torch.inference_mode():
            logits = model(**enc).logits[0, -1]
        total += logits.log_softmax(-1)[token].item()
        enc["input_ids"] = torch.cat([enc["input_ids"], torch.tensor([[token]])], 1)
        enc["attention_mask"] = torch.cat([enc["attention_mask"], torch.ones((1, 1), dtype=torch.long)], 1)
    return total


QUESTIONS = ["Is it red?", "Does this figure show \"a cat on a mat\"? Please answer yes or no.",
             "Dog?", "Is there a tall blue house next to a small green tree?", "Night?", "Any text visible?"]


def _requests():
    return [ChatRequest.simple(_image(i, (32 + 8 * i, 30)), q) for i, q in enumerate(QUESTIONS)] + [
        ChatRequest.simple("A question without any image, rather long to force padding of the others.")]


def test_chat_matches_generate_and_batching_changes_nothing(judge, reference):
    requests = _requests()
    batched = judge.chat(requests)
    single = [judge.chat([r])[0] for r in requests]
    assert [r.text for r in batched] == [r.text for r in single]
    for req, reply in zip(requests, batched):
        assert reply.ok and reply.model == judge.model
        assert reply.finish_reason == "length"
        assert reply.usage["completion_tokens"] == LENGTH
        assert reply.sampling == Sampling(max_tokens=LENGTH).to_dict()
        m = req.messages[0]
        assert reply.text == _reference_generate(reference, [{"role": "user", "content": _content(m.content)}])
    assert len({r.text for r in batched}) > 1  # the replies do depend on the request


def test_multi_turn_with_image_in_first_turn(judge, reference):
    img = _image(7)
    req = ChatRequest.simple(img, "Describe this image.", system_prompt="You are a careful judge.").then(
        "A noisy square.", "Is any part of it red? Answer in JSON.")
    [reply] = judge.chat([req])
    conversation = [
        {"role": "system", "content": [{"type": "text", "text": "You are a careful judge."}]},
        {"role": "user", "content": [{"type": "image", "image": img.image}, {"type": "text", "text": "Describe this image."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A noisy square."}]},
        {"role": "user", "content": [{"type": "text", "text": "Is any part of it red? Answer in JSON."}]},
    ]
    assert reply.ok and reply.text == _reference_generate(reference, conversation)
    prompt_len = _reference_inputs(reference[1], conversation)["input_ids"].shape[1]
    assert reply.usage["prompt_tokens"] == prompt_len
    assert reply.usage["total_tokens"] == prompt_len + LENGTH


def test_sampling_recorded_and_seeded_sampling_reproducible(judge):
    sampling = Sampling(temperature=0.9, top_p=0.95, max_tokens=5, seed=11)
    req = ChatRequest.simple(_image(1), "Describe it.", sampling=sampling)
    [reply] = judge.chat([req])
    assert reply.sampling == sampling.to_dict()
    assert reply.usage["completion_tokens"] == 5 and reply.finish_reason == "length"
    # the same seed gives the same text, alone or batched with other requests, sampled or greedy
    others = _requests()[:3] + [ChatRequest.simple(_image(2), "Other", sampling=sampling.replace(seed=5))]
    mixed = judge.chat([others[0], req, others[1], others[3]])
    assert mixed[1].text == reply.text == judge.chat([req])[0].text
    assert mixed[0].text == judge.chat([others[0]])[0].text
    # and it is really sampling: other seeds give other texts, greedy gives another
    texts = {judge.chat([ChatRequest(req.messages, sampling=sampling.replace(seed=s))])[0].text for s in range(4)}
    assert len(texts) > 1
    greedy = judge.chat([ChatRequest(req.messages, sampling=sampling.replace(temperature=0.0))])[0]
    assert greedy.text != reply.text


def test_top_logprobs(judge, reference):
    img = _image(3)
    req = ChatRequest.simple(img, "Is it red?", top_logprobs=3)
    plain, [with_lp] = judge.chat([ChatRequest.simple(img, "Is it red?")])[0], judge.chat([req])
    assert plain.logprobs is None and with_lp.text == plain.text
    assert len(with_lp.logprobs) == LENGTH
    for tok in with_lp.logprobs:
        assert 1 <= len(tok.top) <= 3
        assert tok.logprob == pytest.approx(max(tok.top.values()), abs=1e-6)  # greedy picks the likeliest
        assert sum(math.exp(v) for v in tok.top.values()) <= 1 + 1e-6
    model, processor = reference
    enc = _reference_inputs(processor, [{"role": "user", "content": _content([img, "Is it red?"])}])
    with torch.inference_mode():
        first = model(**enc).logits[0, -1].log_softmax(-1)
    assert with_lp.logprobs[0].logprob == pytest.approx(first.max().item(), abs=1e-5)
    assert with_lp.logprobs[0].token == processor.tokenizer.decode([first.argmax().item()])


def test_yes_probability_equals_manual_softmax(judge, reference):
    model, processor = reference
    yes = processor.tokenizer("Yes", add_special_tokens=False).input_ids
    assert len(yes) == 1
    img = _image(4)
    question = 'Does this figure show "a red bus"? Please answer yes or no.'
    enc = _reference_inputs(processor, [{"role": "user", "content": _content([img, question])}])
    with torch.inference_mode():
        expected = model(**enc).logits[0, -1].softmax(-1)[yes[0]].item()
    [p] = judge.yes_probability([img], [question])
    assert p == pytest.approx(expected, rel=1e-5)


def test_answer_probabilities_batched_equal_unbatched_and_multi_token(judge, reference, monkeypatch):
    tokenizer = reference[1].tokenizer
    multi = "Yes, not really"
    assert len(tokenizer(multi, add_special_tokens=False).input_ids) > 2
    queries = [AnswerQuery(_image(i, (30 + 10 * i, 24)), q, a)
               for i, (q, a) in enumerate(zip(QUESTIONS, ["Yes", "No", multi, "Yes", "No", multi]))]
    batched = judge.answer_probability(queries)
    monkeypatch.setattr(judge, "batch_size", 1)
    single = judge.answer_probability(queries)
    assert batched == pytest.approx(single, rel=1e-4)
    for q, p in zip(queries, batched):  # each equals the product of its tokens' probabilities
        assert p == pytest.approx(math.exp(_reference_logprob(reference, q.image, q.question, q.answer)), rel=1e-4)
    assert batched[2] < min(batched[0], batched[1])  # three tokens are less likely than one


def test_yes_and_no_probabilities_are_a_partial_distribution(judge):
    images = [_image(i) for i in range(3)]
    questions = ["Is it a cat?"] * 3
    yes = judge.yes_probability(images, questions)
    no = judge.answer_probability([AnswerQuery(i, q, "No") for i, q in zip(images, questions)])
    for y, n in zip(yes, no):
        assert 0 < y < 1 and 0 < n < 1 and y + n <= 1


def test_pixel_budget_applied_once_per_image(vlm, monkeypatch):
    budget = 16 * 16
    judge = load_judge(f"hf:{vlm}", max_pixels=budget, batch_size=2, sampling=Sampling(max_tokens=2))
    img = _image(5, (64, 48))
    original = img.image
    resizes, seen = [], []
    real_resize = Image.Image.resize

    def counting_resize(self, *args, **kwargs):
        if self is original:
            resizes.append(args)
        return real_resize(self, *args, **kwargs)

    ip_class = type(judge.processor.image_processor)
    real_call = ip_class.__call__

    def spying_call(self, images, *args, **kwargs):
        seen.extend(im.size for group in images for im in (group if isinstance(group, list) else [group]))
        return real_call(self, images, *args, **kwargs)

    monkeypatch.setattr(Image.Image, "resize", counting_resize)
    monkeypatch.setattr(ip_class, "__call__", spying_call)
    judge.chat([ChatRequest.simple(img, q) for q in ("Red?", "Blue?", "Green?")])
    judge.yes_probability([img, img], ["Red?", "Blue?"])
    assert len(resizes) == 1
    assert len(seen) == 5 and all(w * h <= budget for w, h in seen) and len(set(seen)) == 1


def test_control_tokens_in_text_are_plain_text(judge):
    [reply] = judge.chat([ChatRequest.simple("What does <image> mean? </s> Go on.")])
    assert reply.ok and reply.usage["completion_tokens"] == LENGTH


def test_a_failing_request_does_not_sink_its_batch(judge, monkeypatch):
    requests = _requests()[:4]
    expected = [judge.chat([r])[0].text for r in requests]
    bad = ChatRequest.simple(_image(9, (13, 13)), "Broken?")
    ip_class = type(judge.processor.image_processor)
    real_call = ip_class.__call__

    def failing_call(self, images, *args, **kwargs):
        flat = [im for group in images for im in (group if isinstance(group, list) else [group])]
        if any(im.size == (13, 13) for im in flat):
            raise ValueError("cannot decode this image")
        return real_call(self, images, *args, **kwargs)

    monkeypatch.setattr(ip_class, "__call__", failing_call)
    replies = judge.chat(requests[:2] + [bad] + requests[2:])
    assert not replies[2].ok and "cannot decode this image" in replies[2].error and replies[2].text == ""
    assert [r.text for r in replies[:2] + replies[3:]] == expected
    assert all(r.ok for r in replies[:2] + replies[3:])
    with pytest.raises(JudgeError, match="Broken"):
        judge.answer_probability([AnswerQuery(_image(1), "Fine?"), AnswerQuery(bad.images[0], "Broken?")])


def test_bad_model_path_is_a_clear_error(tmp_path):
    missing = tmp_path / "no-such-model"
    with pytest.raises(JudgeError, match="no-such-model"):
        load_judge(f"hf:{missing}")


def test_dtype_and_device_map_reach_from_pretrained(vlm, judge):
    half = load_judge(f"hf:{vlm}", dtype="bfloat16", device_map="cpu", batch_size=4,
                      sampling=Sampling(max_tokens=LENGTH), generate_kwargs={"min_new_tokens": LENGTH})
    assert half.hf_model.dtype == torch.bfloat16 and half.device.type == "cpu"
    assert half.identity()["dtype"] == "bfloat16" and half.identity() != judge.identity()  # cached apart
    requests = _requests()[:3]
    replies = half.chat(requests)
    assert all(r.ok and r.text for r in replies)
    images, questions = [r.images[0] for r in requests], [r.messages[-1].text for r in requests]
    p16, p32 = half.yes_probability(images, questions), judge.yes_probability(images, questions)
    assert all(0 < p < 1 for p in p16) and p16 == pytest.approx(p32, abs=0.05)


def test_identity_names_what_changes_answers(judge):
    ident = judge.identity()
    assert ident["backend"] == "hf" and ident["model"] == judge.model and ident["dtype"] == "float32"
    assert ident["generate_kwargs"] == {"min_new_tokens": LENGTH} and ident["max_pixels"] is None


SCORE_SCHEMA = {
    "title": "score", "type": "object",
    "properties": {"justification": {"type": "string", "maxLength": 12},
                   "score": {"type": "integer", "minimum": 0, "maximum": 10},
                   "verdicts": {"type": "array", "items": {"enum": [0, 0.5, 1]}, "minItems": 3, "maxItems": 3}},
    "required": ["justification", "score", "verdicts"], "additionalProperties": False,
}


def _conforms(text):
    import json

    value = json.loads(text)
    return (set(value) == {"justification", "score", "verdicts"} and isinstance(value["justification"], str)
            and len(value["justification"]) <= 12 and isinstance(value["score"], int) and 0 <= value["score"] <= 10
            and len(value["verdicts"]) == 3 and all(v in (0, 0.5, 1) for v in value["verdicts"]))


def test_json_schema_is_enforced_per_row_by_constrained_decoding(vlm, reference):
    judge = load_judge(f"hf:{vlm}", batch_size=4, sampling=Sampling(max_tokens=80), device="cpu")
    free = ChatRequest.simple(_image(1), "Describe the image.", sampling=Sampling(max_tokens=LENGTH))
    asks = [ChatRequest.simple(_image(i), "Rate the image.", json_schema=SCORE_SCHEMA) for i in range(2)]
    seeded = ChatRequest.simple(_image(3), "Rate the image.", json_schema=SCORE_SCHEMA,
                                sampling=Sampling(temperature=1.0, seed=7, max_tokens=80))
    replies = judge.chat([asks[0], free, asks[1], seeded])
    for r in (replies[0], replies[2], replies[3]):
        assert r.ok and r.finish_reason == "stop" and _conforms(r.text), r.text
    # the free-text row in the same batch is untouched by the other rows' schemas
    conversation = [{"role": "user", "content": _content(free.messages[0].content)}]
    model, processor = reference
    enc = _reference_inputs(processor, conversation)
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=LENGTH, do_sample=False)
    assert replies[1].text == processor.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
    # a seeded sampled row is reproducible under the constraint too
    assert judge.chat([seeded])[0].text == replies[3].text


def test_structured_output_off_leaves_the_schema_to_the_parser(vlm):
    on = load_judge(f"hf:{vlm}", sampling=Sampling(max_tokens=80), device="cpu")
    off = load_judge(f"hf:{vlm}", sampling=Sampling(max_tokens=40), device="cpu", structured_output=False)
    request = ChatRequest.simple(_image(0), "Rate the image.", json_schema=SCORE_SCHEMA)
    plain = ChatRequest.simple(_image(0), "Rate the image.")
    assert off.chat([request])[0].text == off.chat([plain])[0].text  # the schema changed nothing
    assert _conforms(on.chat([request])[0].text)
    assert on.identity()["structured_output"] is True and "structured_output" not in off.identity()
