"""From an official release to a Hub dataset folder (sending the folder to the Hub: :mod:`t2ireason.publish`).

:func:`build_dataset` takes the release as its authors publish it (a folder, a checkout one
folder deeper, a zip or tar archive of the repository, or nothing: then it is fetched from the
authors' repository at the pinned revision and checked against the recorded hashes; see
:mod:`t2ireason.releases`), reads it with its benchmark module's reader and writes, into one folder:

- ``<config>/test-00000-of-00001.parquet``: one Parquet file per config, with
  the benchmark's ``datasets.Features`` (images embedded as bytes);
- ``README.md``: the dataset card rendered from ``hub_cards/dataset_card.md.j2``
  (YAML: pretty_name, license, language, task_categories, size_categories, configs with
  ``all`` as the default where a benchmark has it, dataset_info with features per config);
- ``eval.yaml``: the Hub's benchmark registration, for benchmarks scored by a metric, written when an
  evaluation framework the Hub lists is named (:data:`HUB_EVALUATION_FRAMEWORKS`);
- ``build_report.json``: where the release came from, rows and counts per config, every
  anomaly met (file, row, what), the quarantine (records that could not be kept at all, with
  their raw text), the files that were not read (the authors' scripts named as such), ids renamed
  to safe file names.

A record-level surprise never stops a build: irregular records are kept and reported, only
what cannot be kept at all is quarantined. ``strict=True`` (``--strict``) turns anomalies and
quarantined records into an error instead. Text is kept byte-exact unless a normalisation is
asked for (``normalize=("strip", "nfc")``, reported). Ids that cannot be file names (images are
written at paths made from them) are mapped to safe names, the mapping kept in the report
(``unsafe_ids="map"``), or quarantined (``"refuse"``); never written through.

``load_dataset(<folder>)`` then works offline (the ``all`` config by default where there is one),
and the folder is exactly what :func:`t2ireason.publish.publish` uploads.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
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

from .benchmarks import Anomaly, Benchmark, Quarantined, ReleaseError, get_benchmark, is_safe_name, safe_name
from .benchmarks.base import unread_files
from .files import UnsafePath, atomic_folder
from .hub_ids import check_license, check_repo_id

__all__ = ["BuildError", "BuildReport", "build_dataset", "render_template", "size_category", "describe_features",
           "SPLIT", "NORMALIZATIONS", "require_license"]

#: the split of an evaluation set (a benchmark's own ``split`` says which it has: FLUX-Reason-6M's is ``train``)
SPLIT = "test"
REPORT_FILE = "build_report.json"
#: the files a build writes at the top of its folder (with one folder per config)
_OWN_FILES = ("README.md", "eval.yaml", REPORT_FILE)

#: The ``evaluation_framework`` values the Hub accepts in a benchmark dataset's ``eval.yaml``
#: (https://huggingface.co/docs/hub/eval-results, "Registering a Benchmark"): the keys of
#: EVALUATION_FRAMEWORKS in huggingface.js packages/tasks/src/eval.ts (commit 0589d130).
HUB_EVALUATION_FRAMEWORKS = (
    "exgentic", "inspect-ai", "math-arena", "mteb", "olmocr-bench", "harbor", "archipelago", "apex-evals",
    "screenspot-pro", "swe-bench", "swe-bench-pro", "nemo-evaluator", "yc-bench", "open-asr-leaderboard", "mdpbench",
    "parsebench", "video-mme-v2", "claw-eval", "wildclawbench")
#: text normalisations a build may apply (none by default: the release's text is the benchmark)
NORMALIZATIONS = ("strip", "nfc")
UNSAFE_IDS = ("map", "refuse")


class BuildError(ValueError):
    """The build cannot start or finish as asked (output folder, license, --strict...); the message says what to do."""


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
    #: where the release came from and how (see t2ireason.releases.ResolvedSource.to_dict)
    source_info: dict[str, Any] = field(default_factory=dict)
    #: records that could not be kept at all: {file, row, reason, raw}
    quarantine: list[dict[str, Any]] = field(default_factory=list)
    #: files of the release the reader did not read (the authors' scripts, images, notes...)
    ignored_files: list[str] = field(default_factory=list)
    #: those of the ignored files that are the authors' own scripts (``Benchmark.official_release.scripts``)
    authors_scripts: list[str] = field(default_factory=list)
    #: ids that could not be file names, and the safe names they were given: {config, row, field, original, safe}
    renamed: list[dict[str, Any]] = field(default_factory=list)
    #: the text normalisation applied, if any: {"applied": [...], "values_changed": n}
    normalization: dict[str, Any] = field(default_factory=dict)
    strict: bool = False
    #: the release's files against the hashes the project records (t2ireason.releases.RELEASE_CHECKS): "checked",
    #: "modified", "other files", or "not checked" (none recorded: a stand-in would read as the real release)
    release_check: str | None = None

    def anomaly_counts(self) -> dict[str, int]:
        return dict(Counter(a["kind"] for a in self.anomalies))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"anomaly_counts": self.anomaly_counts()}

    def summary(self) -> str:
        """A few lines for the terminal: where from, counts per config, anomalies by kind, quarantine."""
        lines = [f"{self.benchmark}: built {len(self.configs)} config(s) from {self.source} into {self.out}"]
        info = self.source_info
        if info.get("kind") not in (None, "folder", "file"):
            lines.append(f"  source: {info['kind']}" + (f" at revision {info['revision']}" if info.get("revision") else ""))
        for note in info.get("notes", []):
            lines.append(f"  {note}")
        verification = info.get("verification")
        if verification and verification.get("note"):
            lines.append(f"  files: {verification['note']}")
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
        if self.quarantine:
            lines.append(f"  {len(self.quarantine)} record(s) quarantined, with their raw text, in {REPORT_FILE} "
                         f"(first: {self.quarantine[0]['file']}: {self.quarantine[0]['reason']})")
        if self.renamed:
            lines.append(f"  {len(self.renamed)} id(s) that cannot be file names renamed (mapping in {REPORT_FILE})")
        if self.normalization.get("applied"):
            lines.append(f"  text normalised ({', '.join(self.normalization['applied'])}): "
                         f"{self.normalization['values_changed']} value(s) changed")
        if self.authors_scripts:
            lines.append(f"  the authors' scripts, not read: {', '.join(self.authors_scripts)}")
        others = [f for f in self.ignored_files if f not in self.authors_scripts]
        if others:
            shown = ", ".join(others[:6]) + (" ..." if len(others) > 6 else "")
            lines.append(f"  {len(others)} {'other ' if self.authors_scripts else ''}file(s) of the release "
                         f"not read (not data): {shown}")
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


def _raw(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=repr)


def _fits(row: dict[str, Any], features: datasets.Features) -> str | None:
    """None when ``row`` converts to ``features``, else why not."""
    try:
        datasets.Dataset.from_dict({k: [row.get(k)] for k in features}, features=features)
    except Exception as e:  # whatever Arrow or datasets object to
        return f"{type(e).__name__}: {e}"
    return None


def _table(rows: list[dict[str, Any]], features: datasets.Features, where: str,
           anomalies: list[Anomaly], quarantine: list[Quarantined]) -> pa.Table:
    """Rows -> one Arrow table with the benchmark's schema, images embedded.

    A row that is not a record or does not fit the schema is quarantined (with its raw text);
    fields the schema does not have are left out of the row and reported with their values.
    """
    names = set(features)
    fitting = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            quarantine.append(Quarantined(where, i, f"not a record ({type(row).__name__})", _raw(row)))
            continue
        extra = sorted(row.keys() - names)
        if extra:
            anomalies.append(Anomaly("unknown_field", where, row.get("id", i),
                                     f"fields not in the schema, left out of the row: {_raw({k: row[k] for k in extra})}"))
            row = {k: v for k, v in row.items() if k in names}
        fitting.append((i, row))
    columns = {name: [row.get(name) for _, row in fitting] for name in features}
    try:
        table = datasets.Dataset.from_dict(columns, features=features).data.table
    except Exception:  # find the rows that do not fit, keep the others
        kept = []
        for i, row in fitting:
            why = _fits(row, features)
            if why is None:
                kept.append((i, row))
            else:
                quarantine.append(Quarantined(where, row.get("id", i), f"does not fit the schema: {why}", _raw(row)))
        fitting = kept
        table = datasets.Dataset.from_dict({name: [row.get(name) for _, row in fitting] for name in features},
                                           features=features).data.table
    if datasets.features.features.require_storage_embed(features):
        try:
            table = datasets.table.embed_table_storage(table)
        except (OSError, ValueError) as e:  # an image path that cannot be read
            raise ReleaseError(f"{where}: cannot embed a file the rows point to: {e}") from e
    return table


# ---------------------------------------------------------------------------------------------- record checks

def _normalize(configs: dict[str, list[Any]], modes: Sequence[str]) -> int:
    """Apply the text normalisations ``modes`` to every string of every row, in place; how many changed."""
    unknown = [m for m in modes if m not in NORMALIZATIONS]
    if unknown:
        raise BuildError(f"unknown text normalisation(s) {unknown}; known: {', '.join(NORMALIZATIONS)}")

    def norm(value: Any) -> Any:
        if isinstance(value, str):
            new = value
            if "nfc" in modes:
                new = unicodedata.normalize("NFC", new)
            if "strip" in modes:
                new = new.strip()
            changed[0] += new != value
            return new
        if isinstance(value, dict):
            return {k: norm(v) for k, v in value.items()}
        if isinstance(value, list):
            return [norm(v) for v in value]
        return value

    changed, done = [0], set()
    for rows in configs.values():
        for row in rows:
            if isinstance(row, dict) and id(row) not in done:  # a row shared by two configs ("all") once
                done.add(id(row))
                row.update(norm(dict(row)))
    return changed[0]


def _path_problem(bench: Benchmark, row: dict[str, Any]) -> str | None:
    """Why the image path made from ``row`` would not be a file inside the output folder (None: it would)."""
    try:
        path = bench.image_path(row)
    except UnsafePath as e:  # the benchmark's own check refused it
        return str(e)
    except Exception:  # a row without the fields an image path needs: nothing is written from it
        return None
    if path.startswith(("/", "\\")) or not all(is_safe_name(p) for p in re.split(r"[/\\]", path)):
        return f"its image path {path!r} would not be a file inside the output folder"
    return None


def _unsafe_value(value: str) -> bool:
    """A value that makes an unsafe path wherever it is put (``..``, an absolute path, control characters)."""
    return value.startswith(("/", "\\")) or not all(is_safe_name(p) for p in re.split(r"[/\\]", value))


def _path_fields(bench: Benchmark, row: dict[str, Any]) -> list[str]:
    """The fields to rename in a row whose image path is unsafe: the benchmark's ``path_fields``,
    else the text fields whose values are in the path."""
    if bench.path_fields:
        return [f for f in bench.path_fields if isinstance(row.get(f), str) and _unsafe_value(row[f])]
    try:
        path = bench.image_path(row)
    except Exception:
        return []
    return [f for f, v in row.items() if isinstance(v, str) and v in path and _unsafe_value(v)]


def _safe_paths(bench: Benchmark, configs: dict[str, list[Any]], mode: str, anomalies: list[Anomaly],
                quarantine: list[Quarantined]) -> list[dict[str, Any]]:
    """Rows whose image paths would leave the output folder (``../../x``), or whose ids cannot be
    file names: renamed to safe names (``mode="map"``, the mapping returned) or quarantined
    (``"refuse"``). Never written through."""
    if mode not in UNSAFE_IDS:
        raise BuildError(f"unsafe_ids must be one of {UNSAFE_IDS}, got {mode!r}")
    renamed: list[dict[str, Any]] = []
    done: dict[int, dict[str, Any] | None] = {}  # a row shared by two configs is handled once
    for config, rows in configs.items():
        kept = []
        for i, row in enumerate(rows):
            if not isinstance(row, dict):
                kept.append(row)
                continue
            if id(row) in done:
                if done[id(row)] is not None:
                    kept.append(done[id(row)])
                continue
            problem = _path_problem(bench, row)
            new: dict[str, Any] | None = row
            if problem is not None:
                new = None
                changes = {f: safe_name(row[f]) for f in _path_fields(bench, row)}
                if mode == "map" and changes:
                    candidate = bench.with_safe_names(row, changes)
                    if _path_problem(bench, candidate) is None:
                        new = candidate
                        for f, safe in changes.items():
                            renamed.append({"config": config, "row": i, "field": f, "original": row[f], "safe": safe})
                        anomalies.append(Anomaly("unsafe_id", f"config {config}", row.get("id", i),
                                                 f"{problem}: renamed to {changes}"))
                if new is None:
                    quarantine.append(Quarantined(f"config {config}", row.get("id", i),
                                                  f"{problem} (unsafe_ids={mode!r})", _raw(row)))
            done[id(row)] = new
            if new is not None:
                kept.append(new)
        configs[config] = kept
    return renamed


def _ignored_files(bench: Benchmark, root: Path, files_read: set[str] | None) -> tuple[list[str], list[str]]:
    """The files under ``root`` (hidden ones aside) that the reader did not read, and those of them
    that are the authors' scripts."""
    if files_read is None or not root.is_dir():
        return [], []
    ignored = unread_files(root, files_read)
    scripts = set(bench.official_release.scripts) if bench.official_release else set()
    return ignored, [f for f in ignored if f in scripts]


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


