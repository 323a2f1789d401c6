"""T2I-ReasonBench (seed 000): idiom, textual-image, entity and scientific reasoning prompts.

The single source of truth for the benchmark: the row schema, the reader of the
official GitHub release (``prompts/``, ``deepseek_evaluation_qs/``,
``pipeline_prompts/``), the two-stage judge protocol of the paper (Figure 14:
"Describe this image.", then one turn per question group), T2I-ReasonScore
(section 4.1, equation 2, with the weights of section 5), the official code's
aggregation as an option, the text score of Table 4, and stage-1
question-criterion generation for new prompts (Figures 9 to 12).

>>> rel = BENCHMARK.read_release(BENCHMARK.sample_path())
>>> sorted(rel.configs) == sorted(BENCHMARK.configs)
True
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets
import numpy as np

from ..images import ImageError, as_image
from ..judges.base import ChatRequest, Sampling
from ..parsing import ReplyParseError, ask_structured, extract_json, score_list
from ..prompts import render
from ..results import ImageResult, PaperTable, QuestionResult
from ..stats import summarize
from .base import Anomaly, Benchmark, Release, ReleaseError

__all__ = ["T2IReasonBench", "BENCHMARK", "DIMENSIONS", "PAPER_WEIGHTS", "OFFICIAL_WEIGHTS", "ROLES",
           "parse_pairs", "group_prompt"]

_TEMPLATES = "t2i_reasonbench"
ROLES = ("reason", "detail", "quality")
ALLOWED_SCORES = (0.0, 0.5, 1.0)


@dataclass(frozen=True)
class Dimension:
    """One dimension (config) of the benchmark: its release files and question groups."""

    prompts_file: str  # prompts/<prompts_file>.json
    name_in_files: str  # deepseek_evaluation_qs/evaluation_<name>.json, pipeline_prompts/<name>_pipeline_prompts.json
    groups: tuple[tuple[str, str], ...]  # (group key in the evaluation file, role), in the release's order
    fields: tuple[str, ...]  # dimension-specific prompt fields given to the stage-1 LLM

    @property
    def group_roles(self) -> dict[str, str]:
        return dict(self.groups)

    def files(self) -> tuple[str, str, str]:
        return (f"prompts/{self.prompts_file}.json",
                f"deepseek_evaluation_qs/evaluation_{self.name_in_files}.json",
                f"pipeline_prompts/{self.name_in_files}_pipeline_prompts.json")


DIMENSIONS: dict[str, Dimension] = {
    "idiom": Dimension("idiom_interpretation", "idiom",
                       (("reason_evaluation", "reason"), ("quality_evaluation", "quality")),
                       ("idiom", "idiom_meaning")),
    "textual": Dimension("textual_image_design", "textual_image",
                         (("reason_evaluation", "reason"), ("quality_evaluation", "quality")), ()),
    "entity": Dimension("entity_reasoning", "entity",
                        (("entity_evaluation", "reason"), ("other_details_evaluation", "detail"),
                         ("quality_evaluation", "quality")), ("explicit_meaning",)),
    "scientific": Dimension("scientific_reasoning", "scientific",
                            (("scientific_evaluation", "reason"), ("other_details_evaluation", "detail"),
                             ("quality_evaluation", "quality")), ("explicit_meaning",)),
}

#: T2I-ReasonScore = w1 S_reason + w2 S_detail + w3 S_quality (section 5, "Implementation Details")
PAPER_WEIGHTS = {
    "idiom": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "textual": {"reason": 0.9, "detail": 0.0, "quality": 0.1},
    "entity": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
    "scientific": {"reason": 0.7, "detail": 0.2, "quality": 0.1},
}
#: the official scripts' "reasoning accuracy"; quality is reported on its own
OFFICIAL_WEIGHTS = {
    "idiom": {"reason": 1.0},
    "textual": {"reason": 1.0},
    "entity": {"reason": 0.7, "detail": 0.3},
    "scientific": {"reason": 0.7, "detail": 0.3},
}

_SCORE_OPTIONS = {"mode", "aggregation", "weights", "max_reasks", "structured_output"}
_AGGREGATE_OPTIONS = {"confidence", "n_resamples", "seed"}
_MODES = ("image", "text")
_AGGREGATIONS = ("paper", "official")

_PROMPT_KEYS = {"id", "prompt", "tag", "idiom", "idiom_meaning", "explicit_meaning"}
_EVAL_KEYS = {"id", "prompt", "explicit_meaning", "image_content"}
_PIPE_KEYS = {"id", "reason", "reason_prompt"}

_CITATION = """@article{sun2025t2ireasonbench,
  title   = {T2I-ReasonBench: Benchmarking Reasoning-Informed Text-to-Image Generation},
  author  = {Sun, Kaiyue and Fang, Rongyao and Duan, Chengqi and Liu, Xian and Liu, Xihui},
  journal = {arXiv preprint arXiv:2508.17472},
  year    = {2025}
}"""


# -- question-criterion pairs ------------------------------------------------------------------------

_Q = re.compile(r"^(?P<prefix>[a-z_]*?)q(?P<n>\d+)$", re.IGNORECASE)
_C = re.compile(r"^(?P<prefix>[a-z_]*?)c(?P<n>\d+)$", re.IGNORECASE)


def _key_parts(pattern: re.Pattern, key: str) -> tuple[str, int] | None:
    m = pattern.match(key)
    return (m["prefix"].lower(), int(m["n"])) if m else None


def parse_pairs(group: dict[str, Any], where: str
                ) -> tuple[list[dict[str, str]], dict[str, Any], list[tuple[str, str]]]:
    """The question-criterion pairs of one ``*_evaluation`` dict, in order, with their original keys.

    Returns ``(pairs, extra, notes)``: each pair is ``{question_key, question, criterion_key,
    criterion}``; ``extra`` holds keys that are not part of a pair (e.g. ``scoring``); ``notes``
    describe irregularities (prefixed keys such as ``sci_q1``/``aq1``, numbering not 1..n, a
    criterion matched by number or position) as ``(kind, detail)``. A criterion is matched to its question by prefix and
    number, then by number alone, then as the key that follows the question. Raises
    :class:`ReleaseError` (naming ``where``) for a question without criterion, a criterion without
    question, or a value that is not text.

    >>> pairs, extra, notes = parse_pairs({"aq1": "Sharp?", "ac1": "1: yes 0: no", "scoring": "mean"}, "x")
    >>> [(p["question_key"], p["criterion_key"]) for p in pairs], extra
    ([('aq1', 'ac1')], {'scoring': 'mean'})
    """
    if not isinstance(group, dict):
        raise ReleaseError(f"{where}: expected a dict of question-criterion pairs, got {type(group).__name__}")
    keys = list(group)
    questions = [k for k in keys if _key_parts(_Q, k)]
    criteria = [k for k in keys if _key_parts(_C, k)]
    extra = {k: group[k] for k in keys if k not in questions and k not in criteria}
    used: set[str] = set()
    pairs, notes = [], []
    for qk in questions:
        prefix, n = _key_parts(_Q, qk)
        free = [k for k in criteria if k not in used]
        ck = next((k for k in free if _key_parts(_C, k) == (prefix, n)), None)
        if ck is None:
            ck = next((k for k in free if _key_parts(_C, k)[1] == n), None)
            if ck is None:
                following = keys[keys.index(qk) + 1] if keys.index(qk) + 1 < len(keys) else None
                ck = following if following in free else None
            if ck is None:
                raise ReleaseError(f"{where}: question {qk!r} has no criterion")
            notes.append(("irregular_key", f"question {qk!r} paired with criterion {ck!r}"))
        used.add(ck)
        for k in (qk, ck):
            if not isinstance(group[k], str) or not group[k].strip():
                raise ReleaseError(f"{where}: {k!r} is {group[k]!r}, not a non-empty text")
        pairs.append({"question_key": qk, "question": group[qk], "criterion_key": ck, "criterion": group[ck]})
    orphans = [k for k in criteria if k not in used]
    if orphans:
        raise ReleaseError(f"{where}: criterion {orphans[0]!r} has no question")
    irregular = [k for p in pairs for k in (p["question_key"], p["criterion_key"]) if not re.fullmatch(r"[qc]\d+", k)]
    if irregular:
        notes.append(("irregular_key", f"irregular key(s) {', '.join(irregular)}"))
    numbers = [_key_parts(_Q, p["question_key"])[1] for p in pairs]
    if numbers != list(range(1, len(numbers) + 1)):
        notes.append(("numbering", f"questions numbered {numbers}, not 1..{len(numbers)}"))
    return pairs, extra, notes


def group_prompt(pairs: Sequence[dict[str, str]]) -> str:
    """The ``{..._evaluation_qc}`` slot of Figure 14: the group's pairs as a JSON object, renumbered
    ``q1, c1, q2, c2 ...`` in order, as the template's wording ("q1, q2, ... c1, c2, ...") expects."""
    qc: dict[str, str] = {}
    for i, p in enumerate(pairs, 1):
        qc[f"q{i}"], qc[f"c{i}"] = p["question"], p["criterion"]
    return json.dumps(qc, ensure_ascii=False)


