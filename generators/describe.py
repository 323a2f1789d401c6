#!/usr/bin/env python
"""A text module writes the explicit visual description of each prompt (T2I-ReasonBench text score, Table 4).

    python generators/describe.py --benchmark t2i-reasonbench --judge hf:<the T2I model's text module> --out runs/describe

then score the descriptions (column ``rewritten_prompt``) in text mode, rows in the same order:
``evaluate.load("metrics/t2i_reasonscore").compute(predictions=descriptions, references=rows, mode="text")``.

Same as ``t2ireason rewrite --mode describe``; see ``--help``.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["rewrite", "--mode", "describe", *sys.argv[1:]]))
