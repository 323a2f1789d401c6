"""Property-based tests of the T2I-ReasonBench reader: the shipped sample release, mutated by hypothesis
(values change type, keys are renamed or renumbered, whitespace and unicode are added, records are
duplicated, files are emptied or turned to garbage, files and folders are respelt), is read without a crash, every question of the
files reaches a row, what cannot be a row is in the quarantine with its raw text, the rows fit the
dataset's schema, and each mutation is reported or, for added whitespace and unicode, kept byte for byte."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections import Counter
from pathlib import Path

import pyarrow as pa
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks.t2i_reasonbench import ANOMALY_KINDS, DIMENSIONS
from t2ireason.benchmarks.t2i_reasonbench.questions import _Q

BENCH = get_benchmark("t2i-reasonbench")
FILES = [rel for spec in DIMENSIONS.values() for rel in spec.files()]
EVAL_FILES = {spec.files()[1] for spec in DIMENSIONS.values()}
SAMPLE = {rel: json.loads((BENCH.sample_path() / rel).read_text(encoding="utf-8")) for rel in FILES}
NOT_GROUPS = {"id", "prompt", "explicit_meaning", "image_content"}
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _targets() -> list[tuple[str, int, tuple]]:
    """Every value a mutation may hit: a record, a record's field, a member of a question group, an item
    of a rewritten prompt's reasoning."""
    out = []
    for rel, records in SAMPLE.items():
        for i, rec in enumerate(records):
            out.append((rel, i, ()))
            for key, value in rec.items():
                out.append((rel, i, (key,)))
                if isinstance(value, dict) and rel in EVAL_FILES and key not in NOT_GROUPS:
                    out += [(rel, i, (key, member)) for member in value]
                if key == "reason" and isinstance(value, list):
                    out += [(rel, i, (key, j)) for j in range(len(value))]
    return out


def _get(rec, path):
    value = rec
    for p in path:
        value = value[p]
    return value


TARGETS = _targets()
KEYED = [t for t in TARGETS if t[2]]  # a key to rename
TEXTS = [t for t in KEYED if isinstance(_get(SAMPLE[t[0]][t[1]], t[2]), str)]


def _kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "text", dict: "object", list: "list"}[type(value)]


scalars = st.one_of(st.none(), st.booleans(), st.integers(-1000, 1000), st.text(max_size=8),
                    st.floats(allow_nan=False, allow_infinity=False, width=32))
VALUES = {
    "text": st.text(max_size=20),
    "object": st.dictionaries(st.text(max_size=6), scalars, max_size=3),
    "list": st.lists(scalars, max_size=3),
    "number": st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32)),
    "boolean": st.booleans(),
    "null": st.none(),
}
# text added around a value or a key: spaces, tabs, newlines, non-ASCII letters, emoji, combining marks
ADDED = st.text(alphabet=st.sampled_from([" ", "\t", "\n", "\u00a0", "é", "ß", "語", "🙂", "\u0301", "\u200b"]),
                min_size=1, max_size=4)


@st.composite
def retype(draw):
    rel, i, path = draw(st.sampled_from(TARGETS))
    old = _get(SAMPLE[rel][i], path)
    kind = draw(st.sampled_from([k for k in VALUES if k != _kind(old)]))
    return ("retype", rel, i, path, draw(VALUES[kind]))


@st.composite
def rename(draw):
    rel, i, path = draw(st.sampled_from(KEYED))
    old = path[-1]
    if isinstance(old, int):  # a list item has no key: rename its list instead
        path, old = path[:-1], path[-2]
    new = draw(st.one_of(
        st.just(old.upper()), st.just(old.title()),
        st.builds(lambda n: old.rstrip("0123456789") + str(n), st.integers(0, 12)),
        st.builds(lambda a: a + old, st.sampled_from(["x_", "sci_", "a", "det_"])),
        st.builds(lambda a: old + a, ADDED), st.builds(lambda a: a + old, ADDED),
    ))
    return ("rename", rel, i, path, new)


@st.composite
def decorate(draw):
    rel, i, path = draw(st.sampled_from(TEXTS))
    before, after = draw(ADDED | st.just("")), draw(ADDED | st.just(""))
    return ("text", rel, i, path, before, after)


file_level = st.one_of(
    st.tuples(st.just("duplicate"), st.sampled_from(FILES), st.integers(0, 3)),
    st.tuples(st.just("file"), st.sampled_from(FILES), st.sampled_from(["", "[]", "  \n", "not json", "{", "[1, 2"])),
)


