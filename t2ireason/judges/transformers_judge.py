"""A local multimodal judge on transformers: ``load_judge("hf:<hub id or folder>")``.

The model is loaded once with ``AutoModelForImageTextToText`` and
``AutoProcessor``, so any image-text-to-text model with a chat template works
(LLaVA-1.5, LLaVA-NeXT, Idefics3, SmolVLM2, Qwen2/2.5/3-VL, Gemma3, PaliGemma
with a template passed in...). Each request is rendered with the model's own
chat template (``chat_template_kwargs`` reach it: ``enable_thinking``,
``add_vision_id``...), encoded by the model's processor exactly as it encodes a
rendered prompt (the tokenizer adds its BOS unless the template wrote it),
batched with left padding and answered with ``model.generate``.

A request's ``json_schema`` is enforced by constrained decoding
(``structured_output=True``, the default): at every step llguidance masks the
tokens that would leave the schema, per row, so a batch may mix free-text and
structured requests. The caller's parser (:mod:`t2ireason.parsing`) still
validates every reply and re-asks when one does not conform.

Answer probabilities (VQAScore's P("Yes")) are read in context: the answer is
written the way the chat template writes an assistant turn after its generation
prompt (``ASSISTANT: Yes`` -> ``▁Yes``, ``<|im_start|>assistant\\nYes`` -> ``Yes``,
``Assistant: Yes`` -> ``ĠYes``), tokenised together with the end of the prompt,
and read with the positions, masks and token types of generation for every family
(:mod:`.local_answers`: a one-token answer from one forward with ``generate``'s
inputs, each batch launched before the one before it is read; a longer answer
teacher-forced through ``generate`` itself). A template that opens a thinking block in its
generation prompt (Qwen3-VL Thinking) gets it closed the way the template writes
an answer with empty reasoning, so the answer is read after the thought, never
inside it; a structured (JSON) request is decoded after the same closed block.

Failures: an error of the judge's own making (template, processor, model code)
raises :class:`JudgeError` at once, naming the family and the cause; only
running out of accelerator memory is transient (the batch is split, and a single
request that still does not fit comes back as ``Reply(error=..., transient=True)``).
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib.metadata
import importlib.util
import json
import re
import threading
from concurrent.futures import Future
from contextlib import contextmanager
from typing import Any

from ..images import JudgeImage
from .base import (
    ChatRequest,
    Judge,
    JudgeError,
    Message,
    Reply,
    Sampling,
    TokenLogprob,
)
from .checkpoints import torchvision_fix, torchvision_problem
from .constrained import schema_constraint
from .decoding import row_sampler, rows_done
from .local_answers import AnswerProbabilities, is_out_of_memory
from .prefetch import prefetched
from .static_cache import StaticDecoding, check_setting
from .vision_attention import fitting_attention, use_varlen_sdpa

__all__ = ["TransformersJudge", "GENERATION_CONFIGS", "torchvision_problem"]

#: ``generation_config`` choices: the project's explicit ``sampling`` (default), or the checkpoint's own
#: ``generation_config.json`` (its temperature, top-p, top-k, repetition penalty...), as official scripts run.
GENERATION_CONFIGS = ("sampling", "model")


def _jsonable(value: Any) -> Any:
    """A JSON-safe rendering of an option for the cache identity (objects by repr)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bool, int, float, str, type(None))):
        return value
    return repr(value)