def require_license(bench: Benchmark, license: str | None) -> str | None:
    """``license`` checked, or the refusal of a build that has none, before anything is read: no reader states a
    license the benchmark does not know (each gives ``Benchmark.license``), so a missing one is known at once and
    never after the release is fetched, unpacked and read (48 to 94 s for the three real releases)."""
    if license is not None:  # a placeholder never reaches the card, nor waits for the release to be read
        return check_license(license)
    if not bench.license:
        raise BuildError(f"the license of {bench.pretty_name} is not known to t2i-reason: pass --license "
                         "with the license its authors give (an SPDX id such as apache-2.0, cc-by-4.0, mit)")
    return None


def _license(bench: Benchmark, license: str | None, release_license: str | None) -> str:
    chosen = license or release_license or bench.license
    if not chosen:  # require_license refused this before the release was read; kept for a reader's None
        raise BuildError(f"the license of {bench.pretty_name} is not known to t2i-reason: pass --license "
                         "with the license its authors give (an SPDX id such as apache-2.0, cc-by-4.0, mit)")
    return check_license(chosen, "--license" if license else f"the license {bench.pretty_name}'s release states,")


def _what_was_there(release: Any, root: Path, most: int = 6) -> str:
    """For a source that gave no rows: the files the reader looked for in vain and those it found
    instead, so that a wrong folder or another layout of the release is plain at once."""
    def listed(paths: list[str]) -> str:
        return ", ".join(paths[:most]) + (f" and {len(paths) - most} more" if len(paths) > most else "")

    missing = [a.file for a in release.anomalies if a.kind == "missing_file"]
    found = unread_files(root, release.files_read or set())
    return ((f" It lacks {listed(missing)}." if missing else "")
            + (f" It holds {listed(found)}." if found else " It holds no file."))


