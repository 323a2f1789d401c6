"""A preset follows its model, not the spelling of its spec (issue 22, item 3): a local folder of the
preset's checkpoint (named in its config, or by its folder), ``vllm:`` of it, the same API model behind
another base URL all get the preset's backend settings their backend takes; another model gets only the
preset's sampling; one line says which settings were applied and which not, logged when the judge is
loaded, printed by ``t2ireason evaluate`` and recorded with the scores."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from t2ireason import testing
from t2ireason.benchmarks import get_benchmark
from t2ireason.judges import JudgeError, Sampling, load_judge, validate_judge
from t2ireason.judges.spec import judge_is_model, judge_setting
from t2ireason.testing_http import Answer, Fail, serve

T2I = get_benchmark("t2i-reasonbench")
PRISM = get_benchmark("prism-bench")
R2I = get_benchmark("r2i-bench")
QWEN72 = "Qwen/Qwen2.5-VL-72B-Instruct"
METRICS = Path(__file__).resolve().parents[1] / "metrics"


@pytest.fixture(scope="module")
def local_checkpoint(tmp_path_factory):
    """A tiny model in a folder named anything, whose config names the preset's checkpoint."""
    return testing.build_vlm(tmp_path_factory.mktemp("models") / "judge-on-disk", checkpoint=QWEN72)


def test_a_local_folder_named_in_its_config_gets_the_presets_settings(local_checkpoint):
    setting = judge_setting(T2I, "official", f"hf:{local_checkpoint}")
    preset = T2I.presets["official"]["judge_kwargs"]
    assert setting.judge_kwargs == preset  # dtype, device_map, generation_config, sampling: all of them
    report = setting.preset_settings
    assert report.same_model and set(report.applied) == set(preset) and not report.not_applied
    assert f"config.json _name_or_path '{QWEN72}'" in report.line()
    judge = load_judge(setting.judge, cache=False, **setting.judge_kwargs)  # the real loading path
    assert judge.generation_config == "model" and judge.default_sampling.max_tokens == 1000
    assert judge.identity()["generation_config"] == "model"


def test_a_folder_named_as_the_checkpoint_or_a_hub_snapshot_is_the_preset_model(tmp_path, local_checkpoint):
    plain = testing.build_vlm(tmp_path / "Qwen2.5-VL-72B-Instruct")  # no name in its config: the folder's
    assert judge_is_model(f"hf:{plain}", f"hf:{QWEN72}") == (True, "the folder name 'Qwen2.5-VL-72B-Instruct'")
    snapshot = tmp_path / "hub" / "models--Qwen--Qwen2.5-VL-72B-Instruct" / "snapshots" / ("a" * 40)
    shutil.copytree(plain, snapshot)
    same, how = judge_is_model(f"hf:{snapshot}", f"hf:{QWEN72}")
    assert same and QWEN72 in how
    for other in (testing.build_vlm(tmp_path / "Qwen2.5-VL-7B-Instruct"),
                  testing.build_vlm(tmp_path / "mine", checkpoint="someone/Qwen2.5-VL-72B-Instruct")):
        same, how = judge_is_model(f"hf:{other}", f"hf:{QWEN72}")
        assert not same and f"not '{QWEN72}'" in how  # another size, or a model of the same name elsewhere


def test_another_model_gets_only_the_sampling(tiny_models):
    setting = judge_setting(T2I, "official", f"hf:{tiny_models['vlm']}")
    assert setting.judge_kwargs == {"sampling": Sampling(max_tokens=1000)}
    report = setting.preset_settings
    assert not report.same_model and report.applied == ("sampling",)
    assert report.not_applied == {k: "for the preset's model only" for k in ("generation_config", "dtype", "device_map")}
    assert "is another model (the folder name 'vlm', not 'Qwen/Qwen2.5-VL-72B-Instruct')" in report.line()


def test_settings_a_backend_cannot_take_are_named_not_passed():
    setting = judge_setting(PRISM, "qwen", f"vllm:{QWEN72}")
    report = setting.preset_settings
    assert report.same_model and set(report.applied) == {"dtype", "sampling"}
    assert set(report.not_applied) == {"device_map", "processor_kwargs", "chat_template_kwargs", "generation_config"}
    assert all(why == "the vllm backend takes no such option" for why in report.not_applied.values())
    assert set(setting.judge_kwargs) == {"dtype", "sampling"}
    served = judge_setting(PRISM, "qwen", f"openai:{QWEN72}@http://127.0.0.1:8000/v1")
    assert served.preset_settings.same_model and served.preset_settings.applied == ("sampling",)
    assert "dtype (the openai backend takes no such option)" in served.preset_settings.line()
    validate_judge(served.judge, served.judge_kwargs)  # what is passed, the backend takes


