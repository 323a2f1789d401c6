"""load_reward: tensors in, one float per image on 0-1, submit's future the same, criteria made once per
prompt, weighted sums equal to their parts, failures said, groups judged in one batch."""

from __future__ import annotations

import json
import math
import multiprocessing
import re
import threading

import numpy as np
import pytest
import torch
from PIL import Image

from t2ireason import load_reward
from t2ireason.judges import JudgeError, JudgeUnavailable, Reply
from t2ireason.judges.scripted import ScriptedJudge

from . import _procs
from .scripted import BatchJudge, CountingLLM, llm_reply, r2i_judge

#: prompts in no benchmark
PROMPTS = ["one more apple than the two on the plate", "a clock showing a quarter past three"]
EXPECTED = (9 * 0.5 + 2 * 1) / 11  # R2I-Score of r2i_judge's answers to the scripted questions


def r2i_reward(tmp_path, judge=None, llm=None, **kwargs):
    return load_reward("r2i_score", judge=judge or r2i_judge(), criteria_llm=llm or CountingLLM(),
                       criteria_cache=tmp_path / "criteria.sqlite", **kwargs)


def test_a_float_tensor_batch_of_new_prompts_gives_one_float_per_image_and_submit_the_same(tmp_path):
    images = torch.rand(4, 3, 32, 32, dtype=torch.float32)
    prompts = [PROMPTS[0], PROMPTS[0], PROMPTS[1], PROMPTS[1]]
    with r2i_reward(tmp_path) as reward:
        scores, info = reward(images, prompts)
        future = reward.submit(images, prompts)
        again, again_info = future.result()
    assert len(scores) == 4 and all(isinstance(s, float) for s in scores)
    assert scores == pytest.approx([EXPECTED] * 4)
    assert again == scores
    assert info["num_failed"] == 0 and again_info["num_failed"] == 0
    assert info["components"] == {"r2i_score": scores}
    assert info["judge"]["r2i_score"]["backend"] == "scripted"
    row = info["per_image"][0]["results"]["r2i_score"]
    assert [q["question"] for q in row["questions"]] == ["Is the count right?", "Is the image clear?"]


def test_criteria_are_made_once_per_prompt_across_calls_and_objects(tmp_path):
    llm = CountingLLM()
    images = [Image.new("RGB", (16, 16), c) for c in ("red", "blue", "red", "blue")]
    prompts = [PROMPTS[0], PROMPTS[0], PROMPTS[1], PROMPTS[1]]
    with r2i_reward(tmp_path, llm=llm) as reward:
        reward(images, prompts)
        # one prompt: the reference caption written first, then imagine, design and weigh
        assert len(llm.requests) == 2 * 4 and llm.calls == 4  # each step batched across the prompts
        _, info = reward(images, prompts)
        assert info["criteria"]["r2i_score"] == {"given": 0, "cached": 2, "made": 2, "failed": 0}
        made = reward.criteria["r2i_score"].dataset()
    assert sorted(made["prompt"]) == sorted(PROMPTS) and all(made["has_questions"])
    assert made[0]["reference_caption"] == "the reference_caption of it"  # written by the project's prompt
    with r2i_reward(tmp_path, llm=llm) as fresh:  # another reward, the same cache file
        _, info = fresh(images, prompts)
    assert len(llm.requests) == 8 and info["criteria"]["r2i_score"]["cached"] == 2


def test_criteria_are_made_once_per_prompt_across_processes(tmp_path):
    """Two processes meeting the same new prompts at once: one makes each prompt's criteria, the other
    waits on the key's lock and reads them."""
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    log = tmp_path / "llm_requests.log"
    procs = [ctx.Process(target=_procs.score_new_prompts, args=(str(tmp_path / "criteria.sqlite"), str(log), start, k))
             for k in range(2)]
    for p in procs:
        p.start()
    start.set()
    for p in procs:
        p.join(timeout=120)
    assert [p.exitcode for p in procs] == [0, 0]
    requests = log.read_text().splitlines()
    assert len(requests) == 2 * 4, requests  # 2 prompts x (caption, imagine, design, weigh), once
    scores = [json.loads((tmp_path / f"scores{k}.json").read_text()) for k in range(2)]
    assert scores[0] == scores[1] == pytest.approx([EXPECTED] * 2)