def _reply_schema(n: int) -> dict[str, Any]:
    return {"title": "t2i_reasonbench_scores", "type": "object",
            "properties": {"reason": {"type": "array", "items": {"type": "string"}},
                           "score": {"type": "array", "items": {"type": "number", "enum": [0, 0.5, 1]},
                                     "minItems": n, "maxItems": n}},
            "required": ["reason", "score"], "additionalProperties": False}


def _group_parser(n: int):
    """Parse a group reply: ``{"reason": [...], "score": [s1..sn]}`` with each score 1, 0.5 or 0."""

    def parse(text: str) -> tuple[list[float], list[str | None]]:
        value = extract_json(text, expect=dict)
        if "score" not in value:
            raise ReplyParseError('the JSON has no "score" list')
        scores = score_list(value["score"], n, allowed=ALLOWED_SCORES)
        reason = value.get("reason")
        if isinstance(reason, list) and len(reason) == n:
            reasons = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in reason]
        elif reason:  # one text, or a list not aligned with the questions: keep it whole for each question
            text_ = reason if isinstance(reason, str) else "\n".join(map(str, reason))
            reasons = [text_] * n
        else:
            reasons = [None] * n
        return scores, reasons

    return parse


def _description(text: str) -> str:
    if not text.strip():
        raise ReplyParseError("the description is empty")
    return text.strip()


def _as_text(x: Any) -> Any:
    """A text-mode prediction: a string, or the ``{"bytes": None, "path": text}`` that an evaluate
    module's image feature makes of a string."""
    if isinstance(x, dict) and not x.get("bytes") and isinstance(x.get("path"), str):
        return x["path"]
    return x


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=False)


# -- the benchmark ----------------------------------------------------------------------------------


