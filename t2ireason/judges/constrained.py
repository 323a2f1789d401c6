"""JSON schemas enforced while the local judge decodes (llguidance), with the grammar's CPU work kept
off the accelerator's critical path (issue 41).

At each step a row with a schema may only take the tokens its grammar allows next: llguidance keeps one
matcher per row, reads the token the row took and fills a bit mask of the tokens allowed next; the mask
is applied to the step's logits. That work is on the CPU and depends on the token chosen one step
before, so done inside the logits processor it waits for the step's forward pass and leaves the
accelerator idle while it runs. Here it is started as soon as the token is known, at the end of the
step before (``generate`` calls its stopping criteria right after choosing the tokens, before it
launches the next forward): the chosen tokens are copied to pinned host memory without waiting, and a
worker thread waits for that copy, advances every row's matcher and fills the batch's masks
(llguidance's thread pool fills the rows in parallel, outside the GIL) while the accelerator runs the
next forward. The logits processor then only takes the finished mask, copies it to the device without
waiting and applies it there. The tokens are exactly those of filling each mask in turn inside the
processor (``overlap=False``, the reference the tests compare with).

torch, transformers and llguidance are imported when a constraint is made.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from .base import JudgeError

__all__ = ["schema_constraint", "apply_token_mask"]


def apply_token_mask(scores: Any, mask: Any, shifts: Any) -> Any:
    """``scores`` (rows x vocabulary logits) with every token whose bit is 0 in ``mask`` (rows x 32-bit
    words, llguidance's layout) set to -inf, and every token past the mask's width too (a model's padded
    vocabulary). ``shifts`` is ``arange(32)`` as int32 on the device. Eager torch: the same on a CPU and
    an accelerator, and no ``torch.compile`` to pay on a first call (llguidance's own kernel compiles)."""
    rows, words = mask.shape
    bits = (mask.unsqueeze(-1) >> shifts) & 1
    width = min(words * 32, scores.shape[1])
    allowed = bits.reshape(rows, words * 32)[:, :width].bool()
    if scores.shape[1] > width:
        scores[:, width:] = float("-inf")  # past the tokenizer's vocabulary (padded logits)
    scores[:, :width].masked_fill_(~allowed, float("-inf"))
    return scores


def schema_constraint(tokenizer_info: Any, schemas: list[dict | None], executor: Any = None, *,
                      overlap: bool = True):
    """A logits processor keeping each row with a JSON schema inside that schema (llguidance matchers, one
    per row; rows without one are left free), with its :meth:`~SchemaConstraint.stopping_hook` to pass to
    ``generate`` as a stopping criterion (it never stops a row: it starts the next step's masks).

    The grammar is compact JSON (no optional whitespace): a weak model otherwise spends its token budget
    on spaces and newlines. ``executor`` (an ``llguidance.LLExecutor``) fills the rows' masks in
    parallel; without it they are filled one after the other. ``overlap=False`` does all the work in the
    logits processor (the reference; the hook then does nothing). Call :meth:`~SchemaConstraint.close`
    when ``generate`` returns (it joins the worker thread).
    """
    import llguidance
    import llguidance.torch as llt
    import torch
    from transformers import LogitsProcessor, StoppingCriteria

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
            pinned = torch.cuda.is_available()
            self.mask = llt.allocate_token_bitmask(len(schemas), tokenizer_info.vocab_size)  # pinned with CUDA
            self.tokens = torch.empty(len(schemas), dtype=torch.long, pin_memory=pinned)
            self.device_mask = self.shifts = None
            self.length = None  # the input length whose tokens the matchers have taken (or are taking)
            self.pending: Future | None = None
            self.worker = ThreadPoolExecutor(1, thread_name_prefix="hf-judge-masks") if overlap else None
            # the first step's masks, made where the batch is prepared (the prefetch thread), row after row:
            # llguidance's pool may be filling the batch before's masks meanwhile
            self._fill(parallel=False)

        # -- the CPU work: advance the matchers, fill the masks ------------------------------------------

        def _advance(self, columns: list[list[int]]) -> None:
            """Each row's matcher takes its new tokens (a finished reply's matcher stops taking them; one
            that breaks is left free), then the masks of the next step are filled."""
            for m, tokens in zip(self.matchers, columns):
                for token in tokens:
                    if m is not None and not m.is_stopped():
                        m.consume_token(token)
            self._fill()

        def _fill(self, parallel: bool = True) -> None:
            self.mask.fill_(-1)  # all bits set: every token allowed
            # a complete reply (stopped matcher) allows only end-of-sequence; a broken one is left free
            live = [(m, i) for i, m in enumerate(self.matchers) if m is not None and not m.is_error()]
            if executor is not None and parallel:
                llt.fill_next_token_bitmask_par(executor, live, self.mask)
            else:
                for m, i in live:
                    llt.fill_next_token_bitmask(m, self.mask, i)

        def _advance_when_copied(self, copied) -> None:
            if copied is not None:
                copied.synchronize()  # the tokens' copy to the host (and the previous mask's upload) are done
            self._advance([[t] for t in self.tokens.tolist()])

        # -- generate's two calls ------------------------------------------------------------------------

        def after_step(self, input_ids) -> None:
            """At the end of a step: the rows' new tokens copied to the host without waiting, and the
            matchers advanced and next masks filled by the worker while the next forward runs."""
            if self.worker is None or self.length is None or input_ids.shape[1] != self.length + 1:
                return  # the processor catches up itself (it always can)
            self._wait()
            self.tokens.copy_(input_ids[:, -1], non_blocking=True)
            copied = None
            if input_ids.is_cuda:
                copied = torch.cuda.Event()
                copied.record()
            self.length = input_ids.shape[1]
            self.pending = self.worker.submit(self._advance_when_copied, copied)

        def _wait(self) -> None:
            if self.pending is not None:
                pending, self.pending = self.pending, None
                pending.result()  # the worker's error, if any, is raised here, inside generate

        def __call__(self, input_ids, scores):
            self._wait()
            length = input_ids.shape[1]
            if self.length is None:  # the first step: its masks were filled when the batch was prepared
                self.length = length
            elif length > self.length:  # tokens the hook did not see: taken here, in one copy for the batch
                self._advance(input_ids[:, self.length:].tolist())
                self.length = length
            if self.shifts is None or self.shifts.device != scores.device:
                self.shifts = torch.arange(32, dtype=torch.int32, device=scores.device)
                self.device_mask = self.mask if not scores.is_cuda else torch.empty_like(self.mask,
                                                                                        device=scores.device)
            if self.device_mask is not self.mask:
                # read by the device after the copy completes; the worker refills self.mask only once the
                # next step's tokens have reached the host, which is after this copy in the stream
                self.device_mask.copy_(self.mask, non_blocking=True)
            return apply_token_mask(scores.clone(), self.device_mask, self.shifts)

        def stopping_hook(self):
            return _AfterStep(self)

        def close(self) -> None:
            """Join the worker (a mask being filled for a step that will not come is finished first)."""
            if self.worker is not None:
                self.worker.shutdown(wait=True)
            self.pending = None

    class _AfterStep(StoppingCriteria):
        """The stopping criterion that starts the next step's masks; it never stops a row."""

        def __init__(self, constraint: SchemaConstraint):
            self.constraint = constraint
            self.never = None

        def __call__(self, input_ids, scores, **kwargs):
            self.constraint.after_step(input_ids)
            if self.never is None or self.never.device != input_ids.device:
                self.never = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            return self.never

    return SchemaConstraint()
