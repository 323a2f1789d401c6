"""Judges run in-process by the vLLM offline engine (from a checkout of t2i-reason:
``pip install -e ".[vllm]"``, Linux with a CUDA GPU).

    load_judge("vllm:Qwen/Qwen2.5-VL-72B-Instruct", tensor_parallel_size=4, max_model_len=16384)

Requests go to ``LLM.chat`` as OpenAI-format conversations, one
``SamplingParams`` per request (sampling, seed, logprobs and, for requests with
a ``json_schema``, ``structured_outputs=StructuredOutputsParams(json=schema)``).
Images are passed as the decoded PIL images themselves (``{"type": "image_pil", ...}``),
losslessly, with no PNG encode and decode per image, and with the image's content digest
as its ``uuid`` so vLLM's multimodal cache can key on it. Nothing here resizes them:
``max_pixels=None`` (the default) hands each image over at its own size, and the model's
processor applies its own pixel budget as it would for any caller; ``max_pixels=N`` scales
larger images down (keeping their aspect) first. There is no ``image_format``: no image is
encoded at all (the HTTP backend's ``image_format`` picks the encoding sent over the wire).

Answer probabilities use the same method as the HTTP backend: a one-token
greedy reply with ``logprobs=20`` and :func:`~t2ireason.judges.openai_judge.answer_logprob`
over the candidates. The answer must be one token of the model's tokenizer
(checked, so "Yes" is scored exactly as the first generated token); multi-token
answers raise :class:`JudgeError` (the hf backend teacher-forces those).
"""

from __future__ import annotations

from typing import Any

from .base import AnswerQuery, ChatRequest, Judge, JudgeError, JudgeOptionError, Reply, Sampling, TokenLogprob
from .openai_judge import ANSWER_TOP_LOGPROBS, answer_logprob, merge_top

__all__ = ["VLLMJudge"]