class T2IReasonBench(Benchmark):
    name = "t2i-reasonbench"
    pretty_name = "T2I-ReasonBench"
    configs = tuple(DIMENSIONS)
    metric = "t2i_reasonscore"
    license = None  # neither the paper nor the release states one: users must say
    citation = _CITATION
    description = (
        "T2I-ReasonBench (Sun et al., 2025) tests reasoning-informed text-to-image generation with 800 prompts "
        "in four dimensions of 200 each: Idiom Interpretation (a sentence using an idiom figuratively), Textual "
        "Image Design (a design intention for a text-rich image), Entity Reasoning (an entity described but not "
        "named) and Scientific Reasoning (a scene whose look follows from a scientific law). Each prompt comes "
        "with LLM-generated question-criterion pairs (1 / 0.5 / 0) grouped into reasoning, detail and quality "
        "checks, and an LLM-rewritten explicit prompt for the decoupled baseline."
    )
    scoring = (
        "T2I-ReasonScore (section 4.1): a multimodal judge first describes the image ('Describe this image.'), "
        "then, continuing that conversation, answers each question group with the Figure 14 template, scoring "
        "every question 1, 0.5 or 0. A group's score is the mean of its questions; the image score is "
        "0.9 S_reason + 0.1 S_quality for idiom and textual, 0.7 S_reason + 0.2 S_detail + 0.1 S_quality for "
        "entity and scientific; a dimension's score is the mean over its images x 100 and the overall score "
        "the mean of the four dimensions (Table 2). The paper's judge is Gemini-2.5-pro; the official scripts "
        "use Qwen2.5-VL-72B-Instruct and report 'accuracy' (reason; 0.7 reason + 0.3 detail for entity and "
        "scientific) and quality separately. The text score (Table 4) scores a text description instead of an "
        "image with w1 S_reason + w2 S_detail (maximum 90)."
    )
    field_docs = {
        "id": "The prompt's id in its dimension (1 to 200); images are named by it with four digits (0001.png).",
        "dimension": "idiom, textual, entity or scientific (the config).",
        "prompt": "The prompt to draw, from prompts/*.json.",
        "tag": "Subcategory: free text (idiom), image type (textual), entity type (entity), "
               "'discipline: topic' (scientific).",
        "idiom": "The idiom the prompt uses (idiom only).",
        "idiom_meaning": "What the idiom means (idiom only).",
        "explicit_meaning": "The prompt with its implicit entity or outcome made explicit (entity, scientific).",
        "image_content": "What the image should convey, as written by the stage-1 LLM; the few dict values of "
                         "the release are kept as JSON text.",
        "evaluation": "The question-criterion groups, in the release's order.",
        "evaluation.group": "The group's key in the release: reason_evaluation (idiom, textual), entity_evaluation, "
                            "scientific_evaluation, other_details_evaluation (entity, scientific), quality_evaluation.",
        "evaluation.pairs": "The group's question-criterion pairs, in order.",
        "evaluation.pairs.question_key": "The release's key of the question (q1, or irregular ones such as sci_q1, aq1).",
        "evaluation.pairs.question": "A question about the image.",
        "evaluation.pairs.criterion_key": "The release's key of the criterion (c1, sci_c1, ac1...).",
        "evaluation.pairs.criterion": "What earns a score of 1, 0.5 and 0.",
        "evaluation.extra": "Keys of the group that are not pairs (e.g. 'scoring'), as JSON; else null.",
        "evaluation_prompt": "The prompt as written in the evaluation file where it differs from prompts/*.json "
                             "(else null); the prompt field is the one used for generation.",
        "reason": "The reasoning of the LLM that rewrote the prompt for the decoupled pipeline (pipeline_prompts).",
        "reason_prompt": "The LLM-rewritten explicit prompt for the decoupled 'reason first, then draw' baseline.",
        "extra": "Keys of the release records outside the schema, as JSON by source file (else null).",
    }
    presets = {
        # Section 4.2: Gemini-2.5-pro is the paper's MLLM evaluator. Temperature 0 for repeatability; a
        # reasoning model spends part of max_tokens thinking, hence the large budget.
        "paper": {"judge": "openai:gemini-2.5-pro@https://generativelanguage.googleapis.com/v1beta/openai/",
                  "judge_kwargs": {"sampling": Sampling(temperature=0.0, max_tokens=8192)},
                  "options": {"aggregation": "paper"}},
        # The official scripts: Qwen2.5-VL-72B-Instruct run locally, greedy decoding, their aggregation.
        "official": {"judge": "hf:Qwen/Qwen2.5-VL-72B-Instruct",
                     "judge_kwargs": {"sampling": Sampling(temperature=0.0, max_tokens=2048),
                                      "dtype": "bfloat16", "device_map": "auto"},
                     "options": {"aggregation": "official"}},
    }

    @property
    def features(self) -> datasets.Features:
        text = datasets.Value("string")
        pair = {"question_key": text, "question": text, "criterion_key": text, "criterion": text}
        return datasets.Features({
            "id": datasets.Value("int32"),
            "dimension": text,
            "prompt": text,
            "tag": text,
            "idiom": text,
            "idiom_meaning": text,
            "explicit_meaning": text,
            "image_content": text,
            "evaluation": datasets.List({"group": text, "pairs": datasets.List(pair), "extra": text}),
            "evaluation_prompt": text,
            "reason": datasets.List(text),
            "reason_prompt": text,
            "extra": text,
        })

    def row_id(self, row: dict[str, Any]) -> str:
        """``<dimension>-<id:04d>``: ids restart at 1 in every dimension."""
        return f"{row['dimension']}-{int(row['id']):04d}"

    def image_path(self, row: dict[str, Any], sample: int = 0) -> str:
        """The official layout: ``<dimension>/0001.png`` (``0001_<sample>.png`` for further samples)."""
        suffix = f"_{sample}" if sample else ""
        return f"{row['dimension']}/{int(row['id']):04d}{suffix}.png"

    def pipeline_prompts(self, rows: Sequence[dict[str, Any]]) -> dict[str, str]:
        """The release's LLM-rewritten prompts by row id (``generate --prompts`` input for Table 3)."""
        return {self.row_id(r): r["reason_prompt"] for r in rows if r.get("reason_prompt")}

    # -- the release --------------------------------------------------------------------------------

    def read_release(self, source: str | Path, **options: Any) -> Release:
        """Read the official release folder (or a folder holding it one level down).

        Option ``configs``: the dimensions to read (default all). Every pair is kept with its
        original keys; every irregularity becomes an :class:`Anomaly`. Raises
        :class:`ReleaseError` naming the file and record for what cannot be read faithfully.
        """
        unknown = set(options) - {"configs"}
        if unknown:
            raise TypeError(f"unknown option(s) {sorted(unknown)}; read_release takes 'configs'")
        configs = list(options.get("configs") or self.configs)
        bad = [c for c in configs if c not in DIMENSIONS]
        if bad:
            raise ValueError(f"unknown dimension(s) {bad}; known: {', '.join(DIMENSIONS)}")
        root = _release_root(Path(source))
        anomalies: list[Anomaly] = []
        out, counts = {}, {}
        for config in configs:
            rows = _read_dimension(root, config, anomalies)
            out[config] = rows
            per_role = {role: 0 for role in ROLES}
            for row in rows:
                for g in row["evaluation"]:
                    per_role[DIMENSIONS[config].group_roles[g["group"]]] += len(g["pairs"])
            counts[config] = {"rows": len(rows), "pairs": sum(per_role.values()),
                              **{f"{role}_pairs": n for role, n in per_role.items()}}
        return Release(configs=out, anomalies=anomalies, counts=counts, license=self.license, source=str(root))

    # -- scoring ------------------------------------------------------------------------------------

    def score(self, rows: Sequence[dict[str, Any]], images: Sequence[Any], judge: Any, *,
              progress: bool | str = False, **options: Any) -> list[ImageResult]:
        """Score each image (or, in text mode, each description) against its row.

        Options: ``mode`` ``"image"`` (default; the two-stage protocol of Figure 14) or ``"text"``
        (Table 4: ``images`` are text descriptions, strings, scored without an image, a describe
        turn or the quality group); ``aggregation`` ``"paper"`` (default, T2I-ReasonScore with
        :data:`PAPER_WEIGHTS`) or ``"official"`` (the official scripts' accuracy, quality reported
        apart); ``weights`` (per dimension ``{"reason": w1, "detail": w2, "quality": w3}`` overriding
        the paper's); ``max_reasks`` (default 2) for replies that do not parse or hold the wrong
        number of scores; ``structured_output`` (default False: the paper's judge saw the plain
        template) to also send a JSON schema. Batched: every describe turn in one
        ``judge.chat`` batch, then every group turn in one batch (plus one per re-ask round).
        Options of :meth:`aggregate` are accepted and ignored.
        """
        opts = _check_options(options)
        mode, aggregation = opts["mode"], opts["aggregation"]
        if len(rows) != len(images):
            raise ValueError(f"got {len(rows)} rows but {len(images)} {'descriptions' if mode == 'text' else 'images'}")
        results = [self._blank_result(row, i, mode) for i, row in enumerate(rows)]
        # every question is listed in its result from the start, so unanswered ones show as None
        groups = [self._asked_groups(row, mode, result) for row, result in zip(rows, results)]
        label = progress if isinstance(progress, str) else "T2I-ReasonBench"

        # Stage II, turn 1 (image mode): one JudgeImage per image, shared by every turn about it.
        bases: list[ChatRequest | None] = [None] * len(rows)
        texts: list[str | None] = [None] * len(rows)
        if mode == "image":
            asks = []
            for i, image in enumerate(images):
                try:
                    img = as_image(image)
                except ImageError as e:
                    results[i].failure = f"image could not be read: {e}"
                    continue
                results[i].image = results[i].image or img.source
                asks.append((i, ChatRequest.simple(img, render(_TEMPLATES, "describe"), metadata={"id": results[i].id})))
            described = ask_structured(judge, [r for _, r in asks], _description, max_reasks=opts["max_reasks"],
                                       progress=f"{label}: describe" if progress else False)
            for (i, request), outcome in zip(asks, described):
                results[i].replies.extend(outcome.texts)
                results[i].reasks += outcome.reasks
                if outcome.ok:
                    bases[i], texts[i] = request, outcome.value
                    results[i].context["description"] = outcome.value
                else:
                    results[i].failure = f"describe turn: {outcome.error}"
        else:
            for i, text in enumerate(images):
                text = _as_text(text)
                if not isinstance(text, str) or not text.strip():
                    what = "an empty string" if isinstance(text, str) else f"a {type(text).__name__}"
                    raise ValueError(f"text mode scores descriptions: item {i} ({results[i].id}) is {what}, "
                                     f"not a non-empty string")
                texts[i] = text
                results[i].context["description"] = text

        # Stage II, one turn per question group, continuing the describe conversation.
        asks = []
        for i in range(len(rows)):
            if texts[i] is None:
                continue
            for group in groups[i]:
                pairs = group["pairs"]
                schema = _reply_schema(len(pairs)) if opts["structured_output"] else None
                if mode == "image":
                    request = bases[i].then(texts[i], render(_TEMPLATES, "image_evaluation", pairs=group_prompt(pairs)),
                                            json_schema=schema)
                else:
                    request = ChatRequest.simple(render(_TEMPLATES, "text_evaluation", description=texts[i],
                                                        pairs=group_prompt(pairs)),
                                                 json_schema=schema, metadata={"id": results[i].id})
                asks.append((i, group["group"], request, _group_parser(len(pairs))))
        answered = ask_structured(judge, [a[2] for a in asks], [a[3] for a in asks], max_reasks=opts["max_reasks"],
                                  progress=f"{label}: questions" if progress else False)
        outcomes: dict[int, dict[str, Any]] = defaultdict(dict)
        for (i, group, _, _), outcome in zip(asks, answered):
            outcomes[i][group] = outcome
            results[i].replies.extend(outcome.texts)
            results[i].reasks += outcome.reasks

        for i, row in enumerate(rows):
            self._finish(results[i], row, outcomes.get(i, {}), mode, aggregation, opts["weights"])
        return results

    def _blank_result(self, row: Any, i: int, mode: str) -> ImageResult:
        if not isinstance(row, dict):
            raise ValueError(f"rows[{i}] is a {type(row).__name__}, not a T2I-ReasonBench row (a dict)")
        missing = [f for f in ("id", "dimension", "prompt", "evaluation") if f not in row]
        if missing:
            raise ValueError(f"rows[{i}] lacks field(s) {missing}: is it a T2I-ReasonBench row?")
        if row["dimension"] not in DIMENSIONS:
            raise ValueError(f"rows[{i}] has dimension {row['dimension']!r}; known: {', '.join(DIMENSIONS)}")
        roles = DIMENSIONS[row["dimension"]].group_roles
        for g in row["evaluation"] or []:
            if g.get("group") not in roles:
                raise ValueError(f"rows[{i}] ({self.row_id(row)}) has question group {g.get('group')!r}; "
                                 f"a {row['dimension']} row has {', '.join(roles)}")
        context = {k: row.get(k) for k in ("tag", "idiom", "idiom_meaning", "explicit_meaning") if row.get(k)}
        context["mode"] = mode
        return ImageResult(id=self.row_id(row), prompt=self.prompt(row), score=None, config=row["dimension"],
                           context=context)

    @staticmethod
    def _asked_groups(row: dict[str, Any], mode: str, result: ImageResult) -> list[dict[str, Any]]:
        """The groups to ask about: all of them for an image, all but quality for a text."""
        roles = DIMENSIONS[row["dimension"]].group_roles
        groups = [g for g in row["evaluation"] or [] if mode == "image" or roles[g["group"]] != "quality"]
        for g in groups:
            for p in g["pairs"]:
                result.questions.append(QuestionResult(question=p["question"], score=None, criterion=p["criterion"],
                                                       group=roles[g["group"]], id=f"{g['group']}.{p['question_key']}"))
        return [g for g in groups if g["pairs"]]

    @staticmethod
    def _finish(result: ImageResult, row: dict[str, Any], outcomes: dict[str, Any], mode: str,
                aggregation: str, weights: dict[str, dict[str, float]]) -> None:
        """Fill in question scores, group means and the image score; record what failed."""
        dim = row["dimension"]
        roles = DIMENSIONS[dim].group_roles
        failures = [result.failure] if result.failure else []
        by_role: dict[str, list[float | None]] = defaultdict(list)
        for g in row["evaluation"] or []:
            role = roles[g["group"]]
            if mode == "text" and role == "quality":
                continue
            if not g["pairs"]:
                failures.append(f"group {g['group']} has no question-criterion pairs")
                by_role[role].append(None)
                continue
            outcome = outcomes.get(g["group"])
            qs = [q for q in result.questions if q.id.startswith(g["group"] + ".")]
            if outcome is None:
                by_role[role].extend([None] * len(qs))
            elif outcome.ok:
                scores, reasons = outcome.value
                for q, s, r in zip(qs, scores, reasons):
                    q.score, q.reasoning = s, r
                by_role[role].extend(scores)
            else:
                failures.append(f"group {g['group']}: {outcome.error}")
                by_role[role].extend([None] * len(qs))
        # a group's score is the mean of its questions (eq. 1); None if any question failed
        result.subscores = {role: (None if not v or any(s is None for s in v) else math.fsum(v) / len(v))
                            for role, v in by_role.items()}
        if aggregation == "paper":
            w = weights[dim]
            if mode == "text":
                w = {k: v for k, v in w.items() if k != "quality"}
        else:
            w = OFFICIAL_WEIGHTS[dim]
        needed = {role: wt for role, wt in w.items() if wt}
        absent = [role for role in needed if role not in result.subscores]
        if absent:
            failures.append(f"no {', '.join(absent)} questions for a {dim} row")
        if not absent and all(result.subscores[r] is not None for r in needed):
            result.score = math.fsum(wt * result.subscores[r] for r, wt in needed.items())
        if failures:
            result.failure = "; ".join(dict.fromkeys(failures))
        result.context.update(aggregation=aggregation, weights=dict(w))

    def aggregate(self, results: Sequence[ImageResult], **options: Any) -> dict[str, Any]:
        """Table 2 (or Table 4 in text mode) from per-image results, on 0 to 100.

        ``dimensions``: per dimension, ``score`` (T2I-ReasonScore, or the official accuracy) and the
        group subscores ``reason`` / ``detail`` / ``quality``, each a :func:`~t2ireason.stats.summarize`
        (mean, se, bootstrap and normal 95% CIs, n, failed); ``<dimension>``: its mean score (the
        Table 2 cell); ``overall``: the mean of the dimension scores (Table 2's Overall), with
        ``overall_summary`` holding its standard error and a stratified bootstrap interval.
        Failed images are counted in ``failed`` and left out of every mean.
        """
        opts = _check_options(options)
        kw = {"confidence": opts["confidence"], "n_resamples": opts["n_resamples"], "seed": opts["seed"]}
        by_dim: dict[str, list[ImageResult]] = defaultdict(list)
        for r in results:
            if r.config not in DIMENSIONS:
                raise ValueError(f"result {r.id} has dimension {r.config!r}; known: {', '.join(DIMENSIONS)}")
            by_dim[r.config].append(r)
        dims = [d for d in DIMENSIONS if d in by_dim]
        table: dict[str, dict[str, Any]] = {}
        for d in dims:
            rs = by_dim[d]
            entry: dict[str, Any] = {"score": summarize([r.score for r in rs], scale=100, **kw)}
            for role in ROLES:
                values = [r.subscores[role] for r in rs if role in r.subscores]
                if values:
                    entry[role] = summarize(values, scale=100, **kw)
            weights = next((r.context["weights"] for r in rs if "weights" in r.context), None)
            entry["weights"] = weights
            entry["max_score"] = round(100 * math.fsum(weights.values()), 9) if weights else None
            table[d] = entry
        overall = _overall([[r.score for r in by_dim[d]] for d in dims], **kw)
        return {
            "overall": overall["mean"],
            **{d: table[d]["score"]["mean"] for d in dims},
            "dimensions": table,
            "overall_summary": overall,
            "aggregation": _same(results, "aggregation", opts["aggregation"]),
            "mode": _same(results, "mode", opts["mode"]),
            "scale": 100,
        }

    def paper_tables(self, aggregate: dict[str, Any], label: str) -> list[PaperTable]:
        """Table 2 (Table 4 for the text score; the official accuracy with ``aggregation="official"``),
        then each dimension's group means (S_reason, S_detail, S_quality) behind it."""
        dims = [d for d in DIMENSIONS if d in aggregate["dimensions"]]
        text = aggregate.get("mode") == "text"
        official = aggregate.get("aggregation") == "official"
        title = ("T2I-ReasonBench Table 4: text score" if text else
                 "T2I-ReasonBench: accuracy (official scripts)" if official else
                 "T2I-ReasonBench Table 2: T2I-ReasonScore")
        headline = {d.title(): aggregate["dimensions"][d]["score"] for d in dims}
        headline["Overall"] = aggregate["overall_summary"]
        groups = {f"{d.title()} {role}": aggregate["dimensions"][d][role]
                  for d in dims for role in ROLES if role in aggregate["dimensions"][d]}
        return [PaperTable.one_row(title, label, headline, note="0-100; overall is the mean of the dimensions"),
                PaperTable.one_row("T2I-ReasonBench: question-group means per dimension", label, groups,
                                   note="S_reason, S_detail, S_quality on 0-100")]

    # -- stage I: question-criterion generation -----------------------------------------------------

    def generate_criteria(self, records: Sequence[dict[str, Any]], dimension: str, judge: Any, *,
                          max_reasks: int = 2, strict: bool = False,
                          progress: bool | str = False) -> list[dict[str, Any]]:
        """Question-criterion pairs for new prompts, with the stage-1 template of ``dimension``
        (Figures 9 to 12), through any judge (text-only requests), as rows of this dataset's schema.

        ``records`` carry ``id`` and ``prompt`` (and ``idiom``, ``idiom_meaning`` for idiom;
        ``explicit_meaning`` for entity and scientific; optionally ``tag``). A reply must hold every
        group of the dimension, each with 1 to 5 pairs keyed ``q1``/``c1``... numbered from 1, and
        ``image_content``; otherwise it is re-asked (``max_reasks`` times) naming the problem.
        A record still failing gives a row with no groups and the failure (with every raw reply)
        in ``extra``, which :meth:`score` then reports as a failure; ``strict=True`` raises instead.
        """
        if dimension not in DIMENSIONS:
            raise ValueError(f"unknown dimension {dimension!r}; known: {', '.join(DIMENSIONS)}")
        spec = DIMENSIONS[dimension]
        requests = []
        for i, rec in enumerate(records):
            lacking = [f for f in ("id", "prompt", *spec.fields)
                       if not isinstance(rec, dict) or rec.get(f) in (None, "")]
            if lacking:
                raise ValueError(f"records[{i}] lacks {lacking}: a {dimension} record needs id, prompt"
                                 + "".join(f", {f}" for f in spec.fields))
            slots = {f: rec[f] for f in ("id", "prompt", *spec.fields)}
            requests.append(ChatRequest.simple(render(_TEMPLATES, f"criteria_{dimension}", **slots),
                                               metadata={"id": rec["id"]}))
        parsed = ask_structured(judge, requests, _criteria_parser(spec), max_reasks=max_reasks,
                                progress=f"criteria {dimension}" if progress is True else progress)
        model = judge.identity().get("model") if hasattr(judge, "identity") else None
        rows, failed = [], []
        for rec, outcome in zip(records, parsed):
            base = {"id": int(rec["id"]), "dimension": dimension, "prompt": rec["prompt"], "tag": rec.get("tag"),
                    **{f: rec.get(f) for f in ("idiom", "idiom_meaning", "explicit_meaning")}}
            if outcome.ok:
                image_content, groups = outcome.value
                info = {"criteria": {"model": model, "reasks": outcome.reasks}}
            else:
                failed.append(f"{rec['id']}: {outcome.error}")
                image_content, groups = None, []
                info = {"criteria": {"model": model, "failure": outcome.error, "replies": outcome.texts}}
            rows.append(_row(base, image_content=image_content, evaluation=groups, extra=info))
        if failed:
            message = f"criteria generation failed for {len(failed)} of {len(records)} {dimension} record(s): " \
                      + "; ".join(failed)
            if strict:
                raise ValueError(message)
            warnings.warn(message, stacklevel=2)
        return rows


