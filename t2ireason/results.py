"""The shape of a scored image, shared by every benchmark, metric and report.

Each benchmark module scores one image into an :class:`ImageResult` (with one
:class:`QuestionResult` per question, checklist item or judged aspect) and
aggregates a list of them into its paper's table. Reports and the Hub export
read only these, so they work the same for every benchmark.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class QuestionResult:
    """One judged question about one image.

    ``score`` is None when the judge never gave a valid answer: a failure,
    counted and shown, never averaged as zero.
    """

    question: str
    score: float | None
    criterion: str | None = None
    group: str | None = None  # e.g. "reason", "detail", "quality", "alignment", "aesthetic"
    weight: float | None = None
    reasoning: str | None = None
    id: str | None = None


@dataclass
class ImageResult:
    """One image scored against one benchmark row."""

    id: str
    prompt: str
    score: float | None  # the image's headline score on the benchmark's own scale; None if failed
    config: str | None = None  # dimension, category, track...
    subscores: dict[str, float | None] = field(default_factory=dict)
    questions: list[QuestionResult] = field(default_factory=list)
    image: str | None = None  # path or source of the image, for reports
    context: dict[str, Any] = field(default_factory=dict)  # explicit meaning, tags, etc. for reports
    replies: list[str] = field(default_factory=list)  # every raw judge reply, in order
    failure: str | None = None  # why the image (or some of its questions) could not be scored
    reasks: int = 0  # follow-up requests made because a reply did not parse or was incomplete

    @property
    def failed(self) -> bool:
        return self.score is None

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ImageResult:
        d = dict(d)
        d["questions"] = [QuestionResult(**q) for q in d.get("questions", [])]
        return cls(**d)
