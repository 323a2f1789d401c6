#!/usr/bin/env python
"""A text module writes the explicit visual description of each prompt (T2I-ReasonBench text score, Table 4).

    python generators/describe.py --benchmark t2i-reasonbench --judge openai:gpt-4o --out runs/describe
    python generators/generate.py ... --prompts runs/describe/rewrites.parquet

Same as ``t2ireason rewrite --mode describe``; see ``--help``.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["rewrite", "--mode", "describe", *sys.argv[1:]]))
