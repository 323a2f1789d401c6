"""How R2I-Bench's data instances were made (seed 003, section 3 and appendix A.4), for new ones.

The paper's data collection, as two prompts of appendix A.4 an LLM answers:

1. ``DATA_CREATION_PROMPT`` (``templates/r2i_bench/data_creation.txt``): for one subcategory, its category's
   and its own definitions (appendix A.2, ``definitions.json``), good and bad exemplar prompts, "10 test
   cases", each a ``Prompt`` with its ``Reference Caption``; :func:`create_instances`;
2. ``EXPLANATION_GENERATION_PROMPT`` (``explanation.txt``): why the correct answer to each prompt is its
   reference caption, the reasoning its evaluation questions are written from; :func:`explain`.

The rows they give (prompt, reference caption, the explanation as the assessment point the paper's WEIGHT
prompt reads) then go through the evaluation-criteria pipeline of :mod:`.criteria` (``t2ireason criteria
--benchmark r2i-bench --create <category>/<subcategory>``). The paper's authors filtered the instances by hand
(about 3,200 to 800, then refined: appendix A.3) and had experts validate everything: so should you. The
paper's three positive exemplars per subcategory were written by its experts and are not published: the
user gives good cases; the bad cases default to appendix A.2's two kinds of negative example.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import cache
from importlib import resources
from typing import Any

from ...judges.base import ChatRequest, Sampling
from ...parsing import ReplyParseError, ask_structured, extract_json
from ...prompts import render
from .protocol import TEMPLATES

__all__ = ["definitions", "subcategory_definition", "create_instances", "explain", "new_records", "BAD_CASES", "Instance"]

#: appendix A.2's negative examples, "Negative Examples in Prompt Generation": the default bad cases
BAD_CASES = (
    "(1) No Effective Reasoning: a prompt that explicitly reveals the reasoning process, making the task trivial. "
    "For example, in the commonsense reasoning subcategory color, \"A red apple on a white tablecloth.\" is a poor "
    "case because the color information is provided directly in the prompt.\n"
    "(2) Non-Unique Answer: a prompt whose expected output is neither unique nor deterministic. For instance, "
    "\"Generate an image of a boy's reaction when he sees his exam score.\" is a negative example because the "
    "reaction is unconstrained.")

#: an instance: the prompt, its reference caption and (after :func:`explain`) its explanation
Instance = dict[str, str]


@cache
def definitions() -> dict[str, Any]:
    """Appendix A.2's definitions: ``{category: {name, definition, table, subcategories: {key: {name,
    definition}}}}``, keyed by the release's folder and file names."""
    text = (resources.files("t2ireason") / "templates" / TEMPLATES / "definitions.json").read_text("utf-8")
    return json.loads(text)["categories"]


def subcategory_definition(spec: str) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """``(category, subcategory, the category's entry, the subcategory's)`` of ``"<category>/<subcategory>"``
    (the release's names, e.g. ``logical/disjunctive``); an unknown one is a ValueError listing the known."""
    cat, _, sub = str(spec).partition("/")
    known = definitions()
    if cat not in known or sub not in known[cat]["subcategories"]:
        listed = ", ".join(f"{c}/{s}" for c, v in known.items() for s in v["subcategories"])
        raise ValueError(f"unknown R2I-Bench subcategory {spec!r}: give <category>/<subcategory>, one of {listed}")
    return cat, sub, known[cat], known[cat]["subcategories"][sub]


def _cases(cases: Sequence[Instance | str]) -> str:
    """Exemplars as the prompt lists them: each its prompt, and its reference caption where given."""
    lines = []
    for n, case in enumerate(cases, 1):
        if isinstance(case, str):
            lines.append(f"{n}. {case}")
        else:
            caption = case.get("reference_caption")
            lines.append(f"{n}. Prompt: {case['prompt']}" + (f"\n   Reference Caption: {caption}" if caption else ""))
    return "\n".join(lines)


def _instances_reply(text: str) -> list[Instance]:
    """Every ``{"Prompt", "Reference Caption"}`` object of a creation reply: a list of them, an object holding
    one, or several objects one after the other (the template shows one, and asks for 10)."""
    decoder, found, i = json.JSONDecoder(), [], 0
    while (i := min((j for j in (text.find("{", i), text.find("[", i)) if j >= 0), default=-1)) >= 0:
        try:
            value, end = decoder.raw_decode(text, i)
        except ValueError:
            i += 1
            continue
        found += value if isinstance(value, list) else [value]
        i = end
    if not found:  # a broken block: the repairing reader's best value
        value = extract_json(text, expect=(list, dict))
        found = value if isinstance(value, list) else [value]
    out = []
    for item in found:
        if isinstance(item, dict):
            keys = {k.strip().lower().replace("_", " "): v for k, v in item.items()}
            prompt, caption = keys.get("prompt"), keys.get("reference caption")
            if isinstance(prompt, str) and prompt.strip() and isinstance(caption, str) and caption.strip():
                out.append({"prompt": prompt.strip(), "reference_caption": caption.strip()})
    if not out:
        raise ReplyParseError('no test case: give each as a JSON object {"Prompt": ..., "Reference Caption": ...}')
    return out