def _apply(data: dict, overrides: dict, mutation: tuple) -> bool:
    """Apply one mutation; False when it changes nothing (it is then skipped)."""
    kind, rel = mutation[0], mutation[1]
    if rel in overrides:
        return False
    if kind == "file":
        overrides[rel] = mutation[2]
        return True
    records = data[rel]
    i = mutation[2]
    if i >= len(records) or not isinstance(records[i], dict):
        return False
    if kind == "duplicate":
        records.insert(i + 1, copy.deepcopy(records[i]))
        return True
    path = mutation[3]
    try:
        parent = _get(records[i], path[:-1]) if path else None
    except (KeyError, IndexError, TypeError):
        return False
    if kind == "retype":
        if not path:
            records[i] = mutation[4]
        elif (isinstance(parent, dict) and path[-1] in parent
              or isinstance(parent, list) and isinstance(path[-1], int) and path[-1] < len(parent)):
            parent[path[-1]] = mutation[4]
        else:
            return False
        return True
    if kind == "rename":
        new = mutation[4]
        if not isinstance(parent, dict) or path[-1] not in parent or new == path[-1] or new in parent:
            return False
        items = list(parent.items())
        parent.clear()
        parent.update((new if k == path[-1] else k, v) for k, v in items)
        return True
    if kind == "text":
        try:
            old = parent[path[-1]]
        except (KeyError, IndexError, TypeError):
            return False
        if not isinstance(old, str) or mutation[4] + mutation[5] == "":
            return False
        parent[path[-1]] = mutation[4] + old + mutation[5]
        return True
    raise AssertionError(kind)


def _read(data: dict, overrides: dict):
    with tempfile.TemporaryDirectory() as tmp:
        for rel in FILES:
            path = Path(tmp) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(overrides.get(rel, json.dumps(data[rel], ensure_ascii=False, indent=1)), encoding="utf-8")
        return BENCH.read_release(tmp)


def _questions_in_files(data: dict, overrides: dict) -> int:
    """Questions of the evaluation files as a JSON reader sees them (records repeated exactly count once)."""
    n = 0
    for rel in EVAL_FILES - set(overrides):
        seen = set()
        for rec in data[rel]:
            if not isinstance(rec, dict):
                continue
            if rec.get("id") is not None:
                canonical = json.dumps(rec, sort_keys=True)
                if canonical in seen:
                    continue
                seen.add(canonical)
            n += sum(1 for k, v in rec.items() if k not in NOT_GROUPS and isinstance(v, dict)
                     for member in v if _Q.match(member))
    return n


def _check_invariants(release, data, overrides):
    assert {a.kind for a in release.anomalies} <= set(ANOMALY_KINDS)
    # every question of the files is a pair of a row: none dropped
    dimensions = {c: rows for c, rows in release.configs.items() if c != "all"}
    pairs = sum(c["pairs"] for d, c in release.counts.items() if d != "all")
    assert pairs == _questions_in_files(data, overrides) == (release.counts["all"]["pairs"] if dimensions else 0)
    assert sum(len(g["pairs"]) for rows in dimensions.values() for r in rows for g in r["evaluation"]) == pairs
    assert release.configs.get("all", []) == [r for rows in dimensions.values() for r in rows]
    # rows fit the schema the dataset is written with, and names stay unique file names
    schema = BENCH.features.arrow_schema
    for config, rows in dimensions.items():
        pa.Table.from_pylist(rows, schema=schema)
        names = [r["name"] for r in rows]
        assert len(set(names)) == len(names)
        for r in rows:
            assert BENCH.image_path(r) == f"{config}/{r['name']}.png"
    # a file that could not be read is said so, and what it holds is in the quarantine with its raw text
    for rel, text in overrides.items():
        assert any(a.file == rel for a in release.anomalies)
        if text.strip() and text.strip() != "[]":
            lost = [q.raw for q in release.quarantine if q.file == rel]
            assert lost and all(raw in text for raw in lost), (rel, text, lost)
    # a record that is not an object is in the quarantine, whole
    quarantined = {(q.file, q.row, q.raw) for q in release.quarantine}
    for rel in set(FILES) - set(overrides):
        for pos, rec in enumerate(data[rel]):
            if not isinstance(rec, dict):
                assert (rel, f"record {pos}", json.dumps(rec, ensure_ascii=False)) in quarantined


BASELINE = _read(SAMPLE, {})


