"""The R2I-Bench release reader: the authors' CSV files into rows of the dataset's schema.

The official release (GitHub, CSV) is read from

    data/prompts/<category>/<category>_<subcategory>.csv
        Prompt, Reference Caption, Assessment Point, Category, Subcategory, id   (any column order)
    data/evaluation/<category>/<subcategory>_eval.csv
        source_id, evaluation_criteria, id, question, weight [, note]            (any column order)

with its quirks reported as :class:`~t2ireason.benchmarks.base.Anomaly`
objects, never hidden: the folder and file names give the category and
subcategory (the cells disagree in places, and are kept as
``category_cell``/``subcategory_cell``); questions whose prompts are missing
(all of ``mathematical_function``) are orphans; prompts without questions
(``functional_mixing`` and 5 more, 85 in all) are kept with
``has_questions=False`` and are unscorable, not scored 0; weights outside 1 to
10 or not integers are kept as floats and listed.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import json
import math
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..base import Anomaly, Quarantined, Release, ReleaseError, name_key
from .csv_records import Record, read_csv
from .levels import criterion_levels

__all__ = ["CATEGORIES", "OFFICIAL_SUBCATEGORIES", "SUBCATEGORIES", "norm_id", "ordered", "read_release"]

#: category configs, in the order of the paper's Table 3 columns
CATEGORIES = ("commonsense", "compositional", "concept_mixing", "logical", "numerical", "mathematical", "causal")
#: the 32 subcategories of the release (its file names), per category folder: the labels a
#: Category/Subcategory cell is recognised against, and what a complete release holds
SUBCATEGORIES = {
    "commonsense": ("affordance", "attribute", "color", "emotion_intention_commonsense",
                    "social_cultural_knowledge_object", "social_cultural_knowledge_scene", "temporal_understanding"),
    "compositional": ("creative_compositional", "inferential_spatial", "prescriptive_spatial"),
    "concept_mixing": ("functional_mixing", "literal_mixing"),
    "logical": ("abductive", "categorical", "conjunctive", "deductive", "disjunctive", "hypothetical",
                "sufficient_conditional"),
    "numerical": ("approximate_number_generation", "conceptual_quantitative", "exact_number_generation"),
    "mathematical": ("combinatorial", "cryptographic_encoding", "geometrical_transformations", "mathematical_function",
                     "number_theory", "set_theory", "spatial_reasoning", "vector_matrix_visualization"),
    "causal": ("cause_to_effect", "effect_to_cause"),
}
#: the subcategories the official evaluation.py evaluates (instance.py's category_subcategory_list): all
#: but four of commonsense (affordance, attribute, color, emotion_intention_commonsense)
OFFICIAL_SUBCATEGORIES = tuple(
    f"{c}/{s}" for c, subs in SUBCATEGORIES.items() for s in subs
    if not (c == "commonsense" and s in ("affordance", "attribute", "color", "emotion_intention_commonsense")))

#: layout column -> the header names it is recognised under (after csv_records._column); the first is
#: the layout's own
_PROMPT_COLUMNS = {
    "prompt": ("prompt", "prompts", "text_prompt"),
    "reference_caption": ("reference_caption", "reference", "caption", "expected"),
    "assessment_point": ("assessment_point", "assessment_points", "assessment"),
    "category": ("category", "categories"),
    "subcategory": ("subcategory", "sub_category", "subcategories"),
    "id": ("id", "prompt_id", "idx", "index"),
}
_EVAL_COLUMNS = {
    "source_id": ("source_id", "sourceid", "prompt_id", "instance_id"),
    "evaluation_criteria": ("evaluation_criteria", "evaluation_criterion", "criteria", "criterion"),
    "id": ("id", "question_id", "qid"),
    "question": ("question", "questions", "evaluation_question"),
    "weight": ("weight", "weights", "importance"),
    "note": ("note", "notes", "comment"),
}
#: without these a row cannot be placed: its records are quarantined with their raw text
_PROMPT_NEEDS = ("prompt", "id")
_EVAL_NEEDS = ("source_id", "question")
#: every subcategory label a Subcategory cell is recognised against
_KNOWN_SUBCATEGORIES = tuple(s for subs in SUBCATEGORIES.values() for s in subs)
#: the counts reported per config
_COUNTS = ("rows", "questions", "question_rows", "orphan_questions", "prompts_without_questions", "relabelled",
           "unusual_weights", "default_levels", "quarantined")


def norm_id(value: str) -> str:
    """Ids as text, as a spreadsheet or pandas would match them: ' 12', '12.0' and '12' are '12'."""
    value = value.strip()
    return value[:-2] if re.fullmatch(r"\d+\.0", value) else value


_STOPWORDS = {"reasoning", "and", "generation", "the", "of", "visualization"}


def _words(label: str) -> list[str]:
    return [t for t in re.findall(r"[a-z0-9]+", label.lower()) if t not in _STOPWORDS]


def _label_score(cell: str, label: str) -> float:
    """How surely a Category/Subcategory cell names ``label`` (0: not at all): 3 the same words
    in the same order, 2 the same words in another order, 1 to 2 one set of words inside the other,
    up to 1 the same letters spelt slightly differently (in any word order, spaces aside)."""
    a, b = _words(cell), _words(label)
    if not a or not b:
        return 0.0
    if a == b:
        return 3.0
    sa, sb = set(a), set(b)
    if sa == sb:
        return 2.0
    if sa <= sb or sb <= sa:
        return 1.0 + len(sa & sb) / len(sa | sb)
    target = "".join(b)
    orders = itertools.permutations(a) if len(a) <= 5 else [a]
    best = max(difflib.SequenceMatcher(None, "".join(o), target).ratio() for o in orders)
    return best if best >= 0.85 else 0.0


@functools.lru_cache(maxsize=4096)  # a release repeats the same few cells thousands of times
def _names(cell: str, own: str, known: tuple[str, ...]) -> str | None:
    """The label a cell names: ``own`` when it names the folder/file label (whatever the case, word
    order or small spelling differences), another known label when it names that one better, None
    when it names none."""
    scores = {label: _label_score(cell, label) for label in dict.fromkeys([own, *known])}
    best = max(scores.values())
    if best <= 0:
        return None
    return own if scores[own] == best else max(scores, key=scores.get)


def _subcategory(stem: str, category: str, kind: str) -> str:
    """The subcategory a file is about, named as the authors' code names it: prompts files are
    ``<category>_<subcategory>.csv``, evaluation files ``<subcategory>_eval.csv`` (so
    ``mathematical_function_eval.csv`` belongs to ``mathematical_mathematical_function.csv``)."""
    if kind == "evaluation":
        return stem.removesuffix("_eval")
    return stem.removeprefix(f"{category}_") if stem != category else stem


def _weight(raw: str) -> float | None:
    """A weight as released: a finite, non-negative number, or None (reported by the caller)."""
    try:
        w = float(raw.strip())
    except ValueError:
        return None
    return w if math.isfinite(w) and w >= 0 else None


def _data_root(source: str | Path) -> Path:
    """The folder holding prompts/ and evaluation/: the checkout's data/ folder or that folder itself."""
    source = Path(source)
    for root in (source / "data", source):
        if (root / "prompts").is_dir() or (root / "evaluation").is_dir():
            return root
    raise ReleaseError(f"{source}: no data/prompts or data/evaluation folder; point at a checkout of the R2I-Bench "
                       "release (data/prompts/<category>/*.csv, data/evaluation/<category>/*_eval.csv)")


