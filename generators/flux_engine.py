#!/usr/bin/env python
"""The FLUX-Reason-6M data engine: run the curation pipeline, estimate its cost, sample PRISM-Bench prompts.

    python generators/flux_engine.py estimate --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000
    python generators/flux_engine.py run --work runs/w --captions laion.parquet ... --judge <spec> --model <diffusers model> --license <id>
    python generators/flux_engine.py run ... --workers 8           # 8 worker processes, one GPU each
    python generators/flux_engine.py run ... --executor slurm --partition gpu --gpus-per-task 1   # Slurm job arrays
    python generators/flux_engine.py status --work runs/w
    python generators/flux_engine.py sample --data runs/w/dataset --embedder <text model> --out prism/
    python generators/flux_engine.py agreement runs/w/review/quality/review.csv

Same as ``t2ireason engine ...``. Run an interrupted command again to resume it. See ``t2ireason.engine``
and ``--help`` of each action.
"""

import sys

from t2ireason.cli import main as cli_main


def main(argv=None) -> int:
    """Same as ``t2ireason engine ...``."""
    return cli_main(["engine", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
