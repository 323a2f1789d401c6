#!/usr/bin/env python
"""The FLUX-Reason-6M data engine: run the curation pipeline, estimate its cost, sample PRISM-Bench prompts.

    python generators/flux_engine.py estimate --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000
    python generators/flux_engine.py run --work runs/w --captions laion.parquet ... --judge <spec> --model <diffusers model> --license <id>
    accelerate launch generators/flux_engine.py run ...          # many GPUs: each process takes its share of the shards
    torchrun --nproc_per_node 2 generators/flux_engine.py run ...
    python generators/flux_engine.py sample --data runs/w/dataset --embedder <text model> --out prism/
    python generators/flux_engine.py agreement runs/w/review/quality/review.csv

Run an interrupted command again to resume it. See ``t2ireason.engine`` and ``--help`` of each action.
"""

import argparse
import sys

from t2ireason.engine import add_engine_args, run_engine_command


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="flux_engine.py", description=__doc__.splitlines()[0])
    add_engine_args(parser)
    args = parser.parse_args(argv)
    try:
        return run_engine_command(args)
    except (ValueError, KeyError, FileNotFoundError) as e:  # user errors: one clear line, no traceback
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