def test_a_combined_reward_equals_its_weighted_parts_and_asks_once_a_round(tmp_path):
    images = torch.rand(3, 3, 16, 16)
    prompts = [PROMPTS[0], PROMPTS[1], PROMPTS[0]]
    judge = BatchJudge(prism=6)
    both = load_reward({"r2i_score": 0.7, "prism_score/aesthetics": 0.3}, judge=judge, criteria_llm=CountingLLM(),
                       criteria_cache=tmp_path / "c.sqlite")
    scores, info = both(images, prompts)
    # every image's R2I request and its two PRISM-Bench requests went out together, in one batch
    assert judge.batches == [3 + 2 * 3]
    alone_r2i, _ = r2i_reward(tmp_path)(images, prompts)
    alone_prism, prism_info = load_reward("prism_score", judge=BatchJudge(prism=6))(images, prompts)
    aesthetic = [r["results"]["prism_score"]["subscores"]["aesthetic"] / 100 for r in prism_info["per_image"]]
    assert info["components"] == {"r2i_score": pytest.approx(alone_r2i), "prism_score/aesthetics": pytest.approx(aesthetic)}
    assert scores == pytest.approx([0.7 * r + 0.3 * a for r, a in zip(alone_r2i, aesthetic)])
    assert aesthetic == [0.6] * 3 and alone_prism == pytest.approx([0.6] * 3)
    assert set(info["judge"]) == {"r2i_score", "prism_score"}


def test_rewards_in_a_mapping_keep_their_own_settings_and_weights(tmp_path):
    r2i = r2i_reward(tmp_path, options={"max_reasks": 0})
    both = load_reward({r2i: 2.0, "prism_score/alignment": 1.0}, judge=BatchJudge(prism=10))
    scores, info = both([Image.new("RGB", (8, 8))], [PROMPTS[0]])
    assert scores == pytest.approx([2 * EXPECTED + 1.0])
    assert info["weights"] == {"r2i_score": 2.0, "prism_score/alignment": 1.0}
    both.close()


@pytest.mark.parametrize("policy, expected", [("nan", math.nan), ("none", None), ("zero", 0.0), ("mean", EXPECTED)])
def test_a_failed_image_gets_what_on_failure_says_and_is_counted(tmp_path, policy, expected):
    def reply(request):  # the second image's replies never parse: re-asked, then a failure
        return "no JSON here" if request.images and request.images[0].size == (9, 9) else \
            'ok\n```json\n{"1": 0.5, "2": 1}\n```'

    reward = r2i_reward(tmp_path, judge=ScriptedJudge(reply), on_failure=policy)
    images = [Image.new("RGB", (8, 8)), Image.new("RGB", (9, 9)), Image.new("RGB", (8, 8))]
    scores, info = reward(images, [PROMPTS[0]] * 3)
    assert scores[0] == scores[2] == pytest.approx(EXPECTED)
    if expected is None or not math.isnan(expected):
        assert scores[1] == expected
    else:
        assert math.isnan(scores[1])
    assert info["num_failed"] == 1 and info["failed"] == [False, True, False]
    assert "unanswered" in info["per_image"][1]["failure"] and info["num_reasks"] == 2


def test_a_judge_that_cannot_answer_raises_from_the_call_and_from_the_future(tmp_path):
    def down(request):
        raise JudgeUnavailable("the endpoint is down")

    reward = r2i_reward(tmp_path, judge=ScriptedJudge(down))
    with pytest.raises(JudgeUnavailable, match="down"):
        reward([Image.new("RGB", (8, 8))], [PROMPTS[0]])
    with pytest.raises(JudgeUnavailable, match="down"):
        reward.submit([Image.new("RGB", (8, 8))], [PROMPTS[0]]).result()
    reward.close()


def test_a_group_is_one_batch_and_its_prompt_one_set_of_criteria_requests(tmp_path):
    judge, llm = BatchJudge(), CountingLLM()
    group = torch.rand(8, 3, 16, 16)
    scores, _ = r2i_reward(tmp_path, judge=judge, llm=llm)(group, [PROMPTS[1]] * 8)
    assert judge.batches == [8] and len(llm.requests) == 4
    assert scores == pytest.approx([EXPECTED] * 8)


