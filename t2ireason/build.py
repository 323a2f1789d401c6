"""From an official release to a Hub dataset folder, and from that folder to the Hub.

:func:`build_dataset` reads a release with its benchmark module's reader and
writes, into one folder:

- ``<config>/test-00000-of-00001.parquet``: one Parquet file per config, with
  the benchmark's ``datasets.Features`` (images embedded as bytes);
- ``README.md``: the dataset card rendered from ``hub_cards/dataset_card.md.j2``
  (YAML: pretty_name, license, task_categories, size_categories, configs,
  dataset_info with features per config);
- ``eval.yaml``: the Hub's benchmark registration, for benchmarks scored by a metric;
- ``build_report.json``: rows and counts per config, and every anomaly met.

``load_dataset(<folder>, <config>)`` then works offline, and the folder is
exactly what :func:`publish` uploads.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import datasets
import jinja2
import pyarrow as pa
import pyarrow.parquet as pq

from .benchmarks import Benchmark, ReleaseError, get_benchmark

__all__ = ["BuildError", "BuildReport", "build_dataset", "publish", "render_template", "size_category",
           "describe_features", "SPLIT"]

#: the one split every config has: these are evaluation sets
SPLIT = "test"
REPORT_FILE = "build_report.json"
#: the files a build writes at the top of its folder (with one folder per config)
_OWN_FILES = ("README.md", "eval.yaml", REPORT_FILE)


class BuildError(ValueError):
    """The build cannot start or finish as asked (output folder, license...); the message says what to do."""


@dataclass
class BuildReport:
    """What a build wrote and everything irregular it met, per config."""

    benchmark: str
    source: str
    out: str
    license: str
    #: config -> {"rows": n, and the release's own counts: questions, checklist items...}
    configs: dict[str, dict[str, int]]
    anomalies: list[dict[str, Any]] = field(default_factory=list)
    #: declared configs the release did not contain
    absent_configs: list[str] = field(default_factory=list)
    #: fields (dotted for nested ones) the benchmark gives no description of
    undocumented_fields: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def anomaly_counts(self) -> dict[str, int]:
        return dict(Counter(a["kind"] for a in self.anomalies))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"anomaly_counts": self.anomaly_counts()}

    def summary(self) -> str:
        """A few lines for the terminal: counts per config, anomalies by kind."""
        lines = [f"{self.benchmark}: built {len(self.configs)} config(s) from {self.source} into {self.out}"]
        for name, counts in self.configs.items():
            extra = ", ".join(f"{k} {v}" for k, v in counts.items() if k != "rows")
            lines.append(f"  {name}: {counts['rows']} rows" + (f", {extra}" if extra else ""))
        if self.absent_configs:
            lines.append(f"  not in this release: {', '.join(self.absent_configs)}")
        if self.anomalies:
            lines.append(f"  {len(self.anomalies)} anomalies (all in {REPORT_FILE}):")
            for kind, n in sorted(self.anomaly_counts().items()):
                first = next(a for a in self.anomalies if a["kind"] == kind)
                lines.append(f"    {kind}: {n} (first: {_where(first)})")
        else:
            lines.append("  no anomalies")
        if self.undocumented_fields:
            lines.append(f"  fields without a description: {', '.join(self.undocumented_fields)}")
        return "\n".join(lines)


def _where(a: dict[str, Any]) -> str:
    row = f" row {a['row']}" if a.get("row") is not None else ""
    detail = f": {a['detail']}" if a.get("detail") else ""
    return f"{a['file']}{row}{detail}"


# ---------------------------------------------------------------------------------------------- templates

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(str(resources.files("t2ireason") / "hub_cards")),
    undefined=jinja2.StrictUndefined,  # a variable a template needs and nobody gave is an error
    keep_trailing_newline=True,
    autoescape=False,  # Markdown and YAML, not HTML
    trim_blocks=True,
    lstrip_blocks=True,
)
# a YAML scalar: JSON strings are valid double-quoted YAML (jinja's own tojson escapes for HTML instead)
_ENV.filters["yaml"] = lambda value: json.dumps(value, ensure_ascii=False)
# text inside a Markdown table cell: one line, pipes escaped
_ENV.filters["cell"] = lambda text: " ".join(str(text).split()).replace("|", "\\|")


def render_template(name: str, **variables: Any) -> str:
    """Render a template of ``hub_cards/`` (dataset card, eval.yaml, metric card skeleton)."""
    return _ENV.get_template(name).render(**variables)


# ---------------------------------------------------------------------------------------------- schema

def _type_name(feature: Any) -> str:
    if isinstance(feature, datasets.ClassLabel):
        return "class label (" + ", ".join(feature.names) + ")"
    if isinstance(feature, datasets.Value):
        return feature.dtype
    if isinstance(feature, (datasets.Image, datasets.Audio)):
        return type(feature).__name__.lower()
    if isinstance(feature, (datasets.List, datasets.LargeList)):
        return f"list of {_type_name(feature.feature)}"
    if isinstance(feature, dict):
        return "struct"
    return type(feature).__name__


def describe_features(features: datasets.Features | dict, docs: dict[str, str] | None = None,
                      prefix: str = "") -> list[dict[str, str]]:
    """One entry per field, nested struct fields (also inside lists) as dotted names, with their docs."""
    docs = docs or {}
    out = []
    for name, feature in features.items():
        dotted = f"{prefix}{name}"
        out.append({"name": dotted, "type": _type_name(feature), "doc": docs.get(dotted, "")})
        inner = feature.feature if isinstance(feature, (datasets.List, datasets.LargeList)) else feature
        if isinstance(inner, dict):
            out += describe_features(inner, docs, prefix=f"{dotted}.")
    return out


def size_category(n: int) -> str:
    """The Hub's size_categories bucket of ``n`` rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    return next((label for bound, label in bounds if n < bound), "n>1B")


