"""The authors' own releases, when one is at hand: everything builds, nothing is lost.

Each test runs only when its variable names a checkout (or a zip/tar archive) of the authors'
repository; the releases are not part of the project and CI has no network::

    git clone https://github.com/PLUM-Lab/R2I-Bench /tmp/R2I-Bench
    git clone https://github.com/KaiyueSun98/T2I-ReasonBench /tmp/T2I-ReasonBench
    T2IREASON_R2I_RELEASE=/tmp/R2I-Bench T2IREASON_T2I_RELEASE=/tmp/T2I-ReasonBench \
        pytest tests/test_real_release.py

Every record of every data file, counted here on its own (the csv and json modules), must come
out as a row, an attached question or a quarantined record with its raw text, and the
irregularities formats.md lists must each be reported.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from collections import Counter
from pathlib import Path

import pytest

from t2ireason import build, releases
from t2ireason.benchmarks import get_benchmark

R2I_RELEASE = os.environ.get("T2IREASON_R2I_RELEASE")
T2I_RELEASE = os.environ.get("T2IREASON_T2I_RELEASE")
R2I = get_benchmark("r2i-bench")
T2I = get_benchmark("t2i-reasonbench")
needs_r2i = pytest.mark.skipif(not R2I_RELEASE, reason="set T2IREASON_R2I_RELEASE to a checkout of PLUM-Lab/R2I-Bench")
needs_t2i = pytest.mark.skipif(not T2I_RELEASE,
                               reason="set T2IREASON_T2I_RELEASE to a checkout of KaiyueSun98/T2I-ReasonBench")


def _checkout(bench, given: str, tmp: Path) -> tuple[Path, Path]:
    """(what to build from, the release's root inside it): an archive is unpacked first."""
    source = Path(given)
    if source.is_file():
        releases.unpack(source, tmp / "src")
        source = tmp / "src"
    root, _ = releases.find_root(source, bench.release_markers)
    return source, root


# -- R2I-Bench ----------------------------------------------------------------------------------------

def _csv_records(path: Path) -> int:
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return sum(1 for r in rows[1:] if any(c.strip() for c in r))


@pytest.fixture(scope="module")
def r2i_built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("r2i")
    source, root = _checkout(R2I, R2I_RELEASE, tmp)
    data = root / "data"
    records = {p.relative_to(data).as_posix(): _csv_records(p) for p in sorted(data.glob("*/*/*.csv"))}
    report = build.build_dataset(R2I, source, tmp / "out", license="other")
    return records, report


@needs_r2i
def test_the_r2i_release_builds_with_nothing_lost(r2i_built):
    records, report = r2i_built
    counts = report.configs["all"]
    assert counts["rows"] == 2968 and counts["question_rows"] == 17191
    blank = sum(1 for a in report.anomalies if a["kind"] == "blank_row")
    assert sum(records.values()) == counts["rows"] + counts["questions"] + len(report.quarantine) + blank
    assert counts["prompts_without_questions"] == 85


@needs_r2i
def test_the_known_r2i_irregularities_are_reported(r2i_built):
    _, report = r2i_built
    by_kind = Counter(a["kind"] for a in report.anomalies)
    files = {(a["kind"], a["file"]) for a in report.anomalies}
    assert ("missing_file", "evaluation/concept_mixing/functional_mixing_eval.csv") in files
    assert ("empty_file", "evaluation/concept_mixing/concept_mixing_eval.csv") in files
    [orphans] = [a for a in report.anomalies if a["kind"] == "orphan_question"
                 and a["file"] == "evaluation/mathematical/mathematical_function_eval.csv"]
    assert "prompts/mathematical/mathematical_mathematical_function.csv" in orphans["detail"]
    assert sum(1 for q in report.quarantine if q["file"] == orphans["file"]) == 593
    assert by_kind["relabelled"] and by_kind["unusual_weight"] and by_kind["duplicate_question_id"]
    assert by_kind["no_questions"] == 85
    assert {"evaluation.py", "instance.py"} <= set(report.authors_scripts)


# -- T2I-ReasonBench ----------------------------------------------------------------------------------

_QUESTION_KEY = re.compile(r"[a-z_]*q\d+", re.IGNORECASE)  # q1, sci_q1, det_q1, aq1...
_NOT_GROUPS = {"id", "prompt", "explicit_meaning", "image_content"}


def _questions(path: Path) -> int:
    """Question keys of an evaluation file's groups, counted with the json module alone (a record
    repeated exactly counts once, as the reader reads it once)."""
    seen, n = set(), 0
    for rec in json.loads(path.read_bytes().decode("utf-8-sig")):
        canonical = json.dumps(rec, sort_keys=True)
        if not isinstance(rec, dict) or canonical in seen:
            continue
        seen.add(canonical)
        n += sum(1 for key, group in rec.items() if key not in _NOT_GROUPS and isinstance(group, dict)
                 for member in group if _QUESTION_KEY.fullmatch(member))
    return n


@pytest.fixture(scope="module")
def t2i_built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("t2i")
    source, root = _checkout(T2I, T2I_RELEASE, tmp)
    questions = sum(_questions(p) for p in sorted((root / "deepseek_evaluation_qs").glob("*.json")))
    prompts = sum(len(json.loads(p.read_bytes().decode("utf-8-sig"))) for p in sorted((root / "prompts").glob("*.json")))
    report = build.build_dataset(T2I, source, tmp / "out", license="other")
    return prompts, questions, report


@needs_t2i
def test_the_t2i_release_builds_with_nothing_lost(t2i_built):
    prompts, questions, report = t2i_built
    dims = ("idiom", "textual", "entity", "scientific")
    assert [report.configs[d]["rows"] for d in dims] == [200] * 4 and prompts == 800
    pairs = sum(report.configs[d]["pairs"] for d in dims)
    assert pairs == questions == 6245
    assert report.quarantine == []


@needs_t2i
def test_the_known_t2i_irregularities_are_reported(t2i_built):
    _, _, report = t2i_built
    by_kind = Counter(a["kind"] for a in report.anomalies)
    criteria = {a["file"] for a in report.anomalies if a["kind"] == "structured_criterion"}
    assert by_kind["structured_criterion"] > 12 and len(criteria) == 3  # over a dozen records, three files
    assert by_kind["non_pair_key"] and by_kind["irregular_key"] and by_kind["numbering"]
    assert by_kind["dict_image_content"] == 4 and by_kind["prompt_mismatch"] == 11
    assert not by_kind["missing_file"] and not by_kind["no_rows"]
    assert set(report.authors_scripts) == {f"evaluation/Qwen2.5-VL/eval_{d}.py"
                                           for d in ("idiom", "textual_image", "entity", "scientific")}
