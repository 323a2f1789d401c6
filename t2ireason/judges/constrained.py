"""JSON schemas enforced while the local judge decodes (llguidance), with the grammar's CPU work kept
off the accelerator's critical path (issue 41).

At each step a row with a schema may only take the tokens its grammar allows next: llguidance keeps one
matcher per row, reads the token the row took and fills a bit mask of the tokens allowed next; the mask
is applied to the step's logits. That work is on the CPU and depends on the token chosen one step
before. Here it costs the step two calls for the whole batch, each run by llguidance's thread pool over
the rows in parallel with the GIL released (``consume_token_par``, then the masks'
``fill_next_token_bitmask_par``), made in the logits processor after the step's forward has been
launched: on an accelerator the forward is still running while the CPU fills the masks, and nothing waits
on the device but for the step's chosen tokens. Those are copied to pinned host memory without waiting as
soon as they are chosen (``generate`` calls its stopping criteria right after choosing them, before it
launches the next forward), so by the processor's turn they are there. No Python worker thread: one would
contend for the GIL with the thread launching the forward's kernels, which bounds an eager forward. The tokens
are exactly those of filling each mask in turn (``overlap=False``, and no executor: the reference the tests
compare with).

torch, transformers and llguidance are imported when a constraint is made.
"""

from __future__ import annotations

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
    ``generate`` as a stopping criterion (it never stops a row: it sends the step's tokens to the host).

    The grammar is compact JSON (no optional whitespace): a weak model otherwise spends its token budget
    on spaces and newlines. ``executor`` (an ``llguidance.LLExecutor``) advances the rows' matchers and
    fills their masks in parallel; without it they are done one row after the other. ``overlap=False``
    reads the step's tokens from ``input_ids`` in the processor (the reference; the hook then does nothing).
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
            self.length = None  # the input length whose tokens the matchers have taken
            self.sent = None  # (input length, event or None): the hook's copy of that step's tokens to the host
            self.taken = {"hook": 0, "input_ids": 0}  # where each step's tokens were read from (tests, perf)
            # the first step's masks, made where the batch is prepared (the prefetch thread), row after row:
            # llguidance's pool may be filling the batch before's masks meanwhile
            self._fill(parallel=False)

        # -- the CPU work: advance the matchers, fill the masks ------------------------------------------

        def _advance(self, columns: list[list[int]]) -> None:
            """Each row's matcher takes its new tokens (``columns``: one list a row, the same length; a
            finished reply's matcher stops taking them; one that breaks is left free), then the masks of
            the next step are filled."""
            for step in range(len(columns[0]) if columns else 0):
                live = [(m, row[step]) for m, row in zip(self.matchers, columns)
                        if m is not None and not m.is_stopped() and not m.is_error()]
                if executor is not None and live:  # llguidance refuses an empty list
                    llt.consume_token_par(executor, live)
                else:
                    for m, token in live:
                        m.consume_token(token)
            self._fill()

        def _fill(self, parallel: bool = True) -> None:
            self.mask.fill_(-1)  # all bits set: every token allowed
            # a complete reply (stopped matcher) allows only end-of-sequence; a broken one is left free
            live = [(m, i) for i, m in enumerate(self.matchers) if m is not None and not m.is_error()]
            if executor is not None and parallel and live:
                llt.fill_next_token_bitmask_par(executor, live, self.mask)
            else:
                for m, i in live:
                    llt.fill_next_token_bitmask(m, self.mask, i)

        # -- generate's two calls ------------------------------------------------------------------------

        def after_step(self, input_ids) -> None:
            """At the end of a step: the rows' new tokens copied to the host without waiting (read by the
            processor of the next step, after its forward is launched)."""
            if not overlap or self.length is None or input_ids.shape[1] != self.length + 1:
                return  # the processor catches up from input_ids itself (it always can)
            self.tokens.copy_(input_ids[:, -1], non_blocking=True)
            event = None
            if input_ids.is_cuda:
                event = torch.cuda.Event()
                event.record()
            self.sent = (input_ids.shape[1], event)

        def __call__(self, input_ids, scores):
            length = input_ids.shape[1]
            if self.length is None:  # the first step: its masks were filled when the batch was prepared
                self.length = length
            elif length > self.length:
                sent, self.sent = self.sent, None
                if sent is not None and sent[0] == length == self.length + 1:
                    if sent[1] is not None:
                        sent[1].synchronize()  # the tokens' copy (queued before this step's forward) is done
                    columns = [[t] for t in self.tokens.tolist()]
                    self.taken["hook"] += 1
                else:  # tokens the hook did not send: taken here, in one copy for the batch
                    columns = input_ids[:, self.length:].tolist()
                    self.taken["input_ids"] += 1
                self._advance(columns)
                self.length = length
            if self.shifts is None or self.shifts.device != scores.device:
                self.shifts = torch.arange(32, dtype=torch.int32, device=scores.device)
                self.device_mask = self.mask if not scores.is_cuda else torch.empty_like(self.mask,
                                                                                        device=scores.device)
            if self.device_mask is not self.mask:
                # read by the device after the copy completes; the mask is refilled on the host only after
                # the next step's tokens have reached it, which is after this copy in the stream
                self.device_mask.copy_(self.mask, non_blocking=True)
            return apply_token_mask(scores.clone(), self.device_mask, self.shifts)

        def stopping_hook(self):
            return _AfterStep(self)

        def close(self) -> None:
            """Nothing is left running (kept for the callers that close a constraint when generate returns)."""
            self.sent = None

    class _AfterStep(StoppingCriteria):
        """The stopping criterion that sends each step's tokens to the host; it never stops a row."""

        def __init__(self, constraint: SchemaConstraint):
            self.constraint = constraint
            self.never = None

        def __call__(self, input_ids, scores, **kwargs):
            self.constraint.after_step(input_ids)
            if self.never is None or self.never.device != input_ids.device:
                self.never = torch.zeros(input_ids.shape[0], dtype=torch.bool, device=input_ids.device)
            return self.never

    return SchemaConstraint()
