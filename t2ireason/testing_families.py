"""Tiny random judges of every open VLM family the papers use, each as its checkpoint is published.

A family here is what a user's real checkpoint brings to ``load_judge("hf:<folder>")``: the
model's real config and processor classes, the chat template published with the checkpoint
(package data, verbatim, in ``templates/chat_templates/``, each file citing the checkpoint it comes
from and the public copies it was compared with; ``TEMPLATE_SHA256`` pins the texts), and a tokenizer
of the same kind (SentencePiece-style or byte-level BPE, adding BOS or not) carrying the family's
special tokens. The weights are random and tiny (well under 1M parameters, a few seconds to build);
each builder saves with ``save_pretrained`` so tests load the folder through ``from_pretrained``.

``FAMILIES`` maps a name to its :class:`Family`; :func:`build_family` builds (or reuses) one.
Families whose processors need torchvision (Qwen2-VL, Qwen2.5-VL, Qwen3-VL, SmolVLM2) have
``needs_torchvision=True``: they build and load only where a torchvision matching torch is
installed (``make vision``, see the Makefile).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from .prompts import verbatim
from .testing import _clip_image_processor, _clip_vision_config, _done, _mark, _seed

__all__ = ["Family", "FAMILIES", "build_family", "TEMPLATES", "TEMPLATE_SHA256", "build_tiny_janus", "JANUS_TEMPLATE"]

# -- the published chat templates (data, verbatim) ------------------------------------------------
# Each is a package data file, templates/chat_templates/<file>.txt: its #| lines cite the checkpoint it
# comes from and the public copies it was compared with, character by character (the Hub is not reachable
# from here; "verified" means identical to those copies, whitespace included); the rest is the template.

#: family -> its template's file (Qwen2-VL and Qwen2.5-VL publish the same text)
_TEMPLATE_FILES = {"llava-1.5": "llava-1.5", "llava-next-mistral": "llava-next-mistral",
                   "llava-next-34b": "llava-next-34b", "idefics3": "idefics3", "smolvlm2": "smolvlm2",
                   "qwen2-vl": "qwen2-vl", "qwen2.5-vl": "qwen2-vl", "qwen3-vl": "qwen3-vl",
                   "qwen3-vl-thinking": "qwen3-vl-thinking", "gemma3": "gemma3", "paligemma": "paligemma"}
#: family -> the chat template published with its checkpoint, byte for byte (PaliGemma's is ours: its
#: checkpoint ships none, see its file)
TEMPLATES = {family: verbatim("chat_templates", f"{file}.txt") for family, file in _TEMPLATE_FILES.items()}

#: SHA-256 of each template's text: a fixture edited by mistake no longer matches the copies it was verified
#: against (the Qwen3-VL Instruct value is the one published beside an independent copy).
TEMPLATE_SHA256 = {
    "llava-1.5": "6fef09c05345e88b9f85e80bcb3491003332050750586568bdf91cfa81965d0c",
    "llava-next-mistral": "2c17243a977fd0643fb549a509a8e2684f45517df0f9f608d5893b719f16569f",
    "llava-next-34b": "226cddf019684887ff1dd1c1ad1bfb585f84ae41658c979901d3f090a4dc0367",
    "idefics3": "fcbb6764942ea01454d80ccd9bd03365cd0ad41c31431208f7457f5cbb9ad69e",
    "smolvlm2": "830005085ddd94cec605b6e21b885b28ffad6e3f82ee6a212c523533e8f04f01",
    "qwen2-vl": "a0bc6f6fc7a29a80017a433e8f03a1cc1236e838a944a2d034295a60c4f2fddb",
    "qwen2.5-vl": "a0bc6f6fc7a29a80017a433e8f03a1cc1236e838a944a2d034295a60c4f2fddb",
    "qwen3-vl": "3636d0f0bd6bef02654cdffdc447b79cb2cef8ab02cc75267345946291a489e4",
    "qwen3-vl-thinking": "84ed326ccec340f3c775d5a31c0aada290d59819c18e43650aabe14f1d42c839",
    "gemma3": "7de1c58e208eda46e9c7f86397df37ec49883aeece39fb961e0a6b24088dd3c4",
    "paligemma": "d9f956adc2e502a1a368518a9645047206fdde0d5542646ea961250f60f6cd34",
}

# -- tokenizers of each kind -----------------------------------------------------------------------

_WORDS = ("Yes", "No", "yes", "no", "the", "is", "a", "an", "image", "score", "true", "false")


def _word_merges(words, prefix: str) -> list[tuple[str, str]]:
    """Merges building each word left to right, after ``prefix`` (▁ or Ġ) and bare, the prefixed
    forms ranked first (as in the real vocabularies, where " Yes" is one token): both forms of
    every answer word are single tokens of different ids."""
    merges = []
    for start in (prefix, ""):
        for w in words:
            cur = start + w[0] if start else w[0]
            if start:
                merges.append((start, w[0]))
            for ch in w[1:]:
                merges.append((cur, ch))
                cur += ch
    return list(dict.fromkeys(merges))


def _sentencepiece_tokenizer(cls_name: str, specials: list[str], *, bos: str, eos: str, unk: str,
                             add_bos: bool, pad: str | None = None, extra: dict | None = None,
                             non_special: tuple[str, ...] = ()):
    """A SentencePiece-style BPE (Llama, Mistral, Yi, Gemma): ``▁`` marks spaces, byte fallback,
    printable characters, merges making ``Yes``/``▁Yes`` (and friends) single tokens."""
    import transformers
    from transformers import AddedToken

    merges = _word_merges(_WORDS, "▁")
    symbols = [unk, bos, eos] + ([pad] if pad else []) + [f"<0x{b:02X}>" for b in range(256)]
    symbols += ["▁"] + [chr(c) for c in range(33, 127)] + ["".join(m) for m in merges]
    vocab = {s: i for i, s in enumerate(dict.fromkeys(symbols))}
    cls = getattr(transformers, cls_name)
    kwargs = {"add_bos_token": add_bos, "add_eos_token": False} if cls_name == "LlamaTokenizer" else {}
    tok = cls(vocab=vocab, merges=merges, bos_token=bos, eos_token=eos, unk_token=unk,
              **({"pad_token": pad} if pad else {}), **kwargs, **(extra or {}))
    if cls_name != "LlamaTokenizer":
        tok.add_bos_token = add_bos
    tok.add_special_tokens({"additional_special_tokens": [AddedToken(s, special=True, normalized=False)
                                                          for s in specials]})
    if non_special:  # added tokens that are not special (Yi's <|im_start|>)
        tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in non_special])
    return tok


def _byte_level_tokenizer(cls_name: str, specials: list[str], *, eos: str, bos: str | None = None,
                          pad: str | None = None, unk: str | None = None, add_bos: bool = False,
                          non_special: tuple[str, ...] = (), extra: dict | None = None):
    """A byte-level BPE (GPT-2, Qwen2, Llama 3, SmolLM2, DeepSeek): ``Ġ`` marks spaces; ``Yes`` and
    ``ĠYes`` are distinct single tokens. ``extra``: more of the tokenizer's arguments
    (``extra_special_tokens``)."""
    import transformers
    from tokenizers import pre_tokenizers
    from transformers import AddedToken

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = _word_merges(_WORDS, "Ġ")
    symbols = alphabet + ["".join(m) for m in merges]
    vocab = {s: i for i, s in enumerate(dict.fromkeys(symbols))}
    kwargs = {"eos_token": eos, "unk_token": unk or eos, "pad_token": pad or eos, "bos_token": bos, **(extra or {})}
    if cls_name == "PreTrainedTokenizerFast":  # a checkpoint shipping only tokenizer.json (Llama 3)
        from tokenizers import Tokenizer, decoders, models

        backend = Tokenizer(models.BPE(vocab=vocab, merges=merges))
        backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
        backend.decoder = decoders.ByteLevel()
        backend.add_special_tokens([t for t in (bos, eos, pad) if t])
        tok = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, **kwargs)
    else:
        tok = getattr(transformers, cls_name)(vocab=vocab, merges=merges, **kwargs)
    tok.add_special_tokens({"additional_special_tokens": [AddedToken(s, special=True, normalized=False)
                                                          for s in specials]})
    if non_special:  # added tokens that are not special (Qwen's <think>, <tool_call>...)
        tok.add_tokens([AddedToken(s, special=False, normalized=False) for s in non_special])
    if add_bos:
        _add_bos_post_processor(tok)
    return tok


def _add_bos_post_processor(tok):
    """Make a tokenizers-backed tokenizer prepend its BOS on encode (Llama 3's post-processor)."""
    from tokenizers import processors

    bos = tok.bos_token
    tok._tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, tok.convert_tokens_to_ids(bos))])


