"""Tiny random models, built locally and saved with ``save_pretrained``.

Tests and the offline demo never reach a model hub. They build these models
(a few seconds each, well under 1 MB of weights) and load them back through the
same ``from_pretrained`` paths a user's real model takes:

- :func:`build_tiny_clip`: a CLIP model, tokenizer and image processor (CLIPScore);
- :func:`build_tiny_vlm`: a LLaVA-layout vision-language judge whose tokenizer
  makes ``▁Yes`` and ``▁No`` single tokens (VQAScore, chat judging);
  :func:`build_vlm` builds the same layout at another :class:`VLMShape`, such as
  :data:`BASE_VLM` (about 60M parameters, 224 px images, for ``perf/``, not tests);
- :func:`build_tiny_sd`: a Stable Diffusion pipeline making 64x64 images in 2 steps;
- :func:`build_all`: all three in one folder, reused when already built.

The weights are random, so the text they generate is meaningless: use them to
exercise code paths, never to check a score's value against a paper.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["build_tiny_clip", "build_tiny_vlm", "build_vlm", "vlm_parameters", "VLMShape", "TINY_VLM", "BASE_VLM",
           "build_tiny_sd", "build_tiny_lm", "build_all", "tiny_judge_kwargs", "name_checkpoint", "SEED",
           "VLM_CHAT_TEMPLATE"]

#: every build starts from this torch seed, so the same call gives the same weights
SEED = 0
# Written last into each folder: its presence means the folder is complete and reusable.
_MARKER = "t2ireason_tiny.json"
_VERSION = 1

#: A small chat template in the LLaVA-1.5 style: system, user and assistant turns, any
#: number of them, image parts anywhere in a turn (rendered as ``<image>`` lines).
VLM_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message.role == 'system' %}{{ 'SYSTEM: ' }}"
    "{% elif message.role == 'user' %}{{ 'USER: ' }}"
    "{% else %}{{ 'ASSISTANT: ' }}{% endif %}"
    "{% if message.content is string %}{{ message.content }}"
    "{% else %}{% for part in message.content %}"
    "{% if part.type == 'image' %}{{ '<image>\\n' }}"
    "{% elif part.type == 'text' %}{{ part.text }}{% endif %}"
    "{% endfor %}{% endif %}"
    "{% if message.role == 'assistant' %}{{ eos_token }}{% endif %}{{ '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ 'ASSISTANT:' }}{% endif %}"
)


def _seed():
    import torch

    torch.manual_seed(SEED)


def _clip_tokenizer(model_max_length: int = 16):
    """A CLIPTokenizer over the 256 byte-level symbols, with and without ``</w>``."""
    from tokenizers import pre_tokenizers
    from transformers import CLIPTokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    symbols = alphabet + [s + "</w>" for s in alphabet]
    merges = [("t", "h"), ("th", "e</w>"), ("a", "n"), ("o", "n</w>"), ("i", "n"), ("e", "r</w>")]
    symbols += ["".join(m) for m in merges]
    vocab = {s: i for i, s in enumerate(dict.fromkeys(symbols))}
    for special in ("<|startoftext|>", "<|endoftext|>"):
        vocab[special] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=merges, model_max_length=model_max_length)


def _clip_image_processor(size: int = 32):
    from transformers import CLIPImageProcessorPil as CLIPImageProcessor  # PIL backend: no torchvision needed

    return CLIPImageProcessor(size={"shortest_edge": size}, crop_size={"height": size, "width": size})


def _clip_text_config(tokenizer, projection_dim: int):
    from transformers import CLIPTextConfig

    # The ids matter: CLIP pools the text embedding at the eos position.
    return CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, max_position_embeddings=tokenizer.model_max_length, projection_dim=projection_dim,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )


@dataclass(frozen=True)
class VLMShape:
    """Widths and depths of a LLaVA-layout judge (:func:`build_vlm`): a CLIP vision tower
    seeing ``image_size`` px squares in ``patch_size`` px patches, and a Llama language model."""

    image_size: int = 32
    patch_size: int = 8
    vision_hidden: int = 32
    vision_intermediate: int = 64
    vision_layers: int = 2
    vision_heads: int = 4
    text_hidden: int = 32
    text_intermediate: int = 64
    text_layers: int = 2
    text_heads: int = 4
    text_kv_heads: int = 2
    max_positions: int = 512

    @property
    def image_tokens(self) -> int:
        """Image tokens per image in the prompt (LLaVA's "default" strategy drops CLIP's class token)."""
        return (self.image_size // self.patch_size) ** 2


#: The tests' judge: about 68k parameters, 16 image tokens of a 32 px image.
TINY_VLM = VLMShape()
#: A judge of realistic proportions for ``perf/``: about 60M parameters, a CLIP tower of 8 layers
#: (width 512) on 224 px images in 14 px patches (256 image tokens, as LLaVA at 224 px) and a Llama
#: of 10 layers (width 512). Its random weights take about 240 MB in float32.
BASE_VLM = VLMShape(image_size=224, patch_size=14, vision_hidden=512, vision_intermediate=2048, vision_layers=8,
                    vision_heads=8, text_hidden=512, text_intermediate=1536, text_layers=10, text_heads=8,
                    text_kv_heads=8, max_positions=2048)


def _clip_vision_config(projection_dim: int = 16, shape: VLMShape = TINY_VLM):
    from transformers import CLIPVisionConfig

    return CLIPVisionConfig(hidden_size=shape.vision_hidden, intermediate_size=shape.vision_intermediate,
                            num_hidden_layers=shape.vision_layers, num_attention_heads=shape.vision_heads,
                            image_size=shape.image_size, patch_size=shape.patch_size, projection_dim=projection_dim)


def _done(path: Path, kind: str, **expected) -> bool:
    marker = path / _MARKER
    if not marker.is_file():
        return False
    try:
        info = json.loads(marker.read_text())
    except ValueError:
        return False
    return info.get("kind") == kind and info.get("version") == _VERSION and all(
        info.get(key) == value for key, value in expected.items())


def _mark(path: Path, kind: str, **extra) -> Path:
    (path / _MARKER).write_text(json.dumps({"kind": kind, "version": _VERSION, "seed": SEED, **extra}))
    return path


def build_tiny_clip(path: str | Path) -> Path:
    """A ~50k-parameter CLIP (towers of width 32, projection 16) with its
    tokenizer and image processor, saved to ``path`` (loads with ``CLIPModel``
    and ``CLIPProcessor``). Reuses ``path`` if already built."""
    from transformers import CLIPConfig, CLIPModel, CLIPProcessor

    path = Path(path)
    if _done(path, "clip"):
        return path
    _seed()
    tokenizer = _clip_tokenizer()
    config = CLIPConfig(text_config=_clip_text_config(tokenizer, 16).to_dict(),
                        vision_config=_clip_vision_config(16).to_dict(), projection_dim=16)
    model = CLIPModel(config).eval()
    model.save_pretrained(path)
    CLIPProcessor(image_processor=_clip_image_processor(), tokenizer=tokenizer).save_pretrained(path)
    return _mark(path, "clip")


def _vlm_tokenizer(size: int | None = None):
    """A Llama (SentencePiece-style BPE) tokenizer: byte fallback, printable
    characters, and merges so that ``▁Yes`` and ``▁No`` are single tokens. ``size`` pads the vocabulary
    to that many pieces with made-up words (never produced by encoding, but a model may write them):
    ``perf/gpu.py``'s real-size judges, whose JSON masks should cost what a 32,000-piece vocabulary's do."""
    import random

    from transformers import AddedToken, LlamaTokenizer

    symbols = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    symbols += ["▁"] + [chr(c) for c in range(33, 127)]
    merges = [("▁", "Y"), ("▁Y", "e"), ("▁Ye", "s"), ("▁", "N"), ("▁N", "o"),
              ("Y", "e"), ("Ye", "s"), ("N", "o"), ("▁", "a"), ("▁", "t"), ("e", "s")]
    symbols += ["".join(m) for m in merges]
    vocab = {s: i for i, s in enumerate(dict.fromkeys(symbols))}
    rng, letters = random.Random(SEED), "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    while size is not None and len(vocab) < size:
        vocab.setdefault(("▁" if rng.random() < 0.5 else "") + "".join(rng.choices(letters, k=rng.randint(2, 8))),
                         len(vocab))
    tokenizer = LlamaTokenizer(vocab=vocab, merges=merges, add_bos_token=True, add_eos_token=False)
    tokenizer.add_special_tokens({"pad_token": AddedToken("<pad>", special=True),
                                  "additional_special_tokens": [AddedToken("<image>", special=True, normalized=False)]})
    for answer in ("Yes", "No"):
        ids = tokenizer(answer, add_special_tokens=False).input_ids
        if len(ids) != 1:  # merge order decides this: fail the build, not a test far away
            raise RuntimeError(f"tiny VLM tokenizer splits {answer!r} into {ids}")
    return tokenizer


def _vlm_parts(shape: VLMShape, vocabulary: int | None = None):
    """The tokenizer (of ``vocabulary`` pieces: :func:`_vlm_tokenizer`), ``LlavaProcessor`` and ``LlavaConfig``
    of a LLaVA-layout judge of ``shape``."""
    from transformers import LlamaConfig, LlavaConfig, LlavaProcessor

    tokenizer = _vlm_tokenizer(vocabulary)
    processor = LlavaProcessor(image_processor=_clip_image_processor(shape.image_size), tokenizer=tokenizer,
                               patch_size=shape.patch_size, vision_feature_select_strategy="default",
                               num_additional_image_tokens=1, image_token="<image>", chat_template=VLM_CHAT_TEMPLATE)
    text_config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=shape.text_hidden, intermediate_size=shape.text_intermediate,
        num_hidden_layers=shape.text_layers, num_attention_heads=shape.text_heads,
        num_key_value_heads=shape.text_kv_heads, max_position_embeddings=shape.max_positions,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    config = LlavaConfig(
        vision_config=_clip_vision_config(shape=shape).to_dict(), text_config=text_config.to_dict(),
        image_token_index=tokenizer.convert_tokens_to_ids("<image>"), image_seq_length=shape.image_tokens,
        vision_feature_select_strategy="default", vision_feature_layer=-2, pad_token_id=tokenizer.pad_token_id,
    )
    return tokenizer, processor, config


def vlm_parameters(shape: VLMShape = BASE_VLM) -> int:
    """The parameter count of :func:`build_vlm`'s model of ``shape``, without allocating its weights."""
    import torch
    from transformers import LlavaForConditionalGeneration

    with torch.device("meta"):
        model = LlavaForConditionalGeneration(_vlm_parts(shape)[2])
    return sum(p.numel() for p in model.parameters())