def build_dataset(benchmark: Benchmark | str, source: str | os.PathLike | None, out: str | os.PathLike, *,
                  license: str | None = None, overwrite: bool = False, repo_id: str | None = None,
                  eval_yaml: bool = True, evaluation_framework: str | None = None,
                  options: dict[str, Any] | None = None, strict: bool = False, revision: str | None = None,
                  normalize: Sequence[str] = (), unsafe_ids: str = "map",
                  cache_dir: str | os.PathLike | None = None) -> BuildReport:
    """Read the release with the benchmark's reader and write the Hub folder ``out``.

    ``source``: a folder, a checkout one folder deeper, a zip or tar archive of the authors'
    repository; None fetches the official release (at its pinned revision, or ``revision``) into
    ``cache_dir`` (see :mod:`t2ireason.releases`). ``license`` overrides the benchmark's known
    license (required when none is known). ``repo_id`` is the Hub repository the card's examples
    name. ``options`` go to ``read_release``. ``strict``: any anomaly or quarantined record is an
    error. ``normalize``: text normalisations (:data:`NORMALIZATIONS`), none by default.
    ``unsafe_ids``: ``"map"`` or ``"refuse"`` ids that cannot be file names. ``eval.yaml`` is written
    for a benchmark with a metric when ``evaluation_framework`` names one the Hub lists (it refuses
    any other at push time; none fits text-to-image judging yet). The folder is written
    next to ``out`` and moved into place only when complete, so a failed build leaves no
    half-written dataset.
    """
    from .releases import open_source

    bench = get_benchmark(benchmark) if isinstance(benchmark, str) else benchmark
    license = require_license(bench, license)  # first: nothing is read, fetched or unpacked for a build without one
    out = Path(out)
    if evaluation_framework is not None and evaluation_framework not in HUB_EVALUATION_FRAMEWORKS:
        raise BuildError(f"evaluation framework {evaluation_framework!r} is not one the Hub lists for eval.yaml "
                         f"({', '.join(HUB_EVALUATION_FRAMEWORKS)}): the Hub would refuse the file. Leave it out "
                         "(no eval.yaml), or have the framework added to EVALUATION_FRAMEWORKS in huggingface.js "
                         "packages/tasks/src/eval.ts first")
    if source is not None and not Path(source).exists() and not getattr(bench, "reads_hub", False):
        raise FileNotFoundError(f"release folder not found: {source}")
    if unsafe_ids not in UNSAFE_IDS:
        raise BuildError(f"unsafe_ids must be one of {UNSAFE_IDS}, got {unsafe_ids!r}")
    if repo_id is not None:
        check_repo_id(repo_id)
    _prepare_out(out, overwrite)
    with open_source(bench, source, revision=revision, cache_dir=cache_dir) as src:
        release = bench.read_release(src.root, **(options or {}))
        chosen_license = _license(bench, license, release.license)

        unknown = [c for c in release.configs if c not in bench.configs]
        if unknown:
            raise ReleaseError(f"{bench.name} reader returned configs {unknown} that the benchmark does not declare "
                               f"({', '.join(bench.configs)})")
        built = [c for c in bench.configs if c in release.configs]
        if not built or not any(release.configs[c] for c in built):
            raise ReleaseError(f"no rows read from {source if source is not None else src.given}: "
                               f"is it the {bench.pretty_name} release?{_what_was_there(release, src.root)}")

        anomalies, quarantine = [*src.anomalies, *release.anomalies], list(release.quarantine)
        anomalies += _modified_files(bench, src.verification)
        configs = {c: list(release.configs[c]) for c in built}
        changed = _normalize(configs, list(normalize)) if normalize else 0
        renamed = _safe_paths(bench, configs, unsafe_ids, anomalies, quarantine)
        tables = {c: _table(configs[c], bench.config_features(c), f"config {c}", anomalies, quarantine)
                  for c in built}
        if strict and (anomalies or quarantine):
            first = (_where(anomalies[0].to_dict()) if anomalies
                     else f"{quarantine[0].file}: {quarantine[0].reason}")
            raise BuildError(f"--strict: the release has {len(anomalies)} anomalies and {len(quarantine)} "
                             f"quarantined record(s) (first: {first}); build without --strict to keep and report them")
        given = str(source) if source is not None else src.given
        ignored, scripts = _ignored_files(bench, src.root, release.files_read)
        report = BuildReport(
            benchmark=bench.name, source=given, out=str(out), license=chosen_license, configs={},
            anomalies=[a.to_dict() for a in anomalies], absent_configs=[c for c in bench.configs if c not in built],
            source_info=src.to_dict(), quarantine=[q.to_dict() for q in quarantine],
            release_check=(src.verification or {}).get("status"),
            ignored_files=ignored, authors_scripts=scripts, renamed=renamed,
            normalization={"applied": list(normalize), "values_changed": changed} if normalize else {},
            strict=strict)

        with atomic_folder(out) as tmp:
            _write(bench, release, built, tables, tmp, report, repo_id, eval_yaml, evaluation_framework)
    return report