# -- reading the release -----------------------------------------------------------------------------


def _release_root(path: Path) -> Path:
    if not path.is_dir():
        raise ReleaseError(f"{path}: not a folder; point to the T2I-ReasonBench release (it holds prompts/, "
                           f"deepseek_evaluation_qs/ and pipeline_prompts/)")
    if (path / "prompts").is_dir():
        return path
    inner = [p for p in path.iterdir() if p.is_dir() and (p / "prompts").is_dir()]
    if len(inner) == 1:
        return inner[0]
    raise ReleaseError(f"{path}: no prompts/ folder here or one level down; is it the T2I-ReasonBench release?")


def _load_records(root: Path, rel: str) -> list[dict[str, Any]]:
    path = root / rel
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ReleaseError(f"{rel}: missing file (looked in {root})") from None
    except json.JSONDecodeError as e:
        raise ReleaseError(f"{rel}: malformed JSON at line {e.lineno}, column {e.colno}: {e.msg}") from None
    except UnicodeDecodeError as e:
        raise ReleaseError(f"{rel}: not UTF-8 text ({e.reason} at byte {e.start})") from None
    if not isinstance(data, list):
        raise ReleaseError(f"{rel}: expected a JSON array of records, got {type(data).__name__}")
    for i, rec in enumerate(data):
        if not isinstance(rec, dict):
            raise ReleaseError(f"{rel}, record {i}: expected an object, got {type(rec).__name__}")
    return data