def test_the_callers_own_options_win_and_are_said(local_checkpoint):
    setting = judge_setting(T2I, "official", f"hf:{local_checkpoint}", {"dtype": "float32"})
    assert setting.judge_kwargs["dtype"] == "float32" and setting.judge_kwargs["device_map"] == "auto"
    assert setting.preset_settings.not_applied == {"dtype": "judge_kwargs give their own"}


@pytest.fixture
def png(tmp_path):
    path = tmp_path / "0.png"
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (16, 16, 3), dtype=np.uint8)).save(path)
    return path


def test_the_same_api_model_behind_another_base_url_gets_the_presets_settings(png, caplog):
    """PRISM's official preset names gpt-4.1 at OpenAI; the same model behind a proxy gets its retries,
    max_tokens and stream: false, and the results record which settings it got."""
    import evaluate

    rows = PRISM.read_release(PRISM.sample_path()).configs["style_en"][:1]
    with serve(Answer('{"justification": "x", "score": 7}'), models=["gpt-4.1-2025-04-14"]) as server:
        metric = evaluate.load(str(METRICS / "prism_score"), judge=f"openai:gpt-4.1-2025-04-14@{server.base_url}",
                               preset="official", cache=False, progress=False)
        with caplog.at_level(logging.INFO, logger="t2ireason.scoring"):
            out = metric.compute(predictions=[str(png)], references=rows)
        bodies = [r.body for r in server.requests]
    assert out["prism_score"] == 70 and len(bodies) == 2
    for body in bodies:
        assert body["stream"] is False and body["max_tokens"] == 4096 and body["seed"] == 42
    record = out["judge"]["preset_settings"]
    assert record["same_model"] and record["recognised"] == "the API model name"
    assert record["applied"] == ["sampling", "max_tokens_param", "max_retries", "extra_body"]
    assert record["line"] in caplog.text

    with serve(Fail(500), models=["gpt-4.1-2025-04-14"]) as server:  # the preset's 3 tries per request
        metric = evaluate.load(str(METRICS / "prism_score"), judge=f"openai:gpt-4.1-2025-04-14@{server.base_url}",
                               preset="official", cache=False, progress=False,
                               judge_kwargs={"backoff_base": 0.001, "backoff_max": 0.01, "on_unavailable": "record"})
        out = metric.compute(predictions=[str(png)], references=rows)
        assert len(server.requests) == 6 and out["num_failed"] == 1

    with serve(Answer('{"justification": "x", "score": 7}'), models=["gpt-4o"]) as server:  # another model
        metric = evaluate.load(str(METRICS / "prism_score"), judge=f"openai:gpt-4o@{server.base_url}",
                               preset="official", cache=False, progress=False)
        out = metric.compute(predictions=[str(png)], references=rows)
        assert all("stream" not in r.body and r.body["seed"] == 42 for r in server.requests)
    assert not out["judge"]["preset_settings"]["same_model"]


def test_sampling_params_are_checked():
    with pytest.raises(JudgeError, match="sampling_params must be None .all. or a list among temperature"):
        validate_judge("openai:gpt-4o@http://127.0.0.1:1/v1", {"sampling_params": ["top_k"]})
    validate_judge("openai:gpt-4o@http://127.0.0.1:1/v1", R2I.presets["official"]["judge_kwargs"])