def name_checkpoint(path: str | Path, checkpoint: str) -> Path:
    """Record ``checkpoint`` as the name of the model saved in ``path``, in its ``config.json``'s
    ``_name_or_path``, as checkpoints saved by transformers 4 carry the Hub id they were loaded
    from (a local copy of a published checkpoint: what a preset recognises its model by)."""
    config = Path(path) / "config.json"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["_name_or_path"] = checkpoint
    config.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return Path(path)


def build_vlm(path: str | Path, shape: VLMShape = TINY_VLM, *, checkpoint: str | None = None) -> Path:
    """A LLaVA judge of ``shape`` (CLIP vision tower, Llama language model, random weights in
    float32) with a ``LlavaProcessor`` and a chat template, saved to ``path``. Loads with
    ``AutoModelForImageTextToText`` and ``AutoProcessor``, or as a judge ``hf:<path>``.
    ``checkpoint`` names it in its config (:func:`name_checkpoint`). Reuses ``path`` if a model
    of the same shape and name was built there."""
    from transformers import LlavaForConditionalGeneration

    path = Path(path)
    if _done(path, "vlm", shape=asdict(shape), checkpoint=checkpoint):
        return path
    _seed()
    tokenizer, processor, config = _vlm_parts(shape)
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(path)
    processor.save_pretrained(path)
    if checkpoint is not None:
        name_checkpoint(path, checkpoint)
    return _mark(path, "vlm", shape=asdict(shape), checkpoint=checkpoint,
                 parameters=sum(p.numel() for p in model.parameters()),
                 yes_token_id=tokenizer.convert_tokens_to_ids("▁Yes"), no_token_id=tokenizer.convert_tokens_to_ids("▁No"))


