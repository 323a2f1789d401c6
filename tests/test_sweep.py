"""`t2ireason sweep`: T2I-ReasonBench Table 1's question LLM x judge combinations in one command, each pair an
evaluation of the run asking that LLM's questions; made questions and finished pairs never asked twice; the
agreement table a row per pair, labelled by its LLM and its judge (scripted LLMs and judges, and one over HTTP)."""

from __future__ import annotations

import json
import re

import datasets
import pytest
from PIL import Image

from t2ireason import cli
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.runs import Run, RunError
from t2ireason.sweep import RELEASE, read_sweep, sweep
from t2ireason.testing_http import serve

#: in a stage-1 template (Figures 9 to 12), each group's key and the pairs asked of it
_ASKED = re.compile(r"'(\w+_evaluation)':\s*\((?:[^()]*?)\bwith (\d+)-(\d+) pairs")


def stage1_reply(name: str, text: str) -> str:
    """The stage-1 questions of LLM ``name`` for the template ``text``, as few pairs per group as it asks, each
    question starting with the LLM's name."""
    value = {"image_content": f"what {name} imagines"}
    for group, lo, _ in _ASKED.findall(text):
        value[group] = {}
        for n in range(1, int(lo) + 1):
            value[group] |= {f"q{n}": f"{name}: question {n} of {group}?", f"c{n}": "1: yes, 0.5: partly, 0: no"}
    return json.dumps(value)


class QuestionLLM(ScriptedJudge):
    def __init__(self, name: str):
        super().__init__(lambda r: stage1_reply(name, r.messages[-1].text), model=name)


