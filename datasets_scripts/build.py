"""Build a benchmark's Hub dataset from its official release.

    python datasets_scripts/build.py r2i-bench --out build/r2i-bench --license <license>
    python datasets_scripts/build.py r2i-bench --source path/to/R2I-Bench --out build/r2i-bench

With no --source the authors' release is fetched at the revision the project pins (a GitHub
archive, or a Hub snapshot) and its files checked; --source takes a folder, a checkout (its root
is found a folder or two deeper) or a zip/tar archive of the repository. Writes one Parquet file
per config, the dataset card (README.md), build_report.json (every anomaly, the
quarantine of what could not be kept, with its raw text) and, with --evaluation-framework naming
one the Hub lists, eval.yaml into --out; `load_dataset(<out>)` then works offline. --strict fails on any anomaly instead.
"""

import sys

from t2ireason.commands import datasets

if __name__ == "__main__":
    sys.exit(datasets.main(datasets.add_build_args, datasets.run_build, description=__doc__.splitlines()[0]))
