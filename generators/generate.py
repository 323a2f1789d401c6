#!/usr/bin/env python
"""Generate a benchmark's images with a diffusers model, on one process or many.

    python generators/generate.py --benchmark t2i-reasonbench --model <diffusers model> --out runs/sd
    accelerate launch generators/generate.py --benchmark r2i-bench --data <org>/r2i-bench --model ... --out ...
    torchrun --nproc_per_node 2 generators/generate.py ...

Same as ``t2ireason generate``; see ``--help`` for every option.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["generate", *sys.argv[1:]]))
