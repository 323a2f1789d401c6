"""Run by ``torchrun --nproc_per_node 2`` in test_pipeline.py: the whole engine with the scripted judge."""

import json
import sys
from pathlib import Path

import torch
from accelerate import PartialState

from engine.scripted import THRESHOLDS, input_paths, reply
from t2ireason.engine import EngineConfig, Sources, run_engine
from t2ireason.generation import Drawer, GenerationConfig
from t2ireason.judges import load_judge
from t2ireason.judges.scripted import ScriptedJudge

sd, root = sys.argv[1], Path(sys.argv[2])
torch.set_num_threads(1)
state = PartialState(cpu=True)
inputs = input_paths(root / "inputs")  # written by the test before the launch
judge = load_judge(ScriptedJudge(replies=reply), cache=root / "cache.sqlite")  # one cache file, both processes
drawer = Drawer(GenerationConfig(model=sd, steps=1, height=32, width=32, batch_size=4), device="cpu")
result = run_engine(root / "work", Sources(**inputs), EngineConfig(shard_size=5, thresholds=THRESHOLDS, review_size=3),
                    judge=judge, drawer=drawer, out=root / "out", license="apache-2.0", state=state, progress=False)
(root / f"rank{state.process_index}.json").write_text(json.dumps(
    {"ranks": state.num_processes, "committed": {r.stage: r.committed for r in result.stages},
     "complete": result.complete}))