def _digest(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(_jsonable(value), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


class TransformersJudge(AnswerProbabilities, Judge):
    """A vision-language model run locally with transformers.

    ``model`` is a Hub id or a local folder. ``revision``, ``dtype``, ``device_map``,
    ``attn_implementation``, ``trust_remote_code`` and ``model_kwargs`` reach
    ``from_pretrained``; ``processor_kwargs`` reach ``AutoProcessor.from_pretrained``
    (Qwen's ``min_pixels``/``max_pixels``, or ``chat_template`` for a checkpoint that
    ships none, like PaliGemma). ``chat_template_kwargs`` are the template's own
    options, given at every rendering (``{"enable_thinking": False}``,
    ``{"add_vision_id": True}``). With no ``device_map`` the model goes to
    ``device`` (CUDA when available, else CPU).

    ``max_pixels``/``min_pixels`` are the judge's pixel budget, applied once per
    image (:meth:`JudgeImage.resized` is memoised) before the processor sees it.
    ``sampling`` is the default for requests that carry none (greedy, 1024 new
    tokens). ``generation_config="model"`` decodes with the checkpoint's own
    ``generation_config.json`` instead (its temperature, top-p, top-k, repetition
    penalty...; still seeded per request, the length still the request's
    ``max_tokens``), as the official scripts of T2I-ReasonBench and PRISM-Bench run.
    ``generate_kwargs`` are passed to every ``generate`` call (``min_new_tokens``,
    ``repetition_penalty``, ``sequence_bias``). ``structured_output`` enforces each
    request's ``json_schema`` by constrained decoding (llguidance); ``False`` leaves
    it to the caller's parser and re-asks.

    ``attn_implementation`` left at ``None`` is chosen per family: the Qwen-VL families' vision towers,
    which attend image by image or window by window, attend in one call a layer instead of one a window
    (flash-attention's varlen kernel when ``flash_attn`` is installed and the model runs on CUDA in half
    precision, else one padded SDPA call: :mod:`.vision_attention`), other families get transformers'
    default (SDPA); the choice is part of :meth:`identity`. ``prefetch`` batches are prepared (images
    decoded and resized, template rendered, processor run, tensors staged in pinned memory) in a
    background thread while the model answers the current one (``0``: one after the other).
    ``compiled_decoding`` decodes chat replies with a static KV cache, which ``generate`` compiles with
    ``torch.compile``: ``None`` (the default) on CUDA for full batches (a list's smaller last batch filled up
    to a compiled size), ``True`` always, ``False`` never (:mod:`.static_cache`; the first batch of a size
    compiles, tens of seconds, said once in the log).
    """

    backend = "hf"

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        dtype: Any = "auto",
        device_map: str | dict | None = None,
        device: str | None = None,
        batch_size: int = 8,
        max_pixels: int | None = None,
        min_pixels: int | None = None,
        sampling: Sampling | None = None,
        generation_config: str = "sampling",
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
        processor_kwargs: dict | None = None,
        model_kwargs: dict | None = None,
        chat_template_kwargs: dict | None = None,
        generate_kwargs: dict | None = None,
        structured_output: bool = True,
        prefetch: int = 1,
        compiled_decoding: bool | None = None,
    ):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0 (0: no prefetch), got {prefetch}")
        if generation_config not in GENERATION_CONFIGS:
            raise ValueError(f"generation_config must be one of {', '.join(GENERATION_CONFIGS)}, "
                             f"got {generation_config!r}")
        self.model = str(model)
        self.revision = revision
        self.batch_size = batch_size
        self.max_pixels = max_pixels
        self.min_pixels = min_pixels
        self.default_sampling = sampling or Sampling()
        self.generation_config = generation_config
        self.generate_kwargs = dict(generate_kwargs or {})
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.structured_output = structured_output
        self.prefetch = prefetch
        self.compiled_decoding = check_setting(compiled_decoding)
        self._static = StaticDecoding()
        self.trust_remote_code = trust_remote_code
        self.processor_kwargs = dict(processor_kwargs or {})
        self.model_kwargs = dict(model_kwargs or {})
        self._tokenizer_info = None  # llguidance's view of the vocabulary, built on first use (~1 s)
        self._answer_context = None  # how the template writes an answer after its generation prompt
        self._answer_ids_cache: dict[tuple, list[int]] = {}
        self._executor = None  # llguidance's thread pool for the rows' masks, made on first use
        # the prefetch thread and an inline preparation (a batch split after running out of memory) never
        # share the processor at once
        self._preparing = threading.Lock()

        problem = torchvision_problem()
        if problem:
            raise JudgeError(f"cannot load judge model {self.model!r}: {problem}")
        load = {"revision": revision, "trust_remote_code": trust_remote_code}
        model_load = {**load, "dtype": dtype, **self.model_kwargs}
        if device_map is not None:
            model_load["device_map"] = device_map
        try:
            self.processor = AutoProcessor.from_pretrained(self.model, **load, **self.processor_kwargs)
            if attn_implementation is None:
                attn_implementation = fitting_attention(self.model, load, dtype, device_map, device)
            self.attn_implementation = attn_implementation
            if attn_implementation is not None:
                model_load["attn_implementation"] = attn_implementation
            self.hf_model = AutoModelForImageTextToText.from_pretrained(self.model, **model_load).eval()
            if attn_implementation is None:  # window by window no more: one attention call a layer
                self.attn_implementation = use_varlen_sdpa(self.hf_model)
        except Exception as e:  # OSError for a missing path, ValueError for an unknown architecture...
            rev = f" at revision {revision!r}" if revision else ""
            needs = ""
            if "torchvision" in str(e).lower() and importlib.util.find_spec("torchvision") is None:
                needs = f" This model's processor needs torchvision, which is not installed. {torchvision_fix()}"
            raise JudgeError(f"cannot load judge model {self.model!r}{rev}: {type(e).__name__}: {e}{needs}") from e
        if device_map is None:
            self.hf_model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        self.family = f"{self.hf_model.config.model_type} ({type(self.processor).__name__})"
        template = getattr(self.processor, "chat_template", None)
        if not template:
            raise JudgeError(f"judge model {self.model!r} ({self.family}) has no chat template; pass "
                             "processor_kwargs={'chat_template': ...}")
        self._template_sha256 = _digest(template)
        self._weights = self._weights_identity()  # the files loaded now, whatever happens to them later

        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"  # generation continues every row from its right end
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._control_tokens = self._control_token_pattern(template)
        self._special_ids = set(self.tokenizer.all_special_ids) | set(self.tokenizer.added_tokens_decoder)
        self._generation_config = self._base_generation_config()

    # -- configuration ---------------------------------------------------------

    def _base_generation_config(self):
        """The model's generation config with its sampling fields taken out (our row sampler draws,
        with the project's explicit sampling or, for ``generation_config="model"``, the checkpoint's)."""
        config = copy.deepcopy(self.hf_model.generation_config)
        config.do_sample = False
        config.temperature = config.top_p = config.top_k = None
        if config.pad_token_id is None:
            config.pad_token_id = self.tokenizer.pad_token_id
        config.update(**self.generate_kwargs)
        return config

    def _model_sampling(self) -> tuple[float, float, int | None]:
        """The checkpoint's own (temperature, top_p, top_k): greedy when it does not sample."""
        g = self.hf_model.generation_config
        if not g.do_sample:
            return 0.0, 1.0, None
        return (g.temperature if g.temperature is not None else 1.0,
                g.top_p if g.top_p is not None else 1.0, g.top_k or None)

    def resolve_sampling(self, request: ChatRequest) -> Sampling:
        sampling = request.sampling or self.default_sampling
        if self.generation_config == "model":
            temperature, top_p, _ = self._model_sampling()
            sampling = sampling.replace(temperature=temperature, top_p=top_p)
        return sampling

    @property
    def device(self):
        return self.hf_model.device

    def identity(self) -> dict[str, Any]:
        """Everything that changes a reply (JSON-safe, for cache keys): backend, model, revision
        (and the Hub commit it resolved to), dtype, pixel budget, the chat template's text (hash) and
        options, processor and model options, attention implementation, generation settings."""
        ident = super().identity()
        ident.update(family=self.hf_model.config.model_type,
                     dtype=str(self.hf_model.dtype).removeprefix("torch."),
                     max_pixels=self.max_pixels, min_pixels=self.min_pixels,
                     chat_template_sha256=self._template_sha256)
        ident.update(self._weights)
        options = {"chat_template_kwargs": self.chat_template_kwargs,
                   "processor_kwargs": {k: v for k, v in self.processor_kwargs.items() if k != "chat_template"},
                   "model_kwargs": self.model_kwargs, "generate_kwargs": self.generate_kwargs}
        ident.update({k: _jsonable(v) for k, v in options.items() if v})
        if self.attn_implementation:
            ident["attn_implementation"] = _jsonable(self.attn_implementation)
        static = self._static.describe(self.compiled_decoding, self.device.type)
        if static:
            ident["cache_implementation"] = static
        if self.trust_remote_code:
            ident["trust_remote_code"] = True
        if self.structured_output:
            ident["structured_output"] = True
        if self.generation_config == "model":
            ident["generation_config"] = "model"
            ident["model_generation_config_sha256"] = _digest(self.hf_model.generation_config.to_diff_dict())
        return ident

    def _weights_identity(self) -> dict[str, str]:
        """Which files answer: the Hub commit a Hub id resolved to (from the local Hub cache), or for a
        local folder a digest of its files' names, sizes and modification times (a re-saved or retrained
        model in the same folder is another judge)."""
        from pathlib import Path

        folder = Path(self.model).expanduser()
        if folder.is_dir():
            files = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in folder.iterdir() if p.is_file())
            return {"files_sha256": _digest(files)}
        from huggingface_hub import try_to_load_from_cache

        cached = try_to_load_from_cache(self.model, "config.json", revision=self.revision)
        match = re.search(r"snapshots[/\\]([0-9a-f]{40})[/\\]", cached) if isinstance(cached, str) else None
        return {"commit": match.group(1)} if match else {}

    def __repr__(self) -> str:
        return f"TransformersJudge(hf:{self.model}, {getattr(self, 'family', '?')})"

    # -- rendering ---------------------------------------------------------

    @contextmanager
    def _failing_as(self, what: str):
        """Errors of the judge's own making (template, processor, model code) become a JudgeError naming
        the family and the cause; running out of accelerator memory passes through (it is transient)."""
        try:
            yield
        except JudgeError:
            raise
        except Exception as e:
            if is_out_of_memory(e):
                raise
            raise JudgeError(f"judge {self.model} [{self.family}]: {what} failed: {type(e).__name__}: {e}") from e

    def _control_token_pattern(self, template: Any):
        """The control tokens a request's text must not forge (special tokens, the template's turn
        markers, the processor's image placeholders), longest first."""
        template_text = json.dumps(template) if not isinstance(template, str) else template
        tokens = set(self.tokenizer.all_special_tokens)
        tokens |= {t.content for t in self.tokenizer.added_tokens_decoder.values()
                   if t.special or t.content in template_text}
        for attr in ("image_token", "video_token", "boi_token", "eoi_token", "fake_image_token", "global_image_token"):
            value = getattr(self.processor, attr, None)
            if isinstance(value, str):
                tokens.add(value)
        tokens = sorted((t for t in tokens if len(t) > 1 and not t.isspace()), key=len, reverse=True)
        return re.compile("|".join(map(re.escape, tokens))) if tokens else None

    def _plain(self, text: str) -> str:
        """``text`` with any control token in it broken by a zero-width space, so a request's text can
        neither open a turn nor stand for an image (the tokenizer encodes it as ordinary text)."""
        if self._control_tokens is None:
            return text
        return self._control_tokens.sub(lambda m: m[0][0] + "\u200b" + m[0][1:], text)

    def _image(self, image: JudgeImage):
        return image.resized(self.max_pixels, self.min_pixels)

    def _conversation(self, messages: tuple[Message, ...]) -> list[dict]:
        """Our messages in the processor's content format, images at the judge's pixel budget."""
        return [
            {"role": m.role,
             "content": [{"type": "text", "text": self._plain(p)} if isinstance(p, str)
                         else {"type": "image", "image": self._image(p)} for p in m.content]}
            for m in messages
        ]

    def _render(self, conversations: list[list[dict]], **kwargs) -> list[str]:
        with self._failing_as("rendering the chat template"):
            return self.processor.apply_chat_template(conversations, tokenize=False,
                                                      **{"add_generation_prompt": True, **kwargs},
                                                      **self.chat_template_kwargs)

    def _encode(self, texts: list[str], conversations: list[list[dict]]):
        """The processor's encoding of rendered prompts with their images, left padded, on the CPU
        (:meth:`_on_device` moves it when its turn comes). The tokenizer adds its special tokens
        (BOS) unless the template wrote them itself."""
        images = [[p["image"] for m in conv for p in m["content"] if p["type"] == "image"] for conv in conversations]
        bos = self.tokenizer.bos_token
        kwargs = {"images": images} if any(images) else {}
        with self._failing_as("the processor"):
            enc = self.processor(text=texts, padding=True, return_tensors="pt",
                                 add_special_tokens=not (bos and texts[0].startswith(bos)), **kwargs)
        if self.device.type == "cuda":  # staged here (the prefetch thread): pinned, pixels in the model's dtype
            import torch

            for key, value in enc.items():
                if isinstance(value, torch.Tensor):
                    enc[key] = (value.to(self.hf_model.dtype) if value.is_floating_point() else value).pin_memory()
        return enc

    def _on_device(self, enc):
        if self.device.type == "cuda":  # staged by _encode: the upload does not wait
            return enc.to(self.device, non_blocking=True)
        return enc.to(self.device, dtype=self.hf_model.dtype)

    def _prefetched(self, chunks: list, prepare):
        """``(chunk, future of prepare(chunk))`` in order, the next chunks prepared in a background thread
        (:mod:`.prefetch`) while the caller runs the model on this one."""
        self.answer_context()  # read once here, before two threads could ask for it
        return prefetched(chunks, prepare, depth=self.prefetch, name="hf-judge-prefetch")

    # -- chat --------------------------------------------------------------

    def _chat_batches(self, chunks: list[list[ChatRequest]]):
        for requests, prepared in self._prefetched(chunks, self._prepare_chat):
            yield self._chat_batch(requests, prepared)

    def _chat_batch(self, requests: list[ChatRequest], prepared: Future | None = None) -> list[Reply]:
        try:
            # a batch split after running out of memory is never filled up again
            return self._generate(prepared.result() if prepared is not None else self._prepare_chat(requests, False))
        except JudgeError:
            raise
        except Exception as e:
            if not is_out_of_memory(e):
                raise JudgeError(f"judge {self.model} [{self.family}]: generation failed: {type(e).__name__}: {e}") from e
            self._free_memory()
            if len(requests) > 1:  # a smaller batch may fit
                half = len(requests) // 2
                return self._chat_batch(requests[:half]) + self._chat_batch(requests[half:])
            return [Reply(text="", model=self.model, sampling=self.resolve_sampling(requests[0]).to_dict(),
                          error=f"{type(e).__name__}: {e}", transient=True)]

    @staticmethod
    def _free_memory() -> None:
        import gc

        import torch

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _prepare_chat(self, requests: list[ChatRequest], fill: bool = True) -> dict[str, Any]:
        """Everything of a chat batch made on the CPU before the model runs: the prompts rendered and
        encoded with their images, the generation config, the schema constraint. With ``fill``, a batch
        smaller than ``batch_size`` is filled up to a size the static cache has compiled (:mod:`.static_cache`:
        copies of its last request, greedy; only the requests' own replies are read)."""
        with self._preparing:
            samplings = [self.resolve_sampling(r) for r in requests]
            schemas = [r.json_schema if self.structured_output else None for r in requests]
            conversations = [self._conversation(r.messages) for r in requests]
            closing, _ = self.answer_context()
            # a structured reply is decoded after a closed thinking block, never inside the thought
            texts = [t + closing if schema else t for t, schema in zip(self._render(conversations), schemas)]
            enc = self._encode(texts, conversations)
            config = copy.deepcopy(self._generation_config)
            config.max_new_tokens = max(s.max_tokens for s in samplings)
            if config.min_new_tokens:  # a judge-wide minimum never exceeds a request's maximum
                config.min_new_tokens = min(config.min_new_tokens, config.max_new_tokens)
            config.return_dict_in_generate = True
            config.output_logits = max(r.top_logprobs for r in requests) > 0
            if fill and self._static.fills(self.compiled_decoding, len(requests), self.batch_size, self.device.type,
                                           config, enc["input_ids"].shape[1]):
                # copies of the last request (no longer a prompt), greedy, free of its schema and finished from
                # the first step (rows_done): they add rows to the step, never steps to the batch
                extra = self.batch_size - len(requests)
                samplings += [dataclasses.replace(samplings[-1], temperature=0.0, seed=None)] * extra
                schemas += [None] * extra
                conversations, texts = (x + [x[-1]] * extra for x in (conversations, texts))
                enc = self._encode(texts, conversations)
            if self._static.applies(self.compiled_decoding, len(texts), self.batch_size, self.device.type):
                self._static.configure(config, len(texts), enc["input_ids"].shape[1])  # generate compiles its step
            constraint = None
            if any(schemas):
                if self._executor is None:
                    import llguidance

                    self._executor = llguidance.LLExecutor()
                constraint = schema_constraint(self._llguidance_tokenizer(config), schemas, self._executor)
        return {"requests": requests, "samplings": samplings, "schemas": schemas, "closing": closing,
                "enc": enc, "config": config, "constraint": constraint}

    def _generate(self, prepared: dict[str, Any]) -> list[Reply]:
        import torch
        from transformers import StoppingCriteriaList

        requests, samplings, schemas, closing, config = (prepared[k] for k in (
            "requests", "samplings", "schemas", "closing", "config"))
        prompt_lengths = prepared["enc"]["attention_mask"].sum(1).tolist()  # on the CPU still
        enc = self._on_device(prepared["enc"])
        processors, constraint = [], prepared["constraint"]
        hooks = StoppingCriteriaList()
        if constraint is not None:  # masks first, then the row sampler draws among the allowed tokens
            processors.append(constraint)
            hooks.append(constraint.stopping_hook())  # starts each next step's masks
        if len(samplings) > len(requests):  # the copies filling the batch up to its compiled size
            hooks.append(rows_done(len(requests)))
        top_k = self._model_sampling()[2] if self.generation_config == "model" else None
        if any(s.temperature > 0 for s in samplings):
            processors.append(row_sampler([(s.temperature, s.top_p, top_k, s.seed) for s in samplings]))
        try:
            with self._failing_as("generation"), torch.inference_mode(), \
                    self._static.first_call(config, enc["input_ids"].shape[0], repr(self)):
                out = self.hf_model.generate(**enc, generation_config=config, logits_processor=processors or None,
                                             stopping_criteria=hooks or None)
                new = out.sequences[:, 0 if self.hf_model.config.is_encoder_decoder else enc["input_ids"].shape[1]:]
                new = new.tolist()  # waits for the device: the first call's time is the whole batch's
        finally:
            if constraint is not None:
                constraint.close()
        eos = config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        logits = torch.stack(out.logits, 1).float().log_softmax(-1) if config.output_logits else None
        thought_end = closing.strip()
        replies = []
        for i, (req, s) in enumerate(zip(requests, samplings)):
            tokens = new[i][: s.max_tokens]
            stop = next((k for k, t in enumerate(tokens) if t in eos), None)
            kept = tokens if stop is None else tokens[:stop]
            text = self.tokenizer.decode(kept, skip_special_tokens=True)
            if thought_end and not schemas[i] and thought_end in text:
                text = text.split(thought_end, 1)[1].lstrip()  # the answer after the model's thought
            prompt_tokens = prompt_lengths[i]
            completion_tokens = len(tokens) if stop is None else stop + 1
            replies.append(Reply(
                text=text,
                model=self.model,
                sampling=s.to_dict(),
                logprobs=self._logprobs(logits[i], kept, req.top_logprobs) if req.top_logprobs else None,
                finish_reason="length" if stop is None else "stop",
                usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                       "total_tokens": prompt_tokens + completion_tokens},
            ))
        return replies

    def _llguidance_tokenizer(self, config):
        if self._tokenizer_info is None:
            try:
                import llguidance.hf
            except ImportError:
                raise JudgeError("enforcing a JSON schema needs llguidance (pip install llguidance), "
                                 "or pass structured_output=False") from None
            eos = config.eos_token_id
            self._tokenizer_info = llguidance.hf.from_tokenizer(
                self.tokenizer, n_vocab=self.hf_model.get_output_embeddings().weight.shape[0],
                eos_token=eos if eos is not None else self.tokenizer.eos_token_id)
        return self._tokenizer_info

    def _logprobs(self, logprobs, tokens: list[int], k: int) -> list[TokenLogprob]:
        """Each generated token's log-probability under the model (raw logits, before
        any sampling transform) and its ``k`` most likely alternatives (all steps at once, copied once)."""
        import torch

        steps = logprobs[: len(tokens)]
        values, ids = steps.topk(min(k, logprobs.shape[-1]))
        chosen = steps.gather(1, torch.tensor(tokens, dtype=torch.long, device=steps.device).view(-1, 1))[:, 0]
        out = []
        for token, lp, step_values, step_ids in zip(tokens, chosen.tolist(), values.tolist(), ids.tolist()):
            top: dict[str, float] = {}
            for v, j in zip(step_values, step_ids):
                top.setdefault(self.tokenizer.decode([j]), v)  # distinct ids can decode alike: keep the likelier
            out.append(TokenLogprob(self.tokenizer.decode([token]), lp, top))
        return out
