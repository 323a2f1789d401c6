"""The authors' own releases: everything builds, nothing is lost, every record is scored.

The releases are read from ``../shared/releases/<benchmark>`` beside the project's root when that
folder is there (byte-exact copies of the authors' repositories, see its README), with no opt-in;
a variable names another checkout (or a zip/tar archive) of the authors' repository instead::

    T2IREASON_R2I_RELEASE=/tmp/R2I-Bench T2IREASON_T2I_RELEASE=/tmp/T2I-ReasonBench \\
        T2IREASON_PRISM_RELEASE=/tmp/prism-bench pytest tests/test_real_release.py

Where neither is at hand the tests are skipped (the releases are not part of the project).

Each release is built once per session. Every record of the data files, counted here on its own
(the csv and json modules), must come out as a row, an attached question or a quarantined record
with its raw text; the irregularities formats.md lists must each be reported; the files must be
the ones the project records the SHA-256 of. Then every row of each is scored, in process, under
every preset's options, with scripted replies: well-formed ones (each score checked against the
reply that gave it) and a mix where a third of the replies are malformed, drawn by hypothesis (no
crash, and never a silent zero: a score is the weighted mean of the answers the judge gave, a
reply that could not be used is a recorded failure or a re-ask). One tiny in-memory image stands
for every generated one (scoring reads no file).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import os
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from PIL import Image

from t2ireason import build, releases
from t2ireason.benchmarks import get_benchmark
from t2ireason.benchmarks import r2i_bench as r2i
from t2ireason.benchmarks.prism_bench import TRACKS
from t2ireason.data import load_rows
from t2ireason.images import as_image
from t2ireason.judges.scripted import ScriptedJudge

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "releases"
R2I = get_benchmark("r2i-bench")
T2I = get_benchmark("t2i-reasonbench")
PRISM = get_benchmark("prism-bench")


def _given(variable: str, folder: str) -> str | None:
    """The release to test: the variable's checkout or archive, else the shared copy when present."""
    return os.environ.get(variable) or (str(SHARED / folder) if (SHARED / folder).is_dir() else None)


R2I_RELEASE = _given("T2IREASON_R2I_RELEASE", "r2i-bench")
T2I_RELEASE = _given("T2IREASON_T2I_RELEASE", "t2i-reasonbench")
PRISM_RELEASE = _given("T2IREASON_PRISM_RELEASE", "prism-bench")
needs_r2i = pytest.mark.skipif(not R2I_RELEASE, reason=f"no {SHARED}/r2i-bench and no T2IREASON_R2I_RELEASE")
needs_t2i = pytest.mark.skipif(not T2I_RELEASE, reason=f"no {SHARED}/t2i-reasonbench and no T2IREASON_T2I_RELEASE")
needs_prism = pytest.mark.skipif(not PRISM_RELEASE,
                                 reason=f"no {SHARED}/prism-bench and no T2IREASON_PRISM_RELEASE")
#: one tiny image for every row: encoded once, shared by every request
IMAGE = as_image(Image.new("RGB", (16, 16), (200, 120, 40)))


def _checkout(bench, given: str, tmp: Path) -> tuple[Path, Path]:
    """(what to build from, the release's root inside it): an archive is unpacked first."""
    source = Path(given)
    if source.is_file():
        releases.unpack(source, tmp / "src")
        source = tmp / "src"
    root, _ = releases.find_root(source, bench.release_markers)
    return source, root


