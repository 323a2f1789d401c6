"""The logits processors the local judge decodes with (:mod:`t2ireason.judges.transformers_judge`):
each sampled row drawn from its own seeded generator, answers teacher-forced for their probabilities
(JSON schemas are enforced by :mod:`.constrained`). Each is a ``transformers.LogitsProcessor`` made per
batch; torch and transformers are imported when one is made."""

from __future__ import annotations

__all__ = ["row_sampler", "forced_tokens", "rows_done"]


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


def rows_done(first: int):
    """A stopping criterion marking rows ``first`` and after as finished from the first step: the copies that
    fill a batch up to a compiled size (:mod:`.static_cache`) never make the batch decode longer than its own
    requests do."""
    import torch
    from transformers import StoppingCriteria

    class RowsDone(StoppingCriteria):
        def __init__(self):
            self.done = None

        def __call__(self, input_ids, scores, **kwargs):
            if self.done is None or self.done.device != input_ids.device:
                self.done = torch.arange(input_ids.shape[0], device=input_ids.device) >= first
            return self.done

    return RowsDone()