def _modified_files(bench: Benchmark, verification: dict[str, Any] | None) -> list[Anomaly]:
    """A release file whose bytes differ from the ones the project recorded for the pinned revision is
    read as it is and reported (kept, like every irregularity; ``--strict`` makes it an error). A fetch
    of the pinned revision never gets here with one: it enforces the hashes. Only where some recorded
    file matches (the folder is that release): when none does it is another revision or another writing
    of the layout (the project's samples), which the verification note says once."""
    if not verification or not verification.get("mismatched") or not verification.get("verified"):
        return []
    official = bench.official_release
    return [Anomaly("modified_file", rel, None, f"its SHA-256 differs from the file of {official.repo} at "
                    f"{official.revision} that the project recorded: read as it is (a local edit, another "
                    "revision, or a damaged copy)") for rel in verification["mismatched"]]


def write_configs(bench: Benchmark, tables: dict[str, pa.Table], folder: Path) -> tuple[dict, dict, list[str]]:
    """Each config's table as ``<config>/<split>-00000-of-00001.parquet`` in ``folder``: ``(infos,
    metadata_configs, files)``, the ``datasets`` card metadata of each config (its features, split, size;
    its data files, the default config) and the files written. ``load_dataset(<folder>)`` with no config
    gives the whole benchmark where a config holds it (``all``)."""
    infos, metadata_configs, files = {}, {}, []
    for config, table in tables.items():
        rel = f"{config}/{bench.split}-00000-of-00001.parquet"
        (folder / config).mkdir()
        pq.write_table(table, folder / rel)
        files.append(rel)
        infos[config] = datasets.DatasetInfo(
            features=bench.config_features(config), config_name=config, dataset_size=table.nbytes,
            download_size=(folder / rel).stat().st_size,
            splits=datasets.SplitDict.from_split_dict([{"name": bench.split, "num_bytes": table.nbytes,
                                                        "num_examples": table.num_rows}]))
        metadata_configs[config] = {"data_files": [{"split": bench.split, "path": f"{config}/{bench.split}-*"}]}
    metadata_configs["all" if "all" in tables else next(iter(tables))]["default"] = True
    return infos, metadata_configs, files


