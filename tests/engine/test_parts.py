"""The engine's parts on their own: cost estimate, representative sampling, text embedder, human review."""

import argparse
import json
import math
import random
from pathlib import Path

import numpy as np
import pytest

from t2ireason.benchmarks import prism_bench
from t2ireason.commands.engine import add_engine_args, run_engine_command
from t2ireason.engine import (
    CostAssumptions,
    EngineConfig,
    EngineError,
    Sources,
    TextEmbedder,
    Workdir,
    estimate_cost,
    ingest,
    nearest_to_centroids,
    representative_prompts,
    review_agreement,
    write_prism_captions,
)
from t2ireason.prompts import render

from .scripted import make_inputs


def _cli(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    add_engine_args(parser)
    return run_engine_command(parser.parse_args(argv))


def test_cost_estimate_by_hand(tmp_path):
    inputs = make_inputs(tmp_path / "inputs")
    work = Workdir(tmp_path / "work")
    config = EngineConfig(shard_size=5)
    assert ingest(work, Sources(**inputs), config) == {"laion": 10, "imagination": 8, "text_rendering": 6}
    costs = {(c.stage, c.what): c for c in estimate_cost(work, config)}
    # 10 + 8 + 6 * 0.5 images; 21 * 0.75 = 15.75 -> 16 kept, 2 labels each, 16 * 10/21 = 7.62 of them LAION
    assert costs[("synthesis", "images")].images == 21
    assert {k: c.calls for k, c in costs.items() if c.calls} == {
        ("prompts", "caption rewriting"): 10, ("prompts", "imagination"): 8, ("prompts", "text mining"): 6,
        ("quality", "quality filter"): 21, ("scoring", "relevance scores"): 16, ("scoring", "typographic filter"): 2,
        ("captions", "category captions"): 32, ("gcot", "GCoT plans"): 19, ("gcot", "GCoT checks"): 19,
        ("original", "caption alignment"): 8, ("translate", "caption translations"): 36,
        ("translate", "GCoT translations"): 16}
    quality = costs[("quality", "quality filter")]
    assert quality.input_tokens == 21 * (math.ceil(len(render("flux_engine", "quality")) / 4) + 1280)
    assert quality.output_tokens == 21 * 60
    assert costs[("prompts", "imagination")].input_tokens < costs[("prompts", "caption rewriting")].input_tokens
    cheaper = {(c.stage, c.what): c for c in estimate_cost(work, config, CostAssumptions(image_tokens=256))}
    assert cheaper[("quality", "quality filter")].input_tokens == quality.input_tokens - 21 * (1280 - 256)


def test_estimate_command(tmp_path, capsys):
    inputs = make_inputs(tmp_path / "inputs")
    assert _cli("estimate", "--work", str(tmp_path / "work"), "--captions", inputs["captions"],
                "--seed-prompts", inputs["seed_prompts"], "--imagination", "8", "--assume", "quality_pass_rate=1",
                "mining_hit_rate=1") == 0
    out = capsys.readouterr().out
    assert "candidates: laion 10, imagination 8 (ingested into" in out
    table = {" ".join(line.split()[:-4]): line.split()[-4:] for line in out.splitlines()[2:-1]}
    assert "prompts text mining" not in table  # no images to mine
    assert table["synthesis images"][:2] == ["18", "0"]
    assert table["quality quality filter"][1] == table["scoring relevance scores"][1] == "18"  # all pass, as assumed
    assert table["total"][1] == "206" and "quality_pass_rate=1.0" in out.splitlines()[-1]
    with pytest.raises(ValueError, match="unknown assumption"):
        _cli("estimate", "--work", str(tmp_path / "work"), "--captions", inputs["captions"],
             "--seed-prompts", inputs["seed_prompts"], "--imagination", "8", "--assume", "pass=1")
    # the ingest is kept: a run must use the same inputs
    with pytest.raises(EngineError, match="was started from other inputs"):
        _cli("estimate", "--work", str(tmp_path / "work"), "--captions", inputs["captions"])


def test_nearest_to_centroids_picks_one_prompt_per_cluster():
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    around = np.array([[1, 0], [-1, 0], [0, 1], [0, -1], [0.8, 0.8], [-0.8, -0.8]])  # symmetric: mean 0
    points = np.concatenate([c + around for c in centres] + [centres])
    picks = nearest_to_centroids(points, 3, seed=0)
    # each cluster's centroid is its centre, and the rows holding the centres (18..20) are nearest them
    assert sorted(picks) == [18, 19, 20]
    assert nearest_to_centroids(points[:2], 3) == [0, 1]  # fewer rows than clusters: all of them
    twin = np.array([[0.0, 0.0], [0.0, 0.0], [5.0, 5.0], [5.0, 5.1]])
    assert len(set(nearest_to_centroids(twin, 3, seed=1))) == 3  # distinct picks, even for identical points


def _rows():
    """Four themes of 5 prompts for the style track, one low-scoring theme, rows without a style caption."""
    rows = []
    for theme, score in (("ocean", 9), ("forest", 9), ("city", 8), ("desert", 8), ("junk", 2)):
        for i in range(5):
            rows.append({"id": f"{theme}-{i}", "characteristic_scores": {"style": score - i * 0.1},
                         "captions": {"style": f"{theme} painting {i}"}, "captions_zh": {"style": f"{theme} 画 {i}"}})
    rows.append({"id": "no-caption", "characteristic_scores": {"style": 10}, "captions": {"style": None}})
    rows.append({"id": "no-score", "characteristic_scores": {"style": None}, "captions": {"style": "x painting"}})
    return rows


def _embed(texts):
    """Each theme a direction, its prompts spread a little around it."""
    axes = {"ocean": 0, "forest": 1, "city": 2, "desert": 3, "junk": 4}
    out = np.zeros((len(texts), 5))
    for n, text in enumerate(texts):
        theme, i = text.split()[0], int(text.split()[-1])
        out[n, axes[theme]] = 1.0
        out[n, (axes[theme] + 1) % 5] = 0.05 * (i - 2)
    return out


def test_representative_prompts_top_clusters_and_prism_layout(tmp_path):
    selected = representative_prompts(_rows(), _embed, tracks=["style"], k=4, top=20)
    picks = selected["style"]
    # the junk theme is below the top 20 and never clustered; each theme gives its middle prompt
    assert sorted(p["id"] for p in picks) == ["city-2", "desert-2", "forest-2", "ocean-2"]
    assert {p["prompt"] for p in picks} == {"ocean painting 2", "forest painting 2", "city painting 2",
                                           "desert painting 2"}
    assert next(p for p in picks if p["id"] == "city-2") == {"id": "city-2", "prompt": "city painting 2",
                                                            "prompt_zh": "city 画 2", "score": pytest.approx(7.8)}
    shuffled = _rows()
    random.Random(0).shuffle(shuffled)
    assert representative_prompts(shuffled, _embed, tracks=["style"], k=4, top=20) == selected
    with pytest.raises(ValueError, match="no row has both a entity score and a entity caption"):
        representative_prompts(_rows(), _embed, tracks=["entity"], k=4)

    write_prism_captions(selected, tmp_path / "prism")
    release = prism_bench.BENCHMARK.read_release(tmp_path / "prism")
    en, zh = release.configs["style_en"], release.configs["style_zh"]
    assert [r["prompt"] for r in en] == [p["prompt"] for p in picks]
    assert [r["prompt"] for r in zh] == [p["prompt_zh"] for p in picks]
    assert {r["subset"] for r in en + zh} == {"representative"}
    assert json.loads(en[0]["extra"])["source_id"] == picks[0]["id"]


@pytest.mark.slow
def test_text_embedder_clip_and_mean_pooled_encoder(tiny_models, tmp_path):
    from transformers import BertConfig, BertModel, BertTokenizerFast

    clip = TextEmbedder(tiny_models["clip"])
    texts = ["a red apple", "the cat sits on the mat by the door"]
    vectors = clip(texts)
    assert vectors.shape == (2, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert np.allclose(clip(texts[:1]), vectors[:1], atol=1e-5)  # the padded batch gives the same vector

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"the cat sits on mat a red apple by door".split()]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab))
    BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(tmp_path / "bert")
    BertModel(BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                         intermediate_size=32)).save_pretrained(tmp_path / "bert")
    bert = TextEmbedder(tmp_path / "bert")
    vectors = bert(texts)
    assert vectors.shape == (2, 16) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    # padding is masked out of the mean: the short text alone gives the same vector as in the padded batch
    assert np.allclose(bert(texts[:1]), vectors[:1], atol=1e-5)


