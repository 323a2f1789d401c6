"""What the R2I-Bench tests share: the benchmark, scripted judge replies in the template's answer format,
and images to score."""

from __future__ import annotations

import json
import re

from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.scripted import ScriptedJudge

BENCH = get_benchmark("r2i-bench")


def kinds(release, kind):
    return [a for a in release.anomalies if a.kind == kind]


def ids_in(request) -> list[str]:
    return re.findall(r"^Question (\S+):", request.messages[0].text, re.M)


def answer(scores: dict, analysis: str = "Analysis.") -> str:
    return f"{analysis}\n```json\n{json.dumps(scores)}\n```"


def by_prompt(table: dict[str, dict]) -> ScriptedJudge:
    """A judge answering each instance from ``table`` (prompt prefix -> scores)."""

    def reply(request):
        text = request.messages[0].text
        for prefix, scores in table.items():
            if prefix in text:
                return answer(scores)
        raise AssertionError("unexpected prompt")

    return ScriptedJudge(reply)


class CountingJudge(ScriptedJudge):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.chat_calls = 0

    def chat(self, requests, **kw):
        self.chat_calls += 1
        return super().chat(requests, **kw)


def images(n):
    return [Image.new("RGB", (24, 24), (10 * i, 20, 30)) for i in range(n)]
