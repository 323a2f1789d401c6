"""Every open VLM family the papers use, through ``hf:<folder>``, as published.

Each family is a tiny random model built from its real config and processor classes, with the chat
template published with its checkpoint and a tokenizer of its kind (``t2ireason.testing_families``),
saved with ``save_pretrained`` and loaded back by spec string. Expected values come from transformers
called directly (the conversation with its answer written by the template itself, encoded by
``apply_chat_template``), never from the judge's helpers.

Families whose processors need torchvision carry the ``torchvision`` mark: they run in the second test
environment (``make test`` runs them in ``.venv-vision``) and are skipped where torchvision is missing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from t2ireason import testing
from t2ireason.images import as_image
from t2ireason.judges import AnswerQuery, ChatRequest, JudgeError, Sampling, load_judge
from t2ireason.testing_families import FAMILIES, TEMPLATE_SHA256, TEMPLATES, build_family

ROOT = Path(__file__).resolve().parents[2]


def _has_torchvision() -> bool:
    try:
        import torchvision  # noqa: F401
    except Exception:
        return False
    return True


HAS_TORCHVISION = _has_torchvision()
NEEDS_TORCHVISION = pytest.mark.skipif(not HAS_TORCHVISION, reason="needs torchvision: run in .venv-vision (make test)")


def _params(names=None):
    return [pytest.param(n, id=n, marks=[pytest.mark.torchvision, NEEDS_TORCHVISION] if f.needs_torchvision else [])
            for n, f in FAMILIES.items() if names is None or n in names]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    return tmp_path_factory.mktemp("families")


_JUDGES: dict = {}


def family_judge(name, root):
    """The family's tiny judge, loaded once per test session by spec string, as a user would."""
    if name not in _JUDGES:
        folder = build_family(name, root)
        _JUDGES[name] = load_judge(f"hf:{folder}", device="cpu", batch_size=4, sampling=Sampling(max_tokens=8),
                                   generate_kwargs={"min_new_tokens": 8}, **FAMILIES[name].judge_kwargs)
    return _JUDGES[name]