def _pick(*parts, n: int) -> int:
    """A deterministic choice among ``n`` from what identifies a request."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode("utf-8", "surrogatepass")).digest()[:4], "big") % n


@st.composite
def malformed(draw, valid: str):
    """A reply a judge may send that the scorer cannot use as it is."""
    kind = draw(st.sampled_from(["text", "empty", "truncated", "prose", "wrong_types", "nested", "fence_only"]))
    if kind == "text":
        return draw(st.text(max_size=40))
    if kind == "empty":
        return draw(st.sampled_from(["", " ", "\n", "```json\n```"]))
    if kind == "truncated":
        return valid[: draw(st.integers(0, max(0, len(valid) - 2)))]
    if kind == "prose":
        return f"I would rate it {draw(st.integers(-5, 20))} out of 10."
    if kind == "wrong_types":
        value = draw(st.one_of(st.booleans(), st.none(), st.text(max_size=5), st.floats(allow_nan=True),
                               st.lists(st.integers(), max_size=2)))
        return "```json\n" + json.dumps({"1": value, "score": value, "reason": value}) + "\n```"
    if kind == "nested":
        return "[" * draw(st.integers(1, 5)) + valid
    return "```json\n" + "{" * draw(st.integers(1, 3)) + "\n```"


def _pool(example: str, size: int = 24):
    return st.lists(malformed(example), min_size=size, max_size=size)


MIX = settings(max_examples=1, deadline=None, derandomize=True, database=None, phases=[Phase.generate],
               suppress_health_check=list(HealthCheck))


_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


def _written(texts, question) -> set[float]:
    """The numbers the replies wrote where a score for ``question`` goes: R2I-Bench's ``"<id>": s``,
    T2I-ReasonBench's ``"score": [s1, ...]``, PRISM-Bench's ``"score": s`` (``true`` is 1 where the
    authors' code counts it)."""
    if question.weight is not None:  # R2I-Bench: the question's own key (a number may come as a string)
        return {float(x) for x in re.findall(rf'"{re.escape(question.id)}"\s*:\s*"?({_NUMBER})', "\n".join(texts))}
    if question.group in ("alignment", "aesthetic"):  # PRISM-Bench: one score per reply
        found = re.findall(rf'"score"\s*:\s*({_NUMBER}|true)', "\n".join(texts))
        return {1.0 if x == "true" else float(x) for x in found}
    lists = re.findall(r'"score"\s*:\s*\[([^\]]*)\]', "\n".join(texts))  # T2I-ReasonBench
    return {float(x) for body in lists for x in re.findall(_NUMBER, body)}


def _no_silent_zero(result, weighted: bool = True) -> None:
    """Every score a question has is one a reply wrote for it, the image's score is what those give,
    and no score comes without the reason why."""
    for q in result.questions:
        assert q.score is None or any(math.isclose(q.score, w, abs_tol=1e-9) for w in _written(result.replies, q)), \
            f"{result.id}: question {q.id} scored {q.score}, which no reply gave it"
    if result.score is None:
        assert result.failure, f"{result.id}: no score and no failure"
        return
    answered = [q for q in result.questions if q.score is not None]
    assert answered, f"{result.id}: a score without one answered question"
    if weighted:
        total = sum(q.weight for q in answered)
        expected = sum(q.weight * q.score for q in answered) / total
        assert result.score == pytest.approx(expected, abs=0.0051), result.id  # official: rounded to 2 decimals


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
    return records, report, load_rows(R2I, tmp / "out", ["all"])


@needs_r2i
def test_the_r2i_release_builds_with_nothing_lost(r2i_built):
    records, report, rows = r2i_built
    counts = report.configs["all"]
    assert counts["rows"] == len(rows) == 2968 and counts["question_rows"] == 17191
    assert counts["questions"] == sum(len(r["questions"]) for r in rows) == 16598
    blank = sum(1 for a in report.anomalies if a["kind"] == "blank_row")
    assert sum(records.values()) == counts["rows"] + counts["questions"] + len(report.quarantine) + blank
    assert counts["prompts_without_questions"] == 85
    verification = report.source_info["verification"]
    assert verification["mismatched"] == [] and verification["missing"] == [] and len(verification["verified"]) == 67


@needs_r2i
def test_the_known_r2i_irregularities_are_reported(r2i_built):
    _, report, _ = r2i_built
    by_kind = Counter(a["kind"] for a in report.anomalies)
    files = {(a["kind"], a["file"]) for a in report.anomalies}
    assert ("missing_file", "evaluation/concept_mixing/functional_mixing_eval.csv") in files
    assert ("empty_file", "evaluation/concept_mixing/concept_mixing_eval.csv") in files
    [orphans] = [a for a in report.anomalies if a["kind"] == "orphan_question"
                 and a["file"] == "evaluation/mathematical/mathematical_function_eval.csv"]
    assert "prompts/mathematical/mathematical_mathematical_function.csv" in orphans["detail"]
    assert sum(1 for q in report.quarantine if q["file"] == orphans["file"]) == 593
    assert by_kind["relabelled"] and by_kind["unusual_weight"] and by_kind["duplicate_question_id"]
    assert by_kind["no_questions"] == 85 and not by_kind["modified_file"]
    assert {"evaluation.py", "instance.py"} <= set(report.authors_scripts)


@needs_r2i
def test_the_real_criteria_levels_are_read(r2i_built):
    """About one criterion in seven defines levels other than 1 / 0.5 / 0; a few define none that can be read
    (reported per file, scored on 0 / 0.5 / 1)."""
    _, report, rows = r2i_built
    levels = Counter(r2i.criterion_levels(q["criterion"]) for r in rows for q in r["questions"])
    own = sum(n for lv, n in levels.items() if lv is not None and lv != r2i.DEFAULT_LEVELS)
    quarters = tuple((v, v) for v in (0, 0.25, 0.5, 0.75, 1))
    assert 2200 < own < 4300 and levels[quarters] > 500 and levels[((0, 0), (0.3, 0.3), (0.7, 0.7), (1, 1))] > 400
    assert any(lo != hi for lv in levels if lv for lo, hi in lv)  # ranges such as 0.7-0.9
    unread = report.configs["all"]["default_levels"]  # of every question row, the 593 orphans' too
    assert 0 < levels[None] <= unread < 700  # under 4% of the criteria
    assert sum(1 for a in report.anomalies if a["kind"] == "unreadable_levels") > 10


#: issue 34.14: four criteria of the release whose text defines a level the reader lost, and that level
MISREAD_LEVELS = [("mathematical/spatial_reasoning/63", "2", 0.0), ("mathematical/vector_matrix_visualization/100", "4", 0.0),
                  ("mathematical/number_theory/84", "2", 0.5), ("commonsense/color/5", "4", 1.0)]


@needs_r2i
@pytest.mark.parametrize("instance, question, level", MISREAD_LEVELS)
def test_the_criteria_that_lost_a_level_are_read_and_scored_on_it(r2i_built, instance, question, level):
    """A level glued to the text before it ("...width0.5: ...", "...>20%0: ..."), "(0.5 points, e.g., ...)",
    a reverse scale's "0 (score 1) → ...": each criterion defines 0, 0.5 and 1, and an answer of the lost
    level is scored, not re-asked."""
    _, _, rows = r2i_built
    row = next(r for r in rows if r["id"] == instance)
    criterion = next(q["criterion"] for q in row["questions"] if q["id"] == question)
    assert r2i.criterion_levels(criterion) == ((0.0, 0.0), (0.5, 0.5), (1.0, 1.0))
    keys = r2i.question_keys(row["questions"])
    answers = {k: (level if k == question else r2i.question_levels(q)[0][-1][1]) for k, q in zip(keys, row["questions"])}
    judge = ScriptedJudge([f"Analysis.\n```json\n{json.dumps(answers)}\n```"])
    [result] = R2I.score([row], [IMAGE], judge)
    assert result.failure is None and result.reasks == 0
    assert next(q.score for q in result.questions if q.id == question) == level


@needs_r2i
def test_a_scale_header_is_not_read_as_a_level(r2i_built):
    """commonsense/color/41's five criteria open with "Scoring (0-1):": not a range level accepting any score."""
    _, _, rows = r2i_built
    row = next(r for r in rows if r["id"] == "commonsense/color/41")
    assert [r2i.criterion_levels(q["criterion"]) for q in row["questions"]] == [r2i.DEFAULT_LEVELS] * 5


def _r2i_reply(rows_by_id, choose):
    """Each question of the request's instance answered with one of its own levels (``choose`` picks)."""

    def reply(request):
        row = rows_by_id[request.metadata["id"]]
        keys = r2i.question_keys(row["questions"])
        answer = {}
        for k, q in zip(keys, row["questions"]):
            levels, _ = r2i.question_levels(q)
            lo, hi = levels[_pick(row["id"], k, n=len(levels))]
            answer[k] = round((lo + hi) / 2, 4)
        return choose(request, row, f"Analysis.\n```json\n{json.dumps(answer)}\n```")

    return reply


@needs_r2i
@pytest.mark.parametrize("preset", list(R2I.presets))
def test_every_r2i_record_is_scored_under_each_preset(r2i_built, preset):
    _, _, rows = r2i_built
    options = R2I.presets[preset]["options"]
    judge = ScriptedJudge(_r2i_reply({r["id"]: r for r in rows}, lambda request, row, valid: valid))
    results = R2I.score(rows, [IMAGE] * len(rows), judge, **options)
    excluded = sum(1 for r in results if r.context.get("excluded"))
    unscorable = [r for r in results if r.context.get("unscorable")]
    assert len(unscorable) == 85 and all(r.failure.startswith("unscorable") for r in unscorable)
    assert excluded == (0 if preset == "paper" else sum(1 for r in rows if r["category"] == "commonsense"
                                                        and f"commonsense/{r['subcategory']}"
                                                        not in r2i.OFFICIAL_SUBCATEGORIES))
    scored = [r for r in results if not r.context.get("unscorable") and not r.context.get("excluded")]
    assert len(judge.requests) == len(scored) and all(r.failure is None and r.reasks == 0 for r in scored)
    for result in scored:
        _no_silent_zero(result)
    # 0.75, 0.3, a range's middle: each answer is the score of its question
    given = Counter(q.score for r in scored for q in r.questions)
    assert given[0.75] > 50 and given[0.3] > 50 and given[0.8] > 0
    out = R2I.aggregate(results)
    assert out["overall"]["n"] == len(scored) and out["num_unscorable"] == 85
    tables = R2I.paper_tables(out, preset)
    assert any("Table 13" in t.title for t in tables) == (preset == "paper")
    if preset == "paper":
        assert out["dimensions_inferred"] and out["questions_outside_ranges"] > 0
        assert set(out["dimensions"]) == {"alignment", "reasoning", "quality"}


@needs_r2i
@pytest.mark.parametrize("preset", list(R2I.presets))
def test_every_r2i_record_survives_a_mix_of_malformed_replies(r2i_built, preset):
    _, _, rows = r2i_built

    @MIX
    @given(pool=_pool('Analysis.\n```json\n{"1": 1, "2": 0.5, "3": 0}\n```'))
    def check(pool):
        def choose(request, row, valid):
            k = _pick(row["id"], len(request.messages), n=3 * len(pool))
            return pool[k] if k < len(pool) else valid

        judge = ScriptedJudge(_r2i_reply({r["id"]: r for r in rows}, choose))
        results = R2I.score(rows, [IMAGE] * len(rows), judge, **R2I.presets[preset]["options"])
        for result in results:
            _no_silent_zero(result)
        assert sum(r.reasks for r in results) > 100
        R2I.paper_tables(R2I.aggregate(results), preset)

    check()


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
    return prompts, questions, report, load_rows(T2I, tmp / "out")


@needs_t2i
def test_the_t2i_release_builds_with_nothing_lost(t2i_built):
    prompts, questions, report, rows = t2i_built
    dims = ("idiom", "textual", "entity", "scientific")
    assert [report.configs[d]["rows"] for d in dims] == [200] * 4 and prompts == len(rows) == 800
    pairs = sum(report.configs[d]["pairs"] for d in dims)
    assert pairs == questions == 6245
    assert report.quarantine == []
    verification = report.source_info["verification"]
    assert verification["mismatched"] == [] and verification["missing"] == [] and len(verification["verified"]) == 20


@needs_t2i
def test_the_known_t2i_irregularities_are_reported(t2i_built):
    _, _, report, _ = t2i_built
    by_kind = Counter(a["kind"] for a in report.anomalies)
    criteria = {a["file"] for a in report.anomalies if a["kind"] == "structured_criterion"}
    assert by_kind["structured_criterion"] > 12 and len(criteria) == 3  # over a dozen records, three files
    assert by_kind["non_pair_key"] and by_kind["irregular_key"] and by_kind["numbering"]
    assert by_kind["dict_image_content"] == 4 and by_kind["prompt_mismatch"] == 11
    assert not by_kind["missing_file"] and not by_kind["no_rows"] and not by_kind["modified_file"]
    assert set(report.authors_scripts) == {f"evaluation/Qwen2.5-VL/eval_{d}.py"
                                           for d in ("idiom", "textual_image", "entity", "scientific")}


def _t2i_group(row, text: str) -> dict:
    """The question group a turn asks about: the one whose questions its text holds (as text, as JSON or as
    Python prints them), the first of several that tie."""

    def shown(q: str) -> tuple[str, ...]:
        return q, json.dumps(q, ensure_ascii=False)[1:-1], repr(q)[1:-1]

    def held(g) -> int:
        return sum(any(s in text for s in shown(p["question"])) for p in g["pairs"])

    return max((g for g in row["evaluation"] if g["pairs"]), key=lambda g: (held(g), -len(g["pairs"])))


def _t2i_reply(rows_by_id, choose):
    def reply(request):
        row = rows_by_id[request.metadata["id"]]
        text = request.messages[-1].text
        if text == "Describe this image.":
            return choose(request, row, "A small orange square.")
        group = _t2i_group(row, text)
        scores = [(0.0, 0.5, 1.0)[_pick(row["id"], group["group"], i, n=3)] for i in range(len(group["pairs"]))]
        valid = "```json\n" + json.dumps({"reason": ["seen"] * len(scores), "score": scores}) + "\n```"
        return choose(request, row, valid)

    return reply


@needs_t2i
@pytest.mark.parametrize("preset", list(T2I.presets))
def test_every_t2i_record_is_scored_under_each_preset(t2i_built, preset):
    *_, rows = t2i_built
    options = T2I.presets[preset]["options"]
    judge = ScriptedJudge(_t2i_reply({T2I.row_id(r): r for r in rows}, lambda request, row, valid: valid))
    results = T2I.score(rows, [IMAGE] * len(rows), judge, **options)
    failed = [r for r in results if r.score is None]
    # every group answered; an image fails only where the release gives it nothing to score
    assert all("no " in r.failure and "questions" in r.failure or "no question-criterion pairs" in r.failure
               for r in failed), [r.failure for r in failed][:3]
    assert len(failed) < 10 and sum(r.reasks for r in results) == 0
    for result in results:
        if result.score is None:
            continue
        weights = result.context["weights"]
        assert result.score == pytest.approx(math.fsum(w * result.subscores[role] for role, w in weights.items() if w))
        for role, value in result.subscores.items():
            scores = [q.score for q in result.questions if q.group == role]
            assert value == pytest.approx(sum(scores) / len(scores))
    out = T2I.aggregate(results, aggregation=options.get("aggregation", "paper"))
    assert out["overall_summary"]["n"] == len(results) - len(failed)
    titles = [t.title for t in T2I.paper_tables(out, preset)]
    assert ("T2I-ReasonBench Table 4: image score" in titles) == (options.get("aggregation", "paper") == "paper")


@needs_t2i
@pytest.mark.parametrize("preset", list(T2I.presets))
def test_every_t2i_record_survives_a_mix_of_malformed_replies(t2i_built, preset):
    *_, rows = t2i_built

    @MIX
    @given(pool=_pool('```json\n{"reason": ["a", "b"], "score": [1, 0.5]}\n```'))
    def check(pool):
        def choose(request, row, valid):
            k = _pick(T2I.row_id(row), request.messages[-1].text, len(request.messages), n=3 * len(pool))
            return pool[k] if k < len(pool) else valid

        judge = ScriptedJudge(_t2i_reply({T2I.row_id(r): r for r in rows}, choose))
        options = T2I.presets[preset]["options"]
        results = T2I.score(rows, [IMAGE] * len(rows), judge, **options)
        for result in results:
            _no_silent_zero(result, weighted=False)
            if result.score is not None:
                assert None not in [q.score for q in result.questions if q.group in result.context["weights"]
                                    and result.context["weights"][q.group]]
        assert sum(r.reasks for r in results) > 100
        T2I.paper_tables(T2I.aggregate(results, aggregation=options.get("aggregation", "paper")), preset)

    check()


# -- PRISM-Bench --------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def prism_built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("prism")
    source, root = _checkout(PRISM, PRISM_RELEASE, tmp)
    lines = {p.relative_to(root).as_posix(): sum(1 for line in p.read_bytes().split(b"\n") if line.strip())
             for p in sorted((root / "captions").glob("*/*.jsonl"))}
    report = build.build_dataset(PRISM, source, tmp / "out", license="other")
    return lines, report, load_rows(PRISM, tmp / "out", ["all"])


@needs_prism
def test_the_prism_release_builds_with_nothing_lost(prism_built):
    lines, report, rows = prism_built
    assert len(lines) == 14 and set(lines.values()) == {100}
    assert report.configs["all"]["rows"] == len(rows) == 1400 and report.quarantine == []
    assert report.configs["en"]["rows"] == report.configs["zh"]["rows"] == 700
    assert Counter((r["track"], r["language"]) for r in rows) == {(t, lang): 100 for t in TRACKS for lang in ("en", "zh")}
    assert set(report.authors_scripts) == {"evaluation/eval_gpt41.py", "evaluation/eval_qwen25.py"}
    verification = report.source_info["verification"]
    assert verification["mismatched"] == [] and len(verification["verified"]) == 16


def _prism_reply(choose):
    def reply(request):
        text = next(p for m in request.messages if m.role == "user" for p in [m.text] if p)
        score = _pick(text, n=11)
        return choose(request, text, json.dumps({"justification": "seen", "score": score}))

    return reply


@needs_prism
@pytest.mark.parametrize("preset", list(PRISM.presets))
def test_every_prism_record_is_scored_under_each_preset(prism_built, preset):
    *_, rows = prism_built
    given_scores: list[int] = []

    def keep(request, text, valid):
        given_scores.append(json.loads(valid)["score"])
        return valid

    judge = ScriptedJudge(_prism_reply(keep))
    results = PRISM.score(rows, [IMAGE] * len(rows), judge, **PRISM.presets[preset]["options"])
    assert len(judge.requests) == 2 * len(rows) == 2800 and all(r.failure is None for r in results)
    assert sorted(v for r in results for v in r.subscores.values()) == sorted(10 * s for s in given_scores)
    # the per-image reward is on 0-1, its two axes on the tables' 0-100
    assert all(r.score == pytest.approx((r.subscores["alignment"] + r.subscores["aesthetic"]) / 200) for r in results)
    out = PRISM.aggregate(results)
    assert set(out["by_language"]) == {"en", "zh"} and len(out["tracks"]) == 7
    if out["protocol"] == "paper":  # the paper's final score: the mean over the seven tracks
        assert out["prism_score"] == pytest.approx(sum(t["average"] for t in out["tracks"].values()) / 7)
    else:
        assert out["prism_score"] == pytest.approx(sum(given_scores) * 10 / len(given_scores))
    PRISM.paper_tables(out, preset)


@needs_prism
@pytest.mark.parametrize("preset", list(PRISM.presets))
def test_every_prism_record_survives_a_mix_of_malformed_replies(prism_built, preset):
    *_, rows = prism_built

    @MIX
    @given(pool=_pool('{"justification": "fine", "score": 7}'))
    def check(pool):
        def choose(request, text, valid):
            k = _pick(text, len(request.messages), n=3 * len(pool))
            return pool[k] if k < len(pool) else valid

        options = PRISM.presets[preset]["options"]
        results = PRISM.score(rows, [IMAGE] * len(rows), ScriptedJudge(_prism_reply(choose)), **options)
        failed = [r for r in results if r.score is None]
        assert failed and all(r.failure for r in failed)
        for r in results:  # an axis not counted is None and its cause recorded, never a 0
            _no_silent_zero(r, weighted=False)
            for axis, outcome in r.context["outcome"].items():
                assert (outcome == "counted") == (r.subscores[axis] is not None)
        PRISM.paper_tables(PRISM.aggregate(results), preset)

    check()


# -- the recorded hashes ------------------------------------------------------------------------------

@needs_prism
def test_a_modified_file_is_reported_and_strict_refuses_it(tmp_path):
    """A copy of the release with one file changed: kept and reported (the project's rule for anything
    irregular), an error under --strict; the pinned fetch itself enforces the hashes (tests/test_releases.py)."""
    source, root = _checkout(PRISM, PRISM_RELEASE, tmp_path)
    copy = tmp_path / "copy"
    shutil.copytree(root, copy)
    target = copy / "captions" / "en" / "style.jsonl"
    target.write_bytes(target.read_bytes().replace(b'"prompt"', b'"prompt" ', 1))
    report = build.build_dataset(PRISM, copy, tmp_path / "out", license="other")
    [modified] = [a for a in report.anomalies if a["kind"] == "modified_file"]
    assert modified["file"] == "captions/en/style.jsonl" and "SHA-256 differs" in modified["detail"]
    assert report.configs["all"]["rows"] == 1400
    assert "not the recorded files" in report.summary() and "1 differ (captions/en/style.jsonl)" in report.summary()
    with pytest.raises(build.BuildError, match="--strict"):
        build.build_dataset(PRISM, copy, tmp_path / "strict", license="other", strict=True)
