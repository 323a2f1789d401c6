"""The R2I-Bench tests' shared fixtures: the shipped sample release, read once, and a writable copy of it."""

from __future__ import annotations

import shutil

import pytest

from .scripted import BENCH


@pytest.fixture(scope="module")
def release():
    return BENCH.read_release(BENCH.sample_path())


@pytest.fixture(scope="module")
def rows(release):
    return {r["id"]: r for r in release.configs["all"]}


@pytest.fixture
def copy(tmp_path):
    """A writable copy of the sample release."""
    dst = tmp_path / "release"
    shutil.copytree(BENCH.sample_path(), dst)
    return dst
