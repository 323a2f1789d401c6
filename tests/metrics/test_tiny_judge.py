"""Every metric module end to end through ``evaluate.load("metrics/<name>")`` with the tiny local
models of ``t2ireason.testing`` loaded by spec string, the way a user's real judge is: the
transformers backend, the response cache on, sample rows as ``load_rows`` gives them.

The tiny VLM is random, so its answers mean nothing; under the benchmarks' JSON schemas
(constrained decoding) they parse, so every scoring path runs with real replies. Values are
checked against what the judge (or CLIP) gives when called directly.
"""

from __future__ import annotations

from pathlib import Path

import evaluate
import numpy as np
import pytest
import scipy.stats
import torch
from PIL import Image

from t2ireason import testing
from t2ireason.alignment import VQASCORE_QUESTION
from t2ireason.data import load_rows
from t2ireason.judges import load_judge

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def metric_path(name: str) -> str:
    return str(ROOT / "metrics" / name)


def pictures(n: int, seed: int = 0) -> list[Image.Image]:
    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)) for _ in range(n)]


@pytest.fixture(scope="module")
def vlm(tiny_models):
    return str(tiny_models["vlm"])


@pytest.fixture(scope="module")
def judge_kwargs(vlm):
    return {**testing.tiny_judge_kwargs(vlm), "device": "cpu", "batch_size": 8}


def smallest(name: str, size, n: int = 1) -> list[dict]:
    """The ``n`` scorable sample rows with the fewest questions (the tests stay fast)."""
    rows = [r for r in load_rows(name) if size(r)]
    return sorted(rows, key=size)[:n]


# metric -> (benchmark, headline key, rows, the scale of a per-image score)
JUDGED = {
    "t2i_reasonscore": ("t2i-reasonbench", "overall",
                        lambda: smallest("t2i-reasonbench", lambda r: sum(len(g["pairs"]) for g in r["evaluation"])
                                         if r["dimension"] == "idiom" else 0), 1.0),
    "r2i_score": ("r2i-bench", "r2i_score", lambda: smallest("r2i-bench", lambda r: len(r["questions"])), 1.0),
    "knowledge_checklist_score": ("worldgenbench", "knowledge_checklist_score",
                                  lambda: smallest("worldgenbench", lambda r: len(r["checklist"])), 1.0),
    "prism_score": ("prism-bench", "prism_score", lambda: load_rows("prism-bench", configs=["style_en"])[:1], 100.0),
}


@pytest.mark.parametrize("name", list(JUDGED))
def test_judged_metric_with_the_tiny_judge_and_the_cache(name, vlm, judge_kwargs, tmp_path):
    _, headline, make_rows, scale = JUDGED[name]
    rows = make_rows()
    images = pictures(len(rows))
    metric = evaluate.load(metric_path(name), judge=f"hf:{vlm}", judge_kwargs=judge_kwargs,
                           cache=str(tmp_path / "judge_cache.sqlite"), progress=False)
    out = metric.compute(predictions=images, references=rows, structured_output=True)

    judge = metric.judge  # a CachedJudge around the transformers judge, loaded once
    assert type(judge).__name__ == "CachedJudge" and type(judge.judge).__name__ == "TransformersJudge"
    assert judge.hits == 0 and judge.misses > 0 and judge.stored == judge.misses
    assert out["judge"]["backend"] == "hf" and out["judge"]["model"] == vlm
    assert out["judge"]["sampling"]["seed"] == testing.SEED and out["judge"]["preset"]
    assert out["num_images"] == len(rows) and out["num_failed"] == 0
    for result, score in zip(out["per_image"], out["scores"]):
        assert result["failure"] is None and result["replies"] and score == result["score"]
        assert 0 <= score <= scale
        assert result["questions"] and all(q["score"] is not None for q in result["questions"])
    assert 0 <= out[headline] <= 100

    # the same instance again: the same judge object, every request answered from the cache
    asked = judge.misses
    again = metric.compute(predictions=images, references=rows, structured_output=True)
    assert metric.judge is judge and judge.misses == asked and judge.hits == asked
    assert again["scores"] == out["scores"] and again["per_image"] == out["per_image"]


def test_r2i_criteria_levels_and_ranges_are_enforced_by_constrained_decoding(vlm, judge_kwargs, tmp_path):
    """Each question's own levels (quarters, a range level, 1 or 0) in the schema the tiny judge decodes under:
    every answer is one its criterion defines."""
    from t2ireason.benchmarks import r2i_bench as r2i

    row = next(r for r in load_rows("r2i-bench") if len(r["questions"]) == 3)
    criteria = ["1.0: perfect. 0.75: minor flaws. 0.5: some. 0.25: little. 0: none.",
                "1.0: clear. 0.7-0.9: vague but reasonable. 0.3-0.6: irrelevant. 0.0: absurd.",
                "1: it exists, 0: it does not exist"]
    row = dict(row, questions=[dict(q, criterion=c) for q, c in zip(row["questions"], criteria)])
    metric = evaluate.load(metric_path("r2i_score"), judge=f"hf:{vlm}", judge_kwargs=judge_kwargs, progress=False,
                           cache=str(tmp_path / "judge_cache.sqlite"))
    out = metric.compute(predictions=pictures(1), references=[row], structured_output=True, max_reasks=0)
    assert out["num_failed"] == 0
    for q, c in zip(out["per_image"][0]["questions"], criteria):
        levels = r2i.criterion_levels(c)
        assert any(lo - 1e-9 <= q["score"] <= hi + 1e-9 for lo, hi in levels), (q["score"], levels)


