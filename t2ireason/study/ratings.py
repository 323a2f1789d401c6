"""The raters' exported files: read, checked against their study, merged as the papers merge them.

Nothing that does not fit is counted, and nothing is left out in silence: each problem is one line
naming the file (and the item), and :attr:`Ratings.problems` lists them all.

- a file that is not a ratings file, or one of another study, or one giving a key twice: left out whole (a
  byte-order mark is no fault: read as without); a file of a folder named that is not ``.json`` is named;
- a rater the study does not have, or a second file of one rater: left out whole (of one rater's files
  the one exported last is kept: a rater who exported twice handed in more the second time);
- an answer for an item the study does not hold or did not give this rater, a rating off the scale, a
  choice other than A, B or tie, an item answered twice in one file, an A/B/tie answer whose left/right
  order is not the one the study showed that rater, an answer to a question the item does not have or off
  its levels: that answer is left out, the rest of the file kept.

An A/B/tie answer names the image as the page listed it (``a`` its first, ``b`` its second); the
study's key says which run made each (the item's ``sides``), and the verdict is counted for the runs.

Merging: a ``scale`` item's human score is the mean of its raters' scores (T2I-ReasonBench and
PRISM-Bench average their three annotators); an A/B/tie item's is the sign of the mean of its raters'
verdicts (+1: the first run's image is better, -1: the second's, 0: a tie), each rater's verdict
counting once; a question's is the mean of its raters' answers, with the majority answer beside it (the
answer most raters gave; none when two answers tie). Inter-rater agreement is Krippendorff's alpha
(the ``krippendorff`` package): ordinal for ratings and answers, nominal for A/B/tie.
"""

from __future__ import annotations

import json
import math
import os
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .page import RATINGS_FORMAT
from .sample import run_letter

__all__ = ["Ratings", "rating_files", "read_ratings", "merge", "krippendorff_alpha", "VERDICTS"]

#: an A/B/tie answer as a verdict on the item's two images: +1 the first run's, -1 the second's, 0 a tie
VERDICTS = {"a": 1, "b": -1, "tie": 0}


