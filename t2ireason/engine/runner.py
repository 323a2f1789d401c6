"""The model stages on datatrove's inference runner: a vLLM or SGLang server per task, many requests in flight.

At cluster scale the judge is best served by an inference server on the task's GPUs, kept busy by
hundreds of concurrent requests. datatrove's ``InferenceRunner`` does exactly that: it starts the server
(``vllm``, ``sglang``) or uses a running one (``endpoint``), feeds it documents concurrently and counts
requests, failures and tokens in its statistics. Here each document is one record, and its rollout runs
the engine's own stage function on that record (in a thread, so up to ``max_concurrent_documents`` records
are in progress at once): the requests are rendered, parsed, re-asked and recorded as failures exactly as
on the judge path, only sent through the runner's ``generate`` callback instead of a judge backend
(:class:`ServerJudge`, behind the response cache).
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from datatrove.data import Document
from datatrove.pipeline.inference.run_inference import InferenceConfig, InferenceRunner
from datatrove.pipeline.inference.types import InferenceError

from ..judges import ChatRequest, Judge, JudgeSpec, Reply, load_judge
from .models import Models
from .steps import ShardWriter
from .work import Context, RetryShard, Stage, Workdir

__all__ = ["ServerJudge", "StageInferenceRunner", "inference_config"]

# the runner's generate callback and event loop, for the stage code running in this thread
_current = threading.local()


def inference_config(models: Models) -> InferenceConfig:
    """datatrove's ``InferenceConfig`` for the judge behind ``models.server``."""
    server = models.server
    if not isinstance(models.judge, str):
        raise ValueError("datatrove's inference runner serves a judge named by a spec (e.g. vllm:<model>, "
                         "openai:<model>@<url> for an endpoint), not a judge object")
    spec = JudgeSpec.of(models.judge)
    model, url = spec.model, spec.base_url
    # each record in progress holds a thread (its stage code is synchronous): at most 128 at once by default
    options = {"metric_interval": 600, "max_concurrent_documents": 128, **server.options}
    if server.kind == "endpoint":
        if not url:
            raise ValueError(f"an endpoint server needs the judge's URL: openai:<model>@<url>, got {models.judge!r}")
        parts = urlsplit(url)
        if parts.scheme == "http" and parts.hostname in ("localhost", "127.0.0.1", "::1"):
            # datatrove posts to <url>/v1/chat/completions itself for a local plain-HTTP endpoint
            url = url.rstrip("/").removesuffix("/v1")
        options["endpoint_url"] = url
    return InferenceConfig(server_type=server.kind, model_name_or_path=model, **options)


class ServerJudge(Judge):
    """A judge whose requests go through the datatrove inference runner's ``generate`` callback (the one
    of the record being processed in this thread). A failed request is a ``Reply`` with ``error`` set, as
    from any backend; only a bad request (HTTP 400) is deterministic, anything else may pass later."""

    backend = "datatrove"
    batch_size = 1 << 20  # every request of a call at once: the runner bounds what is in flight

    def __init__(self, model: str, server: str):
        from ..judges.openai_judge import OpenAIJudge

        self.model, self.server = model, server
        # the wire format of an OpenAI-compatible chat completion, as the openai: backend writes it
        self._wire = OpenAIJudge(model, base_url="http://127.0.0.1/v1", api_key="EMPTY")

    def identity(self) -> dict[str, Any]:
        return {"backend": f"datatrove-{self.server}", "model": self.model, "revision": None}

    def _chat_batch(self, requests: list[ChatRequest]) -> list[Reply]:
        loop, generate = _current.loop, _current.generate
        futures = [asyncio.run_coroutine_threadsafe(self._ask(generate, r), loop) for r in requests]
        return [f.result() for f in futures]

    async def _ask(self, generate, request: ChatRequest) -> Reply:
        sampling = self.resolve_sampling(request)
        body = self._wire._request_body(request, sampling, structured=request.json_schema is not None)
        body.pop("model")  # the runner names its own served model
        try:
            result = await generate(body)
        except InferenceError as e:
            error = str(e.error)
            return Reply(text="", model=self.model, sampling=sampling.to_dict(), error=error,
                         transient="BadRequestError" not in error)
        usage = {k: v for k, v in (result.usage or {}).items() if isinstance(v, int)} or None
        return Reply(text=result.text, model=self.model, sampling=sampling.to_dict(),
                     finish_reason=result.finish_reason, usage=usage)

    def close(self) -> None:
        self._wire.close()


class StageInferenceRunner(InferenceRunner):
    """datatrove's ``InferenceRunner`` whose rollout is one engine stage over one record; its output
    writer is the engine's :class:`~.steps.ShardWriter` (shards committed whole, in record order)."""

    def __init__(self, stage: Stage, root: str | Path, config: Any, models: Models):
        self.stage, self.root, self.engine_config, self.models = stage, str(root), config, models
        self._ctx: Context | None = None
        self._threads: ThreadPoolExecutor | None = None
        self._count_lock = threading.Lock()
        self.name = f"{stage.name} (inference runner)"  # before datatrove names the step's statistics after it
        super().__init__(rollout_fn=self._rollout, config=inference_config(models),
                         output_writer=ShardWriter(root, stage.name), metadata_key="engine")

    def __getstate__(self) -> dict[str, Any]:  # pickled and copied before it runs: no lock, threads or models
        return {**self.__dict__, "_count_lock": None, "_threads": None, "_ctx": None}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state, _count_lock=threading.Lock())

    def _count(self, name: str, n: int = 1) -> None:
        with self._count_lock:  # stage code runs in many threads
            self.stat_update(name, value=n, unit="task")

    def _context(self) -> Context:
        if self._ctx is None:
            judge = load_judge(ServerJudge(self.config.model_name_or_path, self.models.server.kind),
                               cache=self.models.cache)
            llm = judge if self.models.llm is None else self.models.load("llm")
            roles = {"judge": judge, "llm": llm, "drawer": None}
            self._ctx = Context(Workdir(self.root), self.engine_config, count=self._count,
                                **{r: roles[r] for r in self.stage.models})
        return self._ctx

    async def _rollout(self, document: Document, generate) -> dict[str, Any]:
        record = document.metadata["record"]
        if record["dropped_by"] is not None:  # dropped by an earlier stage: passed on untouched
            return {"asked": False}
        loop = asyncio.get_running_loop()
        ctx = dataclasses.replace(self._context(), shard=document.metadata["shard"])

        def run() -> None:
            _current.loop, _current.generate = loop, generate
            try:
                self.stage.run([record], ctx)
            except RetryShard as e:  # a backend failure: the writer leaves the shard for the next run
                document.metadata["retry"] = str(e)
            finally:
                _current.loop = _current.generate = None

        await loop.run_in_executor(self._threads, run)
        return {"asked": True}

    def run(self, data, rank: int = 0, world_size: int = 1) -> None:
        self._threads = ThreadPoolExecutor(max_workers=self.config.max_concurrent_documents,
                                           thread_name_prefix=f"{self.stage.name}-record")
        try:
            super().run(data, rank, world_size)
        finally:
            self._threads.shutdown(wait=False, cancel_futures=True)
            # the writer is not a step of the pipeline: what it counted goes into this step's statistics
            for key, metric in self.output_writer.stats.stats.items():
                self.stats.stats[key] += metric
