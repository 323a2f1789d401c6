"""Property-based tests: the shipped R2I-Bench and WorldGenBench samples, mutated the ways real
releases are irregular (values of another type, renamed or renumbered columns and keys, emptied
files, files reduced to a header, duplicated rows, whitespace and unicode added, deleted files),
then built. The builder never crashes, never loses a record in silence (every record is a row or
in the quarantine with its raw text), reports each irregular mutation, and keeps added text byte
for byte. Plus ids that cannot be file names, in both releases."""

from __future__ import annotations

import csv
import functools
import io
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from t2ireason import build
from t2ireason.benchmarks import get_benchmark
from t2ireason.files import inside

R2I = get_benchmark("r2i-bench")
WGB = get_benchmark("worldgenbench")
SETTINGS = settings(max_examples=20, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

R2I_FILES = sorted(p.relative_to(R2I.sample_path()).as_posix() for p in R2I.sample_path().rglob("*.csv"))
#: text added to cells: whitespace of every kind and characters beyond ASCII
ADDED = st.text(alphabet=st.sampled_from([" ", "\t", "\n", "\u00a0", "\u200b", "\u3000", "é", "ß", "漢", "🙂", "\u0301"]),
                min_size=1, max_size=4)
#: cells of "another type", as a CSV release holds them
RETYPED = st.sampled_from(['{"a": 1}', "[1, 2]", "3.5", "null", "", "NaN", "-1", "1e309", "true", "seven"])
#: header names no reader alias recognises
RENAMED = st.sampled_from(["column 7", "question2", "Unnamed: 3", "x", "2", "weight_old", "src"])


def _read(path: Path) -> list[list[str]]:
    return list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


def _write(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    path.write_text(buf.getvalue(), encoding="utf-8")


#: the header of each sample file, so that a mutation picks one of its real columns
R2I_HEADERS = {f: next(csv.reader(io.StringIO((R2I.sample_path() / f).read_text(encoding="utf-8"), newline="")))
               for f in R2I_FILES}


@st.composite
def r2i_mutation(draw):
    file = draw(st.sampled_from(R2I_FILES))
    kind = draw(st.sampled_from(["retype", "rename", "empty", "header_only", "duplicate", "added_text", "delete"]))
    return {"file": file, "kind": kind, "row": draw(st.integers(0, 3)),
            "col": draw(st.sampled_from(range(len(R2I_HEADERS[file])))),
            "value": draw(RETYPED), "name": draw(RENAMED), "added": draw(ADDED), "before": draw(st.booleans()),
            "header": draw(st.lists(st.sampled_from(["Prompt", "id", "weight", "a", "b c"]), min_size=1, max_size=3))}


def mutation(file: str, kind: str, **kw) -> dict:
    """One mutation written out (the explicit examples every run tries, beside the generated ones)."""
    return {"file": file, "kind": kind, "row": 0, "col": 0, "value": "3.5", "name": "column 7", "added": " \u00a0é",
            "before": False, "header": ["a"], **kw}


P_LOGICAL = "data/prompts/logical/logical_disjunctive.csv"  # columns Prompt, id, Reference Caption, ...
E_CAUSAL = "data/evaluation/causal/cause_to_effect_eval.csv"  # columns source_id, evaluation_criteria, id, question, weight
#: one of each kind of mutation, always tried
EXAMPLES = [
    [mutation(P_LOGICAL, "rename", col=0)],  # the prompts' column renamed: the rows cannot be placed
    [mutation(E_CAUSAL, "rename", col=0)],  # source_id renamed: the questions cannot be placed
    [mutation(E_CAUSAL, "rename", col=4, name="2")],  # weight renamed (renumbered)
    [mutation(E_CAUSAL, "retype", col=4, value="3.5")],  # a weight that is not an integer
    [mutation(E_CAUSAL, "retype", col=4, value='{"a": 1}')],  # a weight that is not a number
    [mutation(E_CAUSAL, "retype", col=0, value="[1, 2]")],  # a source id that names no prompt
    [mutation(P_LOGICAL, "duplicate")],
    [mutation(E_CAUSAL, "duplicate", row=1)],
    [mutation(E_CAUSAL, "header_only", header=["weight"])],
    [mutation(P_LOGICAL, "header_only", header=["Prompt", "b c"])],
    [mutation(P_LOGICAL, "empty")],
    [mutation(E_CAUSAL, "delete")],
    [mutation(P_LOGICAL, "delete")],
    [mutation(P_LOGICAL, "added_text", added="\t漢🙂 ", before=True)],
    [mutation(E_CAUSAL, "added_text", col=1, added="\n\u3000")],
]


def _apply_r2i(root: Path, m: dict) -> dict | None:
    """Mutate the copy in ``root``; returns what the result must show (None: the mutation did nothing)."""
    path = root / m["file"]
    if not path.exists():
        return None
    rows = _read(path)
    header, body = rows[0], rows[1:]
    if m["kind"] == "delete":
        if "concept_mixing_eval" in m["file"]:  # not a subcategory's file: nothing would be missing
            return None
        path.unlink()
        return {"kind": "delete"}
    if m["kind"] == "empty":
        path.write_text("")
        return {"kind": "reported"}
    if m["kind"] == "header_only":
        _write(path, [m["header"]])
        return {"kind": "reported"}
    if m["kind"] == "rename":
        col = m["col"] % len(header)
        header[col] = m["name"]
        _write(path, [header, *body])
        return {"kind": "reported"}
    if not body:
        return None
    i = m["row"] % len(body)
    col = m["col"] % len(header)
    if m["kind"] == "duplicate":
        _write(path, [header, *body[: i + 1], body[i], *body[i + 1:]])
        return {"kind": "reported"}
    name = header[col].strip().lower()
    if m["kind"] == "retype":  # every RETYPED value is an irregular weight; in a text column it is text
        body[i][col] = m["value"]
        _write(path, [header, *body])
        return {"kind": "reported"} if name == "weight" else {"kind": "kept"}
    # added text: kept byte for byte in the column it went into
    if name not in ("prompt", "question", "evaluation_criteria", "reference caption", "assessment point"):
        return None
    body[i][col] = m["added"] + body[i][col] if m["before"] else body[i][col] + m["added"]
    _write(path, [header, *body])
    return {"kind": "text", "text": body[i][col]}


def _records(path: Path) -> int:
    """Data records of a CSV file, counted independently of the reader (blank records aside)."""
    if not path.exists() or not path.read_text(encoding="utf-8").strip():
        return 0
    return sum(1 for r in _read(path)[1:] if any(c.strip() for c in r))


def _entries(release) -> Counter:
    """Every anomaly and quarantined record of a release (or a build report), as a multiset of (file, text)."""
    anomalies = [a if isinstance(a, dict) else a.to_dict() for a in release.anomalies]
    quarantine = [q if isinstance(q, dict) else q.to_dict() for q in release.quarantine]
    return Counter([(a["file"] or "", f"{a['kind']} {a['row']} {a['detail']}") for a in anomalies]
                   + [(q["file"], f"quarantined {q['row']} {q['reason']} {q['raw']}") for q in quarantine])


@functools.cache
def _baseline(bench_name: str) -> Counter:
    bench = get_benchmark(bench_name)
    return _entries(bench.read_release(bench.sample_path()))


def _reported(release, baseline: Counter, file: str, loose: bool = False) -> bool:
    """Whether ``release`` reports something about ``file`` that the unmutated sample did not
    (``loose``: a deleted file is reported under the name of the file that misses it)."""
    new = _entries(release) - baseline
    stem = Path(file).stem.removesuffix("_eval")
    return any(f == file or (loose and (file in text or stem in f or stem in text)) for f, text in new)


def _check_r2i(release, records: dict[str, int], expectations: list) -> None:
    counts = release.counts["all"]
    assert counts["rows"] == len(release.configs["all"])
    ids = [r["id"] for r in release.configs["all"]]
    assert len(set(ids)) == len(ids)  # kept rows never share an id (nor an image path)
    assert len({R2I.image_path(r) for r in release.configs["all"]}) == len(ids)
    assert counts["questions"] == sum(len(r["questions"]) for r in release.configs["all"])
    # every record is a row, an attached question, a quarantined record or a reported blank line
    blank = sum(1 for a in release.anomalies if a.kind == "blank_row")
    assert sum(records.values()) == counts["rows"] + counts["questions"] + len(release.quarantine) + blank
    for m, expect in expectations:
        if expect is None:
            continue
        file = m["file"].removeprefix("data/")
        if expect["kind"] in ("reported", "delete"):
            assert _reported(release, _baseline("r2i-bench"), file, loose=expect["kind"] == "delete"), (
                m, release.anomalies)
        elif expect["kind"] == "text" and not any(x["kind"] in ("delete", "empty", "header_only", "rename")
                                                  for x, _ in expectations):
            rows = release.configs["all"]
            texts = [r[k] for r in rows for k in ("prompt", "reference_caption", "assessment_point")]
            texts += [q[k] for r in rows for q in r["questions"] for k in ("question", "criterion")]
            texts += [q.raw for q in release.quarantine]
            assert any(expect["text"] in t for t in texts), expect


def _mutated_r2i(tmp: str, mutations: list) -> tuple[Path, dict[str, int], list]:
    root = Path(tmp) / "release"
    shutil.copytree(R2I.sample_path(), root)
    expectations = [(m, _apply_r2i(root, m)) for m in mutations]
    return root, {f: _records(root / f) for f in R2I_FILES}, expectations


def _with_examples(test):
    for ex in EXAMPLES:
        test = example(ex)(test)
    return test


@_with_examples
@settings(SETTINGS, max_examples=40)
@given(st.lists(r2i_mutation(), min_size=1, max_size=3))
def test_mutated_r2i_releases_read_with_nothing_lost_and_each_irregularity_reported(mutations):
    with tempfile.TemporaryDirectory() as tmp:
        root, records, expectations = _mutated_r2i(tmp, mutations)
        release = R2I.read_release(root)  # never raises
    _check_r2i(release, records, expectations)


@settings(SETTINGS, max_examples=8)
@given(st.lists(r2i_mutation(), min_size=1, max_size=3))
def test_mutated_r2i_releases_build(mutations):
    with tempfile.TemporaryDirectory() as tmp:
        root, records, expectations = _mutated_r2i(tmp, mutations)
        release = R2I.read_release(root)
        report = build.build_dataset(R2I, root, Path(tmp) / "out", license="other")  # never raises
        table = pq.read_table(Path(tmp) / "out" / "all" / "test-00000-of-00001.parquet").to_pylist()
    assert [r["id"] for r in table] == [r["id"] for r in release.configs["all"]]
    assert report.configs["all"]["questions"] == sum(len(r["questions"]) for r in table)
    assert report.quarantine == [q.to_dict() for q in release.quarantine]


@SETTINGS
@given(st.sampled_from([f for f in R2I_FILES if "concept_mixing_eval" not in f]), st.integers(0, 20), ADDED,
       st.booleans())
def test_added_whitespace_and_unicode_are_kept_byte_for_byte(file, row, added, before):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "release"
        shutil.copytree(R2I.sample_path(), root)
        rows = _read(root / file)
        header, body = rows[0], rows[1:]
        text_columns = [i for i, h in enumerate(header) if h.strip().lower() in ("prompt", "question", "evaluation_criteria")]
        i, col = row % len(body), text_columns[0]
        body[i][col] = added + body[i][col] if before else body[i][col] + added
        _write(root / file, [header, *body])
        release = R2I.read_release(root)
    texts = {r["prompt"] for r in release.configs["all"]} | {
        q[k] for r in release.configs["all"] for q in r["questions"] for k in ("question", "criterion")}
    texts |= {q.raw for q in release.quarantine}
    assert body[i][col] in texts or any(body[i][col] in t for t in texts)


@functools.cache
def _r2i_sample():
    return R2I.read_release(R2I.sample_path())


#: evaluation files whose prompts the sample has
R2I_EVAL_WITH_PROMPTS = [f for f in R2I_FILES if f.startswith("data/evaluation/")
                         and not f.endswith(("concept_mixing_eval.csv", "mathematical_function_eval.csv"))]


@SETTINGS
@given(st.sampled_from(R2I_EVAL_WITH_PROMPTS),
       st.sampled_from([str.upper, str.title, lambda n: n.replace("_", "-"), lambda n: n.replace("_", " ")]))
def test_an_evaluation_file_respelt_keeps_its_questions_and_is_reported(file, respell):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "release"
        shutil.copytree(R2I.sample_path(), root)
        old = root / file
        new = old.with_name(respell(old.stem.removesuffix("_eval")) + "_eval.csv")
        assume(new != old)
        old.rename(new)
        release = R2I.read_release(root)
    assert release.configs == _r2i_sample().configs and release.quarantine == _r2i_sample().quarantine
    [note] = [a for a in release.anomalies if a.kind == "file_name"]
    assert new.relative_to(root / "data").as_posix() in note.detail


# -- WorldGenBench ------------------------------------------------------------------------------------

WGB_KEYS = {"humanities.json": ["id", "prompt", "continent", "country", "checklist"],
            "nature.jsonl": ["idx", "Prompt", "Field", "items", "explanations"]}
JSON_VALUES = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, width=16),
                        st.text(max_size=5), st.lists(st.integers(0, 3), max_size=2),
                        st.dictionaries(st.sampled_from(["a", "item"]), st.integers(0, 3), max_size=2))


