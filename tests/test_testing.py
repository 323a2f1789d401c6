"""The tiny local models: reusable, deterministic, and loadable through the real from_pretrained paths."""

import json

import numpy as np
import torch
from PIL import Image
from safetensors.torch import load_file

from t2ireason import testing


def test_build_all_layout_and_reuse(tiny_models, tmp_path):
    assert set(tiny_models) == {"clip", "vlm", "sd"}
    assert all((path / "t2ireason_tiny.json").is_file() for path in tiny_models.values())
    weights = tiny_models["vlm"] / "model.safetensors"
    before = weights.stat().st_mtime_ns
    again = testing.build_all(tiny_models["vlm"].parent)
    assert again == tiny_models and weights.stat().st_mtime_ns == before  # reused, not rebuilt
    # a folder left half-built (no marker) is built again
    testing.build_tiny_clip(tmp_path / "clip")
    (tmp_path / "clip" / "t2ireason_tiny.json").unlink()
    (tmp_path / "clip" / "model.safetensors").unlink()
    testing.build_tiny_clip(tmp_path / "clip")
    assert (tmp_path / "clip" / "model.safetensors").is_file()


def test_builds_are_deterministic(tiny_models, tmp_path):
    for name, build in (("clip", testing.build_tiny_clip), ("vlm", testing.build_tiny_vlm)):
        fresh = load_file(build(tmp_path / name) / "model.safetensors")
        shared = load_file(tiny_models[name] / "model.safetensors")
        assert fresh.keys() == shared.keys()
        assert all(torch.equal(fresh[k], shared[k]) for k in fresh)


def test_clip_pools_at_eos_and_features_have_projection_size(tiny_models):
    from transformers import CLIPModel, CLIPProcessor

    model = CLIPModel.from_pretrained(tiny_models["clip"]).eval()
    processor = CLIPProcessor.from_pretrained(tiny_models["clip"])
    assert model.config.text_config.eos_token_id == processor.tokenizer.eos_token_id
    texts = ["a cat", "a red box"]
    enc = processor(text=texts, padding="max_length", return_tensors="pt")
    alone = processor(text=texts[:1], return_tensors="pt")
    with torch.inference_mode():
        text = model.get_text_features(**enc).pooler_output
        text_alone = model.get_text_features(**alone).pooler_output
        image = model.get_image_features(
            **processor(images=[Image.new("RGB", (50, 40), "red")], return_tensors="pt")).pooler_output
    assert text.shape == (2, 16) and image.shape == (1, 16)
    # pooled at the eos token: padding does not move the embedding, different texts differ
    assert torch.allclose(text[0], text_alone[0], atol=1e-5)
    assert not torch.allclose(text[0], text[1])


def test_vlm_tokenizer_template_and_auto_classes(tiny_models):
    from transformers import AutoModelForImageTextToText, AutoProcessor

    processor = AutoProcessor.from_pretrained(tiny_models["vlm"])
    model = AutoModelForImageTextToText.from_pretrained(tiny_models["vlm"])
    assert not model.training
    tok = processor.tokenizer
    marker = json.loads((tiny_models["vlm"] / "t2ireason_tiny.json").read_text())
    for word, key in (("Yes", "yes_token_id"), ("No", "no_token_id")):
        assert tok(word, add_special_tokens=False).input_ids == [marker[key]]
        assert tok.convert_ids_to_tokens(marker[key]) == "▁" + word
    img = Image.new("RGB", (40, 30), "blue")
    conversation = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": [{"type": "image", "image": img}, {"type": "text", "text": "What is it?"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A box."}]},
        {"role": "user", "content": "Sure?"},
    ]
    text = processor.apply_chat_template(conversation, add_generation_prompt=True)
    assert text == "<s>SYSTEM: Be brief.\nUSER: <image>\nWhat is it?\nASSISTANT: A box.</s>\nUSER: Sure?\nASSISTANT:"
    enc = processor.apply_chat_template([conversation], add_generation_prompt=True, tokenize=True,
                                        return_dict=True, return_tensors="pt")
    n_image_tokens = (enc["input_ids"] == model.config.image_token_id).sum().item()
    assert n_image_tokens == model.config.image_seq_length == 16
    with torch.inference_mode():
        out = model.generate(**enc, max_new_tokens=3, min_new_tokens=3, do_sample=False)
    assert out.shape[1] == enc["input_ids"].shape[1] + 3


def test_sd_pipeline_reloads_and_is_seeded(tiny_models):
    from diffusers import DiffusionPipeline

    pipe = DiffusionPipeline.from_pretrained(tiny_models["sd"])
    pipe.set_progress_bar_config(disable=True)
    assert not pipe.unet.training and not pipe.vae.training and not pipe.text_encoder.training

    def draw(seed, prompt="a red cube"):
        return pipe(prompt, num_inference_steps=2, height=64, width=64, output_type="np",
                    generator=torch.Generator("cpu").manual_seed(seed)).images[0]

    a, b, c = draw(0), draw(0), draw(1)
    assert a.shape == (64, 64, 3)
    assert np.array_equal(a, b) and not np.array_equal(a, c)


def test_vlm_of_another_shape_counts_its_parameters_and_judges(tmp_path):
    """build_vlm at LLaVA's 224 px geometry (14 px patches, 256 image tokens) with tiny widths:
    the parameter count vlm_parameters computes without weights is the built model's, and the
    folder loads as a judge through hf: and answers P("Yes")."""
    from dataclasses import replace

    from t2ireason.judges import load_judge

    shape = replace(testing.TINY_VLM, image_size=224, patch_size=14)
    folder = testing.build_vlm(tmp_path / "vlm", shape)
    marker = json.loads((folder / "t2ireason_tiny.json").read_text())
    assert marker["parameters"] == testing.vlm_parameters(shape) > testing.vlm_parameters(testing.TINY_VLM)
    judge = load_judge(f"hf:{folder}", device="cpu", batch_size=2)
    assert sum(p.numel() for p in judge.hf_model.parameters()) == marker["parameters"]
    enc = judge.processor.apply_chat_template(
        [[{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (300, 200), "red")},
                                       {"type": "text", "text": "Red?"}]}]],
        add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt")
    assert enc["pixel_values"].shape[-2:] == (224, 224)
    assert (enc["input_ids"] == judge.hf_model.config.image_token_id).sum().item() == shape.image_tokens == 256
    images = [Image.new("RGB", (64, 48), c) for c in ("red", "blue")]
    probs = judge.yes_probability(images, ["Is it red?", "Is it a blue square?"])
    assert all(0 < p < 1 for p in probs) and probs[0] != probs[1]
    alone = load_judge(f"hf:{folder}", device="cpu", batch_size=1).yes_probability(images, ["Is it red?", "Is it a blue square?"])
    assert np.allclose(probs, alone, rtol=1e-4, atol=1e-6)
    # reused for the same shape, rebuilt for another one
    weights = folder / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert testing.build_vlm(folder, shape) == folder and weights.stat().st_mtime_ns == before
    testing.build_vlm(folder, testing.TINY_VLM)
    assert json.loads((folder / "config.json").read_text())["image_seq_length"] == 16


def test_base_vlm_is_of_realistic_size():
    """perf/'s batching_speedup_60m judge (built there, not here: 240 MB of weights): at least
    50M parameters and LLaVA's 256 image tokens at 224 px, counted without allocating weights."""
    assert testing.vlm_parameters(testing.BASE_VLM) >= 50_000_000
    assert testing.BASE_VLM.image_tokens == 256 and testing.BASE_VLM.image_size == 224
