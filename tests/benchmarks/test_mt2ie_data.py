"""MT2IE data: the shipped seed prompts, the schema of a finished run, and building both as a Hub dataset."""

import json
import shutil

import datasets
import pytest
from huggingface_hub import DatasetCard
from PIL import Image

from t2ireason import build
from t2ireason.benchmarks import ReleaseError, get_benchmark
from t2ireason.benchmarks.mt2ie import CATEGORIES, RUN_FEATURES, SEED_FEATURES

BENCH = get_benchmark("mt2ie")


def test_shipped_seed_prompts_follow_the_paper():
    release = BENCH.read_release(BENCH.sample_path())
    seeds = release.configs["seed_prompts"]
    assert release.anomalies == [] and "runs" not in release.configs
    # several per category, in the paper's four categories, each moderately complex (2-3 concepts)
    assert release.counts["seed_prompts"] == dict.fromkeys(CATEGORIES, 4)
    assert all(2 <= len(s["concepts"]) <= 3 for s in seeds)
    assert len({s["id"] for s in seeds}) == len({s["prompt"] for s in seeds}) == 16
    assert BENCH.image_path(seeds[0]) == "seed_prompts/household-01.png"


@pytest.fixture
def run_release(tmp_path):
    src = tmp_path / "mt2ie"
    (src / "runs" / "img").mkdir(parents=True)
    shutil.copy(BENCH.sample_path() / "seed_prompts.jsonl", src)
    prompts = ["a brown dog sleeping on a blue rug", "a brown dog sleeping on a blue rug next to a red ball",
               "a brown dog sleeping on a blue rug next to a red ball and a green chair"]
    lines = []
    for i, prompt in enumerate(prompts):
        Image.new("RGB", (8, 8), (40 * i, 0, 0)).save(src / "runs" / "img" / f"{i}.png")
        lines.append({"model": "tiny-sd", "evaluator": "hf:tiny-llava", "mode": "adaptive", "seed": 3,
                      "seed_prompt_id": "animals-01", "iteration": i, "prompt": prompt, "image": f"img/{i}.png",
                      "image_seed": 1000 + i, "score": 0.9 - 0.3 * i if i < 2 else None, "difficulty": 1.5 + i,
                      "difficulty_method": "word_count", "adaptive_bin": None if i == 0 else "increase",
                      "judge_replies": [f"Prompt: {prompt}"], "failure": "judge gave no Yes/No" if i == 2 else None})
    lines.append({"model": "tiny-sd", "mode": "iterative", "seed": 3, "seed_prompt_id": "people-01",
                  "iteration": 1, "prompt": "a woman in a yellow raincoat", "image": None, "score": 0.5})
    (src / "runs" / "tiny-sd.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return src


def test_build_seed_prompts_and_runs(run_release, tmp_path):
    out = tmp_path / "out"
    report = build.build_dataset("mt2ie", run_release, out)
    seeds = datasets.load_dataset(str(out), "seed_prompts", split="test")
    runs = datasets.load_dataset(str(out), "runs", split="test")
    assert seeds.features == SEED_FEATURES and runs.features == RUN_FEATURES
    assert seeds[4] == {"id": "people-01", "category": "people",
                        "prompt": "a woman in a yellow raincoat holding an umbrella",
                        "concepts": ["woman", "yellow raincoat", "holding an umbrella"]}
    first = runs[0]
    assert first["id"] == "tiny-sd/adaptive/seed3/animals-01/0" and first["category"] == "animals"
    assert first["image"].getpixel((0, 0)) == (0, 0, 0) and runs[1]["image"].getpixel((0, 0)) == (40, 0, 0)
    assert runs[2]["score"] is None and runs[2]["failure"] == "judge gave no Yes/No"
    assert runs[1]["adaptive_bin"] == "increase" and runs[1]["judge_replies"] == [f"Prompt: {runs[1]['prompt']}"]

    assert report.configs["runs"] == {"rows": 4, "runs": 2, "models": 1, "failed": 1}
    assert report.anomaly_counts() == {"unscored": 1, "missing_iteration": 1}
    missing = next(a for a in report.anomalies if a["kind"] == "missing_iteration")
    assert missing["detail"] == "run tiny-sd/iterative/seed3/people-01: iterations [0]"
    card = DatasetCard.load(out / "README.md")
    assert card.data.license == "apache-2.0" and card.data.task_categories == ["text-to-image"]
    assert {c["config_name"] for c in card.data["configs"]} == {"seed_prompts", "runs"}
    assert "### Config `runs`" in card.text and "| `difficulty` | float64 | prompt difficulty" in card.text
    assert not (out / "eval.yaml").exists()


@pytest.mark.parametrize("line, message", [
    ("{not json", r"seed_prompts.jsonl, line 17: not valid JSON"),
    ('{"id": "people-01", "category": "people", "prompt": "a man"}', r"line 17: duplicate id 'people-01'"),
    ('{"id": "x", "category": "people", "prompt": " "}', r"line 17: missing 'prompt'"),
    ('{"id": "x", "category": "people", "prompt": "a man", "concept": []}', r"line 17: unknown field\(s\) \['concept'\]"),
])
def test_bad_seed_prompts_name_file_and_line(run_release, tmp_path, line, message):
    with open(run_release / "seed_prompts.jsonl", "a") as f:
        f.write(line + "\n")
    with pytest.raises(ReleaseError, match=message):
        build.build_dataset("mt2ie", run_release, tmp_path / "out")


def test_bad_runs_name_file_and_line(run_release, tmp_path):
    (run_release / "runs" / "img" / "1.png").unlink()
    with pytest.raises(ReleaseError, match=r"tiny-sd.jsonl, line 2: image img/1.png not found"):
        BENCH.read_release(run_release)
    (run_release / "runs" / "bad.jsonl").write_text('{"model": "m", "mode": "greedy", "seed": 1}\n')
    with pytest.raises(ReleaseError, match=r"bad.jsonl, line 1: missing seed_prompt_id, iteration, prompt"):
        BENCH.read_release(run_release)
    (run_release / "seed_prompts.jsonl").unlink()
    with pytest.raises(ReleaseError, match=r"seed_prompts.jsonl: missing"):
        BENCH.read_release(run_release)


def test_build_script_on_the_sample(tmp_path, capsys, monkeypatch):
    import runpy
    import sys
    from pathlib import Path

    script = Path(__file__).parents[2] / "datasets_scripts" / "build.py"
    monkeypatch.setattr(sys, "argv", [str(script), "mt2ie", "--source", str(BENCH.sample_path()),
                                      "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit) as exit_info:
        runpy.run_path(str(script), run_name="__main__")
    assert exit_info.value.code == 0
    assert datasets.load_dataset(str(tmp_path / "o"), "seed_prompts", split="test").num_rows == 16
    out = capsys.readouterr().out
    assert "seed_prompts: 16 rows, household scenes 4, people 4, animals 4, locations 4" in out
    assert "not in this release: runs" in out and "no anomalies" in out