@st.composite
def wgb_mutation(draw):
    file = draw(st.sampled_from(sorted(WGB_KEYS)))
    return {"file": file, "kind": draw(st.sampled_from(["retype", "rename", "empty", "header_only", "duplicate",
                                                        "added_text", "retype_item"])),
            "record": draw(st.integers(0, 10)), "key": draw(st.sampled_from(WGB_KEYS[file])),
            "value": draw(JSON_VALUES), "name": draw(st.sampled_from(["key_2", "Prompt text", "c0", "1"])),
            "added": draw(ADDED), "before": draw(st.booleans())}


def _load_wgb(path: Path) -> list:
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    return json.loads(text)


def _dump_wgb(path: Path, records: list) -> None:
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    else:
        path.write_text(json.dumps(records, ensure_ascii=False, indent=1), encoding="utf-8")


def _apply_wgb(root: Path, m: dict) -> dict | None:
    path = root / m["file"]
    if not path.exists() or not path.read_text().strip():
        return None
    records = _load_wgb(path)
    if m["kind"] == "empty":
        path.write_text("")
        return {"kind": "reported"}
    if m["kind"] == "header_only":
        _dump_wgb(path, records[:0])
        return {"kind": "reported"}
    if not records:
        return None
    i = m["record"] % len(records)
    rec = records[i]
    if not isinstance(rec, dict) or m["key"] not in rec:
        return None
    if m["kind"] == "duplicate":
        records.insert(i, dict(rec))
        _dump_wgb(path, records)
        return {"kind": "reported"}
    if m["kind"] == "rename":
        rec[m["name"]] = rec.pop(m["key"])
        _dump_wgb(path, records)
        return {"kind": "reported"}
    if m["kind"] == "retype":
        old = rec[m["key"]]
        rec[m["key"]] = m["value"]
        _dump_wgb(path, records)
        if type(m["value"]) is type(old) or (m["key"] in ("id", "idx") and isinstance(m["value"], (int, str))):
            return {"kind": "kept"}
        return {"kind": "reported"}
    if m["kind"] == "retype_item":
        lst = rec.get("checklist", rec.get("items"))
        if not lst:
            return None
        lst[0] = m["value"]
        _dump_wgb(path, records)
        return {"kind": "kept"}  # kept as text (an irregular entry is reported; a string one is just text)
    key = "prompt" if "prompt" in rec else "Prompt"
    if not isinstance(rec.get(key), str):
        return None
    rec[key] = m["added"] + rec[key] if m["before"] else rec[key] + m["added"]
    _dump_wgb(path, records)
    return {"kind": "text", "text": rec[key]}