def _row_label(row: dict[str, Any], i: int) -> str:
    rid = row.get("id") if isinstance(row, dict) else None
    return f"row {i}" + (f" (id {rid!r})" if rid is not None else "")


def _table(rows: list[dict[str, Any]], features: datasets.Features, where: str) -> pa.Table:
    """Rows -> one Arrow table with the benchmark's schema, images embedded; errors name the row."""
    names = set(features)
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise ReleaseError(f"{where}, row {i}: expected a record (dict), got {type(row).__name__}")
        extra = row.keys() - names
        if extra:
            raise ReleaseError(f"{where}, {_row_label(row, i)}: fields {sorted(extra)} are not in the schema "
                               f"(known: {', '.join(features)})")
    columns = {name: [row.get(name) for row in rows] for name in features}
    try:
        table = datasets.Dataset.from_dict(columns, features=features).data.table
    except Exception as batch_error:  # find the first row that does not fit, to name it
        for i, row in enumerate(rows):
            try:
                datasets.Dataset.from_dict({k: [row.get(k)] for k in features}, features=features)
            except Exception as e:
                raise ReleaseError(f"{where}, {_row_label(row, i)} does not fit the schema: {e}") from e
        raise ReleaseError(f"{where}: rows do not fit the schema: {batch_error}") from batch_error
    if datasets.features.features.require_storage_embed(features):
        try:
            table = datasets.table.embed_table_storage(table)
        except (OSError, ValueError) as e:  # an image path that cannot be read
            raise ReleaseError(f"{where}: cannot embed a file the rows point to: {e}") from e
    return table


# ---------------------------------------------------------------------------------------------- build

def _prepare_out(out: Path, overwrite: bool) -> None:
    if out.exists() and not out.is_dir():
        raise BuildError(f"output {out} exists and is not a folder")
    if out.is_dir() and any(out.iterdir()):
        if not overwrite:
            raise BuildError(f"output folder {out} is not empty; pass --overwrite to replace a previous build")
        if not (out / REPORT_FILE).is_file():
            raise BuildError(f"output folder {out} is not empty and holds no {REPORT_FILE}: it was not written "
                             "by this builder, so it is not replaced even with --overwrite")


