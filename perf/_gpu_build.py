"""The models and pictures perf/gpu.py measures with: real architectures at their real sizes with random weights
(small ones for ``--small``), built once per ``--work`` folder (a marker says a build finished)."""

from __future__ import annotations

import importlib.util
import math
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch
from PIL import Image


def free(*objects) -> None:
    import gc

    del objects
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def built(folder: Path, build) -> Path:
    if not (folder / ".built").exists():
        shutil.rmtree(folder, ignore_errors=True)
        build(folder)
        (folder / ".built").touch()
    return folder


def scale_init(model: torch.nn.Module, layers: int) -> None:
    """Normal(0, 0.02) linear and embedding weights, output projections smaller (GPT-2's 1/sqrt(2 x layers)),
    biases zero: 30-layer random stacks in bfloat16 keep finite activations."""
    outputs = ("o_proj", "down_proj", "out_proj", "fc2", "proj", "linear_2")
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear):
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(outputs) else 0.02
                module.weight.normal_(0.0, std)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, torch.nn.Embedding):
                module.weight.normal_(0.0, 0.02)


def build_llava(setup, folder: Path) -> None:
    """LLaVA-1.5-7B's shape (CLIP ViT-L/14 at 336 px, Llama-2-7B, vocabulary 32,064) with the tests' tokenizer
    padded to 32,000 pieces (the JSON masks cost what a real vocabulary's do), processor and chat template."""
    from transformers import LlavaForConditionalGeneration

    from t2ireason.testing import VLMShape, _vlm_parts

    shape = VLMShape(image_size=56, patch_size=14, vision_hidden=64, vision_intermediate=128, vision_layers=2,
                     vision_heads=4, text_hidden=64, text_intermediate=128, text_layers=2, text_heads=4,
                     text_kv_heads=4, max_positions=2048) if setup.small else VLMShape(
        image_size=336, patch_size=14, vision_hidden=1024, vision_intermediate=4096, vision_layers=24,
        vision_heads=16, text_hidden=4096, text_intermediate=11008, text_layers=32, text_heads=32, text_kv_heads=32,
        max_positions=4096)
    tokenizer, processor, config = _vlm_parts(shape, None if setup.small else 32000)
    if not setup.small:
        config.text_config.vocab_size = 32064
    with torch.device(setup.device):
        model = LlavaForConditionalGeneration._from_config(config, dtype=setup.dtype)
    scale_init(model, shape.text_layers)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    free(model)


def qwen_config_without_processor():
    """The tiny Qwen2.5-VL family's config (t2ireason.testing_families) where its processor cannot be built
    (no torchvision): its tokenizer's ids, a 2-block text model, a 4-block vision tower of 56 px windows."""
    from transformers import Qwen2_5_VLConfig

    from t2ireason.testing_families import _qwen_tokenizer

    tok = _qwen_tokenizer("2.5")
    ids = {name: tok.convert_tokens_to_ids(token) for name, token in (
        ("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
        ("vision_start_token_id", "<|vision_start|>"), ("vision_end_token_id", "<|vision_end|>"))}
    text = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "head_dim": 8, "vocab_size": len(tok), "pad_token_id": tok.pad_token_id,
            "eos_token_id": tok.eos_token_id,
            "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}}
    vision = {"depth": 4, "hidden_size": 32, "num_heads": 4, "patch_size": 14, "spatial_merge_size": 2,
              "temporal_patch_size": 2, "intermediate_size": 64, "out_hidden_size": 32, "window_size": 56,
              "fullatt_block_indexes": [1, 3]}
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, **ids)


def build_qwen(setup, folder: Path) -> None:
    """Qwen2.5-VL-7B's shape (a 32-block window-attention vision tower of width 1280, a 28-layer text model of
    width 3584, vocabulary 152,064) with the tiny family's tokenizer, processor (it needs torchvision; without
    it the model alone) and the checkpoint's chat template, images up to Qwen's default pixel budget."""
    from transformers import AutoModelForImageTextToText

    from t2ireason.testing_families import build_family

    processor = None
    if importlib.util.find_spec("torchvision") is not None:
        from transformers import AutoConfig, AutoProcessor

        tiny = build_family("qwen2.5-vl", folder.parent / "families")
        processor, config = AutoProcessor.from_pretrained(tiny), AutoConfig.from_pretrained(tiny)
    else:
        config = qwen_config_without_processor()
    if not setup.small:
        values = config.to_dict()
        values["text_config"].pop("layer_types", None)  # derived from the depth, derived again
        values["text_config"].update(
            hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
            num_key_value_heads=4, head_dim=128, vocab_size=152064, max_position_embeddings=32768,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]})
        values["vision_config"].update(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                                       out_hidden_size=3584, window_size=112, fullatt_block_indexes=[7, 15, 23, 31])
        config = type(config).from_dict(values)
        if processor is not None:
            image_processor = processor.image_processor
            image_processor.size = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280}  # Qwen's defaults
            for key, value in (("min_pixels", 56 * 56), ("max_pixels", 28 * 28 * 1280)):
                if hasattr(image_processor, key):
                    setattr(image_processor, key, value)
    with torch.device(setup.device):
        model = AutoModelForImageTextToText.from_config(config, dtype=setup.dtype)
    scale_init(model, 32)
    if processor is not None:
        model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
        model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
        processor.save_pretrained(folder)
    model.save_pretrained(folder)
    free(model)


def build_sd(setup, folder: Path) -> None:
    """Stable Diffusion 1.5's shape (860M UNet, its VAE, a CLIP ViT-L text encoder) in float16, DDIM."""
    if setup.small:
        from t2ireason.testing import build_tiny_sd

        build_tiny_sd(folder)
        return
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from t2ireason.testing import _clip_tokenizer

    with torch.device(setup.device):
        unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8,
                                    block_out_channels=(320, 640, 1280, 1280), layers_per_block=2).half()
        vae = AutoencoderKL(block_out_channels=(128, 256, 512, 512), latent_channels=4, sample_size=512,
                            down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                            layers_per_block=2).half()
        tokenizer = _clip_tokenizer(model_max_length=77)
        text_encoder = CLIPTextModel(CLIPTextConfig(
            vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
            max_position_embeddings=77, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id)).half()
    for module in (unet, vae, text_encoder):
        scale_init(module, 16)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
                            safety_checker=None, feature_extractor=None, image_encoder=None,
                            requires_safety_checker=False).save_pretrained(folder)
    free(unet, vae, text_encoder)


def write_images(setup, folder: Path) -> None:
    """PNG files of smooth random pictures with some grain (they compress about as photographs do)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    pictures = []
    for _ in range(setup.files):
        coarse = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).resize(
            (setup.image_px, setup.image_px), Image.Resampling.BICUBIC)
        grain = rng.integers(-6, 7, (setup.image_px, setup.image_px, 3))
        pictures.append(Image.fromarray(np.clip(np.asarray(coarse, dtype=np.int16) + grain, 0, 255).astype(np.uint8)))
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda ip: ip[1].save(folder / f"{ip[0]:04d}.png"), enumerate(pictures)))