def test_submit_waits_while_max_in_flight_calls_are_unfinished(tmp_path):
    release = threading.Event()

    def slow(request):
        release.wait()
        return 'ok\n```json\n{"1": 1, "2": 1}\n```'

    reward = r2i_reward(tmp_path, judge=ScriptedJudge(slow), max_in_flight=2)
    image, prompt = [Image.new("RGB", (8, 8))], [PROMPTS[0]]
    first, second = reward.submit(image, prompt), reward.submit(image, prompt)
    third: list = []
    waiting = threading.Thread(target=lambda: third.append(reward.submit(image, prompt)))
    waiting.start()
    waiting.join(0.5)
    assert waiting.is_alive() and not third  # two unfinished: the third waits for a slot
    release.set()
    waiting.join()
    assert [f.result()[0] for f in (first, second, third[0])] == [[1.0]] * 3
    reward.close()


def test_images_as_a_loop_holds_them_score_as_the_same_pictures(tmp_path):
    """uint8 and float tensors, [-1, 1] with value_range, numpy batches, PIL images and paths: the judge sees
    the same picture (by its digest); images out of the value range are refused, the range they span said
    (issue 43: they scored NaN, or 0 with on_failure="zero", and a loop trained on nothing)."""
    pixels = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)
    pil = [Image.fromarray(p.permute(1, 2, 0).numpy()) for p in pixels]
    pil[1].save(tmp_path / "b.png")
    forms = {
        "uint8": (pixels, (0, 1)),
        "float": (pixels.float() / 255, (0, 1)),
        "signed": (pixels.float() / 127.5 - 1, (-1, 1)),
        "numpy": (pixels.permute(0, 2, 3, 1).numpy().astype(np.float32) / 255, (0, 1)),
        "list": ([pixels[0], str(tmp_path / "b.png")], (0, 1)),
        "pil": (pil, (0, 1)),
    }
    digests = {}
    for name, (images, value_range) in forms.items():
        judge = r2i_judge()
        reward = r2i_reward(tmp_path, judge=judge, value_range=value_range)
        scores, _ = reward(images, [PROMPTS[0]] * 2)
        assert scores == pytest.approx([EXPECTED] * 2), name
        digests[name] = [r.images[0].digest for r in judge.requests]
    assert len({tuple(d) for d in digests.values()}) == 1, digests
    bad = pixels.float() / 127.5 - 1
    bad[1, 0, 0, 0] = 3.0
    with pytest.raises(ValueError, match=r"1 of 2 images have values outside value_range \[-1, 1\]: they span "
                                         r"\[-[\d.]+, 3\] \(images 1\)"):
        r2i_reward(tmp_path, value_range=(-1, 1))(bad, [PROMPTS[0]] * 2)
    nan = pixels.float() / 255
    nan[1, 0, 0, 0] = math.nan  # a sample gone wrong: it fails alone, said
    scores, info = r2i_reward(tmp_path, on_failure="nan")(nan, [PROMPTS[0]] * 2)
    assert scores[0] == pytest.approx(EXPECTED) and math.isnan(scores[1])
    assert "must lie in [0, 1] (value_range); got NaN" in info["per_image"][1]["failure"]


def test_a_benchmark_row_in_metadata_is_scored_as_given_with_no_criteria_llm(tmp_path):
    from t2ireason.benchmarks import get_benchmark

    bench = get_benchmark("r2i-bench")
    row = bench.read_release(bench.sample_path()).configs["causal"][0]
    judge = ScriptedJudge(['ok\n```json\n{"1": 1, "2": 0.5, "3": 1}\n```'])
    reward = load_reward("r2i_score", judge=judge, criteria_cache=tmp_path / "c.sqlite")
    scores, info = reward([Image.new("RGB", (8, 8))], ["a different prompt wording"], [row])
    assert scores == pytest.approx([(5 * 1 + 9 * 0.5 + 2 * 1) / 16])  # the card's figure for this row
    assert info["criteria"]["r2i_score"]["given"] == 1
    assert "a different prompt wording" in judge.requests[0].messages[-1].text  # the prompt drawn is judged
    with pytest.raises(ValueError, match="criteria_llm"):
        reward([Image.new("RGB", (8, 8))], ["a prompt without a row"])


