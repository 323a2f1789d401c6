"""The local judge's pipeline and per-step work (issue 23): the next batch prepared in a background
thread while the model answers, the forced-answer and row-sampling processors vectorised, the schema
masks filled together, attention chosen per family, the opt-in compiled decoding path.

Every change must leave scores and replies identical: each test compares with the path it replaces.
"""

import functools
import math
import threading

import numpy as np
import pytest
import torch

from t2ireason.images import as_image
from t2ireason.judges import (
    AnswerQuery,
    ChatRequest,
    JudgeError,
    Sampling,
    constrained,
    decoding,
    load_judge,
    local_answers,
    vision_attention,
)
from t2ireason.judges import transformers_judge as tj

LENGTH = 4
SCHEMA = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 10},
                                           "why": {"type": "string", "maxLength": 8}},
          "required": ["score", "why"], "additionalProperties": False}


def _image(seed, size=(40, 30)):
    rng = np.random.default_rng(seed)
    return as_image(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def _judge(vlm, **kwargs):
    return load_judge(f"hf:{vlm}", sampling=Sampling(max_tokens=LENGTH), generate_kwargs={"min_new_tokens": LENGTH},
                      device="cpu", **kwargs)


@pytest.fixture(scope="module")
def judge(tiny_models):
    return _judge(tiny_models["vlm"])


def _queries(n=7):
    return [AnswerQuery(_image(i, (24 + 6 * i, 30)), f"Is there a cat number {i}?", ["Yes", "No", "Yes, it is"][i % 3])
            for i in range(n)]


def _requests(n=7):
    return [ChatRequest.simple(_image(i, (24 + 6 * i, 30)), f"Describe picture {i}.",
                               json_schema=SCHEMA if i % 2 else None,
                               sampling=Sampling(temperature=0.8, top_p=0.9, seed=i, max_tokens=10) if i % 3 == 0
                               else None)
            for i in range(n)]


def _prefetch_threads():
    return [t for t in threading.enumerate() if t.name.startswith("hf-judge-prefetch")]


@pytest.mark.parametrize(("batch_size", "n"), [(1, 4), (3, 7)])
def test_prefetch_gives_identical_scores_and_replies_in_order(judge, monkeypatch, batch_size, n):
    """4 items at batch size 1 (prefetch depth 2), 7 at batch size 3 (depth 1, a tail of 1): the same floats and texts,
    in the same order, as preparing each batch inline; the next batch really is prepared while the model
    runs this one."""
    monkeypatch.setattr(judge, "batch_size", batch_size)
    queries, requests = _queries(n), _requests(n)
    monkeypatch.setattr(judge, "prefetch", 0)
    inline_scores = judge.answer_probability(queries)
    inline_texts = [r.text for r in judge.chat(requests)]

    # the model's call for a batch waits until the next batch's preparation has begun in the other thread:
    # without a prefetch it would wait in vain
    started, threads = [], []
    real_prepare_answers, real_prepare_chat = judge._prepare_answers, judge._prepare_chat
    real_generate = judge.hf_model.generate
    began = threading.Condition()

    def recording(real):
        def prepare(items):
            with began:
                started.append(len(started))
                threads.append(threading.current_thread().name)
                began.notify_all()
            return real(items)
        return prepare

    calls = []

    def generate(*args, **kwargs):
        k = len(calls)  # the batch the model answers now
        calls.append(k)
        if k + 1 < -(-n // batch_size):
            with began:
                assert began.wait_for(lambda: len(started) >= k + 2, timeout=30), "the next batch was not prefetched"
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(judge, "_prepare_answers", recording(real_prepare_answers))
    monkeypatch.setattr(judge, "_prepare_chat", recording(real_prepare_chat))
    monkeypatch.setattr(judge.hf_model, "generate", generate)
    for depth in (2 if batch_size == 1 else 1,):  # the default depth with the uneven tail
        monkeypatch.setattr(judge, "prefetch", depth)
        started.clear(), calls.clear()
        assert judge.answer_probability(queries) == inline_scores  # exactly, in order
        started.clear(), calls.clear()
        order = []
        replies = judge.chat(requests, on_reply=lambda i, r, order=order: order.append(i))
        assert [r.text for r in replies] == inline_texts and order == list(range(n))
    assert set(threads) and all(name.startswith("hf-judge-prefetch") for name in threads)
    assert not _prefetch_threads(), "the prefetch thread outlived the loop"
    assert len(set(inline_scores)) > 1 and all(r for r in inline_texts)


def test_a_failed_preparation_surfaces_in_order_and_leaves_no_thread(judge, monkeypatch):
    """The third batch's processor fails in the prefetch thread: the first two batches' replies are
    delivered, then the failure is raised as the judge's error naming the cause, and no thread is left."""
    monkeypatch.setattr(judge, "batch_size", 2)
    calls = []
    real_encode = judge._encode

    def encode(texts, conversations):
        calls.append(len(texts))
        if len(calls) == 3:
            raise ValueError("broken pixels")
        return real_encode(texts, conversations)

    monkeypatch.setattr(judge, "_encode", encode)
    delivered = []
    with pytest.raises(JudgeError, match=r"generation failed: ValueError: broken pixels"):
        judge.chat(_requests(7)[:6], on_reply=lambda i, r: delivered.append(i))
    assert delivered == [0, 1, 2, 3]
    calls.clear()
    with pytest.raises(JudgeError, match=r"scoring answers failed: ValueError: broken pixels"):
        judge.answer_probability(_queries(6))
    assert not _prefetch_threads()


def test_through_the_response_cache_the_batches_still_overlap_and_each_is_kept_as_answered(tiny_models, tmp_path,
                                                                                            monkeypatch):
    """The cache hands the judge every query it misses at once (so the judge prefetches across batches) and
    stores each batch as it is answered: an interruption in the third batch keeps the first two."""
    from t2ireason.judges.cache import CachedJudge

    inner = _judge(tiny_models["vlm"], batch_size=2)
    expected = inner.answer_probability(_queries(7))
    cached = CachedJudge(inner, tmp_path / "c.sqlite")
    calls = []
    real = inner._prepare_answers

    def prepare(queries):
        calls.append(threading.current_thread().name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(queries)

    monkeypatch.setattr(inner, "_prepare_answers", prepare)
    with pytest.raises(KeyboardInterrupt):
        cached.answer_probability(_queries(7))
    assert cached.stored == 4 and all(name.startswith("hf-judge-prefetch") for name in calls)
    monkeypatch.undo()
    assert cached.answer_probability(_queries(7)) == expected and cached.hits == 4 and cached.stored == 7
    assert not _prefetch_threads()


# -- the per-step processors, against the per-row loops they replace ------------------------------------------------


def _old_row_sampler(rows):
    """The per-row sampler before issue 23 (a Python loop over rows, each warped and drawn alone)."""
    from transformers import TopKLogitsWarper, TopPLogitsWarper

    sampled = [(i, t, p, k, s) for i, (t, p, k, s) in enumerate(rows) if t > 0]
    generators = None

    def call(input_ids, scores):
        nonlocal generators
        if generators is None:
            generators = [torch.Generator(scores.device).manual_seed(r[-1]) for r in sampled]
        scores = scores.clone()
        for (i, temperature, top_p, top_k, _), gen in zip(sampled, generators):
            row = scores[i : i + 1].float() / temperature
            if top_k:
                row = TopKLogitsWarper(top_k)(input_ids[i : i + 1], row)
            if top_p < 1:
                row = TopPLogitsWarper(top_p)(input_ids[i : i + 1], row)
            token = torch.multinomial(row.softmax(-1), 1, generator=gen)
            scores[i] = float("-inf")
            scores[i, token] = 0.0
        return scores

    return call


@pytest.mark.parametrize("top_k", [None, 7])
def test_vectorised_row_sampler_draws_what_the_per_row_loop_drew(top_k):
    rows = [(0.7, 0.9, top_k, 1), (0.0, 1.0, top_k, None), (1.3, 1.0, top_k, 2), (0.9, 0.5, top_k, 3),
            (0.0, 1.0, top_k, None), (1.0, 0.95, top_k, 4)]
    new, old = decoding.row_sampler(rows), _old_row_sampler(rows)
    generator = torch.Generator().manual_seed(0)
    input_ids = torch.zeros(len(rows), 3, dtype=torch.long)
    for _ in range(12):
        scores = torch.randn(len(rows), 50, generator=generator) * 3
        scores[:, 10] = scores[:, 11]  # ties
        a, b = new(input_ids, scores), old(input_ids, scores)
        assert torch.equal(a, b)
        assert torch.equal(a[1], scores[1]) and torch.equal(a[4], scores[4])  # greedy rows untouched


def test_vectorised_forced_tokens_write_what_the_per_row_loop_wrote():
    answers, filler = [[5], [7, 8, 9], [3, 4]], 2
    processor = decoding.forced_tokens(answers, filler)
    for step in range(4):
        scores = torch.randn(3, 12)
        expected = torch.full_like(scores, float("-inf"))
        for i, ids in enumerate(answers):  # the loop it replaces
            expected[i, ids[step] if step < len(ids) else filler] = 0.0
        assert torch.equal(processor(None, scores), expected)


def _steps(constraint, input_ids, scores_list, hooks=True):
    """Drive a constraint as generate does: the processor on each step's logits, the greedy token appended,
    then the stopping hook; returns each step's processed scores."""
    out, hook = [], constraint.stopping_hook()
    for scores in scores_list:
        processed = constraint(input_ids, scores)
        out.append(processed)
        input_ids = torch.cat([input_ids, processed.argmax(-1, keepdim=True)], 1)
        if hooks:
            hook(input_ids, None)
    constraint.close()
    return out


def test_schema_masks_filled_in_parallel_from_the_hooks_tokens_equal_masks_filled_row_by_row(judge):
    """The constraint as generate runs it (each step's tokens sent to the host by the stopping hook, the rows'
    matchers advanced and masks filled by llguidance's pool in two calls a step) gives exactly the logits of
    filling each row's mask in turn from input_ids."""
    config = judge._generation_config
    info = judge._llguidance_tokenizer(config)
    import llguidance

    schemas = [SCHEMA, None, {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}, SCHEMA]
    generator = torch.Generator().manual_seed(1)
    vocab = judge.hf_model.get_output_embeddings().weight.shape[0]
    scores = [torch.randn(len(schemas), vocab, generator=generator) for _ in range(20)]
    input_ids = torch.zeros(len(schemas), 3, dtype=torch.long)
    ahead = constrained.schema_constraint(info, schemas, llguidance.LLExecutor())
    together = _steps(ahead, input_ids, scores)
    reference = constrained.schema_constraint(info, schemas, overlap=False)
    row_by_row = _steps(reference, input_ids, scores, hooks=False)
    for a, b, raw in zip(together, row_by_row, scores):
        assert torch.equal(a, b)
        assert torch.equal(a[1], raw[1])  # the free row is untouched
    assert ahead.taken == {"hook": 19, "input_ids": 0}  # every step after the first read the hook's copy
    assert reference.taken == {"hook": 0, "input_ids": 19}
    assert any(m.is_stopped() for m in ahead.matchers if m is not None)
    # a processor the hook never reached (a step generate took without it) catches up by itself
    caught_up = _steps(constrained.schema_constraint(info, schemas), input_ids, scores, hooks=False)
    assert all(torch.equal(a, b) for a, b in zip(caught_up, row_by_row))


def test_schema_masks_need_no_compile_and_mask_as_the_bits_say(judge, monkeypatch):
    """As found (issue 34 item 13): llguidance's mask kernel is torch.compile'd, and its first call built C++
    for 13 CPU-seconds of a fresh demo (and needs a compiler). The mask is applied in eager torch on every
    device: each token allowed exactly when its bit is set (llguidance's layout: 32 tokens a word, low bit
    first), tokens past the tokenizer's vocabulary (padded logits) never."""
    import llguidance.torch as llt

    monkeypatch.setattr(llt, "apply_token_bitmask_inplace", lambda *a: pytest.fail("compiled kernel"))
    config = judge._generation_config
    info = judge._llguidance_tokenizer(config)
    schemas = [SCHEMA, None, SCHEMA]
    generator = torch.Generator().manual_seed(2)
    vocab = judge.hf_model.get_output_embeddings().weight.shape[0] + 40  # wider than the mask's 32-token words
    words = 32 * ((info.vocab_size + 31) // 32)  # the mask's width: the tokenizer's vocabulary in 32-bit words
    constraint = constrained.schema_constraint(info, schemas, overlap=False)
    input_ids = torch.zeros(len(schemas), 3, dtype=torch.long)
    for _ in range(8):
        scores = torch.randn(len(schemas), vocab, generator=generator)
        got = constraint(input_ids, scores)
        bits = np.unpackbits(constraint.mask.numpy().view(np.uint8), bitorder="little").reshape(len(schemas), -1)
        expected = scores.clone()
        expected[:, :words][torch.from_numpy(bits == 0)] = float("-inf")
        expected[:, words:] = float("-inf")  # never a token past the mask
        assert torch.equal(got, expected) and torch.isinf(got[0]).any() and words < vocab
        assert torch.equal(got[1, :info.vocab_size], scores[1, :info.vocab_size])  # the free row: untouched
        input_ids = torch.cat([input_ids, got.argmax(-1, keepdim=True)], 1)


def test_json_replies_with_the_masks_filled_ahead_are_those_filled_in_turn(tiny_models, monkeypatch):
    """End to end through generate: JSON requests (mixed with free ones and sampled rows) give the same texts
    with each step's tokens sent by the hook and the masks filled in parallel (the default) as filled row by row
    from input_ids inside the processor; no thread is left behind."""
    judge = _judge(tiny_models["vlm"], batch_size=4)
    requests = _requests(7)
    made = []
    real = tj.schema_constraint

    def recording(*args, **kwargs):
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(tj, "schema_constraint", recording)
    before = set(threading.enumerate())
    ahead = [r.text for r in judge.chat(requests)]
    assert made and all(c.taken["hook"] > 0 and c.taken["input_ids"] == 0 for c in made)
    monkeypatch.setattr(tj, "schema_constraint", lambda info, schemas, executor=None: real(info, schemas, overlap=False))
    in_turn = [r.text for r in judge.chat(requests)]
    assert ahead == in_turn and all(ahead)
    assert not [t for t in set(threading.enumerate()) - before if t.name.startswith("hf-judge-masks")]


# -- attention and the compiled decoding path -----------------------------------------------------------------------


def test_attention_is_fitted_per_family_and_recorded(tiny_models, tmp_path, monkeypatch):
    from transformers import LlavaConfig, Qwen2_5_VLConfig

    # on this CPU machine nothing changes: transformers' default, nothing in the identity
    default = _judge(tiny_models["vlm"])
    assert default.attn_implementation is None and "attn_implementation" not in default.identity()
    # the decision itself, where flash-attention and CUDA would be there
    import transformers.utils

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(transformers.utils, "is_flash_attn_2_available", lambda: True)
    qwen, llava = tmp_path / "qwen", tmp_path / "llava"
    Qwen2_5_VLConfig(dtype="bfloat16").save_pretrained(qwen)
    LlavaConfig().save_pretrained(llava)
    assert vision_attention.fitting_attention(str(qwen), {}, "auto", None, None) == {"vision_config": "flash_attention_2"}
    assert vision_attention.fitting_attention(str(qwen), {}, torch.float16, "auto", None) == {"vision_config": "flash_attention_2"}
    assert vision_attention.fitting_attention(str(qwen), {}, "float32", None, None) is None  # the kernel takes half precision only
    assert vision_attention.fitting_attention(str(qwen), {}, "auto", None, "cpu") is None
    assert vision_attention.fitting_attention(str(llava), {}, "auto", None, None) is None  # no varlen vision tower: SDPA
    monkeypatch.setattr(transformers.utils, "is_flash_attn_2_available", lambda: False)
    assert vision_attention.fitting_attention(str(qwen), {}, "auto", None, None) is None
    monkeypatch.undo()
    # the user's choice, per sub-model, reaches the model and the identity
    chosen = _judge(tiny_models["vlm"], attn_implementation={"vision_config": "eager"})
    assert chosen.hf_model.config.vision_config._attn_implementation == "eager"
    assert chosen.hf_model.config.text_config._attn_implementation == default.hf_model.config.text_config._attn_implementation
    assert chosen.identity()["attn_implementation"] == {"vision_config": "eager"}
    images, questions = [_image(1), _image(2)], ["Red?", "Blue?"]
    assert chosen.yes_probability(images, questions) == pytest.approx(default.yes_probability(images, questions), rel=1e-4)


def test_compiled_decoding_uses_a_static_cache_and_answers_alike(tiny_models, judge, monkeypatch):
    compiled = _judge(tiny_models["vlm"], compiled_decoding=True)
    assert compiled.identity()["cache_implementation"] == "static" and "cache_implementation" not in judge.identity()
    seen = []
    real_generate = compiled.hf_model.generate

    def generate(*args, **kwargs):
        seen.append(kwargs["generation_config"].cache_implementation)
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(compiled.hf_model, "generate", generate)
    requests = _requests(4)
    assert [r.text for r in compiled.chat(requests)] == [r.text for r in judge.chat(requests)]
    assert seen and set(seen) == {"static"}


def test_compiled_decoding_by_default_on_cuda_for_full_batches_its_first_call_said_once(tiny_models, judge,
                                                                                        monkeypatch, caplog):
    """``compiled_decoding=None`` (the default): the static cache where it pays, on CUDA for batches of the
    judge's full size (compiled once, then reused); a smaller tail filled up to that size once it is compiled
    (copies of its last request, their replies dropped), eager before that; every batch on a CPU eager. The
    cache's length is rounded up to a bucket so other prompt lengths reuse the compiled step; the first call of
    each shape is said once in the log."""
    import logging

    from t2ireason.judges.static_cache import CACHE_BUCKET, StaticDecoding

    assert StaticDecoding.applies(None, 3, 3, "cuda") and not StaticDecoding.applies(None, 1, 3, "cuda")
    assert not StaticDecoding.applies(None, 3, 3, "cpu") and not StaticDecoding.applies(False, 3, 3, "cuda")
    assert StaticDecoding.applies(True, 1, 3, "cpu")
    assert StaticDecoding.describe(None, "cuda") == "static (full batches, CUDA)" and StaticDecoding.describe(None, "cpu") is None
    with pytest.raises(ValueError, match="compiled_decoding must be True, False or None"):
        _judge(tiny_models["vlm"], compiled_decoding="yes")

    auto = _judge(tiny_models["vlm"], batch_size=3)
    assert auto.compiled_decoding is None and "cache_implementation" not in auto.identity()  # a CPU: eager
    seen = []
    real_generate = auto.hf_model.generate

    outs = []

    def generate(*args, **kwargs):
        config = kwargs["generation_config"]
        seen.append((kwargs["input_ids"].shape, config.cache_implementation, getattr(config, "max_cache_len", None)))
        out = real_generate(*args, **kwargs)
        outs.append(out.sequences[:, kwargs["input_ids"].shape[1]:])
        return out

    monkeypatch.setattr(auto.hf_model, "generate", generate)
    requests = _requests(7)
    eager = [r.text for r in auto.chat(requests)]
    assert [s[1] for s in seen] == [None, None, None]
    # the same judge as it decides on CUDA (the device type faked for the decision only; it runs here)
    monkeypatch.setattr(auto._static, "applies", lambda setting, rows, batch, device: StaticDecoding.applies(
        setting, rows, batch, "cuda"))
    seen.clear()
    outs.clear()
    with caplog.at_level(logging.WARNING, logger="t2ireason.judges.static_cache"):
        assert [r.text for r in auto.chat(requests)] == eager
        assert [r.text for r in auto.chat(requests)] == eager
    # the tail of one request filled up to the compiled size with two copies, finished after their first token
    assert [(s[0][0], s[1]) for s in seen] == [(3, "static")] * 6
    assert (outs[2][1:, 1:] == auto.hf_model.generation_config.pad_token_id).all()
    for shape, _, length in seen[:3]:
        assert length % CACHE_BUCKET == 0 and length >= shape[1] + LENGTH
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and "compiled decoding for batches of 3" in said[0] and "compiled_decoding=False" in said[0]
    assert list(auto._static.first_calls) == [(3, seen[0][2])]

    # fewer requests than a batch on a judge that has compiled nothing: eager, no compile for them
    fresh = _judge(tiny_models["vlm"], batch_size=3)
    monkeypatch.setattr(fresh._static, "applies", auto._static.applies)
    monkeypatch.setattr(fresh.hf_model, "generate", generate)
    seen.clear()
    assert [r.text for r in fresh.chat(requests[:2])] == eager[:2]
    assert [(s[0][0], s[1]) for s in seen] == [(2, None)] and not fresh._static.first_calls
    # a full batch then a tail in one list: the tail, prepared while the full batch was still to compile, is
    # filled all the same (decided by the order batches are prepared in, not by timing)
    seen.clear()
    assert [r.text for r in fresh.chat(requests[:4])] == eager[:4]
    assert [(s[0][0], s[1]) for s in seen] == [(3, "static"), (3, "static")]

    # a filled batch that runs out of memory is split, and its halves are not filled up again
    def short_of_memory(*args, **kwargs):
        seen.append((kwargs["input_ids"].shape, kwargs["generation_config"].cache_implementation, None))
        if kwargs["input_ids"].shape[0] > 1:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real_generate(*args, **kwargs)

    monkeypatch.setattr(auto.hf_model, "generate", short_of_memory)
    seen.clear()
    assert [r.text for r in auto.chat(requests[:2])] == eager[:2]
    assert [(s[0][0], s[1]) for s in seen] == [(3, "static"), (1, None), (1, None)]


def test_yes_probability_of_files_decodes_each_batch_where_it_is_prepared(judge, tmp_path, monkeypatch):
    """Image files given to yes_probability are decoded batch by batch in the prefetch thread (overlapping the
    batch before), not all before the first batch: the same scores as images decoded beforehand. A missing
    file is told before any work; an unreadable one is the image error naming it, not a model failure."""
    from t2ireason.images import ImageError

    monkeypatch.setattr(judge, "batch_size", 3)
    paths = []
    for i in range(7):
        paths.append(tmp_path / f"{i}.png")
        _image(i, (24 + 6 * i, 30)).image.save(paths[-1])
    questions = [f"Is there a cat number {i}?" for i in range(7)]
    expected = judge.yes_probability([as_image(p) for p in paths], questions)
    decoded_in, real_load = [], local_answers.load_images

    def load(images, **kwargs):
        decoded_in.append((threading.current_thread().name, len(images)))
        return real_load(images, **kwargs)

    monkeypatch.setattr(local_answers, "load_images", load)
    assert judge.yes_probability([str(p) for p in paths], questions) == expected
    assert [n for _, n in decoded_in] == [3, 3, 1] and all(t.startswith("hf-judge-prefetch") for t, _ in decoded_in)

    monkeypatch.setattr(judge.hf_model, "forward", lambda *a, **k: pytest.fail("ran the model"))
    with pytest.raises(ImageError, match=r"image file not found: .*gone\.png"):
        judge.yes_probability([str(p) for p in paths] + [str(tmp_path / "gone.png")], questions + ["?"])
    monkeypatch.undo()
    monkeypatch.setattr(judge, "batch_size", 3)
    (tmp_path / "broken.png").write_bytes(paths[0].read_bytes()[:100])
    with pytest.raises(ImageError, match=r"broken\.png"):
        judge.yes_probability([str(p) for p in paths[:6]] + [str(tmp_path / "broken.png")], questions)
    assert not _prefetch_threads()


def test_one_token_answers_keep_no_kv_cache(judge, monkeypatch):
    """P("Yes") is one forward outside generate, keeping no KV cache (12 GB for 32 LLaVA-7B prompts); a longer
    answer, teacher-forced through generate over several steps, keeps its cache. The scores are those of
    generate with a cache."""
    used, real_generate, real_forward = [], judge.hf_model.generate, type(judge.hf_model).forward

    def generate(*args, **kwargs):
        used.append(("generate", kwargs["generation_config"].use_cache))
        return real_generate(*args, **kwargs)

    @functools.wraps(real_forward)
    def forward(self, *args, **kwargs):
        used.append(("forward", kwargs.get("use_cache")))
        return real_forward(self, *args, **kwargs)

    monkeypatch.setattr(judge.hf_model, "generate", generate)
    monkeypatch.setattr(type(judge.hf_model), "forward", forward)
    queries = [AnswerQuery(_image(i), f"Is there a cat number {i}?", "Yes") for i in range(3)]
    without = judge.answer_probability(queries)
    assert used == [("forward", False)]
    longer = judge.answer_probability([AnswerQuery(q.image, q.question, "Yes, it is") for q in queries])
    assert used[1:3] == [("generate", True), ("forward", True)] and 0 < min(longer) and max(longer) < 1
    prepared = judge._prepare_answers(queries)
    prepared["config"].use_cache = True
    assert judge._teacher_forced(prepared) == pytest.approx([math.log(p) for p in without], abs=1e-6)
