"""A local judge's checkpoint is checked before anything is made (issue 34, item 1): a mistyped folder (with
"did you mean"), a Hub id missing from the cache offline (the presets' default judges among them), a folder
without config.json, a model transformers does not load as a vision-language model: one line from
`t2ireason run`, `evaluate` and `engine run`, and no folder created."""

from __future__ import annotations

import json
import shutil

import pytest

from t2ireason import cli
from t2ireason.judges import JudgeError, validate_judge
from t2ireason.judges.checkpoints import check_checkpoint

QWEN72 = "Qwen/Qwen2.5-VL-72B-Instruct"


def one_error(capsys, *argv: str) -> str:
    """``t2ireason <argv>`` in this process: exit status 2 and one `error:` line."""
    assert cli.main(list(argv)) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    return lines[0]


def test_a_mistyped_folder_is_named_with_the_closest_one(tiny_models, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copytree(tiny_models["vlm"], tmp_path / "tiny" / "vlm")
    (tmp_path / "images").mkdir()
    line = one_error(capsys, "evaluate", "--run", "run", "--benchmark", "r2i-bench", "--limit", "1", "--images",
                     "images", "--judge", "hf:tiny/vlmm")  # org/name in form, but tiny/ is a folder here
    assert line == "error: judge model folder 'tiny/vlmm' does not exist (did you mean 'tiny/vlm'?)"
    line = one_error(capsys, "engine", "run", "--work", "work", "--sample", "--model", str(tiny_models["sd"]),
                     "--license", "apache-2.0", "--no-progress", "--judge", "vllm:tiny/vlmm")
    assert "judge model folder 'tiny/vlmm' does not exist (did you mean 'tiny/vlm'?)" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["images", "tiny"]  # no run, no work folder


def test_the_presets_default_judges_missing_from_the_cache_offline_stop_the_run_at_once(tiny_models, tmp_path,
                                                                                         capsys):
    base = ["--model", str(tiny_models["sd"]), "--steps", "1", "--height", "32", "--width", "32", "--no-progress"]
    for benchmark, preset in [("prism-bench", "qwen"), ("t2i-reasonbench", "official")]:
        out = tmp_path / f"{benchmark}-{preset}"
        line = one_error(capsys, "run", "--benchmark", benchmark, "--preset", preset, "--limit", "1", "--out",
                         str(out), *base)
        assert line == (f"error: judge model '{QWEN72}' is not in the local Hugging Face cache and HF_HUB_OFFLINE is "
                        f"set: download it first (`hf download {QWEN72}`), or give a local folder (hf:<folder>) "
                        f"(the {preset!r} preset's judge; --judge or judge= names another)")
        assert not out.exists()
    line = one_error(capsys, "engine", "run", "--work", str(tmp_path / "work"), "--sample", "--license",
                     "apache-2.0", "--judge", f"hf:{QWEN72}", *base)
    assert f"judge model '{QWEN72}' is not in the local Hugging Face cache" in line
    assert not (tmp_path / "work").exists()


def test_a_folder_that_holds_no_judge_is_refused_before_the_run_is_made(tiny_models, tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    run, images = tmp_path / "run", tmp_path / "images"
    images.mkdir()
    base = ["evaluate", "--run", str(run), "--benchmark", "r2i-bench", "--limit", "1", "--images", str(images)]
    line = one_error(capsys, *base, "--judge", f"hf:{empty}")
    assert line == f"error: judge model folder '{empty}' has no config.json: not a model folder (give the folder " \
                   "save_pretrained or `hf download` wrote, or a Hub id)"
    line = one_error(capsys, *base, "--judge", f"hf:{tiny_models['clip']}")  # CLIP: no image-text-to-text model
    assert f"judge model '{tiny_models['clip']}' is a 'clip' model, which transformers " in line
    assert "does not load as a vision-language model (AutoModelForImageTextToText)" in line
    odd = tmp_path / "odd"
    odd.mkdir()
    (odd / "config.json").write_text(json.dumps({"model_type": "no-such-family", "auto_map": {"AutoConfig": "x.C"}}))
    line = one_error(capsys, *base, "--judge", f"hf:{odd}")
    assert "does not know its model type 'no-such-family'" in line and "trust_remote_code=True" in line
    (odd / "config.json").write_text("{not json")
    assert "its config.json" in one_error(capsys, *base, "--judge", f"hf:{odd}")
    assert not run.exists()


def test_a_checkpoint_that_can_be_loaded_passes(tiny_models, tmp_path):
    from huggingface_hub import constants

    check_checkpoint(f"hf:{tiny_models['vlm']}")
    check_checkpoint("openai:gpt-4o@http://127.0.0.1:9/v1")  # an endpoint is checked by its own check
    commit = "c" * 40  # the tiny judge in the Hub cache's layout, as `hf download` leaves it
    repo = f"{constants.HF_HUB_CACHE}/models--someorg--tiny-judge"
    shutil.copytree(tiny_models["vlm"], f"{repo}/snapshots/{commit}")
    (tmp_path / "refs").mkdir()
    shutil.copytree(tmp_path / "refs", f"{repo}/refs")
    with open(f"{repo}/refs/main", "w") as f:
        f.write(commit)
    check_checkpoint("hf:someorg/tiny-judge")
    check_checkpoint("vllm:someorg/tiny-judge")
    with pytest.raises(JudgeError, match="'someorg/absent' is not in the local Hugging Face cache"):
        check_checkpoint("vllm:someorg/absent")
    gguf = tmp_path / "judge.gguf"  # vLLM reads a GGUF file as it is
    gguf.write_bytes(b"GGUF")
    validate_judge(f"vllm:{gguf}")
    check_checkpoint(f"vllm:{gguf}")
    with pytest.raises(JudgeError, match="is a file, not a model folder"):
        validate_judge(f"hf:{gguf}")
    with pytest.raises(JudgeError, match="at revision 'v2' is not in the local Hugging Face cache"):
        check_checkpoint("hf:someorg/tiny-judge", {"revision": "v2"})
    with pytest.raises(JudgeError, match="is neither a folder here nor a Hub id"):
        check_checkpoint("hf:some org/tiny judge")
    odd = tmp_path / "remote"
    odd.mkdir()  # a family of its own, run with its own code when trusted
    (odd / "config.json").write_text(json.dumps({"model_type": "mine",
                                                 "auto_map": {"AutoModelForImageTextToText": "m.Mine"}}))
    check_checkpoint(f"hf:{odd}", {"trust_remote_code": True})
    with pytest.raises(JudgeError, match="does not know its model type 'mine'"):
        check_checkpoint(f"hf:{odd}")
