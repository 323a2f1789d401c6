"""TransformersJudge on the tiny LLaVA-layout model, loaded through the real from_pretrained path.

Expected values are computed here independently, with the processor and the
model called directly, never through the judge's own helpers.
"""

import functools
import json
import math
import re
from pathlib import Path

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
    """A request's text cannot stand for an image or close a turn: its control tokens encode as text."""
    request = ChatRequest.simple(_image(0), "What does <image> mean? </s> Go on.")
    [reply] = judge.chat([request])
    assert reply.ok and reply.usage["completion_tokens"] == LENGTH
    conversation = judge._conversation(request.messages)
    ids = judge._encode(judge._render([conversation]), [conversation])["input_ids"][0].tolist()
    tokenizer = judge.tokenizer
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    assert ids.count(tokenizer.eos_token_id) == 0 and ids.count(tokenizer.bos_token_id) == 1
    assert ids.count(image_id) == judge.hf_model.config.image_seq_length  # the real image's tokens only
    assert "What does <image> mean? </s> Go on." in tokenizer.decode(ids).replace("\u200b", "")


def test_a_deterministic_error_raises_at_once_with_the_family_and_the_cause(judge, monkeypatch):
    """A processor that refuses an image fails the same way however often it is asked: the judge raises
    a JudgeError naming the model's family and the cause instead of returning failed replies."""
    bad = ChatRequest.simple(_image(9, (13, 13)), "Broken?")
    ip_class = type(judge.processor.image_processor)
    real_call = ip_class.__call__

    def failing_call(self, images, *args, **kwargs):
        flat = [im for group in images for im in (group if isinstance(group, list) else [group])]
        if any(im.size == (13, 13) for im in flat):
            raise ValueError("cannot decode this image")
        return real_call(self, images, *args, **kwargs)

    monkeypatch.setattr(ip_class, "__call__", failing_call)
    with pytest.raises(JudgeError, match=r"\[llava \(LlavaProcessor\)\]: the processor failed: ValueError: cannot decode"):
        judge.chat(_requests()[:2] + [bad])
    with pytest.raises(JudgeError, match=r"llava.*cannot decode this image"):
        judge.answer_probability([AnswerQuery(_image(1), "Fine?"), AnswerQuery(bad.images[0], "Broken?")])


def test_a_template_error_raises_and_a_metric_ends_with_it_instead_of_nan(vlm):
    import evaluate

    from t2ireason.data import load_rows

    no_system = ("{% for m in messages %}{% if m.role == 'system' %}{{ raise_exception('System role not supported') }}"
                 "{% endif %}{{ m.role }}: {% for c in m.content %}{% if c.type == 'text' %}{{ c.text }}"
                 "{% else %}<image>\n{% endif %}{% endfor %}\n{% endfor %}ASSISTANT:")
    kwargs = {"device": "cpu", "processor_kwargs": {"chat_template": no_system}, "sampling": {"max_tokens": 8}}
    judge = load_judge(f"hf:{vlm}", **kwargs)
    with pytest.raises(JudgeError, match=r"llava.*chat template.*System role not supported"):
        judge.chat([ChatRequest.simple(_image(0), "Red?", system_prompt="Be strict.")])
    assert judge.chat([ChatRequest.simple(_image(0), "Red?")])[0].ok  # the template itself works
    # a template that cannot render anything ends the metric with the cause, not r2i_score=NaN
    broken = {**kwargs, "processor_kwargs": {"chat_template": "{{ raise_exception('broken template') }}"}}
    rows = sorted((r for r in load_rows("r2i-bench") if r["questions"]), key=lambda r: len(r["questions"]))[:1]
    metric = evaluate.load(str(Path(__file__).resolve().parents[2] / "metrics" / "r2i_score"), judge=f"hf:{vlm}",
                           judge_kwargs=broken, cache=False, progress=False)
    with pytest.raises(JudgeError, match=r"llava \(LlavaProcessor\)\]: rendering the chat template failed.*broken"):
        metric.compute(predictions=[_image(1).image], references=rows)