def _csv_files(folder: Path) -> dict[str, list[Path]]:
    """category folder name -> its CSV files, sorted."""
    if not folder.is_dir():
        return {}
    return {d.name: sorted(p for p in d.iterdir() if p.suffix.lower() == ".csv" and p.is_file())
            for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")}


def ordered(categories: Sequence[str]) -> list[str]:
    """Categories in Table 3's order, then any others (folders the layout does not name) alphabetically."""
    known = [c for c in CATEGORIES if c in categories]
    return known + sorted(c for c in categories if c not in CATEGORIES)


def _list_ids(ids: Sequence[str], limit: int = 12) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f", ... ({len(ids)} in all)" if len(ids) > limit else "")


def _extra(values: dict[str, str]) -> str | None:
    return json.dumps(values, ensure_ascii=False) if values else None


def read_release(source: str | Path, license: str | None = None) -> Release:
    """Read ``data/prompts`` and ``data/evaluation`` of a checkout (or of its ``data`` folder).

    Nothing the release holds is lost: every prompt is a row (prompts without questions are
    kept, unscorable), every question row is attached to its prompt (an evaluation file finds its
    prompts file by the authors' naming, whatever the case or separators and with or without the
    category's prefix; a name other than the authors' is reported) or, when it has none (the
    ``mathematical_function`` questions: the authors' code looks for their prompts in
    ``prompts/mathematical/mathematical_mathematical_function.csv``, which the release lacks),
    quarantined with its raw text; every irregularity is an :class:`Anomaly`. Text is kept as
    released, whitespace included.

    Counts per config: ``rows``, ``questions`` (attached), ``question_rows`` (read),
    ``orphan_questions``, ``prompts_without_questions``, ``relabelled`` (rows whose cells
    name another label than their folder/file), ``unusual_weights``, ``quarantined`` (records
    of the config's files that could not be kept at all).
    """
    source = Path(source)
    reading = _Reading(source, _data_root(source))
    prompt_files, eval_files = reading.category_files("prompts"), reading.category_files("evaluation")
    for cat in ordered(prompt_files):
        if cat not in CATEGORIES:
            reading.anomalies.append(Anomaly("unknown_category", f"prompts/{cat}", None,
                                             f"folder {cat!r} is not one of {list(CATEGORIES)}; its rows are in "
                                             "'all' only"))
        for path in prompt_files[cat]:
            reading.prompts(cat, path)
    for cat in ordered(eval_files):
        for path in eval_files[cat]:
            reading.questions(cat, path)
    reading.missing_files(eval_files)
    return reading.release(source, license)