def _license(bench: Benchmark, license: str | None, release_license: str | None) -> str:
    chosen = license or release_license or bench.license
    if not chosen:
        raise BuildError(f"the license of {bench.pretty_name} is not known to t2i-reason: pass --license "
                         "with the license its authors give (an SPDX id such as apache-2.0, cc-by-4.0, mit)")
    return chosen


def build_dataset(benchmark: Benchmark | str, source: str | os.PathLike, out: str | os.PathLike, *,
                  license: str | None = None, overwrite: bool = False, repo_id: str | None = None,
                  eval_yaml: bool = True, evaluation_framework: str = "t2i-reason",
                  options: dict[str, Any] | None = None) -> BuildReport:
    """Read ``source`` (the official release) with the benchmark's reader and write the Hub folder ``out``.

    ``license`` overrides the benchmark's known license (required when none is known).
    ``repo_id`` is the Hub repository the card's examples name. ``options`` go to
    ``read_release``. The folder is written next to ``out`` and moved into place
    only when complete, so a failed build leaves no half-written dataset.
    """
    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    out = Path(out)
    if not Path(source).exists() and not getattr(bench, "reads_hub", False):
        raise FileNotFoundError(f"release folder not found: {source}")
    _prepare_out(out, overwrite)
    release = bench.read_release(source, **(options or {}))
    chosen_license = _license(bench, license, release.license)

    unknown = [c for c in release.configs if c not in bench.configs]
    if unknown:
        raise ReleaseError(f"{bench.name} reader returned configs {unknown} that the benchmark does not declare "
                           f"({', '.join(bench.configs)})")
    built = [c for c in bench.configs if c in release.configs]
    if not built or not any(release.configs[c] for c in built):
        raise ReleaseError(f"no rows read from {source}: is it the {bench.pretty_name} release?")

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        report = _write(bench, release, built, tmp, out, str(source), chosen_license, repo_id,
                        eval_yaml, evaluation_framework)
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return report