# -- language-model and vision-tower configs (tiny) ------------------------------------------------

_TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "max_position_embeddings": 2048}


def _ids(tok) -> dict:
    return {"vocab_size": len(tok), "bos_token_id": tok.bos_token_id, "eos_token_id": tok.eos_token_id,
            "pad_token_id": tok.pad_token_id}


def _finish(model, tok, processor, path: Path, family: str) -> Path:
    model.generation_config.pad_token_id = tok.pad_token_id
    model.generation_config.eos_token_id = tok.eos_token_id
    model.eval().save_pretrained(path)
    processor.save_pretrained(path)
    return _mark(path, f"family:{family}", parameters=sum(p.numel() for p in model.parameters()))


# -- builders ----------------------------------------------------------------------------------------

def _build_llava_15(path: Path) -> Path:
    from transformers import LlamaConfig, LlavaConfig, LlavaForConditionalGeneration, LlavaProcessor

    tok = _sentencepiece_tokenizer("LlamaTokenizer", ["<image>"], bos="<s>", eos="</s>", unk="<unk>",
                                   add_bos=True, pad="<pad>")
    processor = LlavaProcessor(image_processor=_clip_image_processor(), tokenizer=tok, patch_size=8,
                               vision_feature_select_strategy="default", num_additional_image_tokens=1,
                               image_token="<image>", chat_template=TEMPLATES["llava-1.5"])
    config = LlavaConfig(vision_config=_clip_vision_config().to_dict(), text_config=LlamaConfig(**_TEXT, **_ids(tok)).to_dict(),
                         image_token_index=tok.convert_tokens_to_ids("<image>"), image_seq_length=16,
                         vision_feature_select_strategy="default", vision_feature_layer=-2)
    return _finish(LlavaForConditionalGeneration(config), tok, processor, path, "llava-1.5")