def create_instances(spec: str, llm: Any, *, good_cases: Sequence[Instance | str], bad_cases: Sequence[str] | None = None,
                     rounds: int = 1, max_reasks: int = 2, sampling: Sampling | None = None) -> list[Instance]:
    """New instances of the subcategory ``spec`` (``"<category>/<subcategory>"``) written by ``llm`` with the paper's
    DATA_CREATION_PROMPT, ``rounds`` requests of "10 test cases" each; a prompt given twice is kept once. Each is
    ``{"prompt", "reference_caption", "category", "subcategory"}``. ``good_cases``: exemplar prompts (strings, or
    ``{"prompt", "reference_caption"}``), at least one; ``bad_cases``: default :data:`BAD_CASES`. A round whose
    reply holds no case after the re-asks is a ValueError naming it."""
    cat, sub, cat_def, sub_def = subcategory_definition(spec)
    if not good_cases:
        raise ValueError("the data-creation prompt needs good cases: give exemplar prompts of the subcategory (the "
                         "paper's three per subcategory were written by its experts and are not published)")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    text = render(TEMPLATES, "data_creation", category=cat_def["name"], category_definition=cat_def["definition"],
                  subcategory=sub_def["name"], subcategory_definition=sub_def["definition"],
                  good_cases=_cases(good_cases), bad_cases="\n".join(bad_cases) if bad_cases else BAD_CASES)
    # one conversation per round, each with a seed of its own: sampled (the paper names no temperature for this
    # step: the API's default, 1), so rounds give other cases, and each round's reply is reproducible and cached
    base = sampling or Sampling(temperature=1.0, max_tokens=4096, seed=0)
    requests = [ChatRequest.simple(text, sampling=base.replace(seed=(base.seed or 0) + r)) for r in range(rounds)]
    out, seen = [], set()
    for r, parsed in enumerate(ask_structured(llm, requests, _instances_reply, max_reasks=max_reasks)):
        if not parsed.ok:
            raise ValueError(f"data creation for {cat}/{sub}, round {r + 1}: {parsed.error}")
        for inst in parsed.value:
            if inst["prompt"] not in seen:
                seen.add(inst["prompt"])
                out.append({**inst, "category": cat, "subcategory": sub})
    return out


def _explanation_reply(text: str) -> str:
    value = extract_json(text, expect=dict)
    found = next((v for k, v in value.items() if k.strip().lower() == "explanation"), None)
    if not isinstance(found, str) or not found.strip():
        raise ReplyParseError('the JSON object needs a non-empty "Explanation"')
    return found.strip()


def explain(instances: Sequence[Instance], llm: Any, *, max_reasks: int = 2,
            sampling: Sampling | None = None) -> list[tuple[str | None, str | None]]:
    """Each instance's explanation by ``llm`` with the paper's EXPLANATION_GENERATION_PROMPT: ``(explanation,
    None)``, or ``(None, why not)`` after the re-asks."""
    requests = [ChatRequest.simple(render(TEMPLATES, "explanation", prompt=i["prompt"],
                                          reference_caption=i["reference_caption"]), sampling=sampling)
                for i in instances]
    return [(p.value, None) if p.ok else (None, f"explanation: {p.error}")
            for p in ask_structured(llm, requests, _explanation_reply, max_reasks=max_reasks)]


def new_records(spec: str, llm: Any, *, good_cases: Sequence[Instance | str], bad_cases: Sequence[str] | None = None,
                rounds: int = 1) -> tuple[list[dict[str, Any]], list[str]]:
    """New prompts of ``spec`` ready for the criteria pipeline: :func:`create_instances`, then :func:`explain`,
    each a record ``{id, prompt, reference_caption, assessment_point (the explanation), category,
    subcategory}``; and a line for each instance whose explanation could not be had (kept without one: the
    WEIGHT prompt then reads "(none given)")."""
    instances = create_instances(spec, llm, good_cases=good_cases, bad_cases=bad_cases, rounds=rounds)
    records, notes = [], []
    for n, (inst, (explanation, why)) in enumerate(zip(instances, explain(instances, llm)), 1):
        records.append({"id": str(n), **inst, "assessment_point": explanation or ""})
        if why:
            notes.append(f"{inst['category']}/{inst['subcategory']}/{n}: {why}")
    return records, notes
