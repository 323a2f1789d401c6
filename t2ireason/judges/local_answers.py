"""How the local judge (:class:`~.transformers_judge.TransformersJudge`) reads answer probabilities
(VQAScore's P("Yes")): in context, and for one-token answers from one forward a batch, each batch launched
before the one before it is read (issue 41).

The answer is written the way the chat template writes an assistant turn after its generation prompt
(``ASSISTANT: Yes`` -> ``▁Yes``, ``<|im_start|>assistant\\nYes`` -> ``Yes``), tokenised together with the end
of the prompt (:meth:`AnswerProbabilities.answer_ids`).

An answer of one token costs one forward. Teacher-forced through ``generate``, that forward is followed by
a wait for the device (``generate``'s stop check reads a flag back): between two batches the accelerator
idles while the host reads the results, sets ``generate`` up again and launches the next forward's first
kernels, the vision tower's many small ones among them. On an H200 that left the project at 1.17 to 1.20
times LLaVA-7B's forward alone at batch 32. Here the forward gets exactly the inputs ``generate`` gives its
first forward (:func:`first_forward_inputs`; equal log-probabilities for every family, tested), the answer
token's log-probability is gathered on the device and copied to pinned host memory without waiting
(:class:`LaunchedAnswers`), and the next batch is launched before this one is read, so the device has the
next batch queued while the host works. Nothing on the way waits for the device: every upload comes from
pinned memory and the position ids are computed from the host's copy of the encoding. Answers of several
tokens are teacher-forced through ``generate`` (the answer's tokens forced one by one, its raw logits read).

torch is imported when a batch is launched.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, NamedTuple

from ..images import ImageError, JudgeImage, load_images, missing_files
from .base import AnswerQuery, JudgeError, JudgeUnavailable
from .decoding import forced_tokens

__all__ = ["AnswerProbabilities", "first_forward_inputs", "launch_one_token", "LaunchedAnswers",
           "reads_one_forward", "is_out_of_memory"]


def is_out_of_memory(error: BaseException) -> bool:
    import torch

    return isinstance(error, torch.OutOfMemoryError) or (
        isinstance(error, RuntimeError) and "out of memory" in str(error).lower())


class _Undecoded(NamedTuple):
    """A :meth:`TransformersJudge.yes_probability` pair whose image is decoded when its batch is prepared."""

    image: Any
    question: str
    answer: str = "Yes"


def reads_one_forward(model: Any, answers: list[list[int]]) -> bool:
    """Whether these answers' log-probabilities can be read from one forward of ``model``: every answer
    one token, a decoder-only model of transformers' own code (an encoder-decoder model or remote code
    prepares its inputs in ways :func:`first_forward_inputs` does not follow, and goes through ``generate``,
    as does a transformers without the position rule ``generate`` uses)."""
    return (all(len(ids) == 1 for ids in answers) and not model.config.is_encoder_decoder
            and not model.is_remote_code() and hasattr(model, "_prepare_position_ids_for_generation"))


def first_forward_inputs(model: Any, enc: Any, on_device: Callable[[Any], Any]) -> dict[str, Any]:
    """The keyword arguments ``generate`` gives ``model``'s first forward for the encoded prompts ``enc`` (the
    processor's output on the host, pinned where the device is CUDA), with no cache and the logits of the last
    position only. ``on_device`` moves an encoding to the model's device, without waiting for it.

    As ``generate`` does: position ids from the attention mask by the model's own rule (left padding counted
    out; Qwen-VL's multimodal positions), computed here from the host's tensors so nothing waits for the
    device; a mask of all ones dropped; then the model's ``prepare_inputs_for_generation`` for a first
    iteration."""
    enc = copy.copy(enc)
    accepts = inspect.signature(model.forward).parameters
    if "position_ids" in accepts and enc.get("position_ids") is None:
        host = {k: v for k, v in enc.items() if k != "input_ids" and v is not None}
        positions = model._prepare_position_ids_for_generation(enc["input_ids"], host)
        enc["position_ids"] = positions.pin_memory() if enc["input_ids"].is_pinned() else positions
    mask = enc.get("attention_mask")
    unpadded = mask is not None and bool((mask == 1).all())
    kwargs = {k: v for k, v in on_device(enc).items() if v is not None}
    if unpadded and "attention_mask" in accepts:
        del kwargs["attention_mask"]  # no padding: the causal path, as generate takes it
    if "logits_to_keep" in accepts:
        kwargs["logits_to_keep"] = 1
    kwargs["use_cache"] = False
    return model.prepare_inputs_for_generation(kwargs.pop("input_ids"), is_first_iteration=True, **kwargs)


class LaunchedAnswers:
    """One batch's answer log-probabilities on their way to the host: launched, not waited for.
    :meth:`result` waits for them (once) and gives one float a row."""

    def __init__(self, logprobs: Any):
        import torch

        self._event = None
        if logprobs.is_cuda:
            self._host = torch.empty(logprobs.shape, dtype=logprobs.dtype, pin_memory=True)
            self._host.copy_(logprobs, non_blocking=True)
            self._event = torch.cuda.Event()
            self._event.record()
        else:
            self._host = logprobs.cpu()

    def result(self) -> list[float]:
        if self._event is not None:
            self._event.synchronize()
        return [float(x) for x in self._host.tolist()]


def launch_one_token(model: Any, inputs: Mapping[str, Any], answers: list[list[int]]) -> LaunchedAnswers:
    """Launch ``model``'s forward on ``inputs`` (:func:`first_forward_inputs`) and the gathering of each row's
    answer token's log-probability (``answers``: one token a row), in float32 as ``generate``'s raw logits."""
    import torch

    logits = model(**inputs, return_dict=True).logits[:, -1].float().log_softmax(-1)
    tokens = torch.tensor([[ids[0]] for ids in answers], dtype=torch.long)
    if logits.is_cuda:  # uploaded from pinned memory: nothing waits for the device
        tokens = tokens.pin_memory()
    return LaunchedAnswers(logits.gather(1, tokens.to(logits.device, non_blocking=logits.is_cuda))[:, 0])


class AnswerProbabilities:
    """The answer-probability half of :class:`~.transformers_judge.TransformersJudge` (a mixin: it uses the
    judge's model, tokenizer, processor, templates and prefetch)."""

    _answer_context: tuple[str, str] | None
    _answer_ids_cache: dict[tuple, list[int]]

    def answer_context(self) -> tuple[str, str]:
        """``(closing, lead)``: what the template writes between its generation prompt and an answer.

        Read once from the template itself: a one-turn conversation rendered with the generation
        prompt, and again with an assistant answer (``continue_final_message``). ``closing`` is what
        comes after the generation prompt before the answer (``"\\n</think>\\n\\n"`` for a template that
        opens a thinking block: scoring and structured replies start after it); ``lead`` is the space
        the answer's first token carries (``" "`` after ``ASSISTANT:``, ``[/INST]`` or ``Assistant:``).
        """
        if self._answer_context is None:
            probe = [{"role": "user", "content": [{"type": "text", "text": "Is it?"}]}]
            answer = [{"role": "assistant", "content": [{"type": "text", "text": "Yes"}]}]
            context = ("", "")
            try:
                [prompt] = self._render([probe])
                [written] = self._render([probe + answer], add_generation_prompt=False, continue_final_message=True)
            except JudgeError:
                written = prompt = None  # the template cannot write an assistant turn: answer right after the prompt
            if written and written.endswith("Yes"):
                before = written[: -len("Yes")]
                stripped = before.rstrip(" ")
                if stripped.startswith(prompt):
                    context = (stripped[len(prompt):], before[len(stripped):])
            self._answer_context = context
        return self._answer_context

    def yes_probability(self, images: Sequence[Any], questions: Sequence[str], *,
                        progress: bool | str = False) -> list[float]:
        """P("Yes") for each (image, question) pair. Images not decoded yet (paths, bytes, dicts) are decoded
        batch by batch where the batch is prepared, by :func:`~t2ireason.images.load_images`' threads, while
        the model answers the batch before (a missing file is still told before any work)."""
        images = list(images)
        if self.prefetch == 0 or len(images) != len(questions) or all(isinstance(x, JudgeImage) for x in images):
            return super().yes_probability(images, questions, progress=progress)
        missing = missing_files(images)
        if missing:
            raise ImageError(f"image file not found: {missing[0][1]}")
        return self.answer_probability([_Undecoded(x, q) for x, q in zip(images, questions)], progress=progress)

    def _answer_batches(self, chunks: list[list[AnswerQuery]]):
        """Each chunk's log-probabilities, in order, each batch launched before the one before it is read
        (:func:`launch_one_token`): the accelerator has the next batch queued while the host reads results."""
        waiting = None  # the batch launched before this one, not read yet
        for queries, prepared in self._prefetched(chunks, self._prepare_answers):
            try:
                launched = self._launch_answers(queries, prepared)
            except BaseException:
                if waiting is not None:
                    yield waiting()  # the batches before a failure are finished first
                raise
            if waiting is not None:
                yield waiting()
            waiting = launched
        if waiting is not None:
            yield waiting()

    def _answer_logprobs(self, queries: list[AnswerQuery], prepared: Future | None = None) -> list[float]:
        return self._launch_answers(queries, prepared)()

    def _launch_answers(self, queries: list[AnswerQuery], prepared: Future | None = None):
        """A callable giving the batch's log-probabilities: one-token answers' forward launched and not waited
        for (read when it is called), longer answers teacher-forced through ``generate`` now."""
        import torch

        try:
            prepared = prepared.result() if prepared is not None else self._prepare_answers(queries)
            if reads_one_forward(self.hf_model, prepared["answers"]):
                with self._failing_as("scoring answers"), torch.inference_mode():
                    inputs = first_forward_inputs(self.hf_model, prepared["enc"], self._on_device)
                    launched = launch_one_token(self.hf_model, inputs, prepared["answers"])

                def read() -> list[float]:
                    with self._failing_as("scoring answers"):
                        return launched.result()
                return read
            values = self._teacher_forced(prepared)
        except (JudgeError, ImageError):
            raise
        except Exception as e:
            if not is_out_of_memory(e):
                raise JudgeError(f"judge {self.model} [{self.family}]: scoring answers failed: "
                                 f"{type(e).__name__}: {e}") from e
            self._free_memory()
            if len(queries) > 1:
                half = len(queries) // 2
                values = self._answer_logprobs(queries[:half]) + self._answer_logprobs(queries[half:])
            else:
                raise JudgeUnavailable(f"judge {self.model} [{self.family}] ran out of memory scoring one answer: "
                                       f"{type(e).__name__}: {e}") from e
        return lambda: values

    def answer_ids(self, prompt_ids: list[int], answer: str) -> list[int]:
        """The token ids of ``answer`` as they follow ``prompt_ids`` (one unpadded, encoded prompt).

        The end of the prompt from its last control token on (``<|im_start|>assistant\\n``,
        ``<image>\\n... ASSISTANT:``, ``<bos>...\\n``) is decoded and tokenised again with and without
        the answer, written with the template's ``lead``; the answer's ids are what the answer adds.
        """
        start = max((k for k, t in enumerate(prompt_ids) if t in self._special_ids), default=0)
        key = (tuple(prompt_ids[start:]), answer)
        if key not in self._answer_ids_cache:
            _, lead = self.answer_context()
            tail = self.tokenizer.decode(prompt_ids[start:], skip_special_tokens=False,
                                         clean_up_tokenization_spaces=False)
            base = self.tokenizer(tail, add_special_tokens=False).input_ids
            full = self.tokenizer(tail + lead + answer, add_special_tokens=False).input_ids
            if full[: len(base)] != base:
                raise JudgeError(f"judge {self.model} [{self.family}]: the answer {answer!r} merges with the end of "
                                 f"the prompt {tail[-40:]!r} under this tokenizer; it cannot be scored in context")
            if len(full) == len(base):
                raise JudgeError(f"answer {answer!r} has no tokens")
            self._answer_ids_cache[key] = full[len(base):]
        return self._answer_ids_cache[key]

    def _prepare_answers(self, queries: list[AnswerQuery]) -> dict[str, Any]:
        """What :meth:`_teacher_forced` needs, made on the CPU: the prompts rendered and encoded with
        their images, each answer's token ids in context, the generation config."""
        for q in queries:
            if not q.answer:
                raise JudgeError(f"answer {q.answer!r} has no tokens")
        if not all(isinstance(q.image, JudgeImage) for q in queries):  # yes_probability's: decoded here, at once
            images = load_images([q.image for q in queries])
            for image in images:
                if isinstance(image, ImageError):
                    raise image
            queries = [AnswerQuery(image, q.question, q.answer) for image, q in zip(images, queries)]
        with self._preparing:
            conversations = [[{"role": "user", "content": [{"type": "image", "image": self._image(q.image)},
                                                            {"type": "text", "text": self._plain(q.question)}]}]
                             for q in queries]
            closing, _ = self.answer_context()
            enc = self._encode([t + closing for t in self._render(conversations)], conversations)
            rows = [ids[mask.bool()].tolist() for ids, mask in zip(enc["input_ids"], enc["attention_mask"])]
            answers = [self.answer_ids(row, q.answer) for row, q in zip(rows, queries)]
        config = copy.deepcopy(self.hf_model.generation_config)
        longest = max(map(len, answers))  # one-token answers (Yes): one forward, no KV cache to keep
        config.update(do_sample=False, temperature=None, top_p=None, top_k=None, min_new_tokens=None,
                      max_new_tokens=longest, use_cache=longest > 1, output_logits=True, return_dict_in_generate=True)
        if config.pad_token_id is None:
            config.pad_token_id = self.tokenizer.pad_token_id
        return {"queries": queries, "enc": enc, "answers": answers, "config": config}

    def _teacher_forced(self, prepared: dict[str, Any]) -> list[float]:
        """log P(answer tokens | image, question) for each prepared query, summed over the answer's
        tokens, in context.

        The prompt is the rendered generation prompt (with a thinking block closed, see
        :meth:`answer_context`); ``generate`` runs with each row's answer forced token by token
        (greedy, the other rows' answers ending with end-of-sequence), and the answer tokens'
        log-probabilities are read from its raw logits: the same forward passes, positions,
        attention masks and token types as generation, for every family.
        """
        import torch

        queries, answers, config = prepared["queries"], prepared["answers"], prepared["config"]
        enc = self._on_device(prepared["enc"])
        eos = config.eos_token_id
        filler = (eos[0] if isinstance(eos, list) else eos) if eos is not None else config.pad_token_id
        with self._failing_as("scoring answers"), torch.inference_mode():
            out = self.hf_model.generate(**enc, generation_config=config,
                                         logits_processor=[forced_tokens(answers, filler)])
            logits = torch.stack(out.logits, 1).float().log_softmax(-1)
        for i, ids in enumerate(answers):
            if len(ids) > logits.shape[1]:  # the row ended early: its answer holds an end-of-sequence token
                raise JudgeError(f"answer {queries[i].answer!r} contains the end-of-sequence token of {self.model}")
        # each answer token's log-probability gathered on the device and copied once; summed in order, in float32
        steps = logits.shape[1]
        table = torch.tensor([ids + [0] * (steps - len(ids)) for ids in answers], device=logits.device)
        picked = logits.gather(2, table.unsqueeze(-1)).squeeze(-1).cpu()
        return [float(sum(picked[i, j] for j in range(len(ids)))) for i, ids in enumerate(answers)]
