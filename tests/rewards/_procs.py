"""What a spawned process of the reward tests runs (importable by the child)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path


def score_new_prompts(cache: str, log: str, start, k: int) -> None:
    """Score two new prompts with a reward whose criteria LLM appends every request it gets to ``log``."""
    from PIL import Image

    from t2ireason import load_reward

    from .scripted import CountingLLM, llm_reply, r2i_judge

    def logged(request):
        time.sleep(0.2)  # slow enough that both processes are making criteria at once, without the locks
        with open(log, "a", encoding="utf-8") as f:  # one short line an append: whole lines across processes
            f.write(f"{os.getpid()} {request.messages[-1].text[:30]!r}\n")
        return llm_reply(request)

    reward = load_reward("r2i_score", judge=r2i_judge(), criteria_llm=CountingLLM(logged), criteria_cache=cache)
    start.wait(60)
    scores, _ = reward([Image.new("RGB", (8, 8))] * 2, ["one more apple than the two on the plate",
                                                        "a clock showing a quarter past three"])
    Path(cache).with_name(f"scores{k}.json").write_text(json.dumps(scores))
