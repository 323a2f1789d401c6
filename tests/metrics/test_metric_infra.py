"""The shared metric machinery (t2ireason.metric): JudgedMetric with a toy benchmark
registered here, evaluate's distributed mode, loading by bare name, and publishing Spaces."""

from __future__ import annotations

import threading
from pathlib import Path

import datasets
import evaluate
import numpy as np
import pytest
from PIL import Image

import t2ireason
from t2ireason import judges
from t2ireason import metric as tm
from t2ireason.benchmarks import Benchmark
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.results import ImageResult

ROOT = Path(__file__).resolve().parents[2]


SAMPLING = judges.Sampling(temperature=0.1, max_tokens=64)


def brightness(query) -> float:
    """A scripted probability that depends only on the image's pixels."""
    return float(np.asarray(query.image.image).mean() / 255)


class ToyBench(Benchmark):
    """Scores an image by P(Yes) of its prompt, times a ``scale`` option."""

    name = "toy"
    pretty_name = "Toy"
    configs = ("all",)
    presets = {
        "paper": {"judge": "scripted:paper"},
        "official": {"judge": "scripted:official", "judge_kwargs": {"batch_size": 2, "sampling": SAMPLING},
                     "options": {"scale": 100.0}},
        "bare": {},
    }

    @property
    def features(self):
        return datasets.Features({"id": datasets.Value("string"), "prompt": datasets.Value("string")})

    def read_release(self, source, **options):
        raise NotImplementedError

    def score(self, rows, images, judge, *, progress=False, scale=1.0):
        probs = judge.yes_probability(images, [r["prompt"] for r in rows])
        return [ImageResult(id=r["id"], prompt=r["prompt"], score=p * scale) for r, p in zip(rows, probs)]

    def aggregate(self, results, scale=1.0):
        return {"toy_score": float(np.mean([r.score for r in results]))}


TOY_SHELL = '''
import evaluate

from t2ireason import metric as tm


class ToyScore(tm.JudgedMetric):
    """A toy judged metric."""

    benchmark_name = "toy"

    def _info(self):
        return self._judged_info(description="toy", citation="", inputs_description="toy inputs")
'''


@pytest.fixture
def loads(monkeypatch):
    """Register the toy benchmark; every judge load is recorded as (spec, kwargs)."""
    real = tm.get_benchmark
    monkeypatch.setattr(tm, "get_benchmark", lambda name: ToyBench() if name == "toy" else real(name))
    calls = []

    def fake_load_judge(spec, *, cache=None, **kwargs):
        calls.append((spec, kwargs))
        if not isinstance(spec, str):  # a judge object is used as given
            return spec
        return ScriptedJudge(probabilities=brightness, model=spec.split(":", 1)[1], **kwargs)

    monkeypatch.setattr(judges, "load_judge", fake_load_judge)
    return calls


@pytest.fixture
def toy_path(tmp_path):
    folder = tmp_path / "toy_score"
    folder.mkdir()
    (folder / "toy_score.py").write_text(TOY_SHELL)
    return str(folder)


@pytest.fixture
def images():
    return [Image.new("RGB", (16, 16), (v, v, v)) for v in (51, 102, 204, 255)]


ROWS = [{"id": k, "prompt": f"prompt {k}"} for k in "abcd"]
EXPECTED = [0.2, 0.4, 0.8, 1.0]


def test_scores_rows_with_the_preset_judge_loaded_once(loads, toy_path, images):
    m = evaluate.load(toy_path)
    for _ in range(3):
        out = m.compute(predictions=images, references=ROWS)
    assert out["scores"] == pytest.approx(EXPECTED)
    assert out["toy_score"] == pytest.approx(np.mean(EXPECTED))
    assert [r["id"] for r in out["per_image"]] == list("abcd")
    assert out["num_images"] == 4 and out["num_failed"] == 0
    assert out["judge"]["model"] == "paper" and out["judge"]["preset"] == "paper"
    assert loads == [("scripted:paper", {})]