def _llava_next(path: Path, family: str, tok, text_config) -> Path:
    from transformers import LlavaNextConfig, LlavaNextForConditionalGeneration, LlavaNextProcessor
    from transformers.models.llava_next.image_processing_pil_llava_next import LlavaNextImageProcessorPil

    grid = [[32, 64], [64, 32], [64, 64]]
    image_processor = LlavaNextImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32},
                                                 image_grid_pinpoints=grid)
    processor = LlavaNextProcessor(image_processor=image_processor, tokenizer=tok, patch_size=8,
                                   vision_feature_select_strategy="default", num_additional_image_tokens=1,
                                   image_token="<image>", chat_template=TEMPLATES[family])
    config = LlavaNextConfig(vision_config=_clip_vision_config().to_dict(), text_config=text_config.to_dict(),
                             image_token_index=tok.convert_tokens_to_ids("<image>"), image_grid_pinpoints=grid,
                             vision_feature_select_strategy="default", vision_feature_layer=-2,
                             image_seq_length=16)
    return _finish(LlavaNextForConditionalGeneration(config), tok, processor, path, family)


def _build_llava_next_mistral(path: Path) -> Path:
    from transformers import MistralConfig

    tok = _sentencepiece_tokenizer("LlamaTokenizer", ["<image>"], bos="<s>", eos="</s>", unk="<unk>",
                                   add_bos=True, pad="<pad>")
    return _llava_next(path, "llava-next-mistral", tok, MistralConfig(**_TEXT, **_ids(tok)))


def _build_llava_next_34b(path: Path, add_bos: bool) -> Path:
    from transformers import LlamaConfig

    # Yi's SentencePiece vocabulary (Nous-Hermes-2-Yi-34B's, slow tokenizer) with ChatML's turn markers: <|im_end|>
    # ends a turn and is special, <|im_start|> is not (transformers' llava_next converter decodes the 34B's output
    # with skip_special_tokens=True to "<|im_start|> system\nAnswer the questions. <|im_start|> user..."). Whether
    # its tokenizer adds BOS is not verified here: both are built.
    tok = _sentencepiece_tokenizer("LlamaTokenizer", ["<|im_end|>", "<image>"], bos="<|startoftext|>",
                                   eos="<|im_end|>", unk="<unk>", add_bos=add_bos, pad="<pad>",
                                   non_special=("<|im_start|>",))
    return _llava_next(path, "llava-next-34b", tok, LlamaConfig(**_TEXT, **_ids(tok)))


