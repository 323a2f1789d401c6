"""A local multimodal judge on transformers: ``load_judge("hf:<hub id or folder>")``.

The model is loaded once with ``AutoModelForImageTextToText`` and
``AutoProcessor``, so any image-text-to-text model with a chat template works
(LLaVA, Qwen2/2.5-VL where torchvision is installed, Idefics, ...). Requests
are rendered with the model's own chat template, batched with left padding and
answered with ``model.generate``; answer probabilities are teacher-forced in
one forward pass per batch.

A request's ``json_schema`` is enforced by constrained decoding
(``structured_output=True``, the default): at every step llguidance masks the
tokens that would leave the schema, per row, so a batch may mix free-text and
structured requests. The caller's parser (:mod:`t2ireason.parsing`) still
validates every reply and re-asks when one does not conform (a reply cut off by
``max_tokens`` is valid JSON only up to the cut).
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

from ..images import JudgeImage
from .base import AnswerQuery, ChatRequest, Judge, JudgeError, Message, Reply, Sampling, TokenLogprob

__all__ = ["TransformersJudge"]


def _row_sampler(samplings: list[Sampling]):
    """A logits processor drawing each sampled row's next token from its own
    ``torch.Generator`` with its own temperature and top-p.

    ``generate`` runs greedy; for sampled rows this processor leaves only the
    drawn token, so greedy picks it. Each row consumes one draw per step from
    its own generator, so a seeded request gives the same text whatever else
    shares its batch. Greedy rows (temperature 0) are left untouched.
    """
    import torch
    from transformers import LogitsProcessor, TopPLogitsWarper

    class RowSampler(LogitsProcessor):
        def __init__(self):
            self.rows = []
            for i, s in enumerate(samplings):
                if s.temperature > 0:
                    # Unseeded rows still draw from the global RNG, so torch.manual_seed governs them.
                    seed = s.seed if s.seed is not None else int(torch.randint(0, 2**63 - 1, ()).item())
                    self.rows.append((i, s, seed))
            self.generators = None

        def __call__(self, input_ids, scores):
            if self.generators is None:
                self.generators = [torch.Generator(scores.device).manual_seed(seed) for _, _, seed in self.rows]
            scores = scores.clone()
            for (i, s, _), gen in zip(self.rows, self.generators):
                row = scores[i : i + 1].float() / s.temperature
                if s.top_p < 1:
                    row = TopPLogitsWarper(s.top_p)(input_ids[i : i + 1], row)
                token = torch.multinomial(row.softmax(-1), 1, generator=gen)
                scores[i] = float("-inf")
                scores[i, token] = 0.0
            return scores

    return RowSampler()


def _schema_constraint(tokenizer_info: Any, schemas: list[dict | None], prompt_len: int):
    """A logits processor keeping each row with a JSON schema inside that schema
    (llguidance matchers, one per row); rows without one are left free.

    The grammar is compact JSON (no optional whitespace): a weak model otherwise
    spends its token budget on spaces and newlines.
    """
    import llguidance
    import llguidance.torch as llt
    from transformers import LogitsProcessor

    class SchemaConstraint(LogitsProcessor):
        def __init__(self):
            self.matchers = [
                None if schema is None else llguidance.LLMatcher(
                    tokenizer_info, llguidance.LLMatcher.grammar_from_json_schema(
                        schema, defaults={"whitespace_flexible": False}))
                for schema in schemas
            ]
            for m, schema in zip(self.matchers, schemas):
                if m is not None and m.is_error():
                    raise JudgeError(f"cannot enforce JSON schema {schema.get('title', '')!r}: {m.get_error()}")
            self.mask = llt.allocate_token_bitmask(len(schemas), tokenizer_info.vocab_size)

        def __call__(self, input_ids, scores):
            if input_ids.shape[1] > prompt_len:  # the token chosen at the previous step
                for i, m in enumerate(self.matchers):
                    if m is not None and not m.is_stopped():
                        m.consume_token(int(input_ids[i, -1]))
            self.mask.fill_(-1)  # all bits set: every token allowed
            for i, m in enumerate(self.matchers):
                # a complete reply (stopped matcher) allows only end-of-sequence; a broken one is left free
                if m is not None and not m.is_error():
                    llt.fill_next_token_bitmask(m, self.mask, i)
            scores = scores.clone()
            llt.apply_token_bitmask_inplace(scores, self.mask.to(scores.device))
            return scores

    return SchemaConstraint()


class TransformersJudge(Judge):
    """A vision-language model run locally with transformers.

    ``model`` is a Hub id or a local folder. ``dtype``, ``device_map``,
    ``attn_implementation``, ``trust_remote_code`` and ``model_kwargs`` reach
    ``from_pretrained``; ``processor_kwargs`` reach ``AutoProcessor.from_pretrained``
    (e.g. Qwen's own ``min_pixels``/``max_pixels``). With no ``device_map`` the
    model goes to ``device`` (CUDA when available, else CPU).

    ``max_pixels``/``min_pixels`` are the judge's pixel budget, applied once per
    image (:meth:`JudgeImage.resized` is memoised) before the processor sees it.
    ``sampling`` is the default for requests that carry none (greedy, 1024 new
    tokens). ``generate_kwargs`` are passed to every ``generate`` call
    (e.g. ``min_new_tokens``, ``repetition_penalty``, ``sequence_bias``).
    ``structured_output`` enforces each request's ``json_schema`` by constrained
    decoding (llguidance); ``False`` leaves it to the caller's parser and re-asks.
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
        trust_remote_code: bool = False,
        attn_implementation: str | None = None,
        processor_kwargs: dict | None = None,
        model_kwargs: dict | None = None,
        generate_kwargs: dict | None = None,
        structured_output: bool = True,
    ):
        import torch
        from transformers import AutoModelForImageTextToText, AutoProcessor

        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model = str(model)
        self.revision = revision
        self.batch_size = batch_size
        self.max_pixels = max_pixels
        self.min_pixels = min_pixels
        self.default_sampling = sampling or Sampling()
        self.generate_kwargs = dict(generate_kwargs or {})
        self.structured_output = structured_output
        self._tokenizer_info = None  # llguidance's view of the vocabulary, built on first use (~1 s)

        load = {"revision": revision, "trust_remote_code": trust_remote_code}
        model_load = {**load, "dtype": dtype, **(model_kwargs or {})}
        if device_map is not None:
            model_load["device_map"] = device_map
        if attn_implementation is not None:
            model_load["attn_implementation"] = attn_implementation
        try:
            self.processor = AutoProcessor.from_pretrained(self.model, **load, **(processor_kwargs or {}))
            self.hf_model = AutoModelForImageTextToText.from_pretrained(self.model, **model_load).eval()
        except Exception as e:  # OSError for a missing path, ValueError for an unknown architecture...
            rev = f" at revision {revision!r}" if revision else ""
            raise JudgeError(f"cannot load judge model {self.model!r}{rev}: {type(e).__name__}: {e}") from e
        if device_map is None:
            self.hf_model.to(device or ("cuda" if torch.cuda.is_available() else "cpu"))
        if getattr(self.processor, "chat_template", None) is None:
            raise JudgeError(f"judge model {self.model!r} has no chat template; pass "
                             "processor_kwargs={'chat_template': ...}")

        self.tokenizer = getattr(self.processor, "tokenizer", self.processor)
        self.tokenizer.padding_side = "left"  # generation continues every row from its right end
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self._generation_config = self._base_generation_config()
        params = inspect.signature(self.hf_model.forward).parameters
        self._takes_positions = "position_ids" in params
        self._takes_logits_to_keep = "logits_to_keep" in params

    def _base_generation_config(self):
        """The model's generation config with its sampling defaults neutralised:
        sampling is ours, explicit and recorded with every reply."""
        config = copy.deepcopy(self.hf_model.generation_config)
        config.do_sample = False
        config.temperature = config.top_p = config.top_k = None
        if config.pad_token_id is None:
            config.pad_token_id = self.tokenizer.pad_token_id
        config.update(**self.generate_kwargs)
        return config

    @property
    def device(self):
        return self.hf_model.device

    def identity(self) -> dict[str, Any]:
        """Backend, model and revision, plus what else changes the answers: dtype,
        pixel budget and extra generation arguments (JSON-safe, for cache keys)."""
        ident = super().identity()
        ident.update(dtype=str(self.hf_model.dtype).removeprefix("torch."),
                     max_pixels=self.max_pixels, min_pixels=self.min_pixels)
        if self.structured_output:
            ident["structured_output"] = True
        if self.generate_kwargs:
            ident["generate_kwargs"] = {k: v if isinstance(v, (bool, int, float, str, list, type(None))) else repr(v)
                                        for k, v in sorted(self.generate_kwargs.items())}
        return ident

    # -- rendering ---------------------------------------------------------

    def _image(self, image: JudgeImage):
        return image.resized(self.max_pixels, self.min_pixels)

    def _conversation(self, messages: tuple[Message, ...]) -> list[dict]:
        """Our messages in the processor's content format, images at the judge's pixel budget."""
        return [
            {"role": m.role,
             "content": [{"type": "text", "text": p} if isinstance(p, str) else {"type": "image", "image": self._image(p)}
                         for p in m.content]}
            for m in messages
        ]

    def _encode(self, conversations: list[list[dict]]):
        """Chat template, tokenisation and image processing for a batch, left padded, on the model's device.
        Control tokens written in the text (``<image>``, ``</s>``...) are encoded as plain text."""
        enc = self.processor.apply_chat_template(
            conversations, add_generation_prompt=True, tokenize=True, return_dict=True, return_tensors="pt",
            sanitize_control_tokens=True, processor_kwargs={"padding": True},
        )
        return enc.to(self.device, dtype=self.hf_model.dtype)

    # -- chat --------------------------------------------------------------

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        try:
            return self._generate(requests)
        except Exception as e:
            if len(requests) == 1:
                return [Reply(text="", model=self.model, sampling=self.resolve_sampling(requests[0]).to_dict(),
                              error=f"{type(e).__name__}: {e}")]
            # One bad request must not cost the others their replies: answer them one by one.
            return [self._chat_batch([r])[0] for r in requests]

    def _generate(self, requests: list[ChatRequest]) -> list[Reply]:
        import torch

        samplings = [self.resolve_sampling(r) for r in requests]
        want_logprobs = max(r.top_logprobs for r in requests)
        enc = self._encode([self._conversation(r.messages) for r in requests])
        config = copy.deepcopy(self._generation_config)
        config.max_new_tokens = max(s.max_tokens for s in samplings)
        if config.min_new_tokens:  # a judge-wide minimum never exceeds a request's maximum
            config.min_new_tokens = min(config.min_new_tokens, config.max_new_tokens)
        config.return_dict_in_generate = True
        config.output_logits = want_logprobs > 0
        processors = []
        schemas = [r.json_schema if self.structured_output else None for r in requests]
        if any(schemas):  # masks first, then the row sampler draws among the allowed tokens
            processors.append(_schema_constraint(self._llguidance_tokenizer(config), schemas,
                                                 enc["input_ids"].shape[1]))
        if any(s.temperature > 0 for s in samplings):
            processors.append(_row_sampler(samplings))
        with torch.inference_mode():
            out = self.hf_model.generate(**enc, generation_config=config, logits_processor=processors or None)

        prompt_len = 0 if self.hf_model.config.is_encoder_decoder else enc["input_ids"].shape[1]
        new = out.sequences[:, prompt_len:].tolist()
        eos = config.eos_token_id
        eos = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        logits = torch.stack(out.logits, 1).float().log_softmax(-1) if config.output_logits else None
        replies = []
        for i, (req, s) in enumerate(zip(requests, samplings)):
            tokens = new[i][: s.max_tokens]
            stop = next((k for k, t in enumerate(tokens) if t in eos), None)
            kept = tokens if stop is None else tokens[:stop]
            replies.append(Reply(
                text=self.tokenizer.decode(kept, skip_special_tokens=True),
                model=self.model,
                sampling=s.to_dict(),
                logprobs=self._logprobs(logits[i], kept, req.top_logprobs) if req.top_logprobs else None,
                finish_reason="length" if stop is None else "stop",
                usage={"prompt_tokens": int(enc["attention_mask"][i].sum()),
                       "completion_tokens": len(tokens) if stop is None else stop + 1,
                       "total_tokens": int(enc["attention_mask"][i].sum()) + (len(tokens) if stop is None else stop + 1)},
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
        any sampling transform) and its ``k`` most likely alternatives."""
        out = []
        for step, token in enumerate(tokens):
            values, ids = logprobs[step].topk(min(k, logprobs.shape[-1]))
            top: dict[str, float] = {}
            for v, j in zip(values.tolist(), ids.tolist()):
                top.setdefault(self.tokenizer.decode([j]), v)  # distinct ids can decode alike: keep the likelier
            out.append(TokenLogprob(self.tokenizer.decode([token]), float(logprobs[step, token]), top))
        return out

    # -- answer probabilities -------------------------------------------------

    def _answer_logprobs(self, queries: list[AnswerQuery]) -> list[float]:
        try:
            return self._teacher_forced(queries)
        except Exception as e:
            if len(queries) == 1:
                q = queries[0]
                raise JudgeError(f"{self.model}: cannot score answer {q.answer!r} to {q.question!r} "
                                 f"about {q.image!r}: {type(e).__name__}: {e}") from e
            return [lp for q in queries for lp in self._answer_logprobs([q])]  # find the culprit, keep the rest

    def _teacher_forced(self, queries: list[AnswerQuery]) -> list[float]:
        """log P(answer tokens | image, question), summed over the answer's tokens.

        The answer is tokenised on its own, as the model would write it right after
        the generation prompt (``▁Yes`` for SentencePiece-style tokenizers, ``Yes``
        for byte-level ones), so no merge can straddle the prompt and the answer.

        Each row is [left padding, prompt ending in the generation prompt, answer
        tokens, right padding]: every prompt ends at the same column, so the logits
        that predict the answers are one slice for the whole batch; padding is
        masked, and positions come from the attention mask as in ``generate``.
        """
        import torch

        answers = [self.tokenizer(q.answer, add_special_tokens=False).input_ids for q in queries]
        for q, ids in zip(queries, answers):
            if not ids:
                raise JudgeError(f"answer {q.answer!r} has no tokens")
        enc = self._encode([[{"role": "user", "content": [{"type": "image", "image": self._image(q.image)},
                                                         {"type": "text", "text": q.question}]}]
                            for q in queries])
        batch, prompt_len = enc["input_ids"].shape
        width = max(map(len, answers))
        answer_ids = torch.full((batch, width), self.tokenizer.pad_token_id, dtype=torch.long, device=self.device)
        answer_mask = torch.zeros((batch, width), dtype=enc["attention_mask"].dtype, device=self.device)
        for i, ids in enumerate(answers):
            answer_ids[i, : len(ids)] = torch.tensor(ids)
            answer_mask[i, : len(ids)] = 1

        inputs = dict(enc)
        inputs["input_ids"] = torch.cat([enc["input_ids"], answer_ids], 1)
        inputs["attention_mask"] = torch.cat([enc["attention_mask"], answer_mask], 1)
        for key, value in enc.items():  # other per-token inputs (token types...) extend as plain text
            if (key not in ("input_ids", "attention_mask") and torch.is_tensor(value)
                    and not value.is_floating_point() and value.shape[:2] == (batch, prompt_len)):
                inputs[key] = torch.cat([value, value.new_zeros((batch, width, *value.shape[2:]))], 1)
        if self._takes_positions:
            # generate's own rule (3-D rope for Qwen-VL); the model's default would count the left padding
            inputs["position_ids"] = self.hf_model._prepare_position_ids_for_generation(inputs["input_ids"], inputs)
        if self._takes_logits_to_keep:
            inputs["logits_to_keep"] = width + 1
        with torch.inference_mode():
            logits = self.hf_model(**inputs, use_cache=False).logits
        # logits at column prompt_len - 1 + j predict answer token j
        logits = logits[:, -(width + 1) : -1] if self._takes_logits_to_keep else logits[:, prompt_len - 1 : -1]
        token_lp = logits.float().log_softmax(-1).gather(-1, answer_ids.unsqueeze(-1)).squeeze(-1)
        return (token_lp * answer_mask).sum(-1).tolist()
