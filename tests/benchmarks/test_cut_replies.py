"""A reply the judge stopped at its token limit (``finish_reason="length"``) is never scored from its
partial text: re-asked, then recorded as a failure. As found: replies cut inside a final ``0.5`` scored 0
in T2I-ReasonBench and R2I-Bench, a cut ``"score": 10`` counted 1 in PRISM-Bench."""

from __future__ import annotations

import json
import re

import pytest
from PIL import Image

from t2ireason.benchmarks import get_benchmark
from t2ireason.judges.base import ChatRequest, Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.parsing import ask_structured, extract_json

CUT = "cut off at the token limit"


def t2i_answer(request: ChatRequest) -> str:
    text = request.messages[-1].text
    if text == "Describe this image.":
        return "An image."
    sent = re.search(r"criteria: (\{.*\})$", text, re.M).group(1)
    n = sum(1 for k in json.loads(sent) if re.fullmatch(r"q\d+", k))
    return json.dumps({"reason": ["seen"] * n, "score": [1] * (n - 1) + [0.5]})


def r2i_answer(request: ChatRequest) -> str:
    keys = re.findall(r"^Question (\S+):", request.messages[0].text, re.M)
    return "```json\n" + json.dumps({k: 0.5 for k in keys}) + "\n```"


def prism_answer(request: ChatRequest) -> str:
    return json.dumps({"justification": "Fine.", "score": 10})


def cutting(answer, *, always: bool) -> ScriptedJudge:
    """``answer``'s reply cut just past the first digit of its last number ("0.5" -> "0", "10" -> "1"), with
    finish_reason "length"; a re-ask about the cut is answered whole unless ``always``."""

    def reply(request: ChatRequest) -> Reply:
        asked = max(i for i, m in enumerate(request.messages) if m.role == "user" and CUT not in m.text)
        text = answer(ChatRequest(request.messages[: asked + 1]))
        reasked = asked < len(request.messages) - 1
        last = max(text.rfind("0.5"), text.rfind("10"))
        if last < 0 or (reasked and not always):  # a describe turn, or the re-ask answered in full
            return Reply(text, "scripted", request.sampling.to_dict() if request.sampling else {}, finish_reason="stop")
        return Reply(text[: last + 1], "scripted", {"max_tokens": 64}, finish_reason="length")

    return ScriptedJudge(reply)


CASES = {"t2i-reasonbench": (t2i_answer, None), "r2i-bench": (r2i_answer, "all"),
         "prism-bench": (prism_answer, "all")}


def _rows(name: str, config: str | None) -> list[dict]:
    bench = get_benchmark(name)
    release = bench.read_release(bench.sample_path())
    rows = release.configs[config] if config else [r for c in bench.configs for r in release.configs[c]]
    return [r for r in rows if name != "r2i-bench" or r.get("questions")][:4]


@pytest.mark.parametrize(("name", "options"), [*((name, {}) for name in CASES), ("prism-bench", {"protocol": "official"})])
def test_replies_cut_at_the_token_limit_are_never_scored(name, options):
    answer, config = CASES[name]
    bench, rows = get_benchmark(name), _rows(name, config)
    images = [Image.new("RGB", (8, 8), (40 * i, 0, 0)) for i in range(len(rows))]
    results = bench.score(rows, images, cutting(answer, always=True), **options)
    assert all(r.score is None and CUT in r.failure for r in results), [(r.score, r.failure) for r in results]
    if options:  # the official protocol never re-asks: each cut reply is its own outcome, noted
        agg = bench.aggregate(results)
        assert agg["outcomes"]["alignment"] == {"cut_off": len(rows)}
        assert any("token limit" in note for note in agg["notes"])
        return
    assert all(r.reasks > 0 for r in results)
    whole = bench.score(rows, images, cutting(answer, always=False))
    expected = {"t2i-reasonbench": 0.5, "r2i-bench": 0.5, "prism-bench": 10}[name]
    assert all(r.failure is None and r.reasks > 0 for r in whole), [r.failure for r in whole]
    assert all(expected in [q.score for q in r.questions] for r in whole)


def test_ask_structured_re_asks_a_cut_reply_then_records_it():
    cut = Reply('{"score": 0', "m", {"max_tokens": 8}, finish_reason="length")
    judge = ScriptedJudge([cut, cut, cut])
    [parsed] = ask_structured(judge, [ChatRequest.simple("Score it.")], lambda t: extract_json(t)["score"])
    assert not parsed.ok and parsed.value is None and len(parsed.replies) == 3
    assert parsed.error.startswith("reply cut off at the token limit (8 tokens)") and not parsed.transient
    assert "answer more briefly" in judge.requests[1].messages[-1].text
    judge = ScriptedJudge([cut, '{"score": 0.5}'])
    [parsed] = ask_structured(judge, [ChatRequest.simple("Score it.")], lambda t: extract_json(t)["score"])
    assert parsed.ok and parsed.value == 0.5 and parsed.reasks == 1