_IDEFICS_TOKENS = ["<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>"] + [
    f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def _idefics_like(path: Path, family: str, tok, smol: bool) -> Path:
    from transformers import LlamaConfig

    image_size, patch, scale = 32, 8, 2
    seq_len = (image_size // patch) ** 2 // scale**2
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
              "image_size": image_size, "patch_size": patch}
    text = LlamaConfig(**_TEXT, **_ids(tok)).to_dict()
    common = {"vision_config": vision, "text_config": text, "scale_factor": scale,
              "image_token_id": tok.convert_tokens_to_ids("<image>"), "pad_token_id": tok.pad_token_id}
    sizes = {"size": {"longest_edge": 2 * image_size}, "max_image_size": {"longest_edge": image_size}}
    if smol:
        from transformers import SmolVLMConfig, SmolVLMForConditionalGeneration, SmolVLMProcessor
        from transformers.models.smolvlm.image_processing_pil_smolvlm import SmolVLMImageProcessorPil
        from transformers.models.smolvlm.video_processing_smolvlm import SmolVLMVideoProcessor

        processor = SmolVLMProcessor(image_processor=SmolVLMImageProcessorPil(**sizes), tokenizer=tok,
                                     video_processor=SmolVLMVideoProcessor(**sizes), image_seq_len=seq_len,
                                     chat_template=TEMPLATES[family])
        model = SmolVLMForConditionalGeneration(SmolVLMConfig(**common))
    else:
        from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor
        from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

        processor = Idefics3Processor(image_processor=Idefics3ImageProcessorPil(**sizes), tokenizer=tok,
                                      image_seq_len=seq_len, chat_template=TEMPLATES[family])
        model = Idefics3ForConditionalGeneration(Idefics3Config(**common))
    return _finish(model, tok, processor, path, family)


def _build_idefics3(path: Path) -> Path:
    # Llama 3's byte-level BPE, adding <|begin_of_text|> (the template writes it too): transformers'
    # test_processing_idefics3 expects the processor to put BOS before any text
    tok = _byte_level_tokenizer("PreTrainedTokenizerFast", ["<|begin_of_text|>", "<|end_of_text|>", *_IDEFICS_TOKENS],
                                eos="<|end_of_text|>", bos="<|begin_of_text|>", add_bos=True)
    return _idefics_like(path, "idefics3", tok, smol=False)


def _build_smolvlm2(path: Path) -> Path:
    # SmolLM2's byte-level BPE (GPT-2 style) with ChatML markers: BOS <|im_start|>, which the template writes and
    # the tokenizer never adds (transformers' test_processing_smolvlm expects no BOS from the processor), EOS
    # <end_of_utterance>, pad <|im_end|>, unk <|endoftext|>
    tok = _byte_level_tokenizer("GPT2Tokenizer", ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<video>",
                                                  *_IDEFICS_TOKENS], eos="<end_of_utterance>", pad="<|im_end|>",
                                bos="<|im_start|>", unk="<|endoftext|>")
    return _idefics_like(path, "smolvlm2", tok, smol=True)


_QWEN_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                  "<|image_pad|>", "<|video_pad|>"]
#: added tokens that are not special, by Qwen generation: Qwen2.5 added the tool-call markers, Qwen3 the
#: tool-response and thinking markers (Qwen2-VL's vocabulary has none of them)
_QWEN_ADDED = {"2": (), "2.5": ("<tool_call>", "</tool_call>"),
               "3": ("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>")}


def _qwen_tokenizer(version: str = "2"):
    """Qwen's byte-level BPE: no BOS (none is defined), EOS <|im_end|> (the Instruct checkpoints'), pad
    <|endoftext|>."""
    return _byte_level_tokenizer("Qwen2Tokenizer", _QWEN_SPECIALS, eos="<|im_end|>", pad="<|endoftext|>",
                                 non_special=_QWEN_ADDED[version])