def _anomalies(release, rel):
    """What is reported of one file: its anomalies and its quarantined records."""
    return Counter([(a.kind, a.row, a.detail) for a in release.anomalies if a.file == rel]
                   + [("quarantine", q.row, q.reason, q.raw) for q in release.quarantine if q.file == rel])


@FAST
@given(mutation=st.one_of(retype(), rename(), file_level))
def test_one_mutation_is_read_kept_and_reported(mutation):
    data, overrides = copy.deepcopy(SAMPLE), {}
    if not _apply(data, overrides, mutation):
        return
    release = _read(data, overrides)
    _check_invariants(release, data, overrides)
    rel = mutation[1]
    assert _anomalies(release, rel) != _anomalies(BASELINE, rel), mutation


@FAST
@given(mutation=decorate())
def test_added_whitespace_and_unicode_are_kept_byte_for_byte(mutation):
    data, overrides = copy.deepcopy(SAMPLE), {}
    if not _apply(data, overrides, mutation):
        return
    _, rel, i, path, _, _ = mutation
    release = _read(data, overrides)
    _check_invariants(release, data, overrides)
    rec = data[rel][i]
    new = _get(rec, path)
    dim = next(d for d, spec in DIMENSIONS.items() if rel in spec.files())
    (row,) = [r for r in release.configs[dim] if r["id"] == rec["id"]]
    section = rel.split("/")[0]
    if len(path) == 1 or section == "pipeline_prompts":
        # where a record's field goes in its row: its own field, or the row's extra (keys outside the schema,
        # and the evaluation file's explicit_meaning, which differs from the prompt's once text is added)
        own = {"prompts": {f: f for f in ("prompt", "tag", "idiom", "idiom_meaning", "explicit_meaning")},
               "deepseek_evaluation_qs": {"prompt": "evaluation_prompt", "image_content": "image_content"},
               "pipeline_prompts": {"reason": "reason", "reason_prompt": "reason_prompt"}}[section]
        field = own.get(path[0])
        if field == "reason":
            assert new in row["reason"]
        elif field:
            assert row[field] == new
        else:
            part = {"prompts": "prompts", "deepseek_evaluation_qs": "evaluation", "pipeline_prompts": "pipeline"}[section]
            assert json.loads(row["extra"])[part][path[0]] == new
    else:
        group = next(g for g in row["evaluation"] if g["group"] == path[0])
        texts = [p[part] for p in group["pairs"] for part in ("question", "criterion")]
        assert new in texts or json.loads(group["extra"])[path[1]] == new
        assert json.loads(group["raw"])[path[1]] == new


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutations=st.lists(st.one_of(retype(), rename(), decorate(), file_level), min_size=2, max_size=6))
def test_many_mutations_never_crash_nor_lose_a_question(mutations):
    data, overrides = copy.deepcopy(SAMPLE), {}
    applied = [m for m in mutations if _apply(data, overrides, m)]
    release = _read(data, overrides)
    _check_invariants(release, data, overrides)
    if any(m[0] != "text" for m in applied):
        assert Counter(map(str, release.anomalies)) != Counter(map(str, BASELINE.anomalies))


#: ways a user's copy spells a file or folder name otherwise: case, separators, a slipped letter
RESPELL = {"upper": str.upper, "title": lambda n: n.title(), "dashes": lambda n: n.replace("_", "-"),
           "spaces": lambda n: n.replace("_", " "), "doubled": lambda n: n[:3] + n[3] + n[3:],
           "dropped": lambda n: n[:4] + n[5:]}


@FAST
@given(rel=st.sampled_from(FILES), folder=st.booleans(), how=st.sampled_from(sorted(RESPELL)))
def test_a_respelt_file_or_folder_is_read_in_its_place_and_reported(rel, folder, how):
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(BENCH.sample_path(), tmp, dirs_exist_ok=True)
        old = Path(tmp) / (rel.split("/")[0] if folder else rel)
        stem, dot, ext = old.name.partition(".")
        new = old.with_name(RESPELL[how](stem) + dot + ext)
        assume(new != old)
        old.rename(new)
        release = BENCH.read_release(tmp)
        moved = [f.relative_to(tmp).as_posix() for f in (new.rglob("*.json") if folder else [new])]
    assert release.configs == BASELINE.configs and release.counts == BASELINE.counts  # nothing lost or changed
    assert sorted(a.file for a in release.anomalies if a.kind == "file_name") == sorted(moved)
    assert not [a for a in release.anomalies if a.kind in ("missing_file", "ambiguous_file")]
