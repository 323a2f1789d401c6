"""The ``[vllm]`` extra installs: vLLM pins transformers and torch to narrow ranges, and each of the project's
own pins must leave a version inside vLLM's (vLLM 0.33 asks transformers < 5.21; a project floor of 5.23 made
``pip install ".[vllm]"`` unresolvable). Checked offline against what vLLM's wheel declares:
``data/vllm-<version>-METADATA`` holds the headers of its METADATA, copied from the wheel. ``make test`` also
runs the real resolver on the package index first (the Makefile's ``vllm-resolves``)."""

from __future__ import annotations

import configparser
from pathlib import Path

from packaging.metadata import Metadata
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
VLLM = Metadata.from_email((ROOT / "tests" / "data" / "vllm-0.33.0-METADATA").read_text())


def _setup_cfg() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return cfg


def _requirements(value: str) -> dict[str, Requirement]:
    reqs = (Requirement(line) for line in value.splitlines() if line.strip())
    return {canonicalize_name(r.name): r for r in reqs}


def _a_version_in_both(a: SpecifierSet, b: SpecifierSet) -> Version | None:
    """A version that both sets allow, among the bounds they name (the greater floor, where there is one)."""
    bounds = sorted({Version(s.version) for s in [*a, *b] if "*" not in s.version}, reverse=True)
    return next((v for v in bounds if v in a and v in b), None) if bounds else Version("0")


def test_the_recorded_vllm_release_is_the_one_the_extra_asks_for():
    (extra,) = _requirements(_setup_cfg()["options.extras_require"]["vllm"]).values()
    assert canonicalize_name(extra.name) == "vllm" and VLLM.version in extra.specifier


def test_every_pin_the_project_shares_with_vllm_leaves_a_version_in_both():
    vllm = {canonicalize_name(r.name): r for r in VLLM.requires_dist
            if r.marker is None or r.marker.evaluate({"extra": ""})}
    ours = _requirements(_setup_cfg()["options"]["install_requires"])
    shared = sorted(vllm.keys() & ours.keys())
    assert {"transformers", "torch", "huggingface-hub", "safetensors", "pillow"} <= set(shared)
    apart = {name: f"project {ours[name].specifier}, vLLM {VLLM.version} {vllm[name].specifier}" for name in shared
             if _a_version_in_both(ours[name].specifier, vllm[name].specifier) is None}
    assert not apart, f"pins that exclude each other: {apart}"
