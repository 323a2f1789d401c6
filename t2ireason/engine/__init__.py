"""The FLUX-Reason-6M data engine: the curation pipeline of seed 004 (section 2, appendix B), resumable,
on datatrove: from a laptop to a Slurm cluster.

Stages
------
Each stage reads the shards of the one before and writes its own (``<work>/NN-<stage>/shard-XXXXX.parquet``,
loadable with ``datasets``); every record keeps which stage dropped or labelled it and why (``events``).

0. ``sources``: the inputs read once into shards (:func:`~.sources.ingest`, in the launching process).
1. ``prompts``: captions rewritten by a VLM; imagination candidates expanded by an LLM from 10 random seed
   prompts at a raised temperature; images mined for legible text, whose text a VLM captions (no text:
   dropped).
2. ``synthesis``: every prompt drawn with a diffusers model (``generation.Drawer``), one seed per record id.
3. ``quality``: blur, artifacts and structural errors judged by a VLM; rejects dropped. A human-review
   sample of accepted and rejected images is exported at the end (``<work>/review/quality``).
4. ``scoring``: relevance 1 to 10 for Imagination, Entity, Text rendering, Style, Affection, Composition; a
   label per threshold reached (several labels allowed; none: dropped); images labelled Text rendering
   pass a typographic filter (reject: dropped).
5. ``captions``: a category-specific dense caption for each label (Text rendering: with its exact strings).
6. ``gcot``: a Generation Chain-of-Thought from the image and all its captions, checked against them (text
   strings verbatim; entity names and spatial relations by the text model), revised once if it disagrees.
7. ``original``: the original caption kept when its alignment with the image reaches a threshold.
8. ``translate``: every caption into Chinese; strings to render stay in English, verbatim.
9. export: sharded Parquet in the ``flux-reason-6m`` schema (config ``default``) plus a ``provenance``
   config (every candidate and its events), ``statistics.json`` (the paper's Figure 3: sources, label
   ratios, caption counts and word lengths) and a dataset card.

Plus PRISM-Bench's representative prompt sampling (:mod:`.sampling`): per track, the top prompts by
relevance, embedded, k-means with k = 50, the prompt nearest each centroid; its curated half and the Chinese
edition (:mod:`.curation`, appendix C.1 and section 3.1). The human review of GCoTs (appendix B.5) is the study
kit's (:mod:`t2ireason.study.gcot_review`).

How it runs
-----------
Each stage is a datatrove pipeline (:mod:`.steps`: a shard reader, the stage, a writer committing each
shard whole) run by its own datatrove executor, chained to the stage before with ``depends=``: a stage
starts only once every task of the one before has its completion marker, never because files are
present. Task ``i`` of ``N`` takes shards ``i, i+N, ...`` (default: one task per shard). Within a stage the
tasks are independent: a slow one holds up no other, a failed or killed one stays incomplete while the
others finish. Models are loaded in the tasks, once per worker process, never in the launching process.

- ``--executor local`` (:class:`~.executors.Local`, the default): ``--workers`` processes on this machine,
  one GPU each where there are GPUs, serving every stage of the run;
- ``--executor slurm`` (:class:`~.executors.Slurm`): one Slurm job array per stage (datatrove's
  ``SlurmPipelineExecutor``), each ``afterok`` the one before, pre-empted tasks requeued;
- the judge as today (``hf:``, ``openai:``, ``vllm:``), or with ``--server vllm|sglang|endpoint`` behind
  datatrove's inference runner (:mod:`.runner`): a server per task, many requests in flight; replies are
  parsed, re-asked and counted as failures by the engine as on every other path.

Resuming
--------
Run the same command again after an interruption, a kill or a pre-emption: completed tasks are skipped, the
shards a killed task had committed are kept (a shard is written to a temporary file, then renamed; the
temporary files of killed writes are removed on the next run), finished images are not drawn again, and
the judges' response cache answers every question already answered. A judge backend failure leaves its
shard, hence its task, for the next run (``--on-judge-error retry``) rather than losing records. The
settings each stage ran with are kept with it; a later run with other settings is refused for the stages
already done (delete their folders to redo them). Each stage's datatrove statistics (records in, kept,
dropped and what the stage did, requests, re-asks, failures) make the summary at the end and
``t2ireason engine status``.

On a laptop
-----------
::

    t2ireason engine estimate --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000
    t2ireason engine run --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000 \\
        --judge openai:Qwen/Qwen2.5-VL-32B-Instruct@http://localhost:8000/v1 --model black-forest-labs/FLUX.1-dev \\
        --license other --out runs/dataset

``estimate`` ingests the inputs (cheap) and prints the images, judge calls and tokens each stage will
cost, with the assumptions it makes. ``python generators/flux_engine.py run ...`` is the same command.

On a cluster
------------
::

    t2ireason engine run --work /shared/w ... --executor slurm --partition gpu --time 12:00:00 \\
        --gpus-per-task 1 --tasks 512 --judge vllm:Qwen/Qwen2.5-VL-32B-Instruct --server vllm

returns once the job arrays are submitted; the same command after they end submits what did not
complete. The work folder must be on a file system every node sees; the response cache (SQLite, one
file) may be shared by all tasks.

Python
------
::

    from t2ireason.engine import EngineConfig, Local, Sources, run_engine
    from t2ireason.generation import GenerationConfig

    result = run_engine("runs/w", Sources(captions="laion.parquet"), EngineConfig(shard_size=500),
                        judge="openai:gpt-4.1", cache=True, drawer=GenerationConfig(model="..."),
                        executor=Local(workers=4), out="runs/dataset", license="other")
    for stage in result.stages:
        print(stage.line())
"""

from .cost import CostAssumptions, estimate_cost, format_cost
from .executors import Local, Slurm
from .export import PROVENANCE_FEATURES, export, export_review_sample, review_agreement, statistics
from .models import Models, Server
from .pipeline import STAGES, EngineConfig, EngineResult, StageSummary, run_engine, stage_summary
from .sampling import TextEmbedder, nearest_to_centroids, representative_prompts, write_prism_captions
from .sources import Sources, ingest
from .work import STAGE_NAMES, WORK_FEATURES, EngineError, Stage, Workdir

__all__ = [
    "CostAssumptions", "estimate_cost", "format_cost", "Local", "Slurm",
    "PROVENANCE_FEATURES", "export", "export_review_sample", "review_agreement", "statistics", "Models", "Server",
    "STAGES", "EngineConfig", "EngineResult", "StageSummary", "run_engine", "stage_summary", "TextEmbedder",
    "nearest_to_centroids", "representative_prompts", "write_prism_captions", "Sources", "ingest", "STAGE_NAMES",
    "WORK_FEATURES", "EngineError", "Stage", "Workdir",
]