def card_data(bench: Benchmark, license: str, infos: dict[str, datasets.DatasetInfo], metadata_configs: dict,
              rows: int, tags: Sequence[str] = ()) -> Any:
    """The YAML header of a dataset card of ``bench``'s rows (``huggingface_hub.DatasetCardData``): its
    configs and their features, so that ``load_dataset`` reads the folder and the Hub shows it."""
    from huggingface_hub import DatasetCardData

    base = ["t2i-reason", "benchmark", bench.name] if bench.metric else ["t2i-reason", bench.name]
    data = DatasetCardData(pretty_name=bench.pretty_name, license=license, language=list(bench.language),
                           task_categories=["text-to-image"], size_categories=[size_category(rows)],
                           tags=[*base, *tags])
    datasets.utils.metadata.MetadataConfigs(metadata_configs).to_dataset_card_data(data)
    datasets.info.DatasetInfosDict(infos).to_dataset_card_data(data)
    return data


def _write(bench: Benchmark, release: Any, built: list[str], tables: dict[str, pa.Table], tmp: Path,
           report: BuildReport, repo_id: str | None, eval_yaml: bool, framework: str | None) -> None:
    infos, metadata_configs, files = write_configs(bench, {c: tables[c] for c in built}, tmp)
    report.configs = {c: {"rows": tables[c].num_rows} | {k: int(v) for k, v in release.counts.get(c, {}).items()
                                                         if k != "rows"} for c in built}

    schemas: dict[str, dict[str, Any]] = {}  # one table of fields per distinct schema
    for config in built:
        features = bench.config_features(config)
        key = json.dumps(features.to_dict(), sort_keys=True)
        schemas.setdefault(key, {"configs": [], "fields": describe_features(features, bench.field_docs)})
        schemas[key]["configs"].append(config)
    report.undocumented_fields = sorted({f["name"] for s in schemas.values() for f in s["fields"] if not f["doc"]})

    has_eval_yaml = bool(eval_yaml and bench.metric and framework)
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