def judge_reply(text: str, by_llm: dict[str, float]) -> str:
    """Describe the image; then score every question of a group by the LLM that wrote it (0.5 when none of
    ``by_llm`` did: the release's)."""
    if text == "Describe this image.":
        return "An image."
    pairs = json.loads(re.search(r"criteria: (\{.*\})$", text, re.M).group(1))
    questions = [pairs[f"q{i}"] for i in range(1, len(pairs) // 2 + 1)]
    score = next((s for llm, s in by_llm.items() if questions[0].startswith(f"{llm}:")), 0.5)
    return json.dumps({"reason": ["seen"] * len(questions), "score": [score] * len(questions)})


class Judge(ScriptedJudge):
    def __init__(self, name: str, by_llm: dict[str, float]):
        super().__init__(lambda r: judge_reply(r.messages[-1].text, by_llm), model=name)


def _run(folder, limit=None) -> Run:
    run = Run.create(folder, "t2i-reasonbench", limit=limit)
    for i, row in enumerate(run.rows()):
        path = run.images_dir / run.bench.image_path(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (16, 16), (40 * i % 256, 90, 160)).save(path)
    return run


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sweep")
    run = _run(tmp / "model-a")
    llms = [QuestionLLM("llm-a"), QuestionLLM("llm-b")]
    judges = [Judge("judge-x", {"llm-a": 1.0, "llm-b": 0.0}), Judge("judge-y", {"llm-a": 0.5, "llm-b": 1.0})]
    lines = []
    done = sweep(run, [RELEASE, *llms], judges, cache=False, criteria_cache=tmp / "criteria.sqlite", say=lines.append)
    return run, llms, judges, done, lines, tmp


def test_every_llm_x_judge_is_an_evaluation_asking_that_llms_questions(swept):
    run, llms, judges, done, lines, _ = swept
    pairs = [(p.llm, p.judge) for p in done["pairs"]]
    assert pairs == [(llm, judge) for llm in ("the sample's", "llm-a", "llm-b")
                     for judge in ("judge-x", "judge-y")]
    assert [p.evaluation for p in done["pairs"]][:3] == ["release--scripted-judge-x", "release--scripted-judge-y",
                                                         "scripted-llm-a--scripted-judge-x"]
    assert set(run.evaluations()) == {p.evaluation for p in done["pairs"]}
    # each LLM wrote every prompt's questions once, one request a prompt (16 in the sample)
    assert [len(llm.requests) for llm in llms] == [16, 16]
    # each pair's judge answered that LLM's questions: the scores show whose (the release's: 0.5 from both)
    overall = {(p.llm, p.judge): run.scores(p.evaluation)["aggregate"]["overall"] for p in done["pairs"]}
    assert overall == pytest.approx({("the sample's", "judge-x"): 50.0, ("the sample's", "judge-y"): 50.0,
                                     ("llm-a", "judge-x"): 100.0, ("llm-a", "judge-y"): 50.0,
                                     ("llm-b", "judge-x"): 0.0, ("llm-b", "judge-y"): 100.0})
    asked = {q.question for r in run.results("scripted-llm-b--scripted-judge-y") for q in r.questions}
    assert asked and all(q.startswith("llm-b: ") for q in asked)
    assert run.scores("release--scripted-judge-x")["settings"].get("questions") is None
    assert run.scores("scripted-llm-a--scripted-judge-x")["settings"]["questions"] == "./questions/scripted-llm-a"
    # each LLM's questions are a dataset of the benchmark's schema, every dimension and all of them
    folder = run.path / "questions" / "scripted-llm-a"
    assert sorted(datasets.get_dataset_config_names(str(folder))) == ["all", "entity", "idiom", "scientific", "textual"]
    made = datasets.load_dataset(str(folder), "all", split="test")
    assert [run.bench.row_id(r) for r in made] == [run.bench.row_id(r) for r in run.rows()]
    # Table 1's rows: one per LLM x judge, each dimension's score and the overall
    table = done["table"]
    assert list(table.rows) == [f"{a} × {b}" for a, b in pairs]
    assert table.rows["llm-b × judge-y"]["Overall"].value == pytest.approx(100.0)
    assert "| llm-a × judge-x |" in (run.path / "sweep.md").read_text()
    assert [p.evaluation for p in read_sweep(run)] == [p.evaluation for p in done["pairs"]]
    assert any(line.startswith("questions by llm-a: 16 made, 0 from the cache") for line in lines)


def test_the_report_shows_the_sweep_a_row_per_pair(swept, tmp_path):
    from t2ireason.report.writer import write_report

    run, *_ = swept
    markdown = write_report([run], tmp_path / "report")["markdown"]
    assert "T2I-ReasonBench: each question LLM × judge (Table 1's rows): model-a" in markdown
    assert "| llm-b × judge-y |" in markdown and "| the sample's × judge-x |" in markdown


def test_a_second_sweep_asks_nothing_again(swept):
    run, llms, judges, done, _, tmp = swept
    before = [len(j.requests) for j in (*llms, *judges)]
    again = sweep(run, [RELEASE, *llms], judges, cache=False, criteria_cache=tmp / "criteria.sqlite")
    assert [len(j.requests) for j in (*llms, *judges)] == before  # questions from the cache, pairs finished
    assert [p.evaluation for p in again["pairs"]] == [p.evaluation for p in done["pairs"]]


def test_the_agreement_table_has_a_row_per_llm_x_judge(swept, tmp_path, capsys):
    run, *_ = swept
    out = tmp_path / "study"
    assert cli.main(["rate", str(run.path), "--out", str(out), "--per-group", "4"]) == 0
    study = json.loads((out.parent / f"{out.name}.key.json").read_text())
    from tests.study.runs import ratings_file

    for rater in study["raters"]:
        answers = ratings_file(study, rater, lambda it: {"value": 1 + sum(map(ord, it["id"])) % 5})
        (out / "ratings").mkdir(exist_ok=True)
        (out / "ratings" / f"{rater}.json").write_text(json.dumps(answers))
    assert cli.main(["agreement", str(run.path), "--ratings", str(out / "ratings")]) == 0
    printed = capsys.readouterr().out
    for llm in ("the sample's", "llm-a", "llm-b"):
        for judge in ("judge-x", "judge-y"):
            assert f"| T2I-ReasonScore ({llm} × {judge}) |" in printed
    assert "T2I-ReasonBench Table 1: correlation with human ratings" in printed


def test_questions_for_other_prompts_are_refused_before_any_judge_is_asked(swept, tmp_path):
    from t2ireason.sweep import make_questions

    run, *_ = swept
    few = _run(tmp_path / "few", limit=2)  # questions made for two of the sample's prompts only
    folder, _ = make_questions(few, QuestionLLM("llm-c"), criteria_cache=False)
    judge = Judge("judge-z", {})
    with pytest.raises(RunError, match=r"not those of the prompts of run model-a: no row for 14 \(idiom-0003"):
        run.evaluate(judge, name="z", cache=False, progress=False, questions=folder)
    assert judge.requests == [] and "z" not in run.evaluations()


def test_the_sweep_command_over_http(tmp_path, capsys):
    run = _run(tmp_path / "model-b", limit=2)

    def reply(request):
        if "_evaluation'" in request.text:  # a stage-1 template: the question LLM
            return stage1_reply("llm-h", request.text)
        if "criteria:" in request.text or request.text == "Describe this image.":
            return judge_reply(request.text, {"llm-h": 1.0})
        return json.dumps({"answer": "yes"})  # the backends' probes

    with serve(reply) as server:
        code = cli.main(["sweep", "--run", str(run.path), "--llm", "release", "--llm",
                         f"openai:llm-h@{server.base_url}", "--judge", f"openai:judge-h@{server.base_url}",
                         "--no-cache", "--criteria-cache", str(tmp_path / "c.sqlite"), "--no-progress"])
    printed, err = capsys.readouterr()
    assert code == 0, err
    assert "| the sample's × judge-h |" in printed and "| llm-h × judge-h |" in printed
    assert run.scores("openai-llm-h--openai-judge-h")["aggregate"]["overall"] == pytest.approx(100.0)


def test_the_releases_questions_are_deepseek_r1s(tmp_path):
    """T2I-ReasonBench's release holds the stage-1 questions DeepSeek-R1 wrote (Table 1's "Deepseek" rows)."""
    from t2ireason.build import build_dataset

    bench = Run.create(tmp_path / "r", "t2i-reasonbench").bench
    build_dataset(bench, bench.sample_path(), tmp_path / "built", license="other")
    run = Run.create(tmp_path / "built-run", "t2i-reasonbench", data=tmp_path / "built")
    assert run.questions_by() == "DeepSeek-R1 (the release's)"
    assert Run.create(tmp_path / "r2i", "r2i-bench", data=None).questions_by() == "the sample's"