@dataclass
class Ratings:
    """Every answer kept, by item and rater, with what was left out and why."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)  # item -> rater -> checked answer
    times: dict[str, dict[str, str | None]] = field(default_factory=dict)  # item -> rater -> when it was given
    files: list[dict[str, Any]] = field(default_factory=list)  # {file, rater, answers}: the files kept
    problems: list[str] = field(default_factory=list)


def rating_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files named, and the ``.json`` files of the folders named, whatever the case of the extension
    (``ann.JSON``), not their subfolders' (:func:`other_files` names the rest)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out += sorted(f for f in p.iterdir() if f.is_file() and f.suffix.lower() == ".json")
        elif p.is_file():
            out.append(p)
        else:
            raise FileNotFoundError(f"ratings not found: {p}")
    return list(dict.fromkeys(out))


def other_files(paths: Iterable[str | os.PathLike]) -> list[Path]:
    """The files of the folders named that are not read as ratings (not ``.json``; hidden ones aside)."""
    return [f for p in map(Path, paths) if p.is_dir() for f in sorted(p.iterdir())
            if f.is_file() and f.suffix.lower() != ".json" and not f.name.startswith(".")]


class _Object(dict):
    """A JSON object as read, with the keys it gives more than once (``twice``): json keeps the last in
    silence."""

    twice: tuple[str, ...] = ()


def _object(pairs: list[tuple[str, Any]]) -> _Object:
    out, twice = _Object(), []
    for key, value in pairs:
        if key in out:
            twice.append(key)
        out[key] = value
    out.twice = tuple(dict.fromkeys(twice))
    return out


def _load(path: Path, study: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """The file's content, or why it is left out whole. A file saved with a byte-order mark (as spreadsheets and
    Windows editors save UTF-8) is read as without."""
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"), object_pairs_hook=_object)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        return None, f"{path.name}: not a ratings file ({type(e).__name__}: {' '.join(str(e).split())[:120]}); left out"
    if isinstance(data, _Object) and data.twice:
        return None, (f"{path.name}: gives {', '.join(map(repr, data.twice))} more than once (which one holds?); "
                      "left out")
    if not isinstance(data, dict) or data.get("format") != RATINGS_FORMAT:
        return None, f"{path.name}: not a t2i-reason ratings file (no \"format\": \"{RATINGS_FORMAT}\"); left out"
    if data.get("study") != study["id"]:
        return None, f"{path.name}: a file of another study ({data.get('study')!r}, not {study['id']}); left out"
    if data.get("rater") not in study["raters"]:
        return None, (f"{path.name}: rater {data.get('rater')!r} is not one of the study's raters "
                      f"({', '.join(study['raters'])}); left out")
    if not isinstance(data.get("answers"), dict):
        return None, f"{path.name}: has no answers (\"answers\" is not an object); left out"
    return data, None


def _number(x: Any) -> float | None:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        return None
    return float(x)


def _checked(study: dict[str, Any], item: dict[str, Any], swap: bool, answer: Any) -> tuple[Any, list[str]]:
    """An answer as counted (None: left out whole), and why parts of it were left out."""
    if not isinstance(answer, dict):
        return None, ["the answer is not an object"]
    twice = [k for obj in (answer, answer.get("questions")) for k in getattr(obj, "twice", ())]
    if twice:
        return None, [f"the answer gives {', '.join(map(repr, twice))} more than once (which one holds?)"]
    kind = study["kind"]
    if kind == "scale":
        lo, hi = study["protocol"]["scale"]
        value = _number(answer.get("value"))
        if value is None or not value.is_integer() or not lo <= value <= hi:
            return None, [f"rating {answer.get('value')!r} is off the {lo}-{hi} scale"]
        return value, []
    if kind == "preference":
        choice = answer.get("choice")
        if choice not in ("A", "B", "tie"):
            return None, [f"choice {choice!r} is not A, B or tie"]
        expected = ["b", "a"] if swap else ["a", "b"]  # the page's order of the item's images, left to right
        if answer.get("shown") != expected:
            return None, [f"the images were shown as {answer.get('shown')!r}, the study showed this rater {expected}"]
        # the image chosen as the page lists it, then as the runs made it (the key's sides)
        return VERDICTS["tie" if choice == "tie" else run_letter(item, expected[0 if choice == "A" else 1])], []
    if kind == "review":
        verdict, text = answer.get("verdict"), answer.get("text")
        if verdict not in ("accept", "reject", "edit"):
            return None, [f"verdict {verdict!r} is not accept, reject or edit"]
        if verdict == "edit" and (not isinstance(text, str) or not text.strip()):
            return None, ["an edit without its corrected text"]
        return {"verdict": verdict, "text": text if verdict == "edit" else None}, []
    given = answer.get("questions")
    if not isinstance(given, dict):
        return None, ["no answers to questions (\"questions\" is not an object)"]
    questions = {q["id"]: q for q in item.get("questions", [])}
    kept, why = {}, []
    for qid, value in given.items():
        q = questions.get(qid)
        number = _number(value)
        if q is None:
            why.append(f"question {qid!r} is not one of the item's")
        elif number is None or not any(math.isclose(number, (lo + hi) / 2) for lo, hi in q["levels"]):
            why.append(f"question {qid!r}: answer {value!r} is not one of its levels")
        else:
            kept[qid] = number
    return kept or None, why


def read_ratings(study: dict[str, Any], paths: Iterable[str | os.PathLike]) -> Ratings:
    """Read the raters' files (``paths``: files or folders of them) against ``study``."""
    out = Ratings()
    items = {it["id"]: it for it in study["items"]}
    loaded: dict[str, list[tuple[Path, dict[str, Any]]]] = {}
    paths = list(paths)
    out.problems += [f"{f.name}: not a .json file; not read" for f in other_files(paths)]
    for path in rating_files(paths):
        data, problem = _load(path, study)
        if problem:
            out.problems.append(problem)
        else:
            loaded.setdefault(data["rater"], []).append((path, data))
    for rater, files in loaded.items():
        files.sort(key=lambda f: str(f[1].get("exported") or ""), reverse=True)
        (path, data), *others = files
        for other, _ in others:
            out.problems.append(f"{other.name}: a second file of rater {rater} ({path.name}, exported later, is "
                                "kept); left out")
        swaps = {q["item"]: bool(q.get("swap")) for q in study["queues"].get(rater, [])}
        kept = 0
        twice = set(getattr(data["answers"], "twice", ()))
        for item_id, answer in data["answers"].items():
            where = f"{path.name}: item {item_id}"
            if item_id in twice:  # json keeps the last in silence; neither is known to be the rater's
                out.problems.append(f"{where} is answered more than once in the file; left out")
                continue
            if item_id not in items:
                out.problems.append(f"{where} is not in the study; left out")
                continue
            if item_id not in swaps:
                out.problems.append(f"{where} was not given to rater {rater}; left out")
                continue
            value, why = _checked(study, items[item_id], swaps[item_id], answer)
            out.problems += [f"{where}: {w}; left out" for w in why]
            if value is not None:
                out.answers.setdefault(item_id, {})[rater] = value
                out.times.setdefault(item_id, {})[rater] = answer.get("at") if isinstance(answer.get("at"), str) else None
                kept += 1
        out.files.append({"file": path.name, "rater": rater, "answers": kept, "exported": data.get("exported")})
    return out