class VLLMJudge(Judge):
    """A judge served by ``vllm.LLM`` in this process.

    ``engine_kwargs`` reach ``vllm.LLM`` unchanged (``tensor_parallel_size``,
    ``max_model_len``, ``dtype``, ``gpu_memory_utilization``, ``limit_mm_per_prompt``...).
    ``batch_size`` is how many requests are handed to the engine per call (it
    batches continuously inside); ``structured_output=False`` keeps JSON schemas
    out of decoding (they stay in the prompt); ``max_pixels`` scales images larger
    than that many pixels down before they reach the engine (``None``: as they are).
    """

    backend = "vllm"
    #: the engine arguments (beside the named options) that a benchmark preset's settings may name:
    #: a preset written for the hf backend gives a vLLM judge of the same model these and no others
    engine_options = ("dtype", "tensor_parallel_size", "max_model_len", "gpu_memory_utilization",
                      "limit_mm_per_prompt", "mm_processor_kwargs")

    def __init__(
        self,
        model: str,
        *,
        revision: str | None = None,
        sampling: Sampling | None = None,
        max_pixels: int | None = None,
        structured_output: bool = True,
        batch_size: int = 256,
        **engine_kwargs: Any,
    ):
        try:
            import vllm
            from vllm.sampling_params import StructuredOutputsParams
        except ImportError as e:
            raise JudgeError("the vllm backend needs vLLM, which is not installed: from a checkout of "
                             "t2i-reason, pip install -e '.[vllm]' (or pip install vllm; Linux with a CUDA GPU)") from e
        self.check_options(batch_size=batch_size, max_pixels=max_pixels)
        self.model = model
        self.revision = revision
        self.default_sampling = sampling or Sampling()
        self.max_pixels = max_pixels
        self.structured_output = structured_output
        self.batch_size = batch_size
        self._SamplingParams = vllm.SamplingParams
        self._StructuredOutputsParams = StructuredOutputsParams
        if revision is not None:
            engine_kwargs["revision"] = revision
        self._llm = vllm.LLM(model=model, **engine_kwargs)

    @classmethod
    def check_options(cls, **options: Any) -> None:
        """Raise :class:`JudgeError` for a ``batch_size`` or ``max_pixels`` that cannot work (the
        engine's own options are vLLM's to check)."""
        for name in ("batch_size", "max_pixels"):
            value = options.get(name, 1)
            if name == "max_pixels" and value is None:
                continue
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise JudgeOptionError(f"the vllm judge's {name} must be a whole number >= 1"
                                 + (" or None" if name == "max_pixels" else "") + f", got {value!r}")

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "max_pixels": self.max_pixels}

    # -- translation -------------------------------------------------------

    def _conversation(self, request: ChatRequest) -> list[dict[str, Any]]:
        out = []
        for m in request.messages:
            if not m.images:
                out.append({"role": m.role, "content": m.text})
                continue
            out.append({"role": m.role, "content": [
                {"type": "text", "text": p} if isinstance(p, str)
                else {"type": "image_pil", "image_pil": p.resized(self.max_pixels), "uuid": p.digest}
                for p in m.content]})
        return out

    def _params(self, sampling: Sampling, *, top_logprobs: int = 0, json_schema: dict | None = None):
        kwargs: dict[str, Any] = {"temperature": sampling.temperature, "top_p": sampling.top_p,
                                  "max_tokens": sampling.max_tokens, "seed": sampling.seed}
        if top_logprobs:
            kwargs["logprobs"] = top_logprobs
        if json_schema is not None and self.structured_output:
            kwargs["structured_outputs"] = self._StructuredOutputsParams(json=json_schema)
        return self._SamplingParams(**kwargs)

    def _reply(self, output: Any, sampling: Sampling) -> Reply:
        """A ``Reply`` from one ``vllm.RequestOutput``."""
        completion = output.outputs[0]
        logprobs = None
        if completion.logprobs is not None:
            logprobs = []
            for token_id, candidates in zip(completion.token_ids, completion.logprobs):
                chosen = candidates[token_id]
                top = merge_top((c.decoded_token or "", c.logprob) for c in candidates.values())
                logprobs.append(TokenLogprob(chosen.decoded_token or "", chosen.logprob, top))
        prompt_tokens = len(output.prompt_token_ids or [])
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(completion.token_ids),
                 "total_tokens": prompt_tokens + len(completion.token_ids)}
        return Reply(text=completion.text, model=self.model, sampling=sampling.to_dict(), logprobs=logprobs,
                     finish_reason=completion.finish_reason, usage=usage)

    # -- the engine --------------------------------------------------------

    def _generate(self, conversations: list, params: list) -> list[Any | Exception]:
        """Outputs in order; if the engine rejects the batch (one over-long prompt
        fails them all), each request is retried alone so only the bad one fails."""
        try:
            return list(self._llm.chat(conversations, params, use_tqdm=False))
        except Exception as e:
            if len(conversations) == 1:
                return [e]
            return [self._generate([c], [p])[0] for c, p in zip(conversations, params)]

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        samplings = [self.resolve_sampling(r) for r in requests]
        outputs = self._generate(
            [self._conversation(r) for r in requests],
            [self._params(s, top_logprobs=r.top_logprobs, json_schema=r.json_schema)
             for r, s in zip(requests, samplings)])
        return [Reply(text="", model=self.model, sampling=s.to_dict(), error=f"{type(o).__name__}: {o}")
                if isinstance(o, Exception) else self._reply(o, s)
                for o, s in zip(outputs, samplings)]

    def _answer_logprobs(self, queries: list[AnswerQuery]) -> list[float]:
        tokenizer = self._llm.get_tokenizer()
        for q in queries:
            ids = tokenizer.encode(q.answer, add_special_tokens=False)
            if len(ids) != 1:
                raise JudgeError(f"answer {q.answer!r} is {len(ids)} tokens for {self.model}; the vllm backend "
                                 "scores one-token answers (use the hf backend to teacher-force longer ones)")
        one_token = Sampling(temperature=0.0, top_p=1.0, max_tokens=1, seed=self.default_sampling.seed)
        requests = [ChatRequest.simple(q.image, q.question, sampling=one_token, top_logprobs=ANSWER_TOP_LOGPROBS)
                    for q in queries]
        replies = self._chat_batch(requests)
        out = []
        for q, r in zip(queries, replies):
            if not r.ok:
                raise JudgeError(f"answer probability from {self.model} failed: {r.error}")
            if not r.logprobs:
                raise JudgeError(f"{self.model} returned no log-probabilities for a one-token reply")
            out.append(answer_logprob(r.logprobs[0].top, q.answer))
        return out

    def close(self) -> None:
        """Drop the engine so its GPU memory can be reclaimed."""
        self._llm = None
