"""WorldGenBench (seed 001): world knowledge and implicit reasoning, scored by knowledge checklists.

Record -> request -> reply -> score, for one image:

1. a row holds a prompt and its knowledge checklist (items, each with an explanation);
2. the judge gets the paper's strict checklist prompt (Appendix 8) with every item and explanation,
   and the image where the paper puts ``{image}``;
3. it answers one binary value per item, e.g. ``[1, 0, 0]`` (exactly one 0/1 per item, else re-asked);
4. the image's Knowledge Checklist Score is satisfied / total;
5. a model's score is the mean over images x 100, per continent (humanities, the paper's Table 2),
   per discipline (nature, Table 3), per domain and overall.

The release is published on the Hub as ``worldrl/WorldGenBench`` (JSON, MIT). The package:
:mod:`.release` reads it (field names mapped through :data:`FIELD_NAMES`, the common shapes of a
checklist through :func:`normalize_checklist`), :mod:`.protocol` renders the request and reads the
reply, :mod:`.scores` scores one image and makes the paper's tables.
"""

from __future__ import annotations

from typing import Any

import datasets

from ..base import Benchmark, OfficialRelease
from . import release, scores
from .protocol import PRESETS, checklist_request, parse_checklist_reply, reply_schema
from .release import CONTINENTS, DISCIPLINES, DOMAINS, FIELD_NAMES, LICENSE, normalize_checklist

__all__ = ["BENCHMARK", "WorldGenBench", "FIELD_NAMES", "CONTINENTS", "DISCIPLINES", "normalize_checklist",
           "parse_checklist_reply", "checklist_request", "reply_schema"]


class WorldGenBench(Benchmark):
    name = "worldgenbench"
    pretty_name = "WorldGenBench"
    configs = DOMAINS
    metric = "knowledge_checklist_score"
    license = LICENSE
    # The Hub dataset. Its data files could not be reached here (only its card and commits of it: see .release),
    # so its commit and bytes are not known: the revision is the branch (what it names can change) and no file hash
    # is recorded, so every build says "release not checked". Pin it, and record the hashes in
    # release_hashes/worldgenbench.sha256 as the other releases do, once the files have been checked.
    official_release = OfficialRelease(kind="hub", repo="worldrl/WorldGenBench", revision="main")
    # a Hub dataset repository's root holds its card and, anywhere below it, the JSON data files
    release_markers = ("README.md", "**/*.json*")
    path_fields = ("id",)
    citation = """@article{zhang2025worldgenbench,
  title   = {WorldGenBench: A World-Knowledge-Integrated Benchmark for Reasoning-Driven Text-to-Image Generation},
  author  = {Zhang, Daoan and Jiang, Che and Xu, Ruoshi and Chen, Biaoxiang and Jin, Zijian and Lu, Yutian
             and Zhang, Jianguo and Yong, Liang and Luo, Jiebo and Luo, Shengda},
  journal = {arXiv preprint arXiv:2505.01490},
  year    = {2025}
}"""
    description = (
        "WorldGenBench evaluates whether text-to-image models bring world knowledge and implicit reasoning "
        "to underspecified prompts: 732 humanities prompts (3 for each of 244 countries or regions, grouped "
        "by continent) and 340 nature prompts over 6 scientific disciplines, each with a knowledge checklist "
        "of items the image should show, each item with an explanation.")
    scoring = (
        "A vision-language judge (GPT-4o in the paper) reads the checklist under a strict procedure with "
        "reverse verification (paper Appendix 8) and answers one binary value per item. An image's Knowledge "
        "Checklist Score is the share of items satisfied; a model's score is the mean over images x 100, "
        "reported per continent (humanities) and per discipline (nature). Use the `knowledge_checklist_score` "
        "metric of t2i-reason.")
    field_docs = {
        "id": "The prompt's id in the release (generated from its position when the release has none).",
        "prompt": "The text-to-image prompt.",
        "domain": "`humanities` or `nature` (the paper's two perspectives).",
        "continent": "Humanities: continent code AF, AN, AS, EU, NA, OC or SA (paper Table 4); null for nature.",
        "country": "Humanities: the country or region the prompt is about; null for nature.",
        "discipline": "Nature: ASTR, BIO&MED, CHEM, EASC, PHYS or XDIS (paper Table 5); null for humanities.",
        "checklist": "The knowledge checklist: items the image should show, each with its explanation.",
        "checklist.item": "One thing the image should show (judged satisfied or not).",
        "checklist.explanation": "Why the item is expected: the knowledge or reasoning behind it.",
        "extra": "Every other field of the release record, as a JSON object string.",
    }
    presets = PRESETS

    @property
    def features(self) -> datasets.Features:
        s = datasets.Value("string")
        return datasets.Features({
            "id": s, "prompt": s, "domain": s, "continent": s, "country": s, "discipline": s,
            "checklist": datasets.List({"item": s, "explanation": s}),
            "extra": s,
        })

    def row_id(self, row: dict[str, Any]) -> str:
        return f"{row['domain']}-{row['id']}"

    def image_stem(self, row: dict[str, Any]) -> str:
        return f"{row['domain']}/{row['id']}"

    def row_config(self, row: dict[str, Any]) -> str | None:
        return row.get("domain")

    def unscorable(self, row: dict[str, Any]) -> str | None:
        return None if normalize_checklist(row.get("checklist"), problems=[]) else "the row has no checklist items"

    # the package's modules do the work: the reader, one image's score, the aggregate, the paper's tables
    read_release = staticmethod(release.read_release)
    score = scores.score
    aggregate = staticmethod(scores.aggregate)
    paper_tables = staticmethod(scores.paper_tables)


BENCHMARK = WorldGenBench()
