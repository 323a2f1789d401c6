#!/usr/bin/env python
"""An LLM reasons about each prompt and rewrites it explicitly (decoupled baselines: T2I-ReasonBench Table 3, R2I-Bench gpt-4o+SD3).

    python generators/rewrite_prompts.py --benchmark t2i-reasonbench --judge openai:gpt-4o --out runs/rewrite_prompts
    python generators/generate.py ... --prompts runs/rewrite_prompts/rewrites.parquet

Same as ``t2ireason rewrite --mode rewrite``; see ``--help``.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["rewrite", "--mode", "rewrite", *sys.argv[1:]]))