def test_review_agreement(tmp_path, capsys):
    review = tmp_path / "review.csv"
    review.write_text(
        "file,id,vlm_verdict,flaws,reason,human_verdict_1,human_verdict_2\n"
        "images/a.png,a,accept,,clean,accept,accept\n"
        "images/b.png,b,accept,,clean,accept,reject\n"  # one reviewer rejects: humans reject
        "images/c.png,c,accept,,clean,Accept,\n"  # one reviewer so far
        "images/d.png,d,reject,blur,blurry,reject,reject\n"
        "images/e.png,e,reject,blur,blurry,accept,accept\n"
        "images/f.png,f,reject,blur,blurry,,\n")  # not reviewed yet
    result = review_agreement(review)
    assert result == {"images": 5, "agree": 3, "agreement": 0.6, "unreviewed": 1,
                      "by_vlm_verdict": {"accept": {"images": 3, "agreement": 2 / 3},
                                         "reject": {"images": 2, "agreement": 0.5}}}
    assert _cli("agreement", str(review)) == 0
    assert "3 of 5 reviewed images agree with the quality filter (60.0%" in capsys.readouterr().out
    review.write_text(review.read_text().replace("Accept", "maybe"))
    with pytest.raises(EngineError, match=r"review.csv, line 4: a human verdict is accept or reject, got 'maybe'"):
        review_agreement(review)