def _write(bench: Benchmark, release: Any, built: list[str], tmp: Path, out: Path, source: str, license: str,
           repo_id: str | None, eval_yaml: bool, framework: str) -> BuildReport:
    infos, metadata_configs, counts, files = {}, {}, {}, []
    for config in built:
        features = bench.config_features(config)
        rows = release.configs[config]
        table = _table(rows, features, f"{bench.name} config {config!r}")
        rel = f"{config}/{SPLIT}-00000-of-00001.parquet"
        (tmp / config).mkdir()
        pq.write_table(table, tmp / rel)
        files.append(rel)
        infos[config] = datasets.DatasetInfo(
            features=features, config_name=config, dataset_size=table.nbytes,
            download_size=(tmp / rel).stat().st_size,
            splits=datasets.SplitDict.from_split_dict([{"name": SPLIT, "num_bytes": table.nbytes,
                                                        "num_examples": table.num_rows}]))
        metadata_configs[config] = {"data_files": [{"split": SPLIT, "path": f"{config}/{SPLIT}-*"}]}
        counts[config] = {"rows": table.num_rows} | {k: int(v) for k, v in release.counts.get(config, {}).items()
                                                     if k != "rows"}
    metadata_configs[built[0]]["default"] = True

    schemas: dict[str, dict[str, Any]] = {}  # one table of fields per distinct schema
    for config in built:
        features = bench.config_features(config)
        key = json.dumps(features.to_dict(), sort_keys=True)
        schemas.setdefault(key, {"configs": [], "fields": describe_features(features, bench.field_docs)})
        schemas[key]["configs"].append(config)
    undocumented = sorted({f["name"] for s in schemas.values() for f in s["fields"] if not f["doc"]})

    report = BuildReport(benchmark=bench.name, source=source, out=str(out), license=license, configs=counts,
                         anomalies=[a.to_dict() for a in release.anomalies],
                         absent_configs=[c for c in bench.configs if c not in built],
                         undocumented_fields=undocumented)
    has_eval_yaml = bool(eval_yaml and bench.metric)
    card = _card(bench, report, infos, metadata_configs, list(schemas.values()), repo_id, has_eval_yaml)
    (tmp / "README.md").write_text(card, encoding="utf-8")
    files.append("README.md")
    if has_eval_yaml:
        (tmp / "eval.yaml").write_text(_eval_yaml(bench, built, framework), encoding="utf-8")
        files.append("eval.yaml")
    files.append(REPORT_FILE)
    report.files = files
    (tmp / REPORT_FILE).write_text(json.dumps(report.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n",
                                   encoding="utf-8")
    return report


def _card(bench: Benchmark, report: BuildReport, infos: dict[str, datasets.DatasetInfo],
          metadata_configs: dict[str, dict], schemas: list[dict[str, Any]], repo_id: str | None,
          has_eval_yaml: bool) -> str:
    from huggingface_hub import DatasetCard, DatasetCardData

    total = sum(c["rows"] for c in report.configs.values())
    data = DatasetCardData(pretty_name=bench.pretty_name, license=report.license,
                           task_categories=["text-to-image"], size_categories=[size_category(total)],
                           tags=["t2i-reason", "benchmark", bench.name] if bench.metric else ["t2i-reason", bench.name])
    datasets.utils.metadata.MetadataConfigs(metadata_configs).to_dataset_card_data(data)
    datasets.info.DatasetInfosDict(infos).to_dataset_card_data(data)
    anomalies = [{"kind": kind, "count": n, "example": _where(next(a for a in report.anomalies if a["kind"] == kind))}
                 for kind, n in sorted(report.anomaly_counts().items())]
    count_columns = list(dict.fromkeys(k for c in report.configs.values() for k in c if k != "rows"))
    text = render_template(
        "dataset_card.md.j2", card_data=data.to_yaml(), bench=bench, split=SPLIT,
        repo_id=repo_id or f"<namespace>/{bench.name}",
        configs=[{"name": n, "rows": c["rows"], "counts": c} for n, c in report.configs.items()],
        count_columns=count_columns, schemas=schemas, anomalies=anomalies, has_eval_yaml=has_eval_yaml,
        source=Path(report.source).name or report.source, card_license=report.license)
    DatasetCard(text)  # the Hub's own parser must accept what we push
    return text


def _eval_yaml(bench: Benchmark, configs: Sequence[str], framework: str) -> str:
    description = " ".join(bench.description.split())
    if bench.scoring:
        description += " Scoring: " + " ".join(bench.scoring.split())
    return render_template("eval.yaml.j2", bench=bench, configs=list(configs), split=SPLIT, framework=framework,
                           description=description, inputs=getattr(bench, "input_columns", ("prompt",)))


# ---------------------------------------------------------------------------------------------- publish

#: never uploaded: hidden files and folders (caches, editor files)
_IGNORE = [".*", "*/.*"]


def folder_files(folder: str | os.PathLike) -> list[str]:
    """The files of ``folder`` that :func:`publish` uploads, relative and sorted."""
    from huggingface_hub.utils import filter_repo_objects

    folder = Path(folder)
    paths = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    return sorted(filter_repo_objects(paths, ignore_patterns=_IGNORE))


def _check_folder(folder: Path) -> None:
    from huggingface_hub import DatasetCard

    if not folder.is_dir():
        raise FileNotFoundError(f"dataset folder not found: {folder}")
    card = folder / "README.md"
    if not card.is_file():
        raise BuildError(f"{folder} has no README.md: build it with datasets_scripts/build.py first")
    data = DatasetCard.load(card).data
    missing = [k for k in ("license", "configs", "dataset_info") if not data.get(k)]
    if missing:
        raise BuildError(f"{card}: the card's YAML lacks {', '.join(missing)}")
    for config in data["configs"]:
        for spec in config.get("data_files", []):
            pattern = spec["path"] if isinstance(spec, dict) else spec
            if not list(folder.glob(pattern)):
                raise BuildError(f"{card}: config {config['config_name']!r} names {pattern} but no file matches")


def publish(folder: str | os.PathLike, repo_id: str, *, token: str | None = None, private: bool | None = None,
            revision: str | None = None, commit_message: str | None = None, create_pr: bool = False,
            dry_run: bool = False) -> dict[str, Any]:
    """Upload a built folder as the dataset repository ``repo_id`` (created if needed).

    The token comes from ``token``, else the environment (``HF_TOKEN``) or the
    standard ``huggingface-cli login``; it is never printed or returned. With
    ``dry_run`` nothing is sent and the result lists what would be uploaded.
    """
    folder = Path(folder)
    _check_folder(folder)
    plan = {"repo_id": repo_id, "repo_type": "dataset", "folder": str(folder), "files": folder_files(folder),
            "dry_run": dry_run}
    if dry_run:
        return plan
    from huggingface_hub import HfApi

    api = HfApi(token=token)
    repo = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    commit = api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                               commit_message=commit_message or f"Upload {folder.name} built by t2i-reason",
                               revision=revision, create_pr=create_pr, ignore_patterns=_IGNORE)
    return plan | {"url": str(getattr(repo, "url", repo)), "commit": getattr(commit, "commit_url", str(commit))}


