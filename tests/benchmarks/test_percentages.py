"""A percentage is not a score on any paper's scale (issue 35.3): every benchmark's parser refuses "1%"
or "8%" (parsing.as_score, the one place scores are read), the judge is asked again naming it, and the
image gets the score of the answer that followed, never the percentage's number."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.r2i_bench import question_keys
from t2ireason.data import load_rows
from t2ireason.judges.scripted import ScriptedJudge


def _r2i(row, score):
    keys = question_keys(row["questions"])
    return lambda request: "Checked.\n```json\n" + json.dumps(dict.fromkeys(keys, score)) + "\n```"


def _worldgenbench(row, score):
    return lambda request: json.dumps([score] * len(row["checklist"]))


def _prism(row, score):
    return lambda request: json.dumps({"justification": "One sentence.", "score": score})


def _t2i(row, score):
    def reply(request):
        if len(request.messages) == 1:
            return "A picture of the prompt."  # the describe turn
        asked = request.messages[2].text
        group = next(g for g in row["evaluation"] if all(p["question"] in asked for p in g["pairs"]))
        return json.dumps({"reason": ["seen"] * len(group["pairs"]), "score": [score] * len(group["pairs"])})

    return reply


#: benchmark, preset, its reply maker, the percentage a first answer writes, the score the re-ask then
#: gives, and the image's score that follows from it
CASES = [
    ("r2i-bench", "paper", _r2i, "1%", 0, 0.0),
    ("r2i-bench", "official", _r2i, "1%", 0, 0.0),
    ("worldgenbench", "paper", _worldgenbench, "1%", 0, 0.0),
    ("prism-bench", "paper", _prism, "8%", 6, 0.6),
    ("t2i-reasonbench", "paper", _t2i, "1%", 0, 0.0),
    ("t2i-reasonbench", "official", _t2i, "1%", 0, 0.0),
]


@pytest.mark.parametrize("name, preset, replies, percent, valid, expected", CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_a_percentage_is_asked_again_and_never_scored(name, preset, replies, percent, valid, expected):
    bench = get_benchmark(name)
    row = next(r for r in load_rows(name) if bench.name != "r2i-bench" or r["questions"])
    if name == "r2i-bench" and preset == "official":  # a subcategory the authors' script evaluates
        row = next(r for r in load_rows(name) if r["questions"] and r["category"] == "logical")
    first, again = replies(row, percent), replies(row, valid)

    def reply(request):
        reasked = request.messages[-1].text.startswith("Your previous reply")
        return (again if reasked else first)(request)

    judge = ScriptedJudge(reply)
    [result] = bench.score([row], [Image.new("RGB", (32, 32), "white")], judge,
                           **bench.presets[preset].get("options", {}))
    reasks = [r.messages[-1].text for r in judge.requests if r.messages[-1].text.startswith("Your previous reply")]
    assert reasks and all("is a percentage, not a score on this scale" in t for t in reasks), reasks
    assert result.failure is None and result.reasks == len(reasks)
    assert result.score == pytest.approx(expected)  # the answer to the re-ask, not the percentage's number