def test_t2i_reasonscore_from_a_prompt_and_its_dimension(tmp_path):
    """Stage I of the entity dimension, its explicit meaning written first; the image judged by Figure 14's
    protocol (describe, then one turn per group)."""
    llm = CountingLLM()

    def judge_reply(request):
        return "A tower at night." if request.messages[-1].text == "Describe this image." else '{"reason": "yes", "score": [1]}'

    reward = load_reward("t2i_reasonscore", judge=ScriptedJudge(judge_reply), criteria_llm=llm, dimension="entity",
                         criteria_cache=tmp_path / "c.sqlite")
    scores, info = reward([Image.new("RGB", (8, 8))], ["the iron lattice tower of Paris at night"])
    assert scores == pytest.approx([0.7 + 0.2 + 0.1])
    fields, stage1 = (r.messages[-1].text for r in llm.requests)
    assert '"explicit_meaning"' in fields and "'explicit_meaning': the explicit_meaning of it" in stage1
    with pytest.raises(ValueError, match="no dimension"):
        load_reward("t2i_reasonscore", judge=ScriptedJudge([]), criteria_llm=llm)([Image.new("RGB", (8, 8))], ["x"])
    with pytest.raises(ValueError, match="dimension 'poetry'"):
        load_reward("t2i_reasonscore", judge=ScriptedJudge([]), dimension="poetry")


def test_a_knowledge_checklist_from_a_prompt_with_the_projects_prompt(tmp_path):
    replies = iter(["not a checklist", None])  # the first reply is re-asked

    def reply(request):
        first = next(replies, None)
        return first if first is not None else llm_reply(request)

    llm = CountingLLM(reply)
    reward = load_reward("knowledge_checklist_score", judge=ScriptedJudge(lambda r: "[1, 0, 1]"), criteria_llm=llm,
                         criteria_cache=tmp_path / "c.sqlite")
    scores, info = reward([Image.new("RGB", (8, 8))], ["a titration curve of a weak acid"])
    assert scores == pytest.approx([2 / 3])
    assert "knowledge checklist" in llm.requests[0].messages[-1].text and len(llm.requests) == 2
    row = reward.criteria["knowledge_checklist_score"].dataset()[0]
    assert row["domain"] == "nature" and [c["item"] for c in row["checklist"]] == ["element 1", "element 2", "element 3"]


def test_prism_score_uses_the_track_given_or_the_general_template():
    judge = BatchJudge(prism=7)
    reward = load_reward("prism_score", judge=judge)
    scores, _ = reward([Image.new("RGB", (8, 8))] * 2, ["a cat", "a poster"], [None, {"track": "text_rendering"}])
    assert scores == pytest.approx([0.7, 0.7])
    general, _, rendering, _ = (r.messages[-1].text for r in judge.requests)
    assert "**General Instructions: Prompt Alignment**" in general and "text prompt: a cat" in general
    assert "**Track-Specific Instructions: In-Image Text Generation**" in rendering  # the track's own (paper)
    with pytest.raises(ValueError, match="unknown PRISM-Bench track 'sketch'"):
        load_reward("prism_score", judge=judge, track="sketch")


def test_vqascore_and_clip_score_rewards(tiny_models):
    from t2ireason.alignment import CLIPScorer, clip_score

    images = torch.rand(2, 3, 32, 32)
    vqa, info = load_reward("vqascore", judge=ScriptedJudge(probabilities=[0.9, 0.25]))(images, ["a cube", "a cat"])
    assert vqa == [0.9, 0.25] and info["num_failed"] == 0
    clip, _ = load_reward("clip_score", model=str(tiny_models["clip"]), clip_kwargs={"device": "cpu"})(images, ["a cube", "a cat"])
    hessel = clip_score(list(images), ["a cube", "a cat"], CLIPScorer(str(tiny_models["clip"]), device="cpu"))
    assert clip == pytest.approx([h / 2.5 for h in hessel]) and all(0 <= c <= 1 for c in clip)


def test_bad_arguments_are_one_clear_line(tmp_path):
    with pytest.raises(ValueError, match="unknown reward 'r2i'"):
        load_reward("r2i")
    with pytest.raises(ValueError, match="prism_score has no part 'style'"):
        load_reward("prism_score/style", judge=ScriptedJudge([]))
    with pytest.raises(ValueError, match="on_failure must be one of none, nan, zero, mean"):
        load_reward("prism_score", judge=ScriptedJudge([]), on_failure="drop")
    with pytest.raises(ValueError, match="weight of 'prism_score' must be a finite number"):
        load_reward({"prism_score": float("nan")}, judge=ScriptedJudge([]))
    reward = load_reward("prism_score", judge=ScriptedJudge([]))
    with pytest.raises(ValueError, match="got 2 images but 1 prompts"):
        reward(torch.rand(2, 3, 8, 8), ["a cat"])
    with pytest.raises(ValueError, match="got 1 metadata entries for 2 images"):
        reward(torch.rand(2, 3, 8, 8), ["a", "b"], [{}])
    with pytest.raises(ValueError, match=r"B x C x H x W .* got shape \(3, 8, 8\)"):
        reward(torch.rand(3, 8, 8), ["a"])


