"""The logits processors the local judge decodes with (:mod:`t2ireason.judges.transformers_judge`):
each sampled row drawn from its own seeded generator, answers teacher-forced for their probabilities,
JSON schemas enforced row by row (llguidance). Each is a ``transformers.LogitsProcessor`` made per batch;
torch, transformers and llguidance are imported when one is made."""

from __future__ import annotations

from typing import Any

from .base import JudgeError

__all__ = ["row_sampler", "forced_tokens", "schema_constraint"]


def row_sampler(rows: list[tuple[float, float, int | None, int | None]]):
    """A logits processor drawing each sampled row's next token from its own
    ``torch.Generator`` with its own temperature, top-k and top-p.

    ``rows`` holds ``(temperature, top_p, top_k, seed)`` per batch row. ``generate``
    runs greedy; for sampled rows this processor leaves only the drawn token, so
    greedy picks it. Each row consumes one draw per step from its own generator,
    so a seeded request gives the same text whatever else shares its batch.
    Greedy rows (temperature 0) are left untouched.

    The warping (temperature, top-k, top-p) runs on all sampled rows at once and the drawn
    tokens are scattered in one call, with the index and parameter tensors built once; only
    the draw itself is per row (each from its own generator), and nothing waits for the device.
    """
    import torch
    from transformers import LogitsProcessor

    class RowSampler(LogitsProcessor):
        def __init__(self):
            self.rows = []
            for i, (temperature, top_p, top_k, seed) in enumerate(rows):
                if temperature > 0:
                    # Unseeded rows still draw from the global RNG, so torch.manual_seed governs them.
                    seed = seed if seed is not None else int(torch.randint(0, 2**63 - 1, ()).item())
                    self.rows.append((i, temperature, top_p, top_k, seed))
            self.generators = None

        def _setup(self, device):
            self.generators = [torch.Generator(device).manual_seed(r[-1]) for r in self.rows]
            self.index = torch.tensor([r[0] for r in self.rows], device=device)
            self.temperature = torch.tensor([[r[1]] for r in self.rows], dtype=torch.float32, device=device)
            # 1 - top_p in double, then float32: the threshold TopPLogitsWarper compares with
            self.top_p_floor = torch.tensor([[1 - r[2]] for r in self.rows], dtype=torch.float32, device=device)
            self.top_p_rows = torch.tensor([[r[2] < 1] for r in self.rows], device=device)
            self.any_top_p = any(r[2] < 1 for r in self.rows)
            self.top_k = self.rows[0][3]  # the checkpoint's own top-k, the same for every row

        def __call__(self, input_ids, scores):
            if self.generators is None:
                self._setup(scores.device)
            logits = scores[self.index].float() / self.temperature
            if self.top_k:  # as TopKLogitsWarper: below the k-th largest logit is out
                kth = torch.topk(logits, min(self.top_k, logits.shape[-1]))[0][..., -1, None]
                logits = logits.masked_fill(logits < kth, float("-inf"))
            if self.any_top_p:  # as TopPLogitsWarper, per row, for the rows with top_p < 1
                ordered, order = torch.sort(logits, descending=False)
                cumulative = ordered.softmax(-1).cumsum(-1)
                out = (cumulative <= self.top_p_floor) & self.top_p_rows
                out[..., -1:] = False  # the most likely token always stays
                logits = logits.masked_fill(out.scatter(1, order, out), float("-inf"))
            probs = logits.softmax(-1)
            drawn = torch.cat([torch.multinomial(probs[k : k + 1], 1, generator=gen)
                               for k, gen in enumerate(self.generators)])
            scores = scores.clone()
            scores[self.index] = float("-inf")
            scores[self.index.unsqueeze(1), drawn] = 0.0
            return scores

    return RowSampler()


def forced_tokens(answers: list[list[int]], filler: int):
    """A logits processor forcing row ``i`` to write ``answers[i]`` (then ``filler``, ending the row):
    with greedy decoding, ``generate`` then teacher-forces the answers, and its raw logits
    (``output_logits``) are the model's predictions of each answer token in context.

    The answers are one ``(rows, longest + 1)`` tensor built once on the device (padded with
    ``filler``); each step scatters its column."""
    import torch
    from transformers import LogitsProcessor

    width = max(map(len, answers)) + 1
    table = [ids + [filler] * (width - len(ids)) for ids in answers]

    class ForcedTokens(LogitsProcessor):
        def __init__(self):
            self.step = 0
            self.table = None

        def __call__(self, input_ids, scores):
            if self.table is None:
                self.table = torch.tensor(table, dtype=torch.long, device=scores.device)
            column = self.table[:, min(self.step, width - 1), None]
            scores = scores.clone().fill_(float("-inf")).scatter_(1, column, 0.0)
            self.step += 1
            return scores

    return ForcedTokens()


def schema_constraint(tokenizer_info: Any, schemas: list[dict | None], prompt_len: int, executor: Any = None):
    """A logits processor keeping each row with a JSON schema inside that schema
    (llguidance matchers, one per row); rows without one are left free.

    The grammar is compact JSON (no optional whitespace): a weak model otherwise
    spends its token budget on spaces and newlines. Per step the batch's last tokens are read
    in one copy, the rows' masks computed together (``executor``, an ``llguidance.LLExecutor``,
    fills them in parallel) into llguidance's pinned buffer, and that buffer copied to the
    device without waiting.
    """
    import llguidance
    import llguidance.torch as llt
    import torch
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
            self.mask = llt.allocate_token_bitmask(len(schemas), tokenizer_info.vocab_size)  # pinned with CUDA
            self.device_mask = None

        def __call__(self, input_ids, scores):
            if input_ids.shape[1] > prompt_len:  # the tokens chosen at the previous step, one copy for the batch
                # (reading them waits for the device, so the previous step's copy of the mask is done)
                for m, token in zip(self.matchers, input_ids[:, -1].tolist()):
                    if m is not None and not m.is_stopped():
                        m.consume_token(token)
            self.mask.fill_(-1)  # all bits set: every token allowed
            # a complete reply (stopped matcher) allows only end-of-sequence; a broken one is left free
            live = [(m, i) for i, m in enumerate(self.matchers) if m is not None and not m.is_error()]
            if executor is not None:
                llt.fill_next_token_bitmask_par(executor, live, self.mask)
            else:
                for m, i in live:
                    llt.fill_next_token_bitmask(m, self.mask, i)
            if self.device_mask is None:
                self.device_mask = torch.empty_like(self.mask, device=scores.device)
            self.device_mask.copy_(self.mask, non_blocking=True)
            scores = scores.clone()
            if scores.is_cuda:
                llt.apply_token_bitmask_inplace(scores, self.device_mask)
            else:  # llguidance's kernel is torch.compile'd: on a CPU its first call builds C++ (13 CPU-s, and a
                # compiler), a cost a short run never earns back; the same mask in eager torch
                bits = (self.device_mask.unsqueeze(-1) >> torch.arange(32, dtype=torch.int32)) & 1
                allowed = bits.reshape(len(bits), -1)[:, :scores.shape[1]].bool()
                scores[:, allowed.shape[1]:] = float("-inf")  # past the tokenizer's vocabulary (padded logits)
                scores[:, :allowed.shape[1]].masked_fill_(~allowed, float("-inf"))
            return scores

    return SchemaConstraint()
