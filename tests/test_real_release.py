"""The authors' own R2I-Bench release, when one is at hand: everything builds, nothing is lost.

Runs only when ``T2IREASON_R2I_RELEASE`` names a checkout of https://github.com/PLUM-Lab/R2I-Bench
(or a zip/tar archive of it); the release is not part of the project and CI has no network::

    git clone https://github.com/PLUM-Lab/R2I-Bench /tmp/R2I-Bench
    T2IREASON_R2I_RELEASE=/tmp/R2I-Bench pytest tests/test_real_release.py

Every record of every CSV file, counted here with the csv module on its own, must come out as a
row, an attached question or a quarantined record with its raw text, and the irregularities
formats.md lists must each be reported.
"""

from __future__ import annotations

import csv
import io
import os
from collections import Counter
from pathlib import Path

import pytest

from t2ireason import build, releases
from t2ireason.benchmarks import get_benchmark

RELEASE = os.environ.get("T2IREASON_R2I_RELEASE")
pytestmark = pytest.mark.skipif(not RELEASE, reason="set T2IREASON_R2I_RELEASE to a checkout of PLUM-Lab/R2I-Bench")
R2I = get_benchmark("r2i-bench")


def _records(path: Path) -> int:
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    rows = list(csv.reader(io.StringIO(text, newline="")))
    return sum(1 for r in rows[1:] if any(c.strip() for c in r))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("real")
    source = Path(RELEASE)
    if source.is_file():
        releases.unpack(source, tmp / "src")
        source = tmp / "src"
    root, _ = releases.find_root(source, R2I.release_markers)
    data = root / "data"
    records = {p.relative_to(data).as_posix(): _records(p) for p in sorted(data.glob("*/*/*.csv"))}
    report = build.build_dataset(R2I, source, tmp / "out", license="other")
    return records, report


def test_the_release_builds_with_nothing_lost(built):
    records, report = built
    counts = report.configs["all"]
    assert counts["rows"] == 2968 and counts["question_rows"] == 17191
    blank = sum(1 for a in report.anomalies if a["kind"] == "blank_row")
    assert sum(records.values()) == counts["rows"] + counts["questions"] + len(report.quarantine) + blank
    assert counts["prompts_without_questions"] == 85


def test_the_known_irregularities_are_reported(built):
    _, report = built
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
