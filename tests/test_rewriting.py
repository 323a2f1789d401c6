"""The decoupled baselines: prompts rewritten (or described) by an LLM through the judge layer,
saved as a dataset, and drawn instead of the originals by the generator."""

import json

import datasets
import pytest

from t2ireason import cli, testing
from t2ireason.benchmarks import get_benchmark
from t2ireason.commands.options import load_prompt_overrides
from t2ireason.data import load_rows
from t2ireason.judges import Reply
from t2ireason.judges.scripted import ScriptedJudge
from t2ireason.rewriting import REPLY_SCHEMA, rewrite_prompts, save_rewrites

BENCH = "t2i-reasonbench"


def test_rewrites_are_asked_parsed_reasked_and_failures_kept(tmp_path):
    rows = load_rows(BENCH)[:3]

    def reply(request):
        text = request.messages[0].text
        if "spilled the beans" in text:  # the first prompt: malformed every time
            return "I would draw a dinner."
        if len(request.messages) > 1:  # a re-ask of the second one: now well formed
            return json.dumps({"reasoning": "fixed", "prompt": "an explicit scene"})
        if request is judge_requests[1]:
            return '{"reasoning": "r"}'  # no prompt: re-asked
        return json.dumps({"reasoning": "an idiom", "prompt": "  a girl telling a secret  "})

    judge_requests = []
    judge = ScriptedJudge(lambda r: (judge_requests.append(r), reply(r))[1])
    records = rewrite_prompts(BENCH, rows, judge, mode="rewrite", max_reasks=1, progress=False)
    first = judge_requests[:3]
    assert all(r.json_schema == REPLY_SCHEMA for r in first)
    assert all(f'"{row["prompt"]}"' in r.messages[0].text for row, r in zip(rows, first))

    assert records[0]["rewritten_prompt"] is None and "no JSON" in records[0]["failure"]
    assert len(records[0]["replies"]) == 2  # the reply and its re-ask, both kept
    assert records[1]["rewritten_prompt"] == "an explicit scene" and records[1]["failure"] is None
    assert records[2]["rewritten_prompt"] == "a girl telling a secret" and records[2]["reasoning"] == "an idiom"
    assert [r["id"] for r in records] == [get_benchmark(BENCH).row_id(row) for row in rows]

    path = save_rewrites(records, tmp_path / "rw")
    ds = datasets.load_dataset("parquet", data_files=str(path), split="train")
    assert ds["rewritten_prompt"] == [None, "an explicit scene", "a girl telling a secret"]
    # a rewrite that failed is never replaced by the original prompt in silence
    with pytest.raises(SystemExit, match="1 rows of .* have no rewritten prompt"):
        load_prompt_overrides(str(path))


def test_backend_failures_are_recorded_not_dropped():
    rows = load_rows(BENCH)[:2]
    judge = ScriptedJudge(lambda r: Reply(text="", model="m", sampling={}, error="HTTP 500")
                          if rows[0]["prompt"] in r.messages[0].text else json.dumps({"reasoning": "r", "prompt": "p"}))
    records = rewrite_prompts(BENCH, rows, judge, mode="describe", progress=False)
    assert [r["rewritten_prompt"] for r in records] == [None, "p"] and "HTTP 500" in records[0]["failure"]
    with pytest.raises(ValueError, match="mode must be one of"):
        rewrite_prompts(BENCH, rows, judge, mode="paint")


@pytest.mark.slow
def test_rewrite_then_generate_from_the_rewrites(tiny_models, tmp_path, capsys):
    kwargs = json.dumps({"device": "cpu", **testing.tiny_judge_kwargs(tiny_models["vlm"])})
    code = cli.main(["rewrite", "--benchmark", BENCH, "--limit", "3", "--judge", f"hf:{tiny_models['vlm']}",
                     "--judge-kwargs", kwargs, "--no-cache", "--out", str(tmp_path / "rw")])
    assert code == 0, capsys.readouterr()
    assert "3 of 3 prompts rewritten (0 failed)" in capsys.readouterr().out  # the schema is enforced locally
    rewrites = datasets.load_dataset("parquet", data_files=str(tmp_path / "rw" / "rewrites.parquet"), split="train")

    code = cli.main(["generate", "--benchmark", BENCH, "--limit", "3", "--model", str(tiny_models["sd"]),
                     "--out", str(tmp_path / "img"), "--steps", "2", "--height", "64", "--width", "64",
                     "--prompts", str(tmp_path / "rw" / "rewrites.parquet"), "--no-progress"])
    assert code == 0
    manifest = datasets.load_dataset(str(tmp_path / "img"), split="train")
    drawn = dict(zip(manifest["prompt_id"], manifest["prompt"]))
    assert drawn == dict(zip(rewrites["id"], rewrites["rewritten_prompt"]))
