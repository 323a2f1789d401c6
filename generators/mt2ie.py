#!/usr/bin/env python
"""MT2IE (seed 002): an MLLM writes progressively harder prompts while each T2I model draws them, then ranks the models.

    python generators/mt2ie.py --model sd35=stabilityai/stable-diffusion-3.5-medium --model flux=black-forest-labs/FLUX.1-dev \\
        --judge hf:llava-hf/llava-v1.6-34b-hf --out runs/mt2ie --reference flux,sd35

Same as ``t2ireason mt2ie``; see ``--help``. Rerun the same command to resume.
"""

import sys

from t2ireason.cli import main

if __name__ == "__main__":
    sys.exit(main(["mt2ie", *sys.argv[1:]]))
