"""The MT2IE evaluator agent (seed 002), by the names it has always been imported by.

The agent is part of its benchmark's package, :mod:`t2ireason.benchmarks.mt2ie` (the single source
of truth: the agent loop in ``agent``, prompts and replies in ``protocol``, the scorer, the run
store, the rankings; the ``t2ireason mt2ie`` command is :mod:`t2ireason.commands.mt2ie`); this module re-exports its
public names for the generators and user code.
"""

from .benchmarks.mt2ie.agent import (
    DIFFICULTY_METHODS,
    PAPER_ITERATIONS,
    PAPER_JUDGE,
    PAPER_SEED_PROMPTS_PER_SEED,
    PAPER_SEEDS,
    SCORINGS,
    run_mt2ie,
    select_seed_prompts,
)
from .benchmarks.mt2ie.protocol import (
    BINS,
    PROMPT_TEMPERATURE,
    adaptive_bin,
    parse_aesthetic,
    parse_choice,
    parse_prompt,
    parse_questions,
    parse_yes_no,
    prompt_request,
)
from .benchmarks.mt2ie.rankings import METRICS, rank_models

__all__ = [
    "run_mt2ie", "rank_models", "select_seed_prompts", "adaptive_bin", "prompt_request", "parse_prompt",
    "parse_questions", "parse_yes_no", "parse_choice", "parse_aesthetic",
    "PAPER_JUDGE", "PAPER_SEEDS", "SCORINGS", "DIFFICULTY_METHODS", "BINS",
    "PAPER_ITERATIONS", "PAPER_SEED_PROMPTS_PER_SEED", "PROMPT_TEMPERATURE", "METRICS",
]