# ---------------------------------------------------------------------------------------------- command line

def _option(text: str) -> tuple[str, Any]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except json.JSONDecodeError:
        return key, value  # a plain string


def add_build_args(p: argparse.ArgumentParser) -> None:
    from .benchmarks import MODULES

    p.add_argument("benchmark", help=f"which benchmark: {', '.join(MODULES)}")
    p.add_argument("--source", required=True, help="the official release: a local folder as its authors publish it")
    p.add_argument("--out", required=True, help="output folder (Parquet per config, README.md, eval.yaml, build_report.json)")
    p.add_argument("--license", default=None, help="license of the release (default: the one the benchmark is known to have)")
    p.add_argument("--repo", default=None, help="Hub repository the card's examples name, e.g. my-org/r2i-bench")
    p.add_argument("--overwrite", action="store_true", help="replace a previous build in --out")
    p.add_argument("--no-eval-yaml", action="store_true", help="do not write eval.yaml")
    p.add_argument("--evaluation-framework", default="t2i-reason", help="evaluation_framework key written in eval.yaml")
    p.add_argument("--read-option", type=_option, action="append", default=[], metavar="KEY=VALUE",
                   help="option for the benchmark's release reader (JSON value), e.g. limit=1000; repeatable")


def run_build(args: argparse.Namespace) -> int:
    report = build_dataset(args.benchmark, args.source, args.out, license=args.license, overwrite=args.overwrite,
                           repo_id=args.repo, eval_yaml=not args.no_eval_yaml,
                           evaluation_framework=args.evaluation_framework, options=dict(args.read_option))
    print(report.summary())
    return 0


def add_push_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a folder written by datasets_scripts/build.py")
    p.add_argument("--repo", required=True, help="dataset repository to create or update, e.g. my-org/r2i-bench")
    p.add_argument("--private", action="store_true", help="create the repository as private")
    p.add_argument("--revision", default=None, help="branch to push to")
    p.add_argument("--create-pr", action="store_true", help="open a pull request instead of committing")
    p.add_argument("--message", default=None, help="commit message")
    p.add_argument("--dry-run", action="store_true", help="list what would be uploaded; send nothing")


def run_push(args: argparse.Namespace) -> int:
    plan = publish(args.folder, args.repo, private=args.private or None, revision=args.revision,
                   commit_message=args.message, create_pr=args.create_pr, dry_run=args.dry_run)
    verb = "would upload" if args.dry_run else "uploaded"
    print(f"{verb} {len(plan['files'])} files from {plan['folder']} to dataset {plan['repo_id']}:")
    for f in plan["files"]:
        print(f"  {f}")
    if not args.dry_run:
        print(f"commit: {plan['commit']}")
    return 0


def main(add_args: Any, run: Any, argv: Sequence[str] | None = None, description: str = "") -> int:
    """Entry point shared by datasets_scripts/build.py and push.py: one clear line on bad input."""
    import sys

    parser = argparse.ArgumentParser(description=description)
    add_args(parser)
    args = parser.parse_args(argv)
    try:
        return run(args)
    except (ValueError, KeyError, OSError, ImportError) as e:  # OSError: file system, and the Hub's HTTP errors
        message = e.args[0] if isinstance(e, KeyError) and e.args else e
        print(f"error: {message}", file=sys.stderr)
        return 2
