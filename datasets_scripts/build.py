"""Build a benchmark's Hub dataset from its official release.

    python datasets_scripts/build.py r2i-bench --source path/to/R2I-Bench --out build/r2i-bench

writes one Parquet file per config, the dataset card (README.md), eval.yaml and
build_report.json into --out; `load_dataset(<out>, <config>)` then works offline.
"""

import sys

from t2ireason import build

if __name__ == "__main__":
    sys.exit(build.main(build.add_build_args, build.run_build, description=__doc__.splitlines()[0]))
