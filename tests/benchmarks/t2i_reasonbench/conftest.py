"""What the T2I-ReasonBench tests share: the sample release, its rows by id, and a scripted judge
that describes an image then answers each question with the score written for it."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.scripted import ScriptedJudge

BENCH = get_benchmark("t2i-reasonbench")


@pytest.fixture(scope="module")
def release():
    return BENCH.read_release(BENCH.sample_path())


def _row(release, dim, rid):
    return next(r for r in release.configs[dim] if r["id"] == rid)


def _group(row, name):
    return next(g for g in row["evaluation"] if g["group"] == name)


class CountingJudge(ScriptedJudge):
    """A scripted judge that also records the size of every chat batch."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def chat(self, requests, **kwargs):
        self.batches.append(len(requests))
        return super().chat(requests, **kwargs)


def pairs_in(request) -> dict[str, str]:
    return json.loads(re.search(r"criteria: (\{.*\})$", request.messages[-1].text, re.M).group(1))


def answering(scores: dict[str, float], description: str = "A photo of a scene."):
    """Describe, then answer each question with the score scripted for its text."""

    def reply(request):
        if request.messages[-1].text == "Describe this image.":
            return description
        qc = pairs_in(request)
        questions = [qc[f"q{i}"] for i in range(1, len(qc) // 2 + 1)]
        return "My analysis.\n```json\n" + json.dumps(
            {"reason": [f"on {q}" for q in questions], "score": [scores[q] for q in questions]}) + "\n```"

    return reply


# per row, the judge's score for each question of each group (written by hand)
HAND = {
    ("idiom", 1): {"reason_evaluation": [1, 0.5, 1, 0], "quality_evaluation": [1, 0.5]},
    ("textual", 2): {"reason_evaluation": [1, 1, 0.5], "quality_evaluation": [0]},
    ("entity", 2): {"entity_evaluation": [0.5], "other_details_evaluation": [1, 0], "quality_evaluation": [1, 1]},
    ("scientific", 1): {"scientific_evaluation": [1, 0.5], "other_details_evaluation": [0], "quality_evaluation": [1, 0.5]},
}


@pytest.fixture
def scored_rows(release):
    rows = [_row(release, d, i) for d, i in HAND]
    scores = {p["question"]: s for row, groups in zip(rows, HAND.values())
              for name, values in groups.items() for p, s in zip(_group(row, name)["pairs"], values, strict=True)}
    images = [Image.new("RGB", (8, 8), c) for c in ("red", "green", "blue", "white")]
    return rows, images, scores