def _record_id(rec: dict[str, Any], rel: str, i: int, anomalies: list[Anomaly]) -> int:
    value = rec.get("id")
    if value is None:
        raise ReleaseError(f"{rel}, record {i}: no 'id'")
    if isinstance(value, str) and value.strip().isdigit():
        anomalies.append(Anomaly("id_as_text", rel, value, f"id {value!r} is text; read as {int(value)}"))
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ReleaseError(f"{rel}, record {i}: id {value!r} is not an integer")
    return value


def _by_id(records: list[dict[str, Any]], rel: str, anomalies: list[Anomaly]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for i, rec in enumerate(records):
        rid = _record_id(rec, rel, i, anomalies)
        if rid in out:
            raise ReleaseError(f"{rel}, record {i}: duplicate id {rid}")
        out[rid] = rec
    return out


def _row(base: dict[str, Any], *, image_content: str | None = None, evaluation: list | None = None,
         evaluation_prompt: str | None = None, reason: list[str] | None = None, reason_prompt: str | None = None,
         extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A row with every field of the schema, in the schema's order."""
    return {"id": base["id"], "dimension": base["dimension"], "prompt": base["prompt"], "tag": base.get("tag"),
            "idiom": base.get("idiom"), "idiom_meaning": base.get("idiom_meaning"),
            "explicit_meaning": base.get("explicit_meaning"), "image_content": image_content,
            "evaluation": evaluation or [], "evaluation_prompt": evaluation_prompt, "reason": reason,
            "reason_prompt": reason_prompt, "extra": _json_text(extra) if extra else None}


def _groups_of(rec: dict[str, Any], spec: Dimension, where: str, complain) -> list[dict[str, Any]]:
    """The record's question groups, in the record's order, each pair kept with its keys.
    ``complain(kind, detail)`` receives the irregularities."""
    roles = spec.group_roles
    present = [k for k in rec if k.endswith("_evaluation")]
    unknown = [k for k in present if k not in roles]
    if unknown:
        raise ReleaseError(f"{where}: unknown question group {unknown[0]!r}; expected {', '.join(roles)}")
    missing = [k for k in roles if k not in rec]
    if missing:
        raise ReleaseError(f"{where}: no {missing[0]!r} group")
    groups = []
    for key in present:
        pairs, extra, notes = parse_pairs(rec[key], f"{where}, {key}")
        if not pairs:
            raise ReleaseError(f"{where}, {key}: no question-criterion pairs")
        for kind, note in notes:
            complain(kind, f"{key}: {note}")
        if extra:
            complain("non_pair_key", f"{key}: key(s) {', '.join(extra)} kept in the group's extra")
        if len(pairs) > 5:
            complain("pair_count", f"{key}: {len(pairs)} pairs (the templates ask for 1 to 5)")
        groups.append({"group": key, "pairs": pairs, "extra": _json_text(extra) if extra else None})
    return groups


def _image_content(value: Any, complain) -> str | None:
    if isinstance(value, str) or value is None:
        if value is None:
            complain("missing_field", "no image_content")
        return value
    complain("dict_image_content" if isinstance(value, dict) else "non_text_image_content",
             f"image_content is a {type(value).__name__}; kept as JSON text")
    return _json_text(value)


def _read_dimension(root: Path, config: str, anomalies: list[Anomaly]) -> list[dict[str, Any]]:
    spec = DIMENSIONS[config]
    prompts_rel, eval_rel, pipe_rel = spec.files()
    prompts = _load_records(root, prompts_rel)
    evals = _by_id(_load_records(root, eval_rel), eval_rel, anomalies)
    pipes = _by_id(_load_records(root, pipe_rel), pipe_rel, anomalies)
    rows, seen = [], set()
    for i, rec in enumerate(prompts):
        rid = _record_id(rec, prompts_rel, i, anomalies)
        if rid in seen:
            raise ReleaseError(f"{prompts_rel}, record {i}: duplicate id {rid}")
        seen.add(rid)
        if not isinstance(rec.get("prompt"), str) or not rec["prompt"].strip():
            raise ReleaseError(f"{prompts_rel}, record {i} (id {rid}): no prompt text")
        extra: dict[str, Any] = {}
        if set(rec) - _PROMPT_KEYS:
            extra["prompts"] = {k: v for k, v in rec.items() if k not in _PROMPT_KEYS}
            anomalies.append(Anomaly("extra_key", prompts_rel, rid, f"key(s) {', '.join(extra['prompts'])} kept in extra"))

        ev = evals.get(rid)
        if ev is None:
            raise ReleaseError(f"{eval_rel}: no record for id {rid} of {prompts_rel}")

        def complain(kind: str, detail: str, _rid=rid) -> None:
            anomalies.append(Anomaly(kind, eval_rel, _rid, detail))

        groups = _groups_of(ev, spec, f"{eval_rel}, id {rid}", complain)
        evaluation_prompt = None
        if ev.get("prompt") != rec["prompt"]:
            evaluation_prompt = ev.get("prompt")
            complain("prompt_mismatch", f"evaluation prompt {evaluation_prompt!r} differs from {rec['prompt']!r}")
        leftover = {k: v for k, v in ev.items() if k not in _EVAL_KEYS and not k.endswith("_evaluation")}
        if "explicit_meaning" in ev and ev["explicit_meaning"] != rec.get("explicit_meaning"):
            leftover["explicit_meaning"] = ev["explicit_meaning"]
            complain("explicit_meaning_mismatch", "the evaluation file's explicit_meaning differs; kept in extra")
        elif set(leftover):
            complain("extra_key", f"key(s) {', '.join(leftover)} kept in extra")
        if leftover:
            extra["evaluation"] = leftover

        pipe = pipes.get(rid)
        reason = reason_prompt = None
        if pipe is None:
            anomalies.append(Anomaly("no_pipeline_prompt", pipe_rel, rid, "no rewritten prompt for this id"))
        else:
            reason, reason_prompt = pipe.get("reason"), pipe.get("reason_prompt")
            if isinstance(reason, str):
                anomalies.append(Anomaly("reason_as_text", pipe_rel, rid, "reason is a string; kept as a one-item list"))
                reason = [reason]
            if reason is not None and not (isinstance(reason, list) and all(isinstance(r, str) for r in reason)):
                raise ReleaseError(f"{pipe_rel}, id {rid}: reason is {type(reason).__name__}, not a list of texts")
            if reason_prompt is not None and not isinstance(reason_prompt, str):
                raise ReleaseError(f"{pipe_rel}, id {rid}: reason_prompt is not text")
            if set(pipe) - _PIPE_KEYS:
                extra["pipeline"] = {k: v for k, v in pipe.items() if k not in _PIPE_KEYS}
                anomalies.append(Anomaly("extra_key", pipe_rel, rid,
                                         f"key(s) {', '.join(extra['pipeline'])} kept in extra"))
        base = {"id": rid, "dimension": config, **{k: rec.get(k) for k in _PROMPT_KEYS - {"id"}}}
        rows.append(_row(base, image_content=_image_content(ev.get("image_content"), complain),
                         evaluation=groups, evaluation_prompt=evaluation_prompt, reason=reason,
                         reason_prompt=reason_prompt, extra=extra))
    orphans = sorted(set(evals) - seen)
    if orphans:
        raise ReleaseError(f"{eval_rel}: id(s) {orphans} have questions but no prompt in {prompts_rel}")
    for rid in sorted(set(pipes) - seen):
        anomalies.append(Anomaly("orphan_pipeline_prompt", pipe_rel, rid, f"no prompt with this id in {prompts_rel}"))
    return rows


# -- stage I reply validation, options, statistics ---------------------------------------------------


def _criteria_parser(spec: Dimension):
    """Validate a stage-1 reply: every group, 1 to 5 pairs each, keys q1/c1... numbered from 1."""

    def parse(text: str) -> tuple[str, list[dict[str, Any]]]:
        value = extract_json(text, expect=dict)
        content = value.get("image_content")
        if not content:
            raise ReplyParseError('the JSON has no "image_content"')
        problems: list[str] = []
        try:
            groups = _groups_of(value, spec, "reply", lambda kind, detail: problems.append(detail))
        except ReleaseError as e:
            raise ReplyParseError(str(e).removeprefix("reply, ").removeprefix("reply: ")) from None
        if problems:
            raise ReplyParseError("; ".join(problems) + " (use keys q1, c1, q2, c2 ... numbered from 1, "
                                  "1 to 5 pairs per group, nothing else in a group)")
        return (content if isinstance(content, str) else _json_text(content)), groups

    return parse


def _check_options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = set(options) - _SCORE_OPTIONS - _AGGREGATE_OPTIONS
    if unknown:
        raise TypeError(f"unknown option(s) {sorted(unknown)}; T2I-ReasonBench takes "
                        f"{sorted(_SCORE_OPTIONS | _AGGREGATE_OPTIONS)}")
    opts = {"mode": "image", "aggregation": "paper", "weights": None, "max_reasks": 2, "structured_output": False,
            "confidence": 0.95, "n_resamples": 2000, "seed": 0, **options}
    if opts["mode"] not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {opts['mode']!r}")
    if opts["aggregation"] not in _AGGREGATIONS:
        raise ValueError(f"aggregation must be one of {_AGGREGATIONS}, got {opts['aggregation']!r}")
    weights = {d: dict(w) for d, w in PAPER_WEIGHTS.items()}
    for d, w in (opts["weights"] or {}).items():
        if d not in weights:
            raise ValueError(f"weights for unknown dimension {d!r}; known: {', '.join(DIMENSIONS)}")
        bad = set(w) - set(ROLES)
        if bad or any(isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0 for v in w.values()):
            raise ValueError(f"weights[{d!r}] must map reason/detail/quality to non-negative numbers, got {w!r}")
        weights[d] = {**weights[d], **{k: float(v) for k, v in w.items()}}
    opts["weights"] = weights
    return opts


def _same(results: Sequence[ImageResult], key: str, default: str) -> str:
    """The ``mode`` or ``aggregation`` the results were scored with (they must agree)."""
    values = {r.context[key] for r in results if key in r.context}
    if len(values) > 1:
        raise ValueError(f"the results mix {key}s {sorted(values)}; aggregate them separately")
    return values.pop() if values else default


def _overall(per_dim: list[list[float | None]], *, confidence: float, n_resamples: int, seed: int) -> dict[str, Any]:
    """Mean of the dimension means (x100), its standard error and a bootstrap interval that
    resamples images within each dimension."""
    xs = [np.asarray([v for v in vals if v is not None and not math.isnan(v)], dtype=float) for vals in per_dim]
    xs = [x for x in xs if x.size]
    failed = sum(len(v) for v in per_dim) - sum(x.size for x in xs)
    if not xs:
        return {"mean": math.nan, "se": math.nan, "ci_low": math.nan, "ci_high": math.nan,
                "n": 0, "failed": failed, "dimensions": 0}
    mean = float(np.mean([x.mean() for x in xs]))
    ses = [x.std(ddof=1) / math.sqrt(x.size) if x.size > 1 else math.nan for x in xs]
    se = math.sqrt(sum(s * s for s in ses)) / len(xs)
    rng = np.random.default_rng(seed)
    boot = np.mean([x[rng.integers(0, x.size, size=(n_resamples, x.size))].mean(axis=1) for x in xs], axis=0)
    alpha = (1 - confidence) / 2
    lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    return {"mean": 100 * mean, "se": 100 * se, "ci_low": 100 * float(lo), "ci_high": 100 * float(hi),
            "n": int(sum(x.size for x in xs)), "failed": failed, "dimensions": len(xs)}


BENCHMARK = T2IReasonBench()
