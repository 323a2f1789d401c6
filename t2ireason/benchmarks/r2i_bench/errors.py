"""R2I-Bench's error analysis (seed 003, section 4.4 and Figure 6): each failed image given one of the paper's three
failure types by a judge, and their distribution.

The paper "categorize[s] their failure cases based on the three evaluation dimensions used in R2I-Score" (basic
element errors, reasoning errors, visual quality issues) and plots their shares per model (Figure 6). It publishes
no prompt nor rule for assigning a type, nor what makes an image a failure case: here the judge reads the image, the
prompt, its reference caption and the evaluation's questions the image did not fully pass, with the project's own
prompt (``templates/r2i_bench/error_type.txt``), and a failure case is an image whose R2I-Score is below a threshold
(:data:`FAILED_BELOW`, the project's choice; an image that could not be scored is no failure case of the model's).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ...images import as_image
from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, ask_structured, extract_json
from ...prompts import render
from ...results import Cell, ImageResult, PaperTable
from .protocol import TEMPLATES

__all__ = ["ERROR_TYPES", "FAILED_BELOW", "failed", "error_request", "assign_error_types", "error_table"]

#: the paper's three failure types (section 4.4), each from one of R2I-Score's dimensions: key -> (name, what)
ERROR_TYPES = {
    "basic_element": ("Basic element errors", "text-image alignment: an object, attribute, count, text or layout the "
                      "prompt states outright is missing or wrong"),
    "reasoning": ("Reasoning errors", "reasoning accuracy: what the prompt implies, and only reasoning finds, is "
                  "missing or wrong (the answer the reference caption gives is not drawn)"),
    "visual_quality": ("Visual quality issues", "image quality: distortions, blur, artifacts or an unrealistic "
                       "rendering make the image fail"),
}
#: an image whose R2I-Score (0-1) is below this is a failure case (the project's choice: the paper does not say)
FAILED_BELOW = 0.5


def failed(result: ImageResult, threshold: float = FAILED_BELOW) -> bool:
    """Whether ``result`` is a failure case: scored, below ``threshold``."""
    return result.score is not None and result.score < threshold


def _schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"reason": {"type": "string"},
                                              "error_type": {"type": "string", "enum": list(ERROR_TYPES)}},
            "required": ["reason", "error_type"], "additionalProperties": False}


def error_request(row: dict[str, Any], image: Any, result: ImageResult, sampling: Sampling | None = None) -> ChatRequest:
    """The judge's request for one failed image: the image, then the project's prompt with the row's prompt and
    reference caption and the questions it did not fully pass."""
    questions = [(q.question, q.criterion or "", f"{q.score:g}") for q in result.questions
                 if q.score is not None and q.score < 1]
    text = render(TEMPLATES, "error_type", prompt=row["prompt"], reference_caption=row.get("reference_caption") or "",
                  questions=questions, types=[(k, name, what) for k, (name, what) in ERROR_TYPES.items()])
    return ChatRequest.simple(as_image(image), text, sampling=sampling, json_schema=_schema(),
                              metadata={"id": result.id})


def _reply(text: str) -> tuple[str, str]:
    value = extract_json(text, expect=dict)
    kind = str(value.get("error_type", "")).strip().lower().replace(" ", "_")
    kind = next((k for k, (name, _) in ERROR_TYPES.items() if kind in (k, name.lower().replace(" ", "_"))), kind)
    if kind not in ERROR_TYPES:
        raise ReplyParseError(f'"error_type" must be one of {", ".join(ERROR_TYPES)}, got {value.get("error_type")!r}')
    return kind, str(value.get("reason") or "")


def assign_error_types(rows: Sequence[dict[str, Any]], images: Sequence[Any], results: Sequence[ImageResult],
                       judge: Any, *, max_reasks: int = 2) -> list[dict[str, Any]]:
    """One ``{"error_type", "reason"}`` per failed image (``{"failure": why}`` when the judge gave no usable
    answer after the re-asks, or the image could not be read), in one batch."""
    out: list[dict[str, Any] | None] = [None] * len(rows)
    requests, where = [], []
    for i, (row, image, result) in enumerate(zip(rows, images, results)):
        try:
            requests.append(error_request(row, image, result))
            where.append(i)
        except (OSError, ValueError) as e:  # an image that cannot be read: its own failure
            out[i] = {"failure": f"image: {e}"}
    for i, parsed in zip(where, ask_structured(judge, requests, _reply, max_reasks=max_reasks)):
        out[i] = ({"error_type": parsed.value[0], "reason": parsed.value[1]} if parsed.ok
                  else {"failure": parsed.error, "replies": parsed.texts})
    return out  # type: ignore[return-value]  # every slot is filled


def error_table(per_label: dict[str, Sequence[dict[str, Any]]], threshold: float = FAILED_BELOW,
                judges: dict[str, str] | None = None) -> PaperTable:
    """Figure 6 as a table: per run (row), each error type's count of failed images and its share (%) of those
    typed; ``per_label`` holds each run's assignments."""
    rows = {}
    for label, assigned in per_label.items():
        counts = Counter(a["error_type"] for a in assigned if a.get("error_type"))
        typed = sum(counts.values())
        cells = {}
        for key, (name, _) in ERROR_TYPES.items():
            cells[f"{name} n"] = Cell(counts[key])
            cells[f"{name} %"] = Cell.of(100 * counts[key] / typed if typed else None)
        cells["failed images"] = Cell(len(assigned))
        cells["not typed"] = Cell(len(assigned) - typed)
        rows[label] = cells
    columns = [c for k in ERROR_TYPES.values() for c in (f"{k[0]} n", f"{k[0]} %")] + ["failed images", "not typed"]
    said = "; ".join(f"{label}: judge {j}" for label, j in (judges or {}).items())
    return PaperTable("R2I-Bench Figure 6: error types of failed images", columns, rows,
                      f"failed images: R2I-Score below {threshold:g} (the project's threshold: the paper does not say); "
                      "each given one of the paper's three types by a judge with the project's prompt (the paper "
                      "publishes none); % of the failed images typed" + (f"; {said}" if said else ""), 1)