def test_presets_bring_judge_kwargs_and_options_and_a_given_judge_wins(loads, toy_path, images):
    out = evaluate.load(toy_path, preset="official").compute(predictions=images, references=ROWS)
    assert out["scores"] == pytest.approx([100 * e for e in EXPECTED])
    assert out["judge"]["preset"] == "official"
    assert loads[-1] == ("scripted:official", {"batch_size": 2, "sampling": SAMPLING})
    assert out["judge"]["sampling"] == SAMPLING.to_dict()

    m = evaluate.load(toy_path, preset="official", judge="scripted:mine", judge_kwargs={"batch_size": 3})
    assert m.compute(predictions=images[:1], references=ROWS[:1])["judge"]["model"] == "mine"
    assert loads[-1] == ("scripted:mine", {"batch_size": 3, "sampling": SAMPLING})


def test_another_judge_takes_the_presets_sampling_but_not_its_backend_settings(loads, toy_path, images):
    evaluate.load(toy_path, preset="official", judge="scripted:mine").compute(predictions=images, references=ROWS)
    assert loads[-1] == ("scripted:mine", {"sampling": SAMPLING})  # no batch_size: that was for the preset's judge
    own = judges.Sampling(temperature=0.0)
    evaluate.load(toy_path, preset="official", judge="scripted:mine",
                  judge_kwargs={"sampling": own}).compute(predictions=images, references=ROWS)
    assert loads[-1] == ("scripted:mine", {"sampling": own})
    evaluate.load(toy_path, preset="official", judge="scripted:official").compute(predictions=images, references=ROWS)
    assert loads[-1] == ("scripted:official", {"batch_size": 2, "sampling": SAMPLING})  # the preset's own judge


def test_preset_errors(loads, toy_path, images):
    with pytest.raises(ValueError, match="unknown preset 'nope' for toy; known: paper, official, bare"):
        evaluate.load(toy_path, preset="nope")
    m = evaluate.load(toy_path, preset="bare")
    with pytest.raises(ValueError, match="no judge given and the 'bare' preset of toy names none"):
        m.compute(predictions=images, references=ROWS)


def test_judge_object(loads, toy_path, images):
    judge = ScriptedJudge(probabilities=[0.5] * 4, model="object")
    out = evaluate.load(toy_path, judge=judge, cache=False).compute(predictions=images, references=ROWS)
    assert out["scores"] == [0.5] * 4 and out["judge"]["model"] == "object"
    assert loads == [(judge, {})]


@pytest.mark.parametrize("via", ["compute", "add_batch"])
def test_clear_input_errors(loads, toy_path, images, via):
    m = evaluate.load(toy_path)
    call = m.compute if via == "compute" else m.add_batch
    with pytest.raises(ValueError, match=r"got 1 images \(predictions\) but 2 rows \(references\)"):
        call(predictions=images[:1], references=ROWS[:2])
    with pytest.raises(ValueError, match=r"references\[1\] lacks field\(s\) \['prompt'\]: is it a toy row\?"):
        call(predictions=images[:2], references=[ROWS[0], {"id": "b"}])
    with pytest.raises(ValueError, match=r"references\[0\] is a str; pass the rows as load_dataset returns them"):
        call(predictions=images[:1], references=["prompt a"])
    with pytest.raises(ValueError, match=r"predictions\[1\] \(the image for 'b'\) is None"):
        call(predictions=[images[0], None], references=ROWS[:2])
    with pytest.raises(ValueError, match="pass both predictions"):
        call(predictions=images[:1], references=None)
    assert loads == []  # nothing reached a judge


def test_wrong_types_are_refused_clearly(loads, toy_path, images):
    m = evaluate.load(toy_path)
    with pytest.raises(ValueError, match=r"predictions\[0\] is a int"):
        m.compute(predictions=[3], references=ROWS[:1])
    with pytest.raises(ValueError, match="references don't match the expected format"):
        m.compute(predictions=images[:1], references=[{"id": 1, "prompt": "x"}])


def test_images_as_pil_and_paths_give_the_same_scores_on_both_paths(loads, toy_path, images, tmp_path):
    paths = []
    for i, img in enumerate(images):
        paths.append(str(tmp_path / f"{i}.png"))
        img.save(paths[-1])
    m = evaluate.load(toy_path)
    direct_pil = m.compute(predictions=images, references=ROWS)["scores"]
    direct_paths = m.compute(predictions=paths, references=ROWS)["scores"]
    m.add_batch(predictions=images[:2], references=ROWS[:2])
    m.add_batch(predictions=images[2:], references=ROWS[2:])
    arrow_pil = m.compute()["scores"]
    m.add_batch(predictions=paths, references=ROWS)
    arrow_paths = m.compute()["scores"]
    assert direct_pil == direct_paths == arrow_pil == arrow_paths == pytest.approx(EXPECTED)


