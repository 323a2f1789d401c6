"""How each run's row of a report was measured, and whether that is the protocol of the paper's rows it is
placed among: the judge (the paper's model, whatever its spelling: :func:`~t2ireason.judges.spec.judge_is_model`,
with the endpoint's host where it is not the vendor's API), the preset, the questions (the official release's, or
the sample shipped with the package), the images scored of the benchmark's prompts (an image never made counts as
not scored), and, where the paper's figure averages over parts (R2I-Bench's subcategories), the parts covered.

The verdict is the evaluation's recorded protocol (``scores.json``'s ``protocol``: what the judge was sent and
what was read) compared element by element with the paper's (:mod:`t2ireason.report.verdict`), and the elements
only a table knows (the preset, the questions, the coverage of the table's prompts against the paper's rule on
failures, the parts): ``yes`` only when every one is verified equal; else ``no: <what differs>`` or
``unverified: <what could not be checked>``, and the run is not ranked among the paper's rows
(:attr:`~t2ireason.results.PaperTable.apart`). What the release itself lacks (R2I-Bench's prompts of
``mathematical_function``) is said once, in the table's note, for every row alike.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..judges.base import JudgeError
from ..judges.spec import JudgeSpec, judge_is_model, judge_name
from ..results import ImageResult, RowProtocol, coverage
from .published import PublishedTable, published_tables

__all__ = ["reference", "run_protocol", "judge_text", "questions_text", "STATISTICS"]

#: options that change how a mean's interval is drawn, not what is measured
STATISTICS = _STATISTICS = frozenset({"confidence", "n_resamples", "seed", "scale"})


def judge_text(judge: dict[str, Any]) -> str | None:
    """A recorded judge (``scores.json``'s ``judge``) as ``backend:model`` (a local folder by its name)."""
    model = judge_name(judge)
    return f"{judge.get('backend')}:{model}" if model else judge.get("backend")


def _same_judge(judge: dict[str, Any], pub: PublishedTable) -> bool:
    """Whether the recorded judge is the paper's model: the preset's own model, recognised when it was
    loaded (a local folder by its config.json), where that is the paper's; else by its name."""
    wanted = pub.citation.get("judge_spec")
    if not wanted or not judge:
        return False
    settings = judge.get("preset_settings") or {}
    try:
        if settings.get("same_model") and judge_is_model(JudgeSpec.of(settings["preset_judge"]), wanted)[0]:
            return True
        return judge_is_model(JudgeSpec.of(f"{judge.get('backend')}:{judge_name(judge)}"), wanted)[0]
    except (JudgeError, ValueError, TypeError, KeyError):  # a judge object's record, with no spec to read
        return False


def reference(benchmark: str, title: str, judge: dict[str, Any], preset: str | None) -> PublishedTable | None:
    """The published table a run's table of ``title`` stands beside: among the paper's tables of that layout
    (its ``into``), the one whose judge and preset are the run's (PRISM-Bench's Table 4 for a run judged by
    Qwen2.5-VL-72B), else the first; for a layout the paper does not print (a table of group means), the
    benchmark's published table nearest the run's protocol, whose protocol it is measured against; None
    for a benchmark without one."""
    pubs = published_tables(benchmark)
    same = [p for p in pubs if p.into == title] or [p for p in pubs if p.citation.get("scope", "all") == "all"] \
        or list(pubs)
    if not same:
        return None
    return max(same, key=lambda p: (_same_judge(judge, p), preset in p.presets))  # the first of equals


def questions_text(run: Any) -> str:
    """Where a run's rows, and so its questions, come from: the sample shipped with t2i-reason, a release
    built into the run (its folder's name) or a dataset (its Hub id or folder)."""
    manifest = run.manifest
    built = manifest.get("built_from")
    source = built or manifest.get("data")
    if source is None or _is_sample(Path(str(source)), run.bench.name):
        return "the sample shipped with t2i-reason"
    if built:
        return f"the release's (built from {Path(built).name})"
    return f"the release's ({Path(source).name if Path(source).is_absolute() else source})"


def _is_sample(path: Path, benchmark: str) -> bool:
    """``path`` is the package's sample release of ``benchmark`` (of this checkout or any other)."""
    return path.parts[-3:] == ("t2ireason", "samples", benchmark)


def _host(scores: dict[str, Any]) -> str | None:
    """The endpoint's host where it is not the vendor's API nor a local model (``127.0.0.1:8000``), with the user's
    word where they vouched for it: said with the judge on every row."""
    endpoint = (scores.get("protocol") or {}).get("endpoint") or {}
    if endpoint.get("vendor") or endpoint.get("host") in (None, "local"):
        return None
    vouched = (scores.get("protocol") or {}).get("vouched")
    return endpoint["host"] + (" (vouched)" if vouched else "")


def _coverage(scope: Sequence[ImageResult], total: int, counted: dict[str, Any]) -> str:
    """``418 of 700 images scored (282 judge failures)``: the images scored of the table's prompts and why the
    others were not, those never asked counted too."""
    said = [f"{n:,} {word}" for k, word in (("failed", "judge failures"), ("missing", "missing"),
                                           ("not_generated", "not generated"), ("excluded", "left out by the preset"))
            if (n := counted[k])]
    never = total - len(scope)
    if never > 0:
        said.append(f"{never:,} not in the run")
    return f"{counted['scored']:,} of {total:,} images scored" + (f" ({', '.join(said)})" if said else "")


def run_protocol(run: Any, scores: dict[str, Any], results: Sequence[ImageResult], pub: PublishedTable | None,
                 *, scoped: bool = True) -> RowProtocol:
    """How ``run``'s evaluation (its ``scores.json`` and results) was measured, for its row in a table whose
    paper's protocol is ``pub``'s: its judge (with the endpoint's host where it is not the vendor's API), preset,
    questions, the images scored of the benchmark's (of ``pub``'s scope, when ``scoped``: the English prompts of
    PRISM-Bench's Table 1) and of its own, and the verdict: the evaluation's recorded protocol compared element by
    element with the paper's (:mod:`t2ireason.report.verdict`), and the elements only the table knows (the preset,
    the questions, the coverage of the table's prompts against the paper's rule, the parts covered)."""
    from .verdict import Comparison, compare, declared_protocol

    judge = scores.get("judge") or {}
    settings = scores.get("settings") or {}
    preset = judge.get("preset") or settings.get("preset") or run.bench.default_preset
    scope = [r for r in results if pub is None or not scoped or pub.in_scope(r)]
    counted = coverage(scope)
    per_prompt = int((run.manifest.get("generation") or {}).get("images_per_prompt") or 1)
    total = pub.prompts * per_prompt if pub is not None and pub.prompts and scoped else counted["images"]
    host = _host(scores)
    said_judge = judge_text(judge)
    if host and said_judge:
        said_judge = f"{said_judge.split('@')[0]}@{host}"
    protocol = RowProtocol(judge=said_judge, preset=preset, questions=questions_text(run),
                           images=f"{counted['scored']:,} of {total:,}", coverage=counted["text"])
    if counted["images"] and not counted["scored"]:  # every image failed: a failed evaluation, not a row of dashes
        protocol.comparable = f"failed: {_coverage(scope, total, counted).replace('0 of', 'no image scored of', 1)}"
        return protocol
    if pub is None:
        protocol.comparable = "n/a: no published rows"
        return protocol
    paper = declared_protocol(run.bench.name, pub.citation.get("judge_spec"))
    same = (_same_judge(judge, pub), f"judge {protocol.judge} (the paper's: {pub.judge})")
    c = compare(scores.get("protocol"), paper, judge=same) if paper else Comparison()
    if c.elements:
        c.elements[0].run = protocol.judge
    if not paper:
        c.add("judge", "equal" if same[0] else "differs", pub.judge, protocol.judge, same[1])
        c.add("protocol", "unverified", None, None, "the paper's protocol is not declared")
    if pub.presets and preset not in pub.presets:
        c.add("preset", "differs", pub.presets, preset, f"preset {preset} (the paper's protocol: {' or '.join(pub.presets)})")
    extra = sorted(set(settings.get("options") or {}) - _STATISTICS)
    if extra:
        c.add("options", "differs", [], extra, f"scoring options on top of the preset: {', '.join(extra)}")
    match = pub.citation.get("questions_match", "yes")
    if protocol.questions.startswith("the sample"):
        c.add("questions", "differs", "the release's", protocol.questions,
              f"questions: {protocol.questions}, not the release's")
    elif match.startswith("no"):
        c.add("questions", "differs", "the paper's", "the release's",
              "questions: " + (match.removeprefix("no").lstrip(": ") or "not the paper's"))
    # the images scored of the table's prompts, against the paper's rule (what its authors' script does with a
    # failure); prompts the release cannot score (no questions) are the same for every row: the table's note
    rule = (paper or {}).get("coverage") or {"min": 1.0}
    wanted = total - counted["unscorable"]
    if counted["scored"] < rule["min"] * wanted:
        c.add("coverage", "differs", f"{rule['min']:.0%} of {wanted:,}", counted["scored"],
              _coverage(scope, total, counted))
    else:
        c.add("coverage", "equal", f"{rule['min']:.0%} of {wanted:,}", counted["scored"])
    for title, covered in run.bench.subsets_covered(scope).items():
        # what the release lacks is the table's note, the same for every row; prompts the run has not are
        # counted in its coverage above; the preset's exclusions and whole failed subcategories are said here
        left_out = [sub for sub, (why, release) in covered["missing"].items()
                    if not release and not why.startswith("not among")]
        if covered["scored"] and left_out:
            c.add("parts", "differs", len(covered["paper"]), len(covered["scored"]),
                  f"{title} over {len(covered['scored'])} of the paper's {len(covered['paper'])} subcategories")
    protocol.comparable = c.text
    protocol.elements = c.elements
    return protocol


def table_protocol(run: Any, scores: dict[str, Any], results: Sequence[ImageResult], title: str
                   ) -> tuple[str, RowProtocol]:
    """The title of a run's table of ``title`` as the paper numbers its layout under the run's judge (PRISM-Bench's
    Table 4 for Qwen2.5-VL-72B), and how the run's row was measured against the paper's table
    (:func:`run_protocol`); in a table of rewritten prompts (T2I-ReasonBench's Table 3), whether its images were
    drawn from the paper's rewrites too. ``scores`` and ``results``: the evaluation's, read once by the caller."""
    judge = scores.get("judge") or {}
    preset = judge.get("preset") or (scores.get("settings") or {}).get("preset") or run.bench.default_preset
    pub = reference(run.bench.name, title, judge, preset)
    protocol = run_protocol(run, scores, results, pub)
    if pub is None or pub.into != title:
        return title, protocol
    rewritten = bool((run.manifest.get("generation") or {}).get("rewritten_prompts"))
    from .verdict import verdict_text

    status = "differs"
    if pub.citation.get("rewrites"):  # the paper's models drew the release's rewrites (its Table 3)
        other = _other_rewrites(run) if rewritten else "prompts: the benchmark's own, not the release's rewrites"
    elif rewritten and (rows := [r["model"] for r in pub.rows if "rewrite" in (r.get("group") or "").lower()]):
        # the paper prints rewrite rows of its own: what differs is the rewriting LLM and its prompt, which the
        # paper names but does not give (nor does the run record them)
        status = "unverified"
        other = (f"prompts: rewritten by an LLM; the paper's rewrite row{'s' * (len(rows) > 1)} ({', '.join(rows)}) "
                 "had theirs rewritten by its own LLM and prompt, which cannot be checked against the run's")
    else:
        other = "prompts: rewritten, where the paper's models drew the benchmark's own" if rewritten else None
    if other:
        from .verdict import Element

        protocol.elements = [*protocol.elements, Element("prompts", status, None, None, other)]
        protocol.comparable = verdict_text(protocol.elements)
    return pub.title, protocol


def _other_rewrites(run: Any) -> str | None:
    """What differs in the rewritten prompts a run's images were drawn from, against the benchmark's release (the
    paper's rewrites: T2I-ReasonBench's ``pipeline_prompts``, GPT-4o's), read from the images' manifest; None when
    each image's prompt is its row's rewrite there."""
    release = getattr(run.bench, "pipeline_prompts", None)
    manifest = run.images_dir / "metadata.parquet"
    if release is None or not manifest.is_file():
        return "rewritten prompts not checked against the release's (no images/metadata.parquet)" if release else None
    import pyarrow.parquet as pq

    wanted = {str(k): v for k, v in release(run.rows()).items()}
    drawn = pq.read_table(manifest, columns=["prompt_id", "prompt"]).to_pylist()
    other = sum(wanted.get(str(r["prompt_id"])) != r["prompt"] for r in drawn)
    if not other:
        return None
    return f"prompts: {other:,} of {len(drawn):,} images drawn from other rewrites than the release's (the paper's)"

