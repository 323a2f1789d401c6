#!/usr/bin/env python
"""Generate a benchmark's images with any generator (a diffusers pipeline, an image API, Janus, your own
function), on one process or many.

    python generators/generate.py --benchmark t2i-reasonbench --model <diffusers model> --out runs/sd
    python generators/generate.py --benchmark r2i-bench --model openai:gpt-image-1 --out runs/gpt-image-1
    accelerate launch generators/generate.py --benchmark r2i-bench --data <org>/r2i-bench --model ... --out ...
    torchrun --nproc_per_node 2 generators/generate.py ...

Same as ``t2ireason generate``; see ``--help`` for every option.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["generate", *sys.argv[1:]]))