def test_out_of_memory_is_transient_and_splits_the_batch(judge, monkeypatch):
    requests = _requests()[:4]
    expected = [r.text for r in judge.chat(requests)]
    real_generate = type(judge.hf_model).generate
    calls = []

    def small_batches_only(self, *args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_generate(self, *args, **kwargs)

    monkeypatch.setattr(type(judge.hf_model), "generate", small_batches_only)
    replies = judge.chat(requests)
    assert [r.text for r in replies] == expected and calls == [4, 2, 1, 1, 2, 1, 1]

    def never_fits(self, *args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(type(judge.hf_model), "generate", never_fits)
    replies = judge.chat(requests[:2])
    assert all(not r.ok and r.transient and "out of memory" in r.error for r in replies)


def test_out_of_memory_scoring_one_token_answers_splits_the_batch(judge, monkeypatch):
    """P("Yes") is read from one forward a batch (no generate): a batch that does not fit is split there too,
    and one pair that does not fit makes the judge unavailable."""
    from t2ireason.judges import JudgeUnavailable

    images, questions = [_image(i) for i in range(4)], QUESTIONS[:4]
    expected = judge.yes_probability(images, questions)
    real_forward = type(judge.hf_model).forward
    calls = []

    @functools.wraps(real_forward)
    def small_batches_only(self, *args, **kwargs):
        calls.append(kwargs["input_ids"].shape[0])
        if kwargs["input_ids"].shape[0] > 1:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        return real_forward(self, *args, **kwargs)

    monkeypatch.setattr(type(judge.hf_model), "forward", small_batches_only)
    assert judge.yes_probability(images, questions) == pytest.approx(expected, rel=1e-5)
    assert calls == [4, 2, 1, 1, 2, 1, 1]

    def never_fits(self, *args, **kwargs):
        raise torch.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(type(judge.hf_model), "forward", never_fits)
    with pytest.raises(JudgeUnavailable, match="out of memory"):
        judge.yes_probability([_image(1)], ["Red?"])


def test_each_batch_is_launched_before_the_one_before_is_read(judge, monkeypatch):
    """One-token answers: batch k+1's forward is launched before batch k's log-probabilities are read
    (the accelerator has the next batch queued meanwhile); the values equal generate's teacher forcing, and
    a batch that fails to launch is told only after the batches before it have been delivered."""
    from t2ireason.judges import local_answers

    images, questions = [_image(i, (30 + 4 * i, 28)) for i in range(10)], (QUESTIONS * 2)[:10]
    queries = [AnswerQuery(i, q) for i, q in zip(images, questions)]
    by_generate = [judge._teacher_forced(judge._prepare_answers(queries[k : k + 4])) for k in range(0, 10, 4)]
    events, real_launch, real_result = [], local_answers.launch_one_token, local_answers.LaunchedAnswers.result

    def launch(model, inputs, answers):
        events.append(f"launch {sum(e.startswith('launch') for e in events)}")
        launched = real_launch(model, inputs, answers)
        launched.batch = events[-1].split()[1]
        return launched

    def result(self):
        events.append(f"read {self.batch}")
        return real_result(self)

    monkeypatch.setattr(local_answers, "launch_one_token", launch)
    monkeypatch.setattr(local_answers.LaunchedAnswers, "result", result)
    delivered = []
    out = judge.answer_probability(queries, on_batch=lambda start, ps: delivered.append((start, len(ps))))
    assert events == ["launch 0", "launch 1", "read 0", "launch 2", "read 1", "read 2"]
    assert delivered == [(0, 4), (4, 4), (8, 2)]
    assert [math.log(p) for p in out] == pytest.approx([v for batch in by_generate for v in batch], abs=1e-6)

    def third_fails(model, inputs, answers):
        if events.count("failing") == 2:
            raise RuntimeError("device-side assert triggered")
        events.append("failing")
        return real_launch(model, inputs, answers)

    events.clear()
    delivered.clear()
    monkeypatch.setattr(local_answers, "launch_one_token", third_fails)
    monkeypatch.setattr(local_answers.LaunchedAnswers, "result", real_result)
    with pytest.raises(JudgeError, match="scoring answers failed: RuntimeError: device-side assert"):
        judge.answer_probability(queries, on_batch=lambda start, ps: delivered.append((start, len(ps))))
    assert delivered == [(0, 4), (4, 4)]  # both batches before the failure, in order


def test_a_broken_torchvision_is_refused_at_load_naming_the_fix(vlm, tmp_path, monkeypatch):
    """torchvision built for another torch fails at import ('operator torchvision::nms does not exist') and
    breaks transformers' processors for every family: the judge says so before loading anything."""
    fake = tmp_path / "torchvision"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise RuntimeError('operator torchvision::nms does not exist')\n")
    (tmp_path / "torchvision-0.99.0.dist-info").mkdir()
    (tmp_path / "torchvision-0.99.0.dist-info" / "METADATA").write_text("Name: torchvision\nVersion: 0.99.0\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "torchvision", raising=False)
    with pytest.raises(JudgeError, match=r"torchvision 0\.99\.0 is installed but cannot be used beside torch .*"
                                         r"nms does not exist.*torchvision==0\.\d+\.\*.*make vision"):
        load_judge(f"hf:{vlm}", device="cpu")


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
    assert ident["family"] == "llava" and len(ident["chat_template_sha256"]) == 64


def test_a_model_saved_again_in_the_same_folder_is_another_judge(vlm, tmp_path):
    import shutil

    folder = tmp_path / "retrained"
    shutil.copytree(vlm, folder)
    before = load_judge(f"hf:{folder}", device="cpu")
    before.hf_model.save_pretrained(folder)  # e.g. a fine-tuned judge written over the old one
    after = load_judge(f"hf:{folder}", device="cpu")
    assert before.identity()["files_sha256"] != after.identity()["files_sha256"]


@pytest.mark.slow
def test_judges_that_answer_differently_never_share_cache_entries(vlm, tmp_path):
    """Every option that changes a reply changes the identity, so the response cache keeps them apart."""
    from t2ireason.judges.cache import CachedJudge
    from t2ireason.testing import VLM_CHAT_TEMPLATE

    variants = {
        "default": {},
        "template": {"processor_kwargs": {"chat_template": VLM_CHAT_TEMPLATE.replace("ASSISTANT:", "ANSWER:")}},
        "template_options": {"chat_template_kwargs": {"add_vision_id": True}},
        "processor_option": {"processor_kwargs": {"patch_size": 8}},
        "model_option": {"model_kwargs": {"low_cpu_mem_usage": True}},
        "attention": {"attn_implementation": "eager"},
        "generation_config": {"generation_config": "model"},
        "generate_kwargs": {"generate_kwargs": {"repetition_penalty": 1.3}},
        "pixels": {"max_pixels": 32 * 32},
        "dtype": {"dtype": "bfloat16"},
        "structured_output": {"structured_output": False},
    }
    judges = {k: load_judge(f"hf:{vlm}", device="cpu", sampling=Sampling(max_tokens=3), **v) for k, v in variants.items()}
    identities = [json.dumps(j.identity(), sort_keys=True) for j in judges.values()]
    assert len(set(identities)) == len(identities)
    path = tmp_path / "cache.sqlite"
    request = ChatRequest.simple(_image(0), "Is it red?")
    first = CachedJudge(judges["default"], path)
    first.chat([request]), first.yes_probability([_image(0)], ["Is it red?"])
    assert first.stored == 2  # the reply and the probability
    for name, j in judges.items():
        cached = CachedJudge(j, path)
        cached.chat([request])
        cached.yes_probability([_image(0)], ["Is it red?"])
        assert cached.hits == (2 if name == "default" else 0), name


def test_generation_config_model_decodes_with_the_checkpoints_own_settings(vlm, tmp_path):
    """generation_config="model": temperature, top-p and top-k from the checkpoint's generation_config.json
    (still seeded per request, so reproducible and cached), recorded with every reply and in the identity."""
    import shutil

    folder = tmp_path / "sampling-checkpoint"
    shutil.copytree(vlm, folder)
    config = json.loads((folder / "generation_config.json").read_text())
    config.update(do_sample=True, temperature=0.7, top_p=0.9, top_k=5)
    (folder / "generation_config.json").write_text(json.dumps(config))
    own = load_judge(f"hf:{folder}", device="cpu", generation_config="model",
                     sampling=Sampling(max_tokens=6, seed=3), generate_kwargs={"min_new_tokens": 6})
    ours = load_judge(f"hf:{folder}", device="cpu", sampling=Sampling(max_tokens=6, seed=3),
                      generate_kwargs={"min_new_tokens": 6})
    request = ChatRequest.simple(_image(0), "Describe it.")
    [reply] = own.chat([request])
    assert reply.sampling == {"temperature": 0.7, "top_p": 0.9, "max_tokens": 6, "seed": 3}
    assert own.resolve_sampling(request).deterministic  # seeded: cacheable
    assert own.chat([request])[0].text == reply.text == own.chat([_requests()[0], request])[1].text
    assert ours.chat([request])[0].text != reply.text  # ours is greedy unless asked
    assert own.identity()["generation_config"] == "model" and "generation_config" not in ours.identity()
    with pytest.raises(ValueError, match="generation_config must be one of sampling, model"):
        load_judge(f"hf:{folder}", generation_config="checkpoint")
    # a greedy checkpoint under "model" answers exactly as the project's greedy default
    greedy = load_judge(f"hf:{vlm}", device="cpu", generation_config="model", sampling=Sampling(max_tokens=6),
                        generate_kwargs={"min_new_tokens": 6})
    default = load_judge(f"hf:{vlm}", device="cpu", sampling=Sampling(max_tokens=6), generate_kwargs={"min_new_tokens": 6})
    assert greedy.chat([request])[0].text == default.chat([request])[0].text


def test_scoring_uses_no_private_transformers_api():
    """P(answer) is teacher-forced through generate (public), not through generate's private helpers."""
    import inspect

    from t2ireason.judges import transformers_judge

    source = inspect.getsource(transformers_judge)
    assert not re.search(r"hf_model\._|processor\._|tokenizer\._", source)


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