def _majority(values: Sequence[float]) -> float | None:
    counts = Counter(values).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return counts[0][0]


def merge(study: dict[str, Any], ratings: Ratings, left_out: Iterable[str] = ()) -> dict[str, dict[str, Any]]:
    """Each rated item's human figure (see the module's doc), its raters' answers and their times beside it; items in
    ``left_out`` (their image is no longer the one rated) are not merged."""
    skip = set(left_out)
    merged: dict[str, dict[str, Any]] = {}
    for item_id, by_rater in ratings.answers.items():
        if item_id in skip:
            continue
        at = ratings.times.get(item_id, {})
        if study["kind"] == "questions":
            per_q: dict[str, dict[str, float]] = {}
            for rater, answers in by_rater.items():
                for qid, v in answers.items():
                    per_q.setdefault(qid, {})[rater] = v
            merged[item_id] = {"questions": {qid: {"human": float(np.mean(list(rs.values()))),
                                                   "majority": _majority(list(rs.values())), "ratings": rs}
                                             for qid, rs in per_q.items()}, "at": at}
        else:
            mean = float(np.mean(list(by_rater.values())))
            merged[item_id] = {"human": float(np.sign(mean)) if study["kind"] == "preference" else mean,
                               "ratings": dict(by_rater), "at": at}
    return merged


def krippendorff_alpha(units: Sequence[dict[str, float]], raters: Sequence[str], *, level: str,
                       domain: Sequence[float]) -> float:
    """Krippendorff's alpha over ``units`` (each {rater: value}); NaN where it is not defined (fewer than
    two values on every unit, or one value in all)."""
    import krippendorff

    data = np.full((len(raters), len(units)), np.nan)
    index = {r: i for i, r in enumerate(raters)}
    for j, unit in enumerate(units):
        for r, v in unit.items():
            data[index[r], j] = v
    pairable = (~np.isnan(data)).sum(axis=0) >= 2
    if not pairable.any() or len(np.unique(data[:, pairable][~np.isnan(data[:, pairable])])) < 2:
        return math.nan
    return float(krippendorff.alpha(reliability_data=data[:, pairable], level_of_measurement=level,
                                    value_domain=list(domain)))