def _card(bench: Benchmark, report: BuildReport, infos: dict[str, datasets.DatasetInfo],
          metadata_configs: dict[str, dict], schemas: list[dict[str, Any]], repo_id: str | None,
          has_eval_yaml: bool) -> str:
    from huggingface_hub import DatasetCard

    data = card_data(bench, report.license, infos, metadata_configs, sum(c["rows"] for c in report.configs.values()))
    anomalies = [{"kind": kind, "count": n, "example": _where(next(a for a in report.anomalies if a["kind"] == kind))}
                 for kind, n in sorted(report.anomaly_counts().items())]
    count_columns = list(dict.fromkeys(k for c in report.configs.values() for k in c if k != "rows"))
    default = next(n for n, c in metadata_configs.items() if c.get("default"))
    info = report.source_info
    source = (f"{info['given']} (revision {info['revision']})" if info.get("kind") in ("github", "hub")
              else Path(report.source).name or report.source)
    text = render_template(
        "dataset_card.md.j2", card_data=data.to_yaml(), bench=bench, split=bench.split,
        repo_id=repo_id or f"<namespace>/{bench.name}", default_config=default,
        configs=[{"name": n, "rows": c["rows"], "counts": c} for n, c in report.configs.items()],
        count_columns=count_columns, schemas=schemas, anomalies=anomalies, has_eval_yaml=has_eval_yaml,
        quarantined=len(report.quarantine), ignored=len(report.ignored_files), authors_scripts=report.authors_scripts,
        renamed=len(report.renamed), normalization=report.normalization,
        verification=(info.get("verification") or {}).get("note", ""), source=source, card_license=report.license)
    DatasetCard(text)  # the Hub's own parser must accept what we push
    return text


def _eval_yaml(bench: Benchmark, configs: Sequence[str], framework: str) -> str:
    description = " ".join(bench.description.split())
    if bench.scoring:
        description += " Scoring: " + " ".join(bench.scoring.split())
    return render_template("eval.yaml.j2", bench=bench, configs=list(configs), split=bench.split, framework=framework,
                           description=description, inputs=getattr(bench, "input_columns", ("prompt",)))