def test_unparsable_tiny_replies_are_counted_failures_with_their_raw_text(vlm, tmp_path):
    rows = JUDGED["r2i_score"][2]()
    kwargs = {"device": "cpu", "generate_kwargs": {"min_new_tokens": 4},
              "sampling": {"temperature": 0.0, "max_tokens": 4}}
    metric = evaluate.load(metric_path("r2i_score"), judge=f"hf:{vlm}", judge_kwargs=kwargs, cache=False,
                           progress=False)
    out = metric.compute(predictions=pictures(1), references=rows, max_reasks=1)
    [result] = out["per_image"]
    assert out["scores"] == [None] and out["num_failed"] == 1 and out["num_reasks"] == 1
    assert result["failure"] and len(result["replies"]) == 2 and all(isinstance(r, str) for r in result["replies"])
    assert all(q["score"] is None for q in result["questions"])
    assert out["overall"]["n"] == 0 and out["overall"]["failed"] == 1


def test_vqascore_with_the_tiny_judge(vlm):
    prompts = ["a red cube on a table", "two cats", "a lighthouse at night"]
    images = pictures(3, seed=1)
    vqa = evaluate.load(metric_path("vqascore"), judge=f"hf:{vlm}", judge_kwargs={"device": "cpu"}, cache=False)
    out = vqa.compute(predictions=images, references=prompts)
    direct = load_judge(f"hf:{vlm}", device="cpu", batch_size=1)
    expected = [direct.yes_probability([img], [VQASCORE_QUESTION.format(prompt=p)])[0]
                for img, p in zip(images, prompts)]
    assert out["scores"] == pytest.approx(expected, rel=1e-5) and all(0 < s < 1 for s in out["scores"])
    assert out["vqascore"] == pytest.approx(np.mean(expected), rel=1e-5)
    assert out["judge"]["backend"] == "hf" and out["num_images"] == 3


def _reference_cosines(folder, images, texts):
    """cos(E_I, E_T) from CLIPModel's own forward pass (its normalised image and text embeddings)."""
    from transformers import AutoProcessor, CLIPModel

    model, processor = CLIPModel.from_pretrained(folder).eval(), AutoProcessor.from_pretrained(folder)
    inputs = processor(text=texts, images=images, return_tensors="pt", padding=True, truncation=True)
    with torch.inference_mode():
        out = model(**inputs)
    return (out.image_embeds * out.text_embeds).sum(-1).tolist()


def test_clip_score_both_definitions_against_clips_own_forward(tiny_models, tmp_path):
    folder = str(tiny_models["clip"])
    images = pictures(4, seed=2)
    paths = []
    for i, img in enumerate(images):
        paths.append(str(tmp_path / f"{i}.png"))
        img.save(paths[-1])
    prompts = ["a red cube", "two cats on a sofa", "a lighthouse", "a bowl of ramen"]
    clip = evaluate.load(metric_path("clip_score"), model=folder, device="cpu")

    hessel = clip.compute(predictions=paths, references=prompts)
    cos = _reference_cosines(folder, images, [f"A photo depicts {p}" for p in prompts])
    assert hessel["definition"] == "hessel" and hessel["model"]["model"] == folder
    assert hessel["scores"] == pytest.approx([2.5 * max(c, 0.0) for c in cos], abs=1e-5)
    assert hessel["clip_score"] == pytest.approx(np.mean(hessel["scores"]))

    tm = clip.compute(predictions=images, references=prompts, definition="torchmetrics")
    cos = _reference_cosines(folder, images, prompts)
    assert tm["scores"] == pytest.approx([100 * c for c in cos], abs=1e-3)
    assert tm["clip_score"] == pytest.approx(max(100 * np.mean(cos), 0.0), abs=1e-3)
    with pytest.raises(ValueError, match="unknown CLIPScore definition 'cosine'"):
        evaluate.load(metric_path("clip_score"), model=folder, definition="cosine")


def test_meta_evaluation_of_the_tiny_judge_against_ratings_and_another_judge(vlm, tiny_models):
    """VQAScore from the tiny VLM against 'human' ratings, and against CLIPScore as a second judge."""
    prompts = [f"object number {i} on a table" for i in range(8)]
    images = pictures(8, seed=3)
    vqa = evaluate.load(metric_path("vqascore"), judge=f"hf:{vlm}", judge_kwargs={"device": "cpu"}, cache=False)
    scores = vqa.compute(predictions=images, references=prompts)["scores"]
    ratings = [3, 1, 4, 1, 5, 2, 2, 5]

    human = evaluate.load(metric_path("meta_evaluation")).compute(predictions=scores, references=ratings)
    assert human["kendall_tau"] == pytest.approx(scipy.stats.kendalltau(scores, ratings).statistic)
    assert human["spearman_rho"] == pytest.approx(scipy.stats.spearmanr(scores, ratings).statistic)
    assert human["n"] == 8 and human["n_excluded"] == 0

    clip = evaluate.load(metric_path("clip_score"), model=str(tiny_models["clip"]), device="cpu")
    other = clip.compute(predictions=images, references=prompts, definition="torchmetrics")["scores"]
    judges = evaluate.load(metric_path("meta_evaluation"), "judges").compute(
        predictions=scores, references=other, models=["m1", "m2"] * 4)
    assert judges["image"]["spearman_rho"] == pytest.approx(scipy.stats.spearmanr(scores, other).statistic)
    assert judges["model"]["means_a"] == pytest.approx({"m1": np.mean(scores[0::2]), "m2": np.mean(scores[1::2])})
    assert judges["model"]["n_models"] == 2