def _image(seed, size=(40, 30)):
    rng = np.random.default_rng(seed)
    return as_image(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _reference_yes(judge, family, image, question):
    """P(answer token) from the model called directly on transformers' own encoding of the conversation
    with the answer "Yes" written by the chat template (continue_final_message), the answer token
    being the last one; PaliGemma (no template of its own) through its processor's prefix/suffix."""
    processor, model = judge.processor, judge.hf_model
    pil = image.image
    if family.name == "paligemma":
        enc = processor(text="<image>" + question, images=[pil], suffix="Yes", return_tensors="pt")
        enc.pop("labels")
        ids = enc["input_ids"][0].tolist()
        at = len(ids) - 3  # ... "\n" "Yes" <eos>: the logits at "\n" predict "Yes"
        enc["position_ids"] = torch.arange(1, len(ids) + 1)[None]  # PaliGemma counts positions from 1
    else:
        conversation = [{"role": "user", "content": [{"type": "image", "image": pil}, {"type": "text", "text": question}]},
                        {"role": "assistant", "content": [{"type": "text", "text": "Yes"}]}]
        enc = processor.apply_chat_template(conversation, continue_final_message=True, tokenize=True,
                                            return_dict=True, return_tensors="pt")
        ids = enc["input_ids"][0].tolist()
        at = len(ids) - 2
    token = ids[at + 1]
    assert processor.tokenizer.convert_ids_to_tokens(token) == family.answer_token
    with torch.inference_mode():
        logits = model(**enc.to(model.device)).logits[0, at].float()
    return logits.softmax(-1)[token].item()


def test_fixture_templates_are_the_published_texts():
    """The templates are data: a fixture edited by mistake no longer matches the copies it was verified
    against. Qwen3-VL-8B-Instruct's hash is the one an independent project pins for the template embedded
    in Qwen/Qwen3-VL-8B-Instruct-GGUF (zhongkaifu/TensorSharp, 5292 bytes)."""
    assert set(TEMPLATES) == set(TEMPLATE_SHA256) == {n.removesuffix("-bos") for n in FAMILIES}
    for name, text in TEMPLATES.items():
        assert hashlib.sha256(text.encode()).hexdigest() == TEMPLATE_SHA256[name], name
    assert len(TEMPLATES["qwen3-vl"].encode()) == 5292
    assert TEMPLATE_SHA256["qwen3-vl"] == "3636d0f0bd6bef02654cdffdc447b79cb2cef8ab02cc75267345946291a489e4"


@pytest.mark.parametrize("name", _params())
def test_prompt_is_encoded_as_the_family_publishes_it(name, root):
    family, judge = FAMILIES[name], family_judge(name, root)
    # the folder carries the published template, byte for byte, through save_pretrained/from_pretrained
    assert judge.processor.chat_template == TEMPLATES[name.removesuffix("-bos")]
    conversation = judge._conversation(ChatRequest.simple(_image(0), "Is it red?").messages)
    closing, _ = judge.answer_context()
    [text] = judge._render([conversation])
    assert bool(closing) == family.thinking  # a thinking template gets its block closed for scoring
    ids = judge._encode([text + closing], [conversation])["input_ids"][0].tolist()
    # what the model reads last (PaliGemma's processor appends the newline itself)
    assert judge.tokenizer.decode(ids, skip_special_tokens=False).endswith(family.answer_after)
    tok, bos = judge.tokenizer, judge.tokenizer.bos_token_id
    assert (bos is not None and tok("Yes").input_ids[:1] == [bos]) == family.adds_bos  # the tokenizer as published
    assert text.startswith(tok.bos_token or "\0") == family.writes_bos  # the template as published
    if family.adds_bos or family.writes_bos or name == "paligemma":
        # exactly one BOS, first, whether the template writes it, the tokenizer adds it or both do
        # (PaliGemma's processor puts it after the image tokens)
        assert ids.count(bos) == 1 and (ids[0] == bos or name == "paligemma")
    else:
        assert bos is None or bos not in ids


@pytest.mark.parametrize("name", _params())
def test_yes_probability_reads_the_answer_token_in_context(name, root):
    family, judge = FAMILIES[name], family_judge(name, root)
    images = [_image(1, (40, 30)), _image(2, (24, 56)), _image(3, (64, 64))]
    questions = ['Does this figure show "a red bus"? Please answer yes or no.', "Dog?",
                 "Is there a tall blue house next to a small green tree in this picture?"]
    batched = judge.yes_probability(images, questions)
    expected = [_reference_yes(judge, family, i, q) for i, q in zip(images, questions)]
    assert batched == pytest.approx(expected, rel=1e-4)  # left padding changes nothing
    assert all(0 < p < 1 for p in batched)


@pytest.mark.parametrize("name", _params())
def test_one_forward_reads_what_generate_reads(name, root):
    """A one-token answer is read from one forward with generate's first-step inputs (position ids, masks,
    token types: left padding and multimodal positions included), not through generate: both give the same
    log-probabilities for every family."""
    from t2ireason.judges.local_answers import reads_one_forward

    judge = family_judge(name, root)
    queries = [AnswerQuery(_image(4, (40, 30)), "Red?"), AnswerQuery(_image(5, (24, 56)), "Is there a tall blue "
                                                                      "house next to a small green tree here?"),
               AnswerQuery(_image(6, (64, 64)), "Dog?")]
    prepared = judge._prepare_answers(queries)
    assert reads_one_forward(judge.hf_model, prepared["answers"])
    assert len(set(map(int, prepared["enc"]["attention_mask"].sum(1)))) > 1  # rows of several lengths: left padded
    assert judge._launch_answers(queries)() == pytest.approx(judge._teacher_forced(prepared), abs=1e-6)


@pytest.mark.parametrize("name", _params())
def test_one_forward_inputs_wait_for_nothing_on_the_device(name, root):
    """The next batch's inputs are made without reading anything back from the device (on a GPU, a wait for the
    batch before to finish): with the model and the upload on PyTorch's meta device, where reading a tensor's
    values raises, they are made all the same; the position ids come from the host's copy of the encoding."""
    from transformers import AutoModelForImageTextToText

    from t2ireason.judges.local_answers import first_forward_inputs

    judge = family_judge(name, root)
    prepared = judge._prepare_answers([AnswerQuery(_image(7, (40, 30)), "Red?"),
                                       AnswerQuery(_image(8, (24, 56)), "Is there a tall blue house here?")])
    with torch.device("meta"):
        model = AutoModelForImageTextToText.from_config(judge.hf_model.config, attn_implementation="sdpa")
    inputs = first_forward_inputs(model, prepared["enc"], lambda enc: enc.to("meta"))
    tensors = {k: v for k, v in inputs.items() if isinstance(v, torch.Tensor)}
    assert {"input_ids", "position_ids"} <= set(tensors) and all(v.is_meta for v in tensors.values())
    with pytest.raises(RuntimeError, match="meta"):  # what a wait would be: a value read back
        bool((tensors["position_ids"] >= 0).all())


@pytest.mark.parametrize("name", _params())
def test_json_judgement_by_constrained_decoding(name, root):
    judge = family_judge(name, root)
    schema = {"type": "object", "properties": {"answer": {"enum": ["yes", "no"]},
                                               "score": {"type": "integer", "minimum": 0, "maximum": 10}},
              "required": ["answer", "score"], "additionalProperties": False}
    requests = [ChatRequest.simple(_image(i, (30 + 9 * i, 36)), f"Question {i}: rate the image.", json_schema=schema,
                                   sampling=Sampling(max_tokens=40), system_prompt="You are a strict judge." if i else None)
                for i in range(3)]
    replies = judge.chat(requests)
    for reply in replies:
        value = json.loads(reply.text)
        assert reply.ok and reply.finish_reason == "stop" and value["answer"] in ("yes", "no")
        assert 0 <= value["score"] <= 10
    assert [judge.chat([r])[0].text for r in requests] == [r.text for r in replies]  # batching changes nothing


@pytest.mark.parametrize("name", _params([n for n in FAMILIES if n != "paligemma"]))
def test_text_only_and_multi_turn_chat(name, root):
    judge = family_judge(name, root)
    first = ChatRequest.simple(_image(4), "Describe the image.")
    follow = first.then("A noisy square.", "And is any of it red?")
    text_only = ChatRequest.simple("A question with no image at all.")
    replies = judge.chat([follow, text_only])
    assert all(r.ok and r.usage["completion_tokens"] == 8 for r in replies)


def test_paligemma_without_an_image_is_a_clear_error(root):
    judge = family_judge("paligemma", root)
    with pytest.raises(JudgeError, match=r"paligemma.*processor"):
        judge.chat([ChatRequest.simple("No image here.")])


@pytest.mark.parametrize("name", _params(["qwen2-vl", "qwen3-vl"]))
def test_chat_template_options_reach_the_template(name, root):
    folder = build_family(name, root)
    plain = family_judge(name, root)
    numbered = load_judge(f"hf:{folder}", device="cpu", chat_template_kwargs={"add_vision_id": True})
    conversation = numbered._conversation(ChatRequest.simple(_image(0), _image(1), "Which is red?").messages)
    assert "Picture 1: <|vision_start|>" in numbered._render([conversation])[0]
    assert "Picture 1:" not in plain._render([conversation])[0]
    assert numbered.identity() != plain.identity()


@pytest.mark.parametrize("name", _params(["qwen3-vl-thinking"]))
def test_thinking_model_answers_after_a_closed_thought(name, root):
    judge = family_judge(name, root)
    request = ChatRequest.simple(_image(0), "Is it red?", sampling=Sampling(max_tokens=12))
    [text] = judge._render([judge._conversation(request.messages)])
    assert text.endswith("<think>\n")  # the published template opens a thought
    assert judge.answer_context() == ("\n</think>\n\n", "")
    # a free-text reply is the text after the model's thought once it closes one (here at once, then again)
    think_end = judge.tokenizer.convert_tokens_to_ids("</think>")
    forced = load_judge(f"hf:{build_family(name, root)}", device="cpu",
                        generate_kwargs={"sequence_bias": [[[think_end], 100.0]], "min_new_tokens": 12})
    [reply] = forced.chat([request])
    assert reply.ok and reply.usage["completion_tokens"] == 12 and reply.text == "</think>" * 11


@pytest.mark.slow
@pytest.mark.parametrize("name", _params())
def test_benchmark_metrics_end_to_end(name, root):
    """r2i_score (JSON judgements through the metric module, the response cache on) and vqascore."""
    import evaluate

    from t2ireason.data import load_rows

    folder = build_family(name, root)
    kwargs = {**testing.tiny_judge_kwargs(folder), "device": "cpu", **FAMILIES[name].judge_kwargs}
    rows = sorted((r for r in load_rows("r2i-bench") if r["questions"]), key=lambda r: len(r["questions"]))[:1]
    images = [_image(7, (48, 48)).image]
    r2i = evaluate.load(str(ROOT / "metrics" / "r2i_score"), judge=f"hf:{folder}", judge_kwargs=kwargs,
                        cache=str(root / f"{name}.sqlite"), progress=False)
    out = r2i.compute(predictions=images, references=rows, structured_output=True)
    assert out["num_failed"] == 0 and out["scores"][0] is not None and 0 <= out["scores"][0] <= 1
    assert all(q["score"] is not None for q in out["per_image"][0]["questions"])

    vqa = evaluate.load(str(ROOT / "metrics" / "vqascore"), judge=f"hf:{folder}",
                        judge_kwargs={"device": "cpu", **FAMILIES[name].judge_kwargs}, cache=False)
    prompts = ["a red cube", "two cats on a mat"]
    pictures = [_image(8).image, _image(9, (30, 50)).image]
    scores = vqa.compute(predictions=pictures, references=prompts)["scores"]
    judge = family_judge(name, root)
    from t2ireason.judges import VQASCORE_QUESTION

    expected = judge.yes_probability(pictures, [VQASCORE_QUESTION.format(prompt=p) for p in prompts])
    assert scores == pytest.approx(expected, rel=1e-4) and all(0 < s < 1 for s in scores)


@pytest.mark.skipif(HAS_TORCHVISION, reason="checks the error where torchvision is missing")
def test_missing_torchvision_is_a_clear_error_naming_the_fix(tmp_path):
    """A Qwen2-VL checkpoint (config, tokenizer, processor files) where torchvision is not installed."""
    from transformers import Qwen2VLConfig

    from t2ireason.testing_families import _qwen_tokenizer

    tok = _qwen_tokenizer()
    tok.save_pretrained(tmp_path)
    Qwen2VLConfig(text_config={"vocab_size": len(tok), "hidden_size": 32, "num_hidden_layers": 1,
                               "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 64},
                  vision_config={"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 4}).save_pretrained(tmp_path)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "Qwen2VLImageProcessor"}))
    (tmp_path / "video_preprocessor_config.json").write_text(json.dumps({"video_processor_type": "Qwen2VLVideoProcessor"}))
    (tmp_path / "processor_config.json").write_text(json.dumps({"processor_class": "Qwen2VLProcessor"}))
    with pytest.raises(JudgeError, match=r"needs torchvision, which is not installed.*torchvision==0\.\d+"):
        load_judge(f"hf:{tmp_path}", device="cpu")