def wgb(file: str, kind: str, key: str, **kw) -> dict:
    return {"file": file, "kind": kind, "record": 1, "key": key, "value": 5, "name": "key_2", "added": " \u00a0é",
            "before": False, **kw}


H, N = "humanities.json", "nature.jsonl"


@example([wgb(H, "rename", "prompt")])
@example([wgb(N, "rename", "items")])
@example([wgb(H, "retype", "prompt", value=42)])
@example([wgb(H, "retype", "prompt", value=None)])
@example([wgb(H, "retype", "checklist", value=5)])
@example([wgb(N, "retype", "Field", value=None)])
@example([wgb(H, "retype", "country", value=["a"])])
@example([wgb(H, "retype_item", "checklist", value={"a": 1})])
@example([wgb(H, "duplicate", "id")])
@example([wgb(N, "empty", "idx")])
@example([wgb(H, "header_only", "id")])
@example([wgb(N, "added_text", "Prompt", added="\t漢🙂\u3000", before=True)])
@settings(SETTINGS, max_examples=40)
@given(st.lists(wgb_mutation(), min_size=1, max_size=3))
def test_mutated_worldgenbench_releases_build_with_nothing_lost(mutations):
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "release"
        shutil.copytree(WGB.sample_path(), root)
        expectations = [(m, _apply_wgb(root, m)) for m in mutations]
        records = {f: len(_load_wgb(root / f)) if (root / f).read_text(encoding="utf-8").strip() else 0
                   for f in WGB_KEYS}
        try:
            report = build.build_dataset(WGB, root, Path(tmp) / "out")
        except Exception as e:  # a release left with no row at all is the one refusal, and it says so
            assert "no rows read" in str(e), e
            return
        tables = {p.parent.name: pq.read_table(p).to_pylist() for p in (Path(tmp) / "out").glob("*/test-*.parquet")}

    skipped = {a["file"] for a in report.anomalies if a["kind"] == "skipped_file"}
    rows = sum(len(t) for t in tables.values())
    assert rows == sum(c["rows"] for c in report.configs.values())
    assert rows + len(report.quarantine) == sum(n for f, n in records.items() if f not in skipped)
    for m, expect in expectations:
        if expect is None:
            continue
        if expect["kind"] == "reported":
            assert _reported(report, _baseline("worldgenbench"), m["file"]), (m, report.anomalies)
        elif expect["kind"] == "text" and not any(x["kind"] in ("rename", "retype", "empty", "header_only")
                                                  for x, _ in expectations):
            assert any(expect["text"] in r["prompt"] for t in tables.values() for r in t), expect


