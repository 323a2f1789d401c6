"""Shared by the engine tests: one thread for tiny models, the reference run, helpers to run and read."""

from pathlib import Path
from types import SimpleNamespace

import datasets
import numpy as np
import pytest

from t2ireason.engine import EngineConfig, Local, Sources, run_engine
from t2ireason.generation import GenerationConfig
from t2ireason.judges.scripted import ScriptedJudge

from .scripted import THRESHOLDS, input_paths, make_inputs, reply

CONFIG = dict(shard_size=5, thresholds=THRESHOLDS, review_size=3)


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tiny models run fastest on one thread, and far faster than on two when the cores are busy."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def tiny_drawer(sd) -> GenerationConfig:
    """The tiny diffusion model, loaded once per process by the engine's tasks."""
    return GenerationConfig(model=str(sd), steps=1, height=32, width=32, batch_size=4)


def run_scripted(root: Path, drawer, replies=reply, batch_size=64, executor=None, out="out", **kw):
    """One engine run under ``root`` with a scripted judge behind the response cache ``root/cache.sqlite``;
    returns the result and every request that reached the judge (answers from the cache do not)."""
    asked = []

    def answer(request):  # a closure: the judge is copied for each task, the list is not
        asked.append(request)
        return replies(request)

    result = run_engine(root / "work", Sources(**input_paths(root / "inputs")), EngineConfig(**(CONFIG | kw)),
                        judge=ScriptedJudge(replies=answer, batch_size=batch_size), cache=root / "cache.sqlite",
                        drawer=drawer, executor=executor or Local(), out=root / out if out else None,
                        license="apache-2.0", progress=False)
    return result, asked


def read_release(out: Path, config: str = "default") -> dict[str, dict]:
    """A release as ``load_dataset`` reads it, built anew: ``datasets`` served two releases in different
    folders from one cache entry here, which would compare one release with itself."""
    rows = datasets.load_dataset(str(out), config, split="train", download_mode="force_redownload")
    ids = rows["id"]
    assert len(ids) == len(set(ids)), "no record twice"
    by_id = {}
    for row in rows:
        if "image" in row:
            row["image"] = np.asarray(row["image"])
        by_id[row["id"]] = row
    return by_id


def same_release(out: Path, reference) -> None:
    """Field for field, pixel for pixel, the reference's release."""
    rows, prov = read_release(out), read_release(out, "provenance")
    assert prov == reference.provenance
    assert rows.keys() == reference.rows.keys()
    for record_id, row in rows.items():
        ref = reference.rows[record_id]
        assert {k: v for k, v in row.items() if k != "image"} == {k: v for k, v in ref.items() if k != "image"}
        assert np.array_equal(row["image"], ref["image"]), record_id


@pytest.fixture(scope="module")
def reference(tiny_models, tmp_path_factory):
    """The whole engine on the inputs of scripted.py in one datatrove task, one worker."""
    root = tmp_path_factory.mktemp("engine-reference")
    make_inputs(root / "inputs")
    result, asked = run_scripted(root, tiny_drawer(tiny_models["sd"]), executor=Local(tasks=1, workers=1))
    return SimpleNamespace(root=root, result=result, asked=asked, rows=read_release(root / "out"),
                           provenance=read_release(root / "out", "provenance"))