def test_evaluate_prints_the_line(tmp_path, capsys, local_checkpoint, monkeypatch):
    """`t2ireason evaluate` says, before scoring, which of the preset's settings the judge gets."""
    from t2ireason import cli

    monkeypatch.setattr("t2ireason.runs.Run.evaluate", lambda self, *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    (tmp_path / "run" / "images").mkdir(parents=True)  # a new run is scored only where there are images
    code = cli.main(["evaluate", "--run", str(tmp_path / "run"), "--benchmark", "t2i-reasonbench",
                     "--judge", f"hf:{local_checkpoint}", "--preset", "official", "--limit", "1"])
    assert code != 0
    assert f"judge hf:{local_checkpoint} is the preset's model (config.json _name_or_path '{QWEN72}')" \
        in capsys.readouterr().out


@pytest.mark.torchvision
def test_prism_qwen_on_a_local_qwen25_vl_renders_picture_ids_and_spreads_the_model(tmp_path):
    """eval_qwen25.py on a local copy of the checkpoint (a tiny Qwen2.5-VL whose config names it): the
    template rendered with add_vision_id=True puts "Picture 1: " before the image, the model is loaded
    with device_map="balanced", and the image reaches the processor as qwen_vl_utils resized it."""
    pytest.importorskip("torchvision")
    from t2ireason.testing_families import build_family

    folder = testing.name_checkpoint(build_family("qwen2.5-vl", tmp_path), QWEN72)
    setting = judge_setting(PRISM, "qwen", f"hf:{folder}")
    report = setting.preset_settings
    assert report.same_model and not report.not_applied and "device_map" in report.applied
    kwargs = {**setting.judge_kwargs, "sampling": Sampling(max_tokens=4)}
    judge = load_judge(setting.judge, cache=False, **kwargs)
    assert judge.chat_template_kwargs == {"add_vision_id": True}
    assert setting.judge_kwargs["device_map"] == "balanced"  # loaded through accelerate's map (one CPU here)
    row = PRISM.read_release(PRISM.sample_path()).configs["entity_en"][0]
    requests = []
    recording = type("Recording", (), {"chat": lambda self, reqs, **k: requests.extend(reqs) or judge.chat(reqs, **k),
                                       "identity": judge.identity})()
    [result] = PRISM.score([row], [Image.new("RGB", (100, 50), "gray")], recording, **setting.options)
    # 4 random tokens: cut off at the token limit, never read (the authors would fail to parse and skip them too)
    assert result.context["outcome"] == {"alignment": "cut_off", "aesthetic": "cut_off"}
    assert requests[0].messages[0].content[0].size == (112, 56)  # qwen_vl_utils: 100 -> 112, 50 -> 56
    [rendered] = judge._render([judge._conversation(requests[0].messages)])
    assert "<|im_start|>user\nPicture 1: <|vision_start|><|image_pad|><|vision_end|>\nYou are a highly" in rendered
    plain = load_judge(f"hf:{folder}", cache=False, device="cpu")  # the checkpoint without the preset
    assert "Picture 1:" not in plain._render([plain._conversation(requests[0].messages)])[0]


def test_a_dated_snapshot_of_the_presets_api_model_gets_its_settings(tmp_path, capsys, monkeypatch):
    """``openai:gpt-4o-2024-08-06`` is the R2I presets' ``gpt-4o``, ``openai:gpt-4.1`` PRISM's
    ``gpt-4.1-2025-04-14``; ``gpt-4o-mini-2024-07-18`` is another model. `t2ireason evaluate` prints it."""
    from t2ireason import cli

    setting = judge_setting(R2I, "official", "openai:gpt-4o-2024-08-06")
    report = setting.preset_settings
    assert report.same_model and set(report.applied) == {"sampling", "sampling_params", "max_retries"} and not report.not_applied
    assert setting.judge_kwargs["sampling_params"] == ["temperature"]
    assert "the API model name 'gpt-4o-2024-08-06' (a dated snapshot of 'gpt-4o')" in report.line()
    report = judge_setting(PRISM, "official", "openai:gpt-4.1@http://127.0.0.1:9/v1").preset_settings
    assert report.same_model and {"max_retries", "extra_body", "max_tokens_param"} <= set(report.applied)
    assert "of which the preset's 'gpt-4.1-2025-04-14' is a dated snapshot" in report.recognised
    report = judge_setting(R2I, "official", "openai:gpt-4o-mini-2024-07-18").preset_settings
    assert not report.same_model and "sampling_params" in report.not_applied
    assert not judge_setting(PRISM, "official", "openai:gpt-4.1-mini-2025-04-14").preset_settings.same_model

    monkeypatch.setattr("t2ireason.runs.Run.evaluate", lambda self, *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    (tmp_path / "run" / "images").mkdir(parents=True)
    code = cli.main(["evaluate", "--run", str(tmp_path / "run"), "--benchmark", "r2i-bench", "--preset", "official",
                     "--judge", "openai:gpt-4o-2024-08-06@http://127.0.0.1:9/v1", "--limit", "1"])
    assert code != 0
    assert ("judge openai:gpt-4o-2024-08-06@http://127.0.0.1:9/v1 is the preset's model (the API model name "
            "'gpt-4o-2024-08-06' (a dated snapshot of 'gpt-4o')); applied: sampling, sampling_params") \
        in capsys.readouterr().out