def test_executor_json_never_holds_a_secret(tmp_path):
    """As found: an API key given as a judge option was written to each stage's executor.json (datatrove's
    record of the executor, every step's settings with it). Masked there; the workers still get it."""
    from datatrove.pipeline.base import PipelineStep

    from t2ireason.engine.executors import LocalExecutor, Slurm, slurm_executor
    from t2ireason.engine.models import Models

    class Holds(PipelineStep):
        name = "holds"

        def __init__(self, models):
            super().__init__()
            self.models = models

        def run(self, data, rank=0, world_size=1):
            yield from data

    key = "sk-never-written-0123456789"
    models = Models(judge="openai:m", judge_kwargs={"api_key": key, "base_url": "http://me:pw-4567@host/v1"},
                    llm="openai:m", llm_kwargs={"api_key": key})
    for executor in (LocalExecutor([Holds(models)], tasks=1, logging_dir=str(tmp_path / "local")),
                     slurm_executor(Slurm(partition="p"), [Holds(models)], tasks=1, logging_dir=tmp_path / "slurm",
                                    stage="s", gpu=False, depends=None)):
        executor.save_executor_as_json()
        text = (Path(executor.logging_dir.path) / "executor.json").read_text()
        assert key not in text and "pw-4567" not in text, text
        recorded = json.loads(text)["pipeline"][0]["models"]
        assert recorded["judge_kwargs"] == {"api_key": "***", "base_url": "http://***@host/v1"}
        assert recorded["judge"] == "openai:m" and json.loads(text)["world_size"] == 1
    assert models.judge_kwargs["api_key"] == key  # what the workers load the judge with is untouched
    assert key not in json.dumps(models.describe())
