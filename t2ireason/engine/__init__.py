"""The FLUX-Reason-6M data engine: the curation pipeline of seed 004 (section 2, appendix B), resumable and
sharded, from a laptop to many GPUs.

Stages
------
Each stage reads the shards of the one before and writes its own (``<work>/NN-<stage>/shard-XXXXX.parquet``,
loadable with ``datasets``); every record keeps which stage dropped or labelled it and why (``events``).

0. ``sources``: the inputs read once into shards (:func:`~.sources.ingest`).
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
relevance, embedded, k-means with k = 50, the prompt nearest each centroid.

On a laptop
-----------
::

    t2ireason engine estimate --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000
    t2ireason engine run --work runs/w --captions laion.parquet --seed-prompts seeds.txt --imagination 1000 \\
        --judge openai:Qwen/Qwen2.5-VL-32B-Instruct@http://localhost:8000/v1 --model black-forest-labs/FLUX.1-dev \\
        --license other --out runs/dataset

``estimate`` ingests the inputs (cheap) and prints the images, judge calls and tokens each stage will
cost, with the assumptions it makes. ``python generators/flux_engine.py run ...`` is the same command.

On many GPUs
------------
::

    accelerate launch --num_processes 8 generators/flux_engine.py run --work /shared/w ... --judge hf:<vlm>
    torchrun --nproc_per_node 8 generators/flux_engine.py run ...           # the same; several nodes likewise

Every process takes its share of the pending shards of each stage (``PartialState.split_between_processes``)
and loads its own diffusion model and ``hf:`` judge on its own GPU; with an HTTP judge (a vLLM server) the
processes share it. The work folder must be on a file system all processes see; the response cache
(SQLite, one file) may be shared by them.

Resuming
--------
A shard is committed whole (written to a temporary file, then renamed) or not at all. Run the same
command again after an interruption: committed shards are kept, finished images are not drawn again, and
the judges' response cache answers every question an unfinished shard had already asked. A judge backend
failure leaves its shard for the next run (``--on-judge-error retry``) rather than losing records. The
settings each stage ran with are kept with it; a later run with other settings is refused for the stages
already done (delete their folders to redo them).

Python
------
::

    from t2ireason.engine import EngineConfig, Sources, run_engine
    from t2ireason.generation import Drawer, GenerationConfig
    from t2ireason.judges import load_judge

    run_engine("runs/w", Sources(captions="laion.parquet"), EngineConfig(shard_size=500),
               judge=load_judge("openai:gpt-4.1", cache=True), drawer=Drawer(GenerationConfig(model="...")),
               out="runs/dataset", license="other")
"""

from .command import add_engine_args, run_engine_command
from .cost import CostAssumptions, estimate_cost, format_cost
from .executors import Local, Slurm
from .export import PROVENANCE_FEATURES, export, export_review_sample, review_agreement, statistics
from .models import Models, Server
from .pipeline import STAGES, EngineConfig, EngineResult, StageSummary, run_engine, stage_summary
from .sampling import TextEmbedder, nearest_to_centroids, representative_prompts, write_prism_captions
from .sources import Sources, ingest
from .work import STAGE_NAMES, WORK_FEATURES, EngineError, Stage, Workdir

__all__ = [
    "add_engine_args", "run_engine_command", "CostAssumptions", "estimate_cost", "format_cost", "Local", "Slurm",
    "PROVENANCE_FEATURES", "export", "export_review_sample", "review_agreement", "statistics", "Models", "Server",
    "STAGES", "EngineConfig", "EngineResult", "StageSummary", "run_engine", "stage_summary", "TextEmbedder",
    "nearest_to_centroids", "representative_prompts", "write_prism_captions", "Sources", "ingest", "STAGE_NAMES",
    "WORK_FEATURES", "EngineError", "Stage", "Workdir",
]
