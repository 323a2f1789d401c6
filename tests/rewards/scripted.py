"""Scripted criteria LLMs and judges for the reward tests: replies written by hand, every request kept."""

from __future__ import annotations

import json
import threading

from t2ireason.judges.scripted import ScriptedJudge

#: the R2I-Bench questions the scripted criteria LLM writes for every prompt (weights 9 and 2)
R2I_QUESTIONS = [
    {"id": "1", "weight": 9, "question": "Is the count right?", "evaluation_criteria": "1: right, 0.5: off by one, 0: else",
     "dimension": "reasoning accuracy"},
    {"id": "2", "weight": 2, "question": "Is the image clear?", "evaluation_criteria": "1: clear, 0: blurry",
     "dimension": "image quality"},
]


def llm_reply(request) -> str:
    """A criteria LLM's reply to the turn asked (a re-ask repeats the turn before it): :func:`turn_reply`."""
    return turn_reply(next(m.text for m in reversed(request.messages)
                           if m.role == "user" and not m.text.startswith("Your previous reply could not be used")))


def turn_reply(text: str) -> str:
    """A criteria LLM's reply to the project's fields prompt, R2I-Bench's three A.4 steps, T2I-ReasonBench's
    stage I (entity) and the project's checklist prompt."""
    if "Write the following about it" in text:
        keys = [line.split('"')[1] for line in text.splitlines() if line.startswith('- "')]
        return json.dumps({k: f"the {k} of it" for k in keys})
    if "Weight Assignment Instructions" in text:
        return "```json\n" + json.dumps(R2I_QUESTIONS) + "\n```"
    if "'entity_evaluation'" in text:
        return json.dumps({"image_content": "a named landmark", "entity_evaluation": {"q1": "Is it the tower?", "c1": "1 yes"},
                           "other_details_evaluation": {"q1": "Is it night?", "c1": "1 yes"},
                           "quality_evaluation": {"q1": "Is it sharp?", "c1": "1 yes"}})
    if "knowledge checklist" in text:
        return json.dumps({"domain": "nature", "checklist": [
            {"item": f"element {n}", "explanation": f"because {n}"} for n in range(1, 4)]})
    return "The image should show what the prompt means."


class CountingLLM(ScriptedJudge):
    """:func:`llm_reply` with a count of the requests by kind of step, safe across threads."""

    def __init__(self, reply=llm_reply, **kwargs):
        super().__init__(reply, model=kwargs.pop("model", "scripted-llm"), **kwargs)
        self._count = threading.Lock()
        self.calls = 0  # chat() calls

    def chat(self, requests, **kwargs):
        with self._count:
            self.calls += 1
        return super().chat(requests, **kwargs)


def r2i_judge(scores: dict[str, float] | None = None) -> ScriptedJudge:
    """A judge answering every R2I-Bench request with ``scores`` (default 0.5 and 1: (9 * 0.5 + 2) / 11)."""
    block = json.dumps(scores or {"1": 0.5, "2": 1})
    return ScriptedJudge(lambda r: f"Judged.\n```json\n{block}\n```", model="scripted-judge")


class BatchJudge(ScriptedJudge):
    """A judge that answers R2I-Bench and PRISM-Bench requests and records each ``chat`` call's requests."""

    def __init__(self, prism: int = 8, r2i: dict[str, float] | None = None, probabilities=None):
        block = json.dumps(r2i or {"1": 0.5, "2": 1})
        super().__init__(lambda r: json.dumps({"justification": "fine", "score": prism})
                         if "text prompt:" in r.messages[-1].text else f"Judged.\n```json\n{block}\n```",
                         model="batch-judge", probabilities=probabilities)
        self.batches: list[int] = []

    def chat(self, requests, **kwargs):
        self.batches.append(len(requests))
        return super().chat(requests, **kwargs)