def test_a_failed_reply_error_is_recorded_not_scored(tmp_path):
    judge = ScriptedJudge([Reply(text="", model="m", sampling={}, error="HTTP 500", transient=True)])
    scores, info = r2i_reward(tmp_path, judge=judge, on_failure="nan")([Image.new("RGB", (8, 8))], [PROMPTS[0]])
    assert math.isnan(scores[0]) and "HTTP 500" in info["per_image"][0]["failure"]


def test_a_metric_module_takes_a_tensor_batch():
    """The refusal of issue 32 ('predictions[0] is a Tensor; pass a PIL image or a file path') is gone."""
    from t2ireason.metric import load_metric

    vqa = load_metric("vqascore", judge=ScriptedJudge(probabilities=[0.5, 0.75]), cache=False)
    out = vqa.compute(predictions=torch.rand(2, 3, 8, 8), references=["a cube", "a cat"])
    assert out["scores"] == [0.5, 0.75] and out["num_failed"] == 0


def test_a_metric_module_takes_tensors_in_add_batch_too():
    """evaluate's own path (add_batch, several processes) stores images in Arrow, which takes no tensor: its
    refusal printed the whole tensor."""
    from t2ireason.metric import load_metric

    vqa = load_metric("vqascore", judge=ScriptedJudge(probabilities=[0.5, 0.75]), cache=False)
    vqa.add_batch(predictions=torch.rand(2, 3, 8, 8), references=["a cube", "a cat"])
    out = vqa.compute()
    assert out["scores"] == [0.5, 0.75] and out["num_failed"] == 0


def test_two_workers_meeting_a_new_prompt_at_once_make_its_criteria_once():
    """Two submitted calls scored at once (workers=2), no cache file: the second waits on the prompt's lock
    and takes the row the first made."""
    import time

    def slow(request):
        time.sleep(0.2)  # both calls are making criteria at the same time, without the lock
        return llm_reply(request)

    llm = CountingLLM(slow)
    reward = load_reward("r2i_score", judge=r2i_judge(), criteria_llm=llm, criteria_cache=False, workers=2)
    futures = [reward.submit([Image.new("RGB", (8, 8))], [PROMPTS[0]]) for _ in range(2)]
    assert [f.result()[0] for f in futures] == [pytest.approx([EXPECTED])] * 2
    assert len(llm.requests) == 4
    reward.close()


class _Closing(ScriptedJudge):
    def __init__(self, spec):
        super().__init__([])
        self.spec, self.closed = spec, False

    def close(self):
        self.closed = True


@pytest.fixture
def loaded_judges(monkeypatch):
    """Judge specs load as closable scripted judges, listed in the order loaded."""
    import t2ireason.judges as judges

    loaded = []

    def load(spec, cache=False, **kwargs):
        loaded.append(_Closing(spec))
        return loaded[-1]

    monkeypatch.setattr(judges, "load_judge", load)
    monkeypatch.setattr(judges, "validate_judge", lambda *a, **k: None)
    return loaded


def test_vqascore_loads_a_parsed_judge_spec_as_it_loads_the_string(loaded_judges):
    from t2ireason.judges import JudgeSpec

    with load_reward("vqascore", judge=JudgeSpec.parse("hf:some/model")) as reward:
        assert reward.scorers[0].judge is loaded_judges[0]
    assert loaded_judges[0].closed


@pytest.mark.parametrize("name, kwargs, said", [
    ({"vqascore": 1, "nope": 1}, {}, "unknown reward 'nope'"),
    ("vqascore", {"on_failure": "drop"}, "on_failure must be one of"),
])
def test_what_load_reward_loaded_is_closed_when_a_later_argument_is_refused(loaded_judges, name, kwargs, said):
    with pytest.raises(ValueError, match=said):
        load_reward(name, judge="hf:some/model", criteria_llm="hf:other/model", **kwargs)
    assert loaded_judges and all(j.closed for j in loaded_judges)