class _Reading:
    """One release being read: the rows so far, and everything reported on the way."""

    def __init__(self, source: Path, root: Path):
        self.root = root
        self.prefix = root.relative_to(source).as_posix() + "/" if root != source else ""
        self.anomalies: list[Anomaly] = []
        self.quarantine: list[Quarantined] = []
        self.files_read: set[str] = set()
        self.rows_by_cat: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self.index: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.counts: dict[str, Counter] = defaultdict(Counter)
        self.prompt_subs: dict[tuple[str, str], str] = {}  # (category, subcategory) -> prompts file
        self.eval_subs: set[tuple[str, str]] = set()

    def category_files(self, folder: str) -> dict[str, list[Path]]:
        """The CSV files of each category folder of ``prompts/`` or ``evaluation/``, what lies beside them reported."""
        if not (self.root / folder).is_dir():
            self.anomalies.append(Anomaly("missing_file", f"{folder}/", None, f"no {folder}/ folder in the release"))
        for stray in sorted((self.root / folder).glob("*.csv")):
            self.anomalies.append(Anomaly("ignored_file", f"{folder}/{stray.name}", None,
                                          "a CSV outside the category folders: not read"))
        return _csv_files(self.root / folder)

    def records(self, path: Path, rel: str, columns: dict, needs: Sequence[str], cat: str) -> list[Record]:
        self.files_read.add(self.prefix + rel)
        before = len(self.quarantine)
        records = read_csv(path, rel, columns, needs, self.anomalies, self.quarantine)
        self.counts[cat]["quarantined"] += len(self.quarantine) - before
        return records

    def prompts(self, cat: str, path: Path) -> None:
        """One prompts file: a row per prompt, its Category/Subcategory cells checked against its folder and file."""
        anomalies, counts, index = self.anomalies, self.counts, self.index
        rel = f"prompts/{cat}/{path.name}"
        sub = _subcategory(path.stem, cat, "prompts")
        self.prompt_subs[(cat, sub)] = rel
        relabels: dict[tuple[str, str, str | None], list[str]] = defaultdict(list)
        for rec in self.records(path, rel, _PROMPT_COLUMNS, _PROMPT_NEEDS, cat):
            c = rec.cells
            raw_id = c["id"]
            sid = norm_id(raw_id)
            if not c["prompt"].strip():
                self.quarantine.append(Quarantined(rel, f"line {rec.line}", "no prompt: nothing to draw", rec.raw))
                anomalies.append(Anomaly("empty_prompt", rel, sid or f"line {rec.line}",
                                         f"line {rec.line}: no prompt text: quarantined"))
                counts[cat]["quarantined"] += 1
                continue
            if not sid:
                sid = f"line{rec.line}"
                anomalies.append(Anomaly("generated_id", rel, sid, f"line {rec.line}: no id: given {sid!r}"))
            elif sid != raw_id:
                anomalies.append(Anomaly("normalised_id", rel, sid, f"line {rec.line}: id {raw_id!r} read as {sid!r}"))
            if (cat, sub, sid) in index:
                n = 2
                while (cat, sub, f"{sid}~{n}") in index:
                    n += 1
                anomalies.append(Anomaly("duplicate_id", rel, sid,
                                         f"line {rec.line}: id {sid!r} repeats: this row is kept as "
                                         f"{sid}~{n}, without questions (the questions of {sid!r} go to its "
                                         "first row, as in the authors' code)"))
                sid = f"{sid}~{n}"
            cat_cell, sub_cell = c.get("category", ""), c.get("subcategory", "")
            for column, cell, own, known in (("Category", cat_cell, cat, CATEGORIES),
                                             ("Subcategory", sub_cell, sub, _KNOWN_SUBCATEGORIES)):
                named = _names(cell, own, known)
                if named != own and cell.strip():
                    relabels[(column, cell, named)].append(sid)
            row = {"id": f"{cat}/{sub}/{sid}", "source_id": sid, "prompt": c["prompt"],
                   "reference_caption": c.get("reference_caption", ""),
                   "assessment_point": c.get("assessment_point", ""),
                   "category": cat, "subcategory": sub, "category_cell": cat_cell,
                   "subcategory_cell": sub_cell, "has_questions": False, "questions": [],
                   "extra": _extra(rec.extra)}
            index[(cat, sub, sid)] = row
            self.rows_by_cat[cat].append(row)
        for (column, cell, named), ids in relabels.items():
            label = cat if column == "Category" else sub
            says = f"names {named!r}" if named else "names no known label"
            anomalies.append(Anomaly("relabelled", rel, ids[0],
                                     f"{column} cell {cell!r} on {len(ids)} row(s) ({_list_ids(ids)}) {says}, "
                                     f"not the {'folder' if column == 'Category' else 'file'} label "
                                     f"{label!r}, which is used"))
        counts[cat]["relabelled"] += len({i for ids in relabels.values() for i in ids})

    def prompts_of(self, cat: str, sub: str, rel: str) -> str:
        """The subcategory whose prompts the evaluation file ``rel`` scores: ``sub`` itself, or prompts saved
        under another name than the one the authors' code expects (with or without the category's prefix,
        in another case or with other separators), reported."""
        if (cat, sub) in self.prompt_subs:
            return sub
        named = {name_key(s): s for c, s in self.prompt_subs if c == cat}
        alt = next((named[k] for k in map(name_key, (sub, sub.removeprefix(f"{cat}_"), f"{cat}_{sub}"))
                    if k in named), None)
        if alt is None:
            return sub
        self.anomalies.append(Anomaly("file_name", self.prompt_subs[(cat, alt)], None,
                                      f"holds the prompts of {rel}; the authors' code looks for them in "
                                      f"prompts/{cat}/{cat}_{sub}.csv"))
        return alt

    def questions(self, cat: str, path: Path) -> None:
        """One evaluation file: each question attached to its prompt, or quarantined when it has none."""
        anomalies, counts = self.anomalies, self.counts
        rel = f"evaluation/{cat}/{path.name}"
        sub = _subcategory(path.stem, cat, "evaluation")
        target = self.prompts_of(cat, sub, rel)
        self.eval_subs.add((cat, target))
        unread_levels: list[str] = []
        orphans: dict[str, list[Record]] = defaultdict(list)
        seen: set[tuple[str, str]] = set()
        for rec in self.records(path, rel, _EVAL_COLUMNS, _EVAL_NEEDS, cat):
            c = rec.cells
            sid, qid = norm_id(c["source_id"]), norm_id(c.get("id", ""))
            counts[cat]["question_rows"] += 1
            if not sid:
                self.quarantine.append(Quarantined(rel, f"line {rec.line}", "no source_id: the question belongs to "
                                                   "no prompt", rec.raw))
                anomalies.append(Anomaly("no_source_id", rel, f"line {rec.line}",
                                         f"line {rec.line}: question {qid!r} has no source_id: quarantined"))
                counts[cat]["quarantined"] += 1
                continue
            weight = _weight(c.get("weight", ""))
            if weight is None:
                anomalies.append(Anomaly("bad_weight", rel, sid,
                                         f"line {rec.line}: question {qid!r} has weight {c.get('weight', '')!r}, "
                                         "not a finite non-negative number: kept as null (the instance "
                                         "cannot be scored)"))
            elif weight != int(weight) or not 1 <= weight <= 10:
                counts[cat]["unusual_weights"] += 1
                anomalies.append(Anomaly("unusual_weight", rel, sid,
                                         f"line {rec.line}: question {qid!r} has weight {c['weight'].strip()} "
                                         "(kept as is; most weights are integers 1 to 10)"))
            if not c["question"].strip():
                anomalies.append(Anomaly("empty_question", rel, sid,
                                         f"line {rec.line}: question {qid!r} has no text: kept"))
            if qid and (sid, qid) in seen:
                anomalies.append(Anomaly("duplicate_question_id", rel, sid,
                                         f"line {rec.line}: question id {qid!r} repeats within the instance "
                                         "(both kept; the instance's questions are asked by position)"))
            seen.add((sid, qid))
            if criterion_levels(c.get("evaluation_criteria", "")) is None:
                unread_levels.append(f"{sid}/{qid}")
            note = c.get("note") or None
            question = {"id": qid, "question": c["question"], "criterion": c.get("evaluation_criteria", ""),
                        "weight": weight, "note": note, "dimension": None, "extra": _extra(rec.extra)}
            row = self.index.get((cat, target, sid))
            if row is None:
                orphans[sid].append(rec)
                continue
            row["questions"].append(question)
        if unread_levels:
            counts[cat]["default_levels"] += len(unread_levels)
            anomalies.append(Anomaly("unreadable_levels", rel, unread_levels[0].split("/")[0],
                                     f"{len(unread_levels)} criteria (source_id/question id: "
                                     f"{_list_ids(unread_levels)}) define no scores that can be read "
                                     "(no two levels, or levels outside 0 to 1): their questions are "
                                     "scored on 0, 0.5 and 1"))
        if orphans:
            n = sum(len(r) for r in orphans.values())
            counts[cat]["orphan_questions"] += n
            counts[cat]["quarantined"] += n
            expected = self.prompt_subs.get((cat, target)) or f"prompts/{cat}/{cat}_{sub}.csv"
            why = (f"the prompts file {expected} lacks these ids" if (cat, target) in self.prompt_subs
                   else f"there is no prompts file {expected} (where the authors' code looks for them)")
            anomalies.append(Anomaly("orphan_question", rel, None,
                                     f"{n} question(s) for {len(orphans)} source id(s) "
                                     f"({_list_ids(list(orphans))}) have no prompt: {why}; quarantined "
                                     "with their raw text"))
            self.quarantine.extend(Quarantined(rel, sid, f"no prompt {sid!r} in {expected}", rec.raw)
                                   for sid, recs in orphans.items() for rec in recs)

    def missing_files(self, eval_files: dict[str, list[Path]]) -> None:
        """Prompts without their evaluation file, and subcategories of which the release holds nothing."""
        for cat, sub in sorted(set(self.prompt_subs) - self.eval_subs):
            self.anomalies.append(Anomaly("missing_file", f"evaluation/{cat}/{sub}_eval.csv", None,
                                          f"no evaluation file for the prompts of {self.prompt_subs[(cat, sub)]}"))
        present = set(self.prompt_subs) | self.eval_subs | {(c, _subcategory(p.stem, c, "evaluation"))
                                                            for c, ps in eval_files.items() for p in ps}
        for cat, subs in SUBCATEGORIES.items():
            for sub in subs:
                if (cat, sub) not in present:
                    self.anomalies.append(Anomaly("missing_subcategory", f"prompts/{cat}/{cat}_{sub}.csv", None,
                                                  f"neither prompts nor questions of {cat}/{sub} in this release"))

    def release(self, source: Path, license: str | None) -> Release:
        """The rows per config and their counts; each prompt left without questions reported."""
        counts = self.counts
        for cat, rows in self.rows_by_cat.items():
            c = counts[cat]
            c["rows"] = len(rows)
            for row in rows:
                row["has_questions"] = bool(row["questions"])
                c["questions"] += len(row["questions"])
                if not row["questions"]:
                    c["prompts_without_questions"] += 1
                    self.anomalies.append(Anomaly("no_questions", self.prompt_subs[(cat, row["subcategory"])],
                                                  row["source_id"], "no evaluation questions: kept, unscorable"))
        cats = ordered(set(self.rows_by_cat) | set(counts))
        configs = {cat: self.rows_by_cat.get(cat, []) for cat in CATEGORIES}
        configs["all"] = [row for cat in cats for row in self.rows_by_cat.get(cat, [])]
        out_counts = {cat: {k: counts[cat][k] for k in _COUNTS} for cat in CATEGORIES}
        out_counts["all"] = {k: sum(counts[c][k] for c in cats) for k in _COUNTS}
        return Release(configs=configs, anomalies=self.anomalies, counts=out_counts, license=license,
                       source=str(source), quarantine=self.quarantine, files_read=self.files_read)
