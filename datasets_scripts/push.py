"""Publish a folder written by build.py as a Hub dataset repository.

    python datasets_scripts/push.py build/r2i-bench --repo my-org/r2i-bench [--dry-run]

The token comes from the environment (HF_TOKEN) or `huggingface-cli login`.
"""

import sys

from t2ireason.commands import datasets

if __name__ == "__main__":
    sys.exit(datasets.main(datasets.add_push_args, datasets.run_push, description=__doc__.splitlines()[0]))
