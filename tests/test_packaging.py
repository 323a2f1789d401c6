"""The package is publish-ready: ``python -m build`` makes an sdist and, from it, a wheel holding
the code and every piece of package data (metric modules and cards, judge templates, sample
releases, card templates, the report's template) as real files; ``twine check`` passes."""

from __future__ import annotations

import stat
import subprocess
import sys
import tarfile
import zipfile

import pytest
from _dist import ROOT, distributions

from t2ireason.benchmarks import MODULES

pytestmark = pytest.mark.slow

METRICS = sorted(p.name for p in (ROOT / "metrics").iterdir() if (p / f"{p.name}.py").is_file())


@pytest.fixture(scope="module")
def wheel_files():
    with zipfile.ZipFile(distributions()["wheel"]) as zf:
        return {i.filename: i for i in zf.infolist()}


def test_the_build_is_clean():
    log = distributions()["log"]
    assert "Successfully built t2i_reason-" in log
    assert "would be ignored" not in log and "SetuptoolsDeprecationWarning" not in log


def test_the_wheel_holds_the_metrics_as_real_files(wheel_files):
    assert len(METRICS) >= 7
    for name in METRICS:
        for file in (f"{name}.py", "README.md", "app.py", "requirements.txt"):
            path = f"t2ireason/metrics/{name}/{file}"
            assert path in wheel_files, f"{path} missing from the wheel"
            # the checkout's t2ireason/metrics is a symlink: the wheel must hold the files themselves
            assert not stat.S_ISLNK(wheel_files[path].external_attr >> 16), path
            assert wheel_files[path].file_size > 0, path
    assert not any(stat.S_ISLNK(i.external_attr >> 16) for i in wheel_files.values())


def test_the_wheel_holds_every_piece_of_package_data(wheel_files):
    names = set(wheel_files)
    for data in ("templates", "samples", "benchmarks/release_hashes"):  # the hashes: read when a benchmark loads
        files = [f for f in (ROOT / "t2ireason" / data).rglob("*") if f.is_file() and "__pycache__" not in f.parts]
        assert files
        for f in files:
            assert f"t2ireason/{f.relative_to(ROOT / 't2ireason').as_posix()}" in names, f
    for card in (ROOT / "hub_cards").iterdir():
        assert f"t2ireason/hub_cards/{card.name}" in names
    assert "t2ireason/report/templates/report.html.j2" in names
    assert {"t2ireason/spaces.py", "t2ireason/cli.py", "t2ireason/parsing.py"} <= names
    # each benchmark's module, or its package (benchmarks/<name>/__init__.py)
    assert {m.replace(".", "/") for m in MODULES.values()} <= {n.removesuffix(".py").removesuffix("/__init__")
                                                               for n in names if n.endswith(".py")}
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
    entry_points = next(zipfile.Path(distributions()["wheel"], n) for n in names if n.endswith("entry_points.txt"))
    assert "t2ireason = t2ireason.cli:main" in entry_points.read_text()


def test_the_sdist_carries_the_tests_and_the_data():
    with tarfile.open(distributions()["sdist"]) as tf:
        names = {m.name.split("/", 1)[1] for m in tf.getmembers() if "/" in m.name}
        assert not any(m.issym() for m in tf.getmembers())
    assert {"README.md", "setup.cfg", "pyproject.toml", "tests/conftest.py", "tests/test_packaging.py",
            "t2ireason/metrics/vqascore/vqascore.py", "t2ireason/hub_cards/metric_card.md.j2"} <= names


def test_twine_check_passes():
    dist = distributions()
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(dist["sdist"]), str(dist["wheel"])],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2