def test_the_direct_path_hands_over_what_evaluates_cache_would(loads, toy_path):
    m = evaluate.load(toy_path)
    assert m._arrow_round_trip(ROWS) == ROWS
    assert m._arrow_round_trip([{"id": "a", "prompt": "p", "extra": 1}]) == [{"id": "a", "prompt": "p"}]
    with pytest.raises(ValueError, match="expected format"):
        m._arrow_round_trip([{"id": "a", "prompt": 5}])


@pytest.mark.parametrize("given", ["compute", "add_batch"])
def test_distributed_mode_each_process_judges_its_rows_and_process_0_combines(loads, toy_path, images, tmp_path,
                                                                               given):
    """As found (issue 41): with num_process=2 every row went to process 0, which judged them all while the
    other waited. Now each process judges the rows it was given; process 0 gathers (evaluate's cache files)
    and combines their scores, in evaluate's order."""
    common = {"num_process": 2, "experiment_id": "toy-run", "cache_dir": str(tmp_path / "cache")}
    modules = [evaluate.load(toy_path, process_id=i, **common) for i in range(2)]
    halves = [(images[:2], ROWS[:2]), (images[2:], ROWS[2:])]
    results, errors = [None, None], []

    def run(i):
        try:
            if given == "compute":
                results[i] = modules[i].compute(predictions=halves[i][0], references=halves[i][1])
            else:
                for image, row in zip(*halves[i]):
                    modules[i].add_batch(predictions=[image], references=[row])
                results[i] = modules[i].compute()
        except Exception as e:  # surfaced below, not lost in the thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    assert results[1] is None
    assert [r["id"] for r in results[0]["per_image"]] == list("abcd")
    assert results[0]["scores"] == pytest.approx(EXPECTED)
    assert len(loads) == 2  # each process loads its judge...
    asked = [[q.question for q in m._judge.queries] for m in modules]
    assert asked == [["prompt a", "prompt b"], ["prompt c", "prompt d"]]  # ...and judges its own rows alone
    assert not list((tmp_path / "cache").rglob("*.records.json"))  # the processes' records, once combined, removed


def test_load_metric_by_bare_name():
    assert {"vqascore", "clip_score", "meta_evaluation"} <= set(tm.known_metrics())
    assert Path(tm.metric_path("Meta-Evaluation")) == Path(t2ireason.__file__).parent / "metrics" / "meta_evaluation"
    m = t2ireason.load_metric("meta_evaluation", config_name="preference")
    assert m.name == "meta_evaluation" and m.config_name == "preference"
    assert m.compute(predictions=[[1.0, 0.0]], references=["A"])["pairwise_accuracy"] == 1.0
    with pytest.raises(ValueError, match=r"unknown metric 'nope'; known: .*meta_evaluation.*vqascore"):
        t2ireason.load_metric("nope")


@pytest.mark.parametrize("via", ["compute", "add_batch"])
def test_a_missing_image_file_is_the_callers_mistake_said_before_any_judge_call(loads, toy_path, images, tmp_path,
                                                                                 via):
    """As found (issue 34 item 5): a wrong path gave a NaN score with no warning, its cause only in
    ``per_image[i]["failure"]``. Now the call raises at once, with how many files are missing and the first."""
    images[0].save(tmp_path / "a.png")
    given = [str(tmp_path / "a.png"), str(tmp_path / "b.png"), tmp_path / "c.png", {"path": str(tmp_path / "d.png"),
                                                                                   "bytes": None}]
    m = evaluate.load(toy_path)
    with pytest.raises(FileNotFoundError, match=r"3 of 4 image files do not exist: predictions\[1\] = '.*b\.png', "
                                                r"predictions\[2\] = '.*c\.png', predictions\[3\] = '.*d\.png'$"):
        if via == "compute":
            m.compute(predictions=given, references=ROWS)
        else:  # evaluate's own path: the batches in its Arrow cache, the images as {"bytes", "path"}
            m.add_batch(predictions=given[:2], references=ROWS[:2])
            m.add_batch(predictions=given[2:], references=ROWS[2:])
            m.compute()
    assert loads == []  # no judge was loaded, none asked
    assert m.compute(predictions=[str(tmp_path / "a.png")], references=ROWS[:1])["scores"] == pytest.approx([0.2])
