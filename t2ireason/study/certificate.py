"""A substitute judge, certified against the paper's (issue 49): on images both judged (a sample the user paid the
paper's judge for, ``evaluate --sample``), how far the substitute's table cells are from the reference's, how
well the two agree image by image, and whether they rank the runs the same; a certificate a report can cite.

- offsets: for each cell of the benchmark's headline table, the mean over the runs of the substitute's cell less
  the reference's, computed as the table computes it (:meth:`~t2ireason.benchmarks.Benchmark.cell_formulas`),
  with its 95% percentile interval over joint bootstrap resamples of the prompts (the resampling unit: a prompt,
  its images under both judges and in every run together);
- item-level agreement over every image both scored: Kendall's tau-b and Spearman's rho with their paired
  bootstrap intervals (:func:`t2ireason.stats.paired_bootstrap`), and on the benchmark's own scale (0-100) the
  mean absolute difference and the share of images given the very same score;
- ranks: Kendall's tau-b between the runs' headline cells under the two judges, with its interval over the same
  resamples (a resample where a judge ties runs counts as no statistic, dropped and counted).

:func:`certify` computes it; :func:`write_certificate` writes ``certificate.json`` and ``certificate.md``;
:func:`certificate_line` says it in one line ("judged by Qwen2.5-VL-7B; against GPT-4.1 on 300 images: offset
-3.1 [-4.0, -2.2], ranks of 4 runs the same").
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..files import atomic_write_json, atomic_write_text
from ..stats import kendall_tau, paired_bootstrap, spearman_rho
from ..stats_paired import cell_values, formulas_from, joint_bootstrap, rows_kendall_tau

__all__ = ["certify", "write_certificate", "certificate_line", "run_certificates", "CERTIFICATE_FILE",
           "CERTIFICATE_DIR"]

CERTIFICATE_FILE = "certificate.json"
#: where ``t2ireason agreement --reference --substitute`` writes a certificate in each run
CERTIFICATE_DIR = "certificates"


def _judge(run: Any, evaluation: str) -> str:
    from ..report.protocol import judge_text

    return judge_text(run.scores(evaluation).get("judge") or {}) or evaluation


def certify(runs: Sequence[Any], reference: str, substitute: str, *, n_resamples: int = 2000, seed: int = 0,
            confidence: float = 0.95) -> dict[str, Any]:
    """The certificate of the evaluation ``substitute`` against ``reference`` (evaluation names, the same in
    every run of ``runs``: :class:`~t2ireason.runs.Run`), over the images both scored. A benchmark that declares
    no per-prompt form of its tables gets the item-level agreement alone."""
    from ..report.comparisons import headline_column

    if len(runs) < 1:
        raise ValueError("a certificate needs at least one run judged by both judges")
    bench = runs[0].bench
    if any(run.bench.name != bench.name for run in runs):
        raise ValueError("the runs of a certificate must be of one benchmark")
    per_run, ref_scores, sub_scores = [], [], []
    for run in runs:
        ref = {(r.image or r.id): r for r in run.results(reference) if r.score is not None}
        sub = {(r.image or r.id): r for r in run.results(substitute) if r.score is not None}
        both = [k for k in ref if k in sub]
        if not both:
            raise ValueError(f"{run.name}: no image was scored by both {reference!r} and {substitute!r}")
        per_run.append((run, [ref[k] for k in both], [sub[k] for k in both]))
        ref_scores += [100 * ref[k].score for k in both]
        sub_scores += [100 * sub[k].score for k in both]
    x, y = np.asarray(sub_scores), np.asarray(ref_scores)
    boot = {name: paired_bootstrap(x, y, name, confidence=confidence, n_resamples=n_resamples, seed=seed)
            for name in ("kendall_tau", "spearman_rho")}
    out: dict[str, Any] = {
        "benchmark": bench.name, "reference": _judge(runs[0], reference), "substitute": _judge(runs[0], substitute),
        "reference_evaluation": reference, "substitute_evaluation": substitute,
        "runs": [run.name for run in runs], "images": int(x.size),
        "items": {"kendall_tau": kendall_tau(x, y), "kendall_tau_ci": [boot["kendall_tau"].low, boot["kendall_tau"].high],
                  "spearman_rho": spearman_rho(x, y),
                  "spearman_rho_ci": [boot["spearman_rho"].low, boot["spearman_rho"].high],
                  "mean_abs_difference": float(np.mean(np.abs(x - y))), "same_score": float(np.mean(x == y))},
        "method": f"offsets and the runs' rank agreement over {n_resamples} joint bootstrap resamples of the prompts "
                  "(a prompt's images under both judges and in every run together), 95% percentile intervals; "
                  "item-level tau-b and rho over every image both judges scored, paired bootstrap intervals; "
                  "scores on 0-100",
    }
    declared = [(run, bench.cell_formulas(bench.aggregate(ref), ref), bench.cell_formulas(bench.aggregate(sub), sub))
                for run, ref, sub in per_run]
    if any(d is None for _, a, b in declared for d in (a, b)):
        return out
    order = list(dict.fromkeys(i for _, a, _ in declared for i in a[0][2]))
    at = {p: i for i, p in enumerate(order)}
    columns = [c for c in declared[0][1][0][1] if all(c in a[0][1] and c in b[0][1] for _, a, b in declared)]
    forms = []
    for _, a, b in declared:
        names = list(dict.fromkeys([*a[0][0], *b[0][0]]))
        for terms, cells, ids in (a[0], b[0]):
            forms.append(formulas_from(terms, cells, [at[i] for i in ids], len(order), columns, names))
    observed = np.stack([cell_values(f)[0] for f in forms])  # (2 R) x cells: reference, substitute per run
    dist = joint_bootstrap(forms, n_resamples=n_resamples, seed=seed)  # (2 R) x resamples x cells
    alpha = (1 - confidence) / 2
    offsets = (dist[1::2] - dist[0::2]).mean(axis=0)  # substitute less reference, mean over the runs
    low, high = np.nanquantile(offsets, [alpha, 1 - alpha], axis=0)
    point = (observed[1::2] - observed[0::2]).mean(axis=0)
    out["offsets"] = {c: {"offset": float(point[j]), "ci": [float(low[j]), float(high[j])]}
                      for j, c in enumerate(columns)}
    out["prompts"] = len(order)
    head = headline_column(columns)
    out["headline"] = head
    if len(per_run) >= 2:
        j = columns.index(head)
        taus = rows_kendall_tau(dist[1::2, :, j].T, dist[0::2, :, j].T)
        kept = taus[np.isfinite(taus)]
        out["ranks"] = {"column": head, "kendall_tau": kendall_tau(observed[1::2, j], observed[0::2, j]),
                        "ci": [float(np.quantile(kept, alpha)), float(np.quantile(kept, 1 - alpha))] if kept.size
                        else [math.nan, math.nan], "degenerate": int(taus.size - kept.size),
                        "same_order": bool(np.array_equal(np.argsort(-observed[1::2, j], kind="stable"),
                                                          np.argsort(-observed[0::2, j], kind="stable")))}
    return out


def certificate_line(cert: dict[str, Any]) -> str:
    """The certificate in one line, as a report cites it."""
    said = [f"judged by {cert['substitute']}; against {cert['reference']} on {cert['images']} images"]
    head = cert.get("headline")
    if head:
        o = cert["offsets"][head]
        said.append(f"offset in {head} {o['offset']:+.1f} [{o['ci'][0]:+.1f}, {o['ci'][1]:+.1f}]")
    items = cert["items"]
    said.append(f"image-level tau {items['kendall_tau']:.2f} [{items['kendall_tau_ci'][0]:.2f}, "
                f"{items['kendall_tau_ci'][1]:.2f}]")
    ranks = cert.get("ranks")
    if ranks:
        n = len(cert["runs"])
        said.append(f"ranks of {n} runs the same" if ranks["same_order"] else
                    f"ranks of {n} runs: tau {ranks['kendall_tau']:.2f} [{ranks['ci'][0]:.2f}, {ranks['ci'][1]:.2f}]")
    return ", ".join(said[:1]) + ": " + ", ".join(said[1:])


def write_certificate(cert: dict[str, Any], out: str | os.PathLike) -> list[Path]:
    """``certificate.json`` (every figure) and ``certificate.md`` (the line, the offsets per cell) in ``out``."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out / CERTIFICATE_FILE, cert)
    lines = [f"# {cert['substitute']} against {cert['reference']}", "", certificate_line(cert) + ".", ""]
    if cert.get("offsets"):
        lines += ["| Column | Offset (substitute - reference) [95% CI] |", "|---|---:|"]
        lines += [f"| {c} | {o['offset']:+.2f} [{o['ci'][0]:+.2f}, {o['ci'][1]:+.2f}] |"
                  for c, o in cert["offsets"].items()]
        lines.append("")
    lines += [f"Method: {cert['method']}.", ""]
    atomic_write_text(out / "certificate.md", "\n".join(lines))
    return [out / CERTIFICATE_FILE, out / "certificate.md"]


def read_certificate(path: str | os.PathLike) -> dict[str, Any]:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def run_certificates(run_path: str | os.PathLike, evaluation: str) -> list[dict[str, Any]]:
    """The certificates written into a run whose substitute is its evaluation ``evaluation``."""
    found = []
    for file in sorted(Path(run_path).glob(f"{CERTIFICATE_DIR}/*/{CERTIFICATE_FILE}")):
        try:
            cert = read_certificate(file)
        except (OSError, ValueError):
            continue
        if cert.get("substitute_evaluation") == evaluation:
            found.append(cert)
    return found