def _qwen(path: Path, family: str, version: str) -> Path:
    import transformers
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    tok = _qwen_tokenizer(version)
    patch = 16 if version == "3" else 14
    pixels = {"min_pixels": (2 * patch) ** 2, "max_pixels": (4 * patch) ** 2}
    image_processor = Qwen2VLImageProcessorPil(patch_size=patch, merge_size=2, temporal_patch_size=2, **pixels)
    video_name = {"2": "Qwen2VLVideoProcessor", "2.5": "Qwen2VLVideoProcessor", "3": "Qwen3VLVideoProcessor"}[version]
    video_processor = getattr(transformers, video_name)(patch_size=patch, merge_size=2, temporal_patch_size=2)
    processor_cls = {"2": "Qwen2VLProcessor", "2.5": "Qwen2_5_VLProcessor", "3": "Qwen3VLProcessor"}[version]
    processor = getattr(transformers, processor_cls)(image_processor=image_processor, tokenizer=tok,
                                                     video_processor=video_processor, chat_template=TEMPLATES[family])
    ids = {"image_token_id": tok.convert_tokens_to_ids("<|image_pad|>"),
           "video_token_id": tok.convert_tokens_to_ids("<|video_pad|>"),
           "vision_start_token_id": tok.convert_tokens_to_ids("<|vision_start|>"),
           "vision_end_token_id": tok.convert_tokens_to_ids("<|vision_end|>")}
    text = {**_TEXT, **_ids(tok), "head_dim": 8}
    if version == "3":
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2],
                                   "mrope_interleaved": True}
        vision = {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4, "patch_size": patch,
                  "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                  "num_position_embeddings": 16, "deepstack_visual_indexes": [1]}
        cls_config, cls_model = "Qwen3VLConfig", "Qwen3VLForConditionalGeneration"
    else:
        text["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}
        vision = {"depth": 2, "embed_dim": 32, "hidden_size": 32, "num_heads": 4, "mlp_ratio": 2, "patch_size": patch,
                  "spatial_merge_size": 2, "temporal_patch_size": 2}
        if version == "2.5":
            vision.update(intermediate_size=64, out_hidden_size=32, window_size=56, fullatt_block_indexes=[1])
        cls_config = {"2": "Qwen2VLConfig", "2.5": "Qwen2_5_VLConfig"}[version]
        cls_model = {"2": "Qwen2VLForConditionalGeneration", "2.5": "Qwen2_5_VLForConditionalGeneration"}[version]
    config = getattr(transformers, cls_config)(text_config=text, vision_config=vision, **ids)
    return _finish(getattr(transformers, cls_model)(config), tok, processor, path, family)


def _siglip_vision(image_size: int = 32, patch: int = 8) -> dict:
    return {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
            "image_size": image_size, "patch_size": patch}


def _build_gemma3(path: Path) -> Path:
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration, Gemma3Processor, Gemma3TextConfig
    from transformers.models.gemma3.image_processing_pil_gemma3 import Gemma3ImageProcessorPil

    specials = ["<start_of_turn>", "<end_of_turn>", "<start_of_image>", "<end_of_image>", "<image_soft_token>"]
    tok = _sentencepiece_tokenizer("GemmaTokenizer", specials, bos="<bos>", eos="<eos>", unk="<unk>", add_bos=True,
                                   pad="<pad>", extra={"extra_special_tokens": {"image_token": "<image_soft_token>",
                                                                               "boi_token": "<start_of_image>",
                                                                               "eoi_token": "<end_of_image>"}})
    tokens_per_image = 4
    image_processor = Gemma3ImageProcessorPil(size={"height": 32, "width": 32})
    processor = Gemma3Processor(image_processor=image_processor, tokenizer=tok, image_seq_length=tokens_per_image,
                                chat_template=TEMPLATES["gemma3"])
    text = Gemma3TextConfig(**{**_TEXT, "head_dim": 8, "sliding_window": 64}, **_ids(tok))
    config = Gemma3Config(text_config=text.to_dict(), vision_config=_siglip_vision(), mm_tokens_per_image=tokens_per_image,
                          image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
                          boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
                          eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"))
    return _finish(Gemma3ForConditionalGeneration(config), tok, processor, path, "gemma3")


def _build_paligemma(path: Path) -> Path:
    from transformers import (
        GemmaConfig,
        PaliGemmaConfig,
        PaliGemmaForConditionalGeneration,
        PaliGemmaProcessor,
    )
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    tok = _sentencepiece_tokenizer("GemmaTokenizer", ["<image>"], bos="<bos>", eos="<eos>", unk="<unk>",
                                   add_bos=True, pad="<pad>")
    image_processor = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    image_processor.image_seq_length = (32 // 8) ** 2
    processor = PaliGemmaProcessor(image_processor=image_processor, tokenizer=tok)  # no chat template: as published
    text = GemmaConfig(**{**_TEXT, "head_dim": 8}, **_ids(tok))
    config = PaliGemmaConfig(text_config=text.to_dict(), vision_config=_siglip_vision(),
                             image_token_index=tok.convert_tokens_to_ids("<image>"), projection_dim=32,
                             hidden_size=32)
    config.text_config.vocab_size = len(tok)
    return _finish(PaliGemmaForConditionalGeneration(config), tok, processor, path, "paligemma")


# -- the families --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Family:
    """A VLM family as published: where its template comes from and what the judge must do with it.

    ``answer_after`` is the end of the rendered generation prompt and ``answer_token`` the token
    that follows it when the model answers "Yes" (what P("Yes") scores), both as the family writes
    them. ``adds_bos``: the tokenizer, as its processor loads it, prepends its BOS to what it encodes;
    ``writes_bos``: the chat template writes the BOS token's text itself (the encoded prompt holds one
    BOS either way). ``judge_kwargs`` are the options a user of this family passes (PaliGemma's template).
    """

    name: str
    checkpoint: str
    build: Callable[[Path], Path]
    answer_after: str
    answer_token: str
    needs_torchvision: bool = False
    adds_bos: bool = False
    writes_bos: bool = False
    thinking: bool = False
    judge_kwargs: dict = field(default_factory=dict)


FAMILIES: dict[str, Family] = {f.name: f for f in [
    Family("llava-1.5", "llava-hf/llava-1.5-7b-hf", _build_llava_15, "ASSISTANT:", "▁Yes", adds_bos=True),
    Family("llava-next-mistral", "llava-hf/llava-v1.6-mistral-7b-hf", _build_llava_next_mistral, " [/INST]", "▁Yes",
           adds_bos=True),
    Family("llava-next-34b", "llava-hf/llava-v1.6-34b-hf", lambda p: _build_llava_next_34b(p, add_bos=False),
           "<|im_start|>assistant\n", "Yes"),
    Family("llava-next-34b-bos", "llava-hf/llava-v1.6-34b-hf (tokenizer adding BOS)",
           lambda p: _build_llava_next_34b(p, add_bos=True), "<|im_start|>assistant\n", "Yes", adds_bos=True),
    Family("idefics3", "HuggingFaceM4/Idefics3-8B-Llama3", _build_idefics3, "Assistant:", "ĠYes", adds_bos=True,
           writes_bos=True),
    Family("smolvlm2", "HuggingFaceTB/SmolVLM2-2.2B-Instruct", _build_smolvlm2, "Assistant:", "ĠYes",
           needs_torchvision=True, writes_bos=True),
    Family("qwen2-vl", "Qwen/Qwen2-VL-7B-Instruct", lambda p: _qwen(p, "qwen2-vl", "2"),
           "<|im_start|>assistant\n", "Yes", needs_torchvision=True),
    Family("qwen2.5-vl", "Qwen/Qwen2.5-VL-7B-Instruct", lambda p: _qwen(p, "qwen2.5-vl", "2.5"),
           "<|im_start|>assistant\n", "Yes", needs_torchvision=True),
    Family("qwen3-vl", "Qwen/Qwen3-VL-8B-Instruct", lambda p: _qwen(p, "qwen3-vl", "3"),
           "<|im_start|>assistant\n", "Yes", needs_torchvision=True),
    Family("qwen3-vl-thinking", "Qwen/Qwen3-VL-8B-Thinking",
           lambda p: _qwen(p, "qwen3-vl-thinking", "3"),
           "<|im_start|>assistant\n<think>\n\n</think>\n\n", "Yes", needs_torchvision=True, thinking=True),
    Family("gemma3", "google/gemma-3-4b-it", _build_gemma3, "<start_of_turn>model\n", "Yes", adds_bos=True,
           writes_bos=True),
    # PaliGemmaProcessor turns its tokenizer's BOS off and puts BOS itself between the images and the text
    Family("paligemma", "google/paligemma-3b-mix-224 (template passed in)", _build_paligemma, "\n", "Yes",
           judge_kwargs={"processor_kwargs": {"chat_template": TEMPLATES["paligemma"]}}),
]}


def build_family(name: str, root: str | Path) -> Path:
    """Build (or reuse) the tiny model of family ``name`` in ``root/name``; returns the folder."""
    family = FAMILIES[name]
    path = Path(root) / name
    if _done(path, f"family:{name}"):
        return path
    _seed()
    return family.build(path)


# -- an image generator: Janus-Pro (transformers' JanusForConditionalGeneration) -------------------------------

#: A chat template of ours in the form Janus-Pro's published one renders a conversation (a user turn is
#: "<|User|>: {text}\n\n", the generation prompt "<|Assistant|>:", as transformers' test_processing_janus
#: expects of the checkpoint's template): not the published text, which is longer; enough to draw from a prompt.
JANUS_TEMPLATE = (
    "{% for message in messages %}{% if message['role'] | lower == 'user' %}<|User|>: {% else %}<|Assistant|>: "
    "{% endif %}{% for content in message['content'] %}{% if content['type'] == 'text' %}{{ content['text'] }}"
    "{% elif content['type'] == 'image' %}<image_placeholder>{% endif %}{% endfor %}"
    "{% if message['role'] | lower == 'user' %}{{ '\n\n' }}{% else %}<｜end▁of▁sentence｜>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|Assistant|>:{% endif %}")


def build_tiny_janus(path: str | Path) -> Path:
    """A ~280k-parameter Janus-Pro (``JanusForConditionalGeneration``: a 2-layer Llama of width 32, a 1-layer
    SigLIP-style vision tower, a VQ model whose decoder draws 16 x 16 images from 16 image tokens) with a
    ``JanusProcessor`` (the PIL image processor: no torchvision), a DeepSeek-style byte-level tokenizer (BOS
    ``<｜begin▁of▁sentence｜>``, ``<image_placeholder>``, ``<begin_of_image>``, ``<end_of_image>``) and the
    generation config transformers' conversion script writes (classifier-free guidance 5, temperature 1, the
    pad and begin-of-image ids), saved to ``path``: ``hf:<path>`` draws with it. Reuses ``path`` if built."""
    from transformers import JanusConfig, JanusForConditionalGeneration, JanusProcessor, LlamaConfig
    from transformers.models.janus.image_processing_pil_janus import JanusImageProcessorPil

    path = Path(path)
    if _done(path, "janus"):
        return path
    _seed()
    image_tokens = {"image_token": "<image_placeholder>", "boi_token": "<begin_of_image>", "eoi_token": "<end_of_image>"}
    tok = _byte_level_tokenizer("PreTrainedTokenizerFast", list(image_tokens.values()), eos="<｜end▁of▁sentence｜>",
                                bos="<｜begin▁of▁sentence｜>", pad="<｜▁pad▁｜>", add_bos=True,
                                extra={"extra_special_tokens": image_tokens})
    processor = JanusProcessor(image_processor=JanusImageProcessorPil(size={"height": 32, "width": 32}),
                               tokenizer=tok, chat_template=JANUS_TEMPLATE, num_image_tokens=16)
    vision = {"image_size": 32, "patch_size": 8, "num_image_tokens": 16, "hidden_size": 32, "projection_dim": 32,
              "num_hidden_layers": 1, "num_attention_heads": 4, "mlp_ratio": 2}
    # the VQ aligner maps code embeddings to the language model's width, its head back (both 32 here)
    vq = {"embed_dim": 8, "num_embeddings": 16, "latent_channels": 8, "base_channels": 32, "channel_multiplier": [1, 1, 1],
          "num_res_blocks": 1, "projection_dim": 32, "image_token_embed_dim": 32}
    config = JanusConfig(text_config=LlamaConfig(**{**_TEXT, "max_position_embeddings": 256}, **_ids(tok)).to_dict(),
                         vision_config=vision, vq_config=vq, image_token_id=tok.convert_tokens_to_ids("<image_placeholder>"))
    model = JanusForConditionalGeneration(config).eval()
    generation = model.generation_config
    generation._from_model_config = False  # else the custom entries below are dropped when it is read back
    generation.temperature, generation.guidance_scale = 1.0, 5
    generation.pad_token_id = tok.pad_token_id
    generation.generation_kwargs = {"boi_token_id": tok.convert_tokens_to_ids("<begin_of_image>")}
    model.save_pretrained(path)
    processor.save_pretrained(path)
    return _mark(path, "janus", parameters=sum(p.numel() for p in model.parameters()), image_size=16)


def describe(path: str | Path) -> dict:
    """The build record of a family folder (family, seed, parameter count)."""
    return json.loads((Path(path) / "t2ireason_tiny.json").read_text())