def build_tiny_vlm(path: str | Path) -> Path:
    """A ~68k-parameter LLaVA judge (2-layer CLIP vision tower, 2-layer Llama of
    width 32; :data:`TINY_VLM`) with a ``LlavaProcessor`` and a chat template, saved
    to ``path``. Loads with ``AutoModelForImageTextToText`` and ``AutoProcessor``."""
    return build_vlm(path, TINY_VLM)


def tiny_judge_kwargs(path: str | Path) -> dict:
    """``load_judge`` options that keep the tiny VLM's random answers short: seeded
    sampling (deterministic, so cached) and a bias toward closing a string and ending
    the turn (transformers' ``sequence_bias``). Its answers stay meaningless; with a
    JSON schema enforced they parse, so every scoring path runs end to end (tests, demo)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    quote = tokenizer.convert_tokens_to_ids('"')
    # plain JSON (sequence_bias in its list form), so the same options work on the command line
    return {"sampling": {"temperature": 1.0, "seed": SEED, "max_tokens": 256},
            "generate_kwargs": {"sequence_bias": [[[quote], 4.0], [[tokenizer.eos_token_id], 2.0]]}}


def build_tiny_sd(path: str | Path) -> Path:
    """A tiny ``StableDiffusionPipeline`` (2-block UNet and VAE, tiny CLIP text
    encoder, DDIM) making 64x64 images; reload with ``DiffusionPipeline.from_pretrained``."""
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextModel

    path = Path(path)
    if _done(path, "sd"):
        return path
    _seed()
    unet = UNet2DConditionModel(
        block_out_channels=(4, 8), layers_per_block=1, sample_size=8, in_channels=4, out_channels=4,
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=32, norm_num_groups=2, attention_head_dim=2,
    ).eval()
    vae = AutoencoderKL(
        block_out_channels=(4, 8), in_channels=3, out_channels=3, latent_channels=4, norm_num_groups=2,
        down_block_types=("DownEncoderBlock2D", "DownEncoderBlock2D"),
        up_block_types=("UpDecoderBlock2D", "UpDecoderBlock2D"), sample_size=64,
    ).eval()
    tokenizer = _clip_tokenizer(model_max_length=16)
    text_encoder = CLIPTextModel(_clip_text_config(tokenizer, 32)).eval()
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear",
                              clip_sample=False, set_alpha_to_one=False, steps_offset=1)
    pipe = StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet,
                                   scheduler=scheduler, safety_checker=None, feature_extractor=None,
                                   image_encoder=None, requires_safety_checker=False)
    pipe.save_pretrained(path)
    return _mark(path, "sd", height=64, width=64, num_inference_steps=2)


def build_tiny_lm(path: str | Path) -> Path:
    """A tiny causal language model (a 2-layer Llama of width 32 with the tiny judge's tokenizer, random weights),
    saved to ``path``; loads with ``AutoModelForCausalLM`` and ``AutoTokenizer`` (MT2IE's perplexity proxy)."""
    from transformers import LlamaConfig, LlamaForCausalLM

    path = Path(path)
    if _done(path, "lm"):
        return path
    _seed()
    tokenizer = _vlm_tokenizer()
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=256,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    LlamaForCausalLM(config).eval().save_pretrained(path)
    tokenizer.save_pretrained(path)
    return _mark(path, "lm")


def build_all(root: str | Path) -> dict[str, Path]:
    """Build (or reuse) the tiny CLIP, VLM and diffusion models under ``root``:
    ``{"clip": root/"clip", "vlm": root/"vlm", "sd": root/"sd"}``."""
    root = Path(root)
    builders = {"clip": build_tiny_clip, "vlm": build_tiny_vlm, "sd": build_tiny_sd}
    return {name: build(root / name) for name, build in builders.items()}


def main(argv: list[str] | None = None) -> int:
    """``python -m t2ireason.testing FOLDER``: the tiny random models in FOLDER (offline), and the tiny
    judge's options in ``FOLDER/judge_kwargs.json`` (for ``--judge-kwargs``): a first engine run with
    no download at all (README)."""
    import json

    from .console import Parser

    parser = Parser(prog="python -m t2ireason.testing", description=main.__doc__.splitlines()[0])
    parser.add_argument("folder", help="where the models go (reused)")
    folder = Path(parser.parse_args(argv).folder)
    models = build_all(folder)
    (folder / "judge_kwargs.json").write_text(json.dumps({"device": "cpu", **tiny_judge_kwargs(models["vlm"])}))
    for name, path in models.items():
        print(f"{name:5s} {path}")
    print(f"judge options: {folder / 'judge_kwargs.json'}")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main())