# -- ids that cannot be file names (issue 16) ----------------------------------------------------------


@pytest.mark.parametrize("bad", ["../../outside/x", "/abs/x", "a\\..\\..\\b", ".."])
def test_r2i_ids_that_leave_the_folder_are_mapped(tmp_path, bad):
    root = tmp_path / "release"
    shutil.copytree(R2I.sample_path(), root)
    path = root / "data/prompts/logical/logical_disjunctive.csv"
    rows = _read(path)
    rows[1][1] = bad  # the id column of this file
    _write(path, rows)
    report = build.build_dataset(R2I, root, tmp_path / "out", license="other")
    [renamed] = report.renamed
    assert renamed["original"] == bad and renamed["field"] == "source_id"
    import pyarrow.parquet as pq

    table = pq.read_table(tmp_path / "out" / "logical" / "test-00000-of-00001.parquet").to_pylist()
    row = next(r for r in table if r["source_id"] == renamed["safe"])
    assert row["id"] == f"logical/disjunctive/{renamed['safe']}" and row["prompt"].startswith("Either a spoon")
    images = tmp_path / "images"
    target = inside(images, R2I.image_path(row))
    assert images.resolve() in target.resolve().parents
    refused = build.build_dataset(R2I, root, tmp_path / "refused", license="other", unsafe_ids="refuse")
    assert refused.configs["logical"]["rows"] == 1 and [q["row"] for q in refused.quarantine][-1] == f"logical/disjunctive/{bad}"


def test_worldgenbench_ids_that_leave_the_folder_are_mapped(tmp_path):
    root = tmp_path / "release"
    shutil.copytree(WGB.sample_path(), root)
    records = json.loads((root / "humanities.json").read_text())
    records[0]["id"] = "../../outside/x"
    (root / "humanities.json").write_text(json.dumps(records))
    report = build.build_dataset(WGB, root, tmp_path / "out")
    [renamed] = report.renamed
    assert renamed["original"] == "../../outside/x" and "/" not in renamed["safe"]
    assert any(a["kind"] == "unsafe_id" for a in report.anomalies)