def test_the_method_behind_the_criteria_keys_is_read_once_per_criteria_not_per_prompt(tmp_path, monkeypatch):
    """The templates a key holds the digest of are read when the criteria are loaded, not again for each
    prompt of every step (half a millisecond an image)."""
    from t2ireason.rewards import criteria

    reads = []
    method = criteria.Method.method
    monkeypatch.setattr(criteria.Method, "method", lambda self: reads.append(1) or method(self))
    with r2i_reward(tmp_path) as reward:
        for _ in range(2):
            reward(torch.rand(2, 3, 8, 8), PROMPTS)
    assert len(reads) == 1


def test_vqascore_beside_a_judged_metric_asks_the_shared_judge_through_the_gathering():
    judge = BatchJudge(prism=8, probabilities=[0.9, 0.25])
    both = load_reward({"vqascore": 0.5, "prism_score": 0.5}, judge=judge)
    scores, info = both(torch.rand(2, 3, 16, 16), PROMPTS)
    assert info["components"] == {"vqascore": pytest.approx([0.9, 0.25]), "prism_score": pytest.approx([0.8, 0.8])}
    assert scores == pytest.approx([0.85, 0.525]) and judge.batches == [4]


# -- issue 43: what a training loop may hand a reward ------------------------------------------------------------

def test_a_decoders_tanh_output_with_the_default_range_is_refused_naming_the_range(tmp_path):
    images = torch.tanh(torch.randn(4, 3, 16, 16) * 2)  # a decoder's raw output, in (-1, 1)
    for policy in ("nan", "zero"):
        with r2i_reward(tmp_path, on_failure=policy) as reward, \
                pytest.raises(ValueError, match=r"4 of 4 images have values outside value_range \[0, 1\]: they span "
                                                r"\[-[\d.]+, [\d.]+\] .*pass value_range=\(-1, 1\)"):
            reward(images, [PROMPTS[0]] * 4)  # every score NaN, or 0.0, before: the loop trained on nothing
    with r2i_reward(tmp_path) as reward, pytest.raises(ValueError, match=r"8-bit values: pass a uint8 tensor"):
        reward(torch.rand(2, 3, 8, 8) * 255, [PROMPTS[0]] * 2)
    with r2i_reward(tmp_path, value_range=(-1, 1)) as reward:
        assert reward(images, [PROMPTS[0]] * 4)[0] == pytest.approx([EXPECTED] * 4)


def test_images_without_pixels_are_a_clear_error(tmp_path):
    with r2i_reward(tmp_path) as reward:
        with pytest.raises(ValueError, match=r"the batch has no pixels \(shape \(3, 0, 0\)\)"):
            reward(torch.rand(2, 3, 0, 0), [PROMPTS[0]] * 2)  # a raw IndexError before
        with pytest.raises(ValueError, match=r"image 1 has no pixels"):
            reward([torch.rand(3, 8, 8), torch.rand(3, 0, 8)], [PROMPTS[0]] * 2)


def test_one_empty_prompt_fails_its_image_alone(tmp_path):
    with r2i_reward(tmp_path) as reward:
        scores, info = reward(torch.rand(3, 3, 8, 8), [PROMPTS[0], "  ", PROMPTS[1]])  # the batch failed before
    assert scores == pytest.approx([EXPECTED] * 3)  # the empty prompt's own group: the call's mean (issue 50)
    assert "prompts[1] is empty" in info["per_image"][1]["failure"] and info["num_failed"] == 1
    assert "no image of its prompt scored" in info["per_image"][1]["filled"]["r2i_score"]


@pytest.mark.parametrize("name,kwargs,said", [
    ("vqascore", {"judge": "openai:gpt-4o@http://127.0.0.1:9/v1", "judge_kwargs": {"max_concurency": 2}},
     "takes no option 'max_concurency' (did you mean 'max_concurrency'?)"),
    ("r2i_score", {"judge": "openai:gpt-4o@http://127.0.0.1:9/v1", "judge_kwargs": {"max_concurency": 2}},
     "takes no option 'max_concurency' (did you mean 'max_concurrency'?)"),
    ("clip_score", {"clip_kwargs": {"batchsize": 4}}, "takes no option 'batchsize' (did you mean 'batch_size'?)"),
])
def test_a_misspelt_option_is_a_did_you_mean_not_a_type_error(tmp_path, name, kwargs, said):
    with pytest.raises((ValueError, JudgeError), match=re.escape(said)):  # a raw TypeError before
        load_reward(name, criteria_llm=CountingLLM(), criteria_cache=tmp_path / "c.sqlite", **kwargs)
