"""Where a GPU's time goes (issues 23 and 41): the project against bare loops and the limits, in one run.

Models of the real architectures at their real sizes are built with random weights directly on the GPU in
bfloat16 (float16 for the diffusion model), saved with ``save_pretrained`` and loaded back the way a user
loads them (``hf:<folder>``, ``DiffusionPipeline.from_pretrained``); speed does not depend on the weights'
values, and the scores they give mean nothing (../shared/gpu.md has the method). Sections:

- ``vqascore_llava``: P("Yes") ms a pair, LLaVA-1.5-7B shape, 512 px PNG files: the project
  (``judge.yes_probability`` on the files) at batch 32 (256 pairs) and 1 (32 pairs), beside it the design
  before (each batch through ``generate``, read before the next is launched), the model's forward
  alone on ready inputs, the roofline (2 x parameters x tokens, vision and language apart, at the measured
  matmul rate), then the bare loops of ../shared/gpu.md (per pair, batched, next batch in a thread).
- ``json``: JSON judgements, LLaVA-7B shape with a 32,000-piece vocabulary, schema enforced, 64 new tokens:
  the project eager at batch 8 and 32 against bare ``generate`` eager, then its default (on CUDA the static
  cache, compiled: ``compile_seconds_b8``) at batch 8 against bare ``generate`` with a static cache, and
  the HBM floor. A batch decodes until its longest reply ends, so rates are in row-steps (rows x decoding
  steps) and the bare loop decodes each batch for the same number of steps as the project's (the useful
  tokens/s and the replies' lengths are printed beside).
- ``vqascore_qwen``: Qwen2.5-VL-7B shape (its window-attention vision tower), 512 px images: the vision
  tower alone window by window (transformers' SDPA) and in one call a layer (the project's), then the
  project at batch 32 (128 pairs) and 1 (16), the forward alone and the roofline. The project's figures
  need torchvision (Qwen's processor); without it only the tower's are measured.
- ``generation``: SD-1.5 shape, 512 px, 20 steps, batch 8, 24 images, ms an image: the project's ``generate`` against
  the bare diffusers loop without saving, saving inline and saving from a pool of 4 threads.
- ``data_parallel``: ``t2ireason evaluate`` split over 2 processes against one (``perf/gpu_parallel.py``).

Every figure is printed (and appended to ``--figures``, one JSON line each) the moment it is measured, so a
section stopped by its time limit keeps what it measured; ratios with a target come last in each section
with ``.target``/``.met``. ``--work`` keeps the built models and images in a folder shared by the sections
(each run as its own ``--only`` process: ``perf/gpu_device_run.sh`` runs them all in one 10-minute call).
Without CUDA it prints a note and exits 0; ``--small`` runs every section with small models on whatever
device there is (a smoke run: figures printed, targets not checked).

    python perf/gpu.py [--small] [--only vqascore_llava,json,...] [--work DIR] [--figures FILE.jsonl]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

# Like the tests: never reach a hub, keep caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-gpu-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME,
                  TOKENIZERS_PARALLELISM="false")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "perf")]

import torch  # noqa: E402
from _gpu_build import build_llava, build_qwen, build_sd, built, free, write_images  # noqa: E402
from _limits import hbm_ceiling  # noqa: E402
from _profile import profiled  # noqa: E402
from _report import figure, summary  # noqa: E402
from PIL import Image  # noqa: E402

SECTIONS = ("vqascore_llava", "json", "vqascore_qwen", "generation", "data_parallel")
#: The project before issue 41 and the bare loops, one H200 (../shared/gpu.md, 2026-11-28), for comparison; the
#: HBM ceiling twice the 1,195 printed then (the script halved the copy rate again until 2026-11-29)
GPU_MD = {
    "vqascore_llava": {"project_b1": 64.0, "project_b32": 26.3, "bare_per_pair": 57.7, "bare_batched": 31.7,
                       "bare_batched_threaded": 24.0, "forward_alone": 21.0, "roofline": 13.6},
    "vqascore_qwen": {"project_b1_h100": 111.8, "project_b32_h100": 84.5, "vision_tower_b32_h100": 47.0,
                      "roofline": 12.0},
    "json": {"project_eager_b8": 209, "project_eager_b32": 293, "bare_eager_b8": 208, "bare_eager_b32": 889,
             "project_compiled_b8": 685, "bare_static_b8": 834, "hbm_floor_b8": 2390, "compile_seconds_b8": 8},
    "generation": {"project": 174.6, "bare_no_save": 160.0, "bare_inline_save": 242.5, "bare_pool_save": 173.9},
}
#: issue 41's targets (H100 or H200)
TARGETS = {
    "vqascore_llava_vs_forward_ratio": ("<=", 1.15),
    "vqascore_llava_batching_speedup": (">=", 2.5),
    "json_eager_vs_bare_eager_b8": (">=", 0.9),
    "json_eager_vs_bare_eager_b32": (">=", 0.9),
    "json_default_vs_bare_static_b8": (">=", 0.9),
    "json_default_vs_bare_static_b32": (">=", 0.9),
    "json_default_vs_hbm_floor_b8": (">=", 0.5),
    "vqascore_qwen_vs_roofline_ratio": ("<=", 3.0),
    "generation_vs_bare_no_save_ratio": ("<=", 1.05),
}
QUESTION = ('Does this figure show "a red double-decker bus parked beside a stone bridge over a river at dusk, '
            'with three people waiting at the stop"? Please answer yes or no.')


class Setup:
    """Sizes and device of one run: the real shapes on CUDA, or small ones anywhere (``--small``)."""

    def __init__(self, small: bool, work: Path, figures: Path | None, profile: Path | None = None):
        self.small, self.work, self.figures, self.profile = small, work, figures, profile
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.files, self.image_px = (8, 64) if small else (128, 512)
        self.big_batch = 4 if small else 32
        self.vqa_pairs, self.b1_pairs = (8, 4) if small else (256, 32)  # the files twice at batch 32
        self.qwen_pairs, self.qwen_b1_pairs = (4, 2) if small else (128, 16)
        self.json_batches, self.json_requests = ((2, 4), (4, 4)) if small else ((8, 32), (16, 32))
        self.json_tokens = 8 if small else 64
        self.sd_images, self.sd_batch, self.sd_steps, self.sd_px = (4, 2, 2, 64) if small else (24, 8, 20, 512)

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()

    def record(self, section: str, name: str, value, **details) -> None:
        """Print one measured value at once (and append it to ``--figures``)."""
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        print(f"{section}.{name}={text}", flush=True)
        for key, detail in details.items():
            print(f"{section}.{name}.{key}={detail:.4g}" if isinstance(detail, float) else
                  f"{section}.{name}.{key}={detail}", flush=True)
        if self.figures is not None:
            with open(self.figures, "a") as f:
                f.write(json.dumps({"section": section, "name": name, "value": value, **details}, default=str) + "\n")

    def target(self, section: str, name: str, value: float, details: dict | None = None) -> bool:
        """A figure with its target (none in a small run), printed at once."""
        target = None if self.small else TARGETS.get(name)
        met = figure(name, value, details, target)
        if self.figures is not None:
            with open(self.figures, "a") as f:
                f.write(json.dumps({"section": section, "name": name, "value": value, "target": target,
                                    "met": met if target else None, **(details or {})}, default=str) + "\n")
        return met


def timed(setup: Setup, fn) -> float:
    setup.sync()
    start = time.perf_counter()
    fn()
    setup.sync()
    return time.perf_counter() - start


def image_files(setup: Setup, count: int) -> list[Path]:
    """``count`` paths among the work folder's PNG files (each used again once all have been)."""
    folder = built(setup.work / "images", lambda f: write_images(setup, f))
    files = sorted(folder.glob("*.png"))
    return [files[i % len(files)] for i in range(count)]


# -- the hardware's own rates --------------------------------------------------------------------------------------------


def matmul_flops(setup: Setup) -> float:
    """The measured rate of one large matmul in the run's dtype (FLOP/s): the roofline's peak."""
    n = 1024 if setup.small or setup.device == "cpu" else 8192
    a = torch.randn(n, n, device=setup.device, dtype=setup.dtype)
    a @ a
    runs = 3 if setup.device == "cpu" else 20
    return 2 * n**3 / (timed(setup, lambda: [a @ a for _ in range(runs)]) / runs)


def copy_bandwidth(setup: Setup) -> float:
    """The measured device-memory rate (bytes/s: read plus write of a large copy, ``2 * n / t``): the memory's
    whole traffic a second, which a read-only stream (a decode step reading the weights) reaches too."""
    n = (64 if setup.small else 1024) * 2**20
    x = torch.empty(n, dtype=torch.uint8, device=setup.device)
    y = torch.empty_like(x)
    y.copy_(x)
    return 2 * n / (timed(setup, lambda: [y.copy_(x) for _ in range(10)]) / 10)


# -- VQAScore ----------------------------------------------------------------------------------------------------------


def split_parameters(model) -> tuple[int, int]:
    """(vision tower and projector, language model without its embeddings and head) parameters: what each
    token of its kind goes through (the head runs on one position, the embeddings are a lookup)."""
    vision = language = 0
    for name, p in model.named_parameters():
        if any(part in name for part in ("vision_tower", "visual", "multi_modal_projector")):
            vision += p.numel()
        elif "embed_tokens" not in name and "lm_head" not in name:
            language += p.numel()
    return vision, language


def vqa_loops(setup: Setup, judge, sec: str, paths: list[Path], peak: float, vision_tokens) -> dict[str, float]:
    """The project at the big batch on every pair, the forward alone on ready inputs and the roofline: the
    figures the targets need, each printed as measured. ``vision_tokens(enc)`` counts an encoding's patches."""
    model, processor = judge.hf_model, judge.processor
    big, questions = setup.big_batch, [QUESTION] * len(paths)
    out = {}
    judge.batch_size = big
    judge.yes_probability([str(p) for p in paths[:big]], questions[:big])  # warm up
    seconds = timed(setup, lambda: judge.yes_probability([str(p) for p in paths], questions))
    out["project_big"] = seconds / len(paths) * 1000
    setup.record(sec, f"project_b{big}_ms_a_pair", out["project_big"], pairs=len(paths))
    # side by side: the design before (each batch teacher-forced through generate, read before the next starts)
    from t2ireason.judges import AnswerQuery, local_answers

    with mock.patch.object(local_answers, "reads_one_forward", lambda model, answers: False):
        seconds = timed(setup, lambda: judge.yes_probability([str(p) for p in paths], questions))
    setup.record(sec, f"project_through_generate_b{big}_ms_a_pair", seconds / len(paths) * 1000, pairs=len(paths))
    stretch = [str(p) for p in paths[: 3 * big]]  # three batches: two gaps between them
    with profiled(setup, sec, f"project_b{big}", setup.profile):
        judge.yes_probability(stretch, questions[: len(stretch)])
    with mock.patch.object(local_answers, "reads_one_forward", lambda model, answers: False), \
            profiled(setup, sec, f"project_through_generate_b{big}", setup.profile):
        judge.yes_probability(stretch, questions[: len(stretch)])
    if setup.device == "cuda":  # the next batch's inputs made and uploaded without waiting for the device
        prepared = judge._prepare_answers([AnswerQuery(p, q) for p, q in zip(stretch[:big], questions)])
        torch.cuda.set_sync_debug_mode("error")
        try:
            local_answers.first_forward_inputs(judge.hf_model, prepared["enc"], judge._on_device)
            waits = "no"
        except RuntimeError as e:
            waits = f"yes: {e}"
        finally:
            torch.cuda.set_sync_debug_mode(0)
        setup.record(sec, "first_forward_inputs_wait_for_the_device", waits)

    def encode(batch_paths):
        images = [Image.open(p).convert("RGB") for p in batch_paths]
        conversation = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
        text = processor.apply_chat_template(conversation, add_generation_prompt=True)
        return processor(text=[text] * len(images), images=images, padding=True, return_tensors="pt")

    ready = [encode(paths[i : i + big]).to(setup.device, dtype=setup.dtype) for i in range(0, len(paths), big)]

    def alone(batches=ready):
        with torch.inference_mode():
            for enc in batches:
                model(**enc, use_cache=False, logits_to_keep=1)

    alone(ready[:1])  # warm up
    out["forward_alone"] = timed(setup, alone) / len(paths) * 1000
    setup.record(sec, "forward_alone_ms_a_pair", out["forward_alone"])
    vision_params, language_params = split_parameters(model)
    text_tokens = sum(int(enc["attention_mask"].sum()) for enc in ready) / len(paths)
    patches = sum(vision_tokens(enc) for enc in ready) / len(paths)
    out["roofline"] = 2 * (vision_params * patches + language_params * text_tokens) / peak * 1000
    setup.record(sec, "roofline_ms_a_pair", out["roofline"], tokens_a_pair=text_tokens, patches_a_pair=patches,
                 vision_parameters_billions=vision_params / 1e9, language_parameters_billions=language_params / 1e9,
                 matmul_tflops=peak / 1e12)
    free(ready)
    out["encode"] = encode
    return out


def vqascore_llava(setup: Setup, peak: float) -> bool:
    from t2ireason.judges import load_judge

    sec = "vqascore_llava"
    folder = built(setup.work / "llava", lambda f: build_llava(setup, f))
    paths = image_files(setup, setup.vqa_pairs)
    judge = load_judge(f"hf:{folder}", dtype=setup.dtype_name, device=setup.device)
    model = judge.hf_model
    setup.record(sec, "model", "LLaVA-1.5-7B shape" if not setup.small else "small LLaVA",
                 parameters_billions=sum(p.numel() for p in model.parameters()) / 1e9, dtype=setup.dtype_name,
                 image_px=setup.image_px, image_processor=type(judge.processor.image_processor).__name__)
    size = model.config.vision_config.image_size // model.config.vision_config.patch_size
    out = vqa_loops(setup, judge, sec, paths, peak, lambda enc: len(enc["pixel_values"]) * (size**2 + 1))
    big = setup.big_batch
    met = setup.target(sec, "vqascore_llava_vs_forward_ratio", out["project_big"] / out["forward_alone"],
                       {"gpu_md_before": GPU_MD[sec]["project_b32"] / GPU_MD[sec]["forward_alone"]})
    judge.batch_size = 1
    judge.yes_probability([str(p) for p in paths[:1]], [QUESTION])  # warm up
    b1 = timed(setup, lambda: judge.yes_probability([str(p) for p in paths[: setup.b1_pairs]],
                                                    [QUESTION] * setup.b1_pairs)) / setup.b1_pairs * 1000
    setup.record(sec, "project_b1_ms_a_pair", b1, pairs=setup.b1_pairs)
    met &= setup.target(sec, "vqascore_llava_batching_speedup", b1 / out["project_big"],
                        {"gpu_md_before": GPU_MD[sec]["project_b1"] / GPU_MD[sec]["project_b32"]})
    # the bare loops of ../shared/gpu.md, for comparison
    encode, yes = out["encode"], judge.tokenizer("Yes", add_special_tokens=False).input_ids[-1]

    def forward(enc):
        with torch.inference_mode():
            enc = enc.to(setup.device, dtype=setup.dtype)
            return model(**enc, use_cache=False, logits_to_keep=1).logits[:, -1].float().softmax(-1)[:, yes].tolist()

    batches = [paths[i : i + big] for i in range(0, len(paths), big)]
    forward(encode(paths[:1]))
    per_pair = timed(setup, lambda: [forward(encode([p])) for p in paths[: setup.b1_pairs]]) / setup.b1_pairs
    setup.record(sec, "bare_per_pair_ms", per_pair * 1000, pairs=setup.b1_pairs)
    setup.record(sec, "bare_batched_ms_a_pair", timed(setup, lambda: [forward(encode(b)) for b in batches])
                 / len(paths) * 1000)

    def threaded():
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(encode, batches[0])
            for following in [*batches[1:], None]:
                enc = pending.result()
                if following is not None:
                    pending = pool.submit(encode, following)
                forward(enc)

    setup.record(sec, "bare_batched_threaded_ms_a_pair", timed(setup, threaded) / len(paths) * 1000)
    free(judge, model)
    return met


def set_tower_attention(model, implementation: str) -> None:
    vision = model.config.vision_config
    for module in model.modules():
        if type(getattr(module, "config", None)) is type(vision):
            module.config._attn_implementation = implementation


def vqascore_qwen(setup: Setup, peak: float) -> bool:
    from transformers import AutoModelForImageTextToText

    from t2ireason.judges import load_judge
    from t2ireason.judges.vision_attention import VARLEN_SDPA, use_varlen_sdpa

    sec = "vqascore_qwen"
    folder = built(setup.work / "qwen", lambda f: build_qwen(setup, f))
    with_processor = importlib.util.find_spec("torchvision") is not None
    if with_processor:
        judge = load_judge(f"hf:{folder}", dtype=setup.dtype_name, device=setup.device)
        model = judge.hf_model
        setup.record(sec, "image_processor", type(judge.processor.image_processor).__name__,
                     attention=json.dumps(judge.attn_implementation))
    else:
        judge, model = None, AutoModelForImageTextToText.from_pretrained(folder, dtype=setup.dtype).to(setup.device)
        use_varlen_sdpa(model)
        setup.record(sec, "note", "no torchvision: Qwen's processor cannot be built, the vision tower alone is measured")
    setup.record(sec, "model", "Qwen2.5-VL-7B shape" if not setup.small else "small Qwen2.5-VL",
                 parameters_billions=sum(p.numel() for p in model.parameters()) / 1e9, dtype=setup.dtype_name)
    # the vision tower alone, on the patches of the big batch's images (512 px: 36 x 36 patches each)
    side = 2 * round(setup.image_px / 28)
    grid = torch.tensor([[1, side, side]] * setup.big_batch, device=setup.device)
    vision = model.config.vision_config
    patches = torch.randn(int(grid.prod(-1).sum()), 3 * vision.temporal_patch_size * vision.patch_size**2,
                          device=setup.device, dtype=setup.dtype)
    tower = {}
    for name, implementation in (("window_by_window", "sdpa"), ("one_call_a_layer", VARLEN_SDPA)):
        set_tower_attention(model, implementation)
        with torch.inference_mode():
            model.model.visual(patches, grid_thw=grid)  # warm up
            tower[name] = timed(setup, lambda: model.model.visual(patches, grid_thw=grid)) / setup.big_batch * 1000
        setup.record(sec, f"vision_tower_{name}_ms_an_image", tower[name], images=setup.big_batch, grid=side)
    setup.record(sec, "vision_tower_speedup", tower["window_by_window"] / tower["one_call_a_layer"])
    set_tower_attention(model, VARLEN_SDPA)  # as the judge loaded it
    if judge is None:
        return True
    paths = image_files(setup, setup.qwen_pairs)
    out = vqa_loops(setup, judge, sec, paths, peak, lambda enc: int(enc["image_grid_thw"].prod(-1).sum()))
    met = setup.target(sec, "vqascore_qwen_vs_roofline_ratio", out["project_big"] / out["roofline"],
                       {"vs_forward_alone": out["project_big"] / out["forward_alone"]})
    judge.batch_size = 1
    judge.yes_probability([str(p) for p in paths[:1]], [QUESTION])  # warm up
    b1 = timed(setup, lambda: judge.yes_probability([str(p) for p in paths[: setup.qwen_b1_pairs]],
                                                    [QUESTION] * setup.qwen_b1_pairs)) / setup.qwen_b1_pairs * 1000
    setup.record(sec, "project_b1_ms_a_pair", b1, pairs=setup.qwen_b1_pairs, batching_speedup=b1 / out["project_big"])
    free(judge, model)
    return met


# -- JSON judgements ---------------------------------------------------------------------------------------------------


SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                           "score": {"type": "integer", "minimum": 0, "maximum": 10}},
          "required": ["reasoning", "score"], "additionalProperties": False}
JSON_PROMPT = ("You are a careful judge of text-to-image models. Read the prompt and look at the picture. "
               "Say, step by step, which parts of the prompt the picture shows and which it misses, then give "
               "a score from 0 to 10. Prompt: a red double-decker bus parked beside a stone bridge over a river "
               "at dusk, with three people waiting at the stop. Answer in JSON with reasoning and score.")


def json_decoding(setup: Setup, bandwidth: float) -> bool:
    """Row-steps/s (rows x decoding steps a second) of the project's JSON judgements against bare ``generate``
    decoding each batch for as many steps as the project's did, eager and with the default (static) cache."""
    from t2ireason.judges import ChatRequest, Sampling, load_judge

    sec = "json"
    folder = built(setup.work / "llava", lambda f: build_llava(setup, f))
    judge = load_judge(f"hf:{folder}", dtype=setup.dtype_name, device=setup.device,
                       sampling=Sampling(max_tokens=setup.json_tokens))
    model, processor = judge.hf_model, judge.processor
    images = [Image.open(p).convert("RGB") for p in image_files(setup, max(setup.json_requests))]
    requests = [ChatRequest.simple(image, JSON_PROMPT, json_schema=SCHEMA) for image in images]
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    text = processor.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": JSON_PROMPT}]}],
        add_generation_prompt=True)
    setup.record(sec, "model", "LLaVA-1.5-7B shape, 32,000-piece vocabulary" if not setup.small else "small LLaVA",
                 new_tokens=setup.json_tokens, vocabulary=len(judge.tokenizer))

    def project(batch: int, n: int, compiled) -> dict:
        judge.batch_size, judge.compiled_decoding = batch, compiled
        replies = []
        seconds = timed(setup, lambda: replies.extend(judge.chat(requests[:n])))
        failed = [r.error for r in replies if r.error]
        if failed:
            raise RuntimeError(f"a JSON judgement failed: {failed[0]}")
        lengths = [r.usage["completion_tokens"] for r in replies]
        steps = [max(lengths[i : i + batch]) for i in range(0, n, batch)]  # a batch decodes to its longest reply
        row_steps = sum(min(batch, n - i) * s for i, s in zip(range(0, n, batch), steps))
        return {"seconds": seconds, "steps": steps, "row_steps": row_steps, "tokens": sum(lengths),
                "prompt_tokens": replies[0].usage["prompt_tokens"]}

    def bare(batch: int, n: int, steps: list[int], static: bool) -> float:
        encs = [processor(text=[text] * len(images[i : i + batch]), images=images[i : i + batch], padding=True,
                          return_tensors="pt").to(setup.device, dtype=setup.dtype) for i in range(0, n, batch)]
        common = {"do_sample": False, "pad_token_id": judge.tokenizer.pad_token_id}
        if static:
            common["cache_implementation"] = "static"
        with torch.inference_mode():
            return timed(setup, lambda: [model.generate(**enc, max_new_tokens=k, min_new_tokens=k, **common)
                                         for enc, k in zip(encs, steps)])

    def compare(name: str, batch: int, n: int, compiled, static: bool) -> float:
        # both sides once untimed first: each new shape's first kernels (a dynamic cache grows a step at a time)
        # are paid by whichever runs first, and the H200 run of 2026-11-28 timed the project first
        bare(batch, batch, project(batch, batch, compiled)["steps"], static)
        p = project(batch, n, compiled)
        setup.record(sec, f"{name}_b{batch}_row_steps_per_s", p["row_steps"] / p["seconds"],
                     tokens_per_s=p["tokens"] / p["seconds"], steps=p["steps"], requests=n,
                     mean_reply_tokens=p["tokens"] / n, prompt_tokens=p["prompt_tokens"])
        seconds = bare(batch, n, p["steps"], static)
        kind = "static" if static else "eager"
        setup.record(sec, f"bare_{kind}_b{batch}_row_steps_per_s", p["row_steps"] / seconds)
        return seconds / p["seconds"], p

    judge.chat([ChatRequest.simple(images[0], JSON_PROMPT, json_schema=SCHEMA, sampling=Sampling(max_tokens=4))])
    met = True
    for batch, n in zip(setup.json_batches, setup.json_requests):
        ratio, _ = compare("project_eager", batch, n, False, False)
        met &= setup.target(sec, f"json_eager_vs_bare_eager_b{batch}" if not setup.small else f"json_eager_b{batch}",
                            ratio)
    if setup.profile is not None:  # one batch of the first size, 16 steps, eagerly: the project, then bare generate
        batch, steps = setup.json_batches[0], min(16, setup.json_tokens)
        judge.batch_size, judge.compiled_decoding = batch, False
        short = [ChatRequest.simple(image, JSON_PROMPT, json_schema=SCHEMA, sampling=Sampling(max_tokens=steps))
                 for image in images[:batch]]
        with profiled(setup, sec, f"project_eager_b{batch}", setup.profile):
            replies = judge.chat(short)
        taken = max(r.usage["completion_tokens"] for r in replies)
        with profiled(setup, sec, f"bare_eager_b{batch}", setup.profile):
            bare(batch, batch, [taken], False)
    # the default: on CUDA the static cache for full batches, compiled on its first call (on a CPU it would
    # decode eagerly: a small run takes the static path explicitly to run its code); each batch size compiles once
    default = None if setup.device == "cuda" else True
    for batch, n in zip(setup.json_batches, setup.json_requests):
        judge.batch_size, judge.compiled_decoding = batch, default
        compile_seconds = timed(setup, lambda batch=batch: judge.chat(requests[:batch]))
        setup.record(sec, f"compile_seconds_b{batch}", compile_seconds,
                     mode="static" if default is not False else "eager",
                     first_calls="; ".join(f"batch {rows}, cache {length}: {s:.1f} s"
                                           for (rows, length), s in judge._static.first_calls.items()))
        setup.record(sec, f"bare_static_first_call_seconds_b{batch}", bare(batch, batch, [2], True))  # compiles if new
        ratio, p = compare("project_default", batch, n, default, True)
        met &= setup.target(sec, f"json_default_vs_bare_static_b{batch}" if not setup.small else f"json_default_b{batch}",
                            ratio)
        if batch == setup.json_batches[0]:
            first = p
            # a list one full batch and 3 requests long: its last batch filled up to the compiled size (the
            # default), against that batch decoded eagerly (as before the filling)
            tail = requests[: batch + min(3, batch - 1)]
            filled = timed(setup, lambda tail=tail: judge.chat(tail))
            with mock.patch.object(type(judge._static), "fills", lambda *args: False):
                unfilled = timed(setup, lambda tail=tail: judge.chat(tail))
            setup.record(sec, f"tail_filled_vs_eager_b{batch}_time_ratio", filled / unfilled, requests=len(tail),
                         filled_seconds=filled, eager_tail_seconds=unfilled)
    batch, p = setup.json_batches[0], first
    floor = hbm_ceiling(batch, bandwidth, weight_bytes)  # the weights read once a step, at the copy's rate
    setup.record(sec, f"hbm_floor_b{batch}_row_steps_per_s", floor, weight_gb=weight_bytes / 1e9,
                 copy_gb_per_s=bandwidth / 1e9)
    met &= setup.target(sec, "json_default_vs_hbm_floor_b8" if not setup.small else "json_floor_b2",
                        p["row_steps"] / p["seconds"] / floor)
    free(judge, model)
    return met


# -- generation --------------------------------------------------------------------------------------------------------


def generation(setup: Setup) -> bool:
    """ms an image: the project's generate, the bare loop without saving, saving inline, saving by a pool."""
    from t2ireason.generation import GenerationConfig, Job, generate, image_seed, load_pipeline

    sec = "generation"
    folder = built(setup.work / "sd", lambda f: build_sd(setup, f))
    config = GenerationConfig(model=str(folder), dtype="float16" if setup.device == "cuda" else "float32",
                              steps=setup.sd_steps, height=setup.sd_px, width=setup.sd_px, batch_size=setup.sd_batch)
    pipe = load_pipeline(config, setup.device)
    jobs = [Job(f"p{i}", f"a red cat number {i}", 0, f"{i:04d}.png", image_seed("perf-gpu", f"p{i}", 0))
            for i in range(setup.sd_images)]
    batches = [jobs[i : i + setup.sd_batch] for i in range(0, len(jobs), setup.sd_batch)]

    def draw(batch):
        generators = [torch.Generator("cpu").manual_seed(j.seed) for j in batch]
        return pipe(prompt=[j.prompt for j in batch], generator=generators, **config.call_kwargs()).images

    draw(batches[0])  # warm up
    root, out = Path(tempfile.mkdtemp(dir=_HOME)), {}
    setup.record(sec, "model", "SD-1.5 shape" if not setup.small else "tiny SD", images=len(jobs),
                 batch=setup.sd_batch, steps=setup.sd_steps, px=setup.sd_px)

    def measure(name, fn):
        out[name] = timed(setup, fn) / len(jobs) * 1000
        setup.record(sec, f"{name}_ms_an_image", out[name])

    measure("project", lambda: generate(jobs, config, root / "project", pipeline=pipe, progress=False))
    measure("bare_no_save", lambda: [draw(b) for b in batches])
    met = setup.target(sec, "generation_vs_bare_no_save_ratio", out["project"] / out["bare_no_save"])
    (root / "inline").mkdir()
    measure("bare_inline_save", lambda: [image.save(root / "inline" / j.file) for b in batches
                                         for j, image in zip(b, draw(b))])
    (root / "pool").mkdir()

    def pooled():
        with ThreadPoolExecutor(4) as pool:
            for b in batches:
                for j, image in zip(b, draw(b)):
                    pool.submit(image.save, root / "pool" / j.file)

    measure("bare_pool_save", pooled)
    free(pipe)
    return met


def data_parallel(setup: Setup) -> bool:
    """``t2ireason evaluate`` under ``torchrun --nproc_per_node 2`` (2 processes on one GPU, or on 2 GPUs)
    against one process, the same judge, images and settings (``perf/gpu_parallel.py``, issue 41 item 4), the
    judge the LLaVA-7B shape the other sections built (``--work``)."""
    import gpu_parallel

    # a small run is a smoke run within its section's minute: one round (one process, then two)
    argv = ["--small", "--rounds", "1"] if setup.small else \
        ["--judge", f"hf:{built(setup.work / 'llava', lambda f: build_llava(setup, f))}", "--rounds", "2"]
    argv += ["--work", str(setup.work / "parallel")]
    if setup.figures is not None:
        argv += ["--figures", str(setup.figures)]
    return gpu_parallel.main(argv) == 0


# -- the run -----------------------------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--small", action="store_true", help="small models on any device: a smoke run of the code path")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections among {SECTIONS}")
    parser.add_argument("--work", type=Path, help="folder for the built models and images, kept and reused "
                                                  "(default: a temporary folder removed at the end)")
    parser.add_argument("--figures", type=Path, help="append every figure to this file as a JSON line when measured")
    parser.add_argument("--profile", type=Path, metavar="DIR",
                        help="also profile a stretch of the VQAScore and JSON sections with torch.profiler: traces, "
                             "host operations and the device's busy share land in DIR (perf/_profile.py)")
    args = parser.parse_args(argv)
    sections = [s for s in args.only.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose among {SECTIONS}")
    if not torch.cuda.is_available() and not args.small:
        print("note=no CUDA device here: perf/gpu.py measures the judges and the generator on a GPU and measured "
              "nothing (perf/gpu.py --small runs its code path with small models on this machine)")
        return 0
    setup = Setup(args.small, args.work or Path(_HOME) / "work", args.figures, args.profile)
    setup.work.mkdir(parents=True, exist_ok=True)
    import transformers

    device = torch.cuda.get_device_name() if setup.device == "cuda" else "cpu"
    memory = torch.cuda.get_device_properties(0).total_memory / 2**30 if setup.device == "cuda" else 0.0
    setup.record("machine", "device", device, memory_gib=memory, torch=torch.__version__,
                 cuda=torch.version.cuda, transformers=transformers.__version__, sections=",".join(sections))
    if setup.small:
        print("note=small models: a smoke run of the code path; the figures mean nothing and no target is checked")
    peak = bandwidth = None
    if {"vqascore_llava", "vqascore_qwen"} & set(sections):
        peak = matmul_flops(setup)
        setup.record("machine", "matmul_tflops", peak / 1e12)
    if "json" in sections:
        bandwidth = copy_bandwidth(setup)
        setup.record("machine", "copy_gb_per_s", bandwidth / 1e9)
    runs = {"vqascore_llava": lambda: vqascore_llava(setup, peak), "json": lambda: json_decoding(setup, bandwidth),
            "vqascore_qwen": lambda: vqascore_qwen(setup, peak), "generation": lambda: generation(setup),
            "data_parallel": lambda: data_parallel(setup)}
    met = True
    for section in sections:
        start = time.perf_counter()
        try:
            met &= runs[section]()
        except Exception as e:  # one section's failure is printed; the others still run
            import traceback

            traceback.print_exc()
            setup.record(section, "error", f"{type(e).__name__}: {e}")
            met = False
        setup.record(section, "wall_seconds", time.perf_counter() - start)
    return summary(met)


if __name__ == "__main__":
    try:
        status = main()
    finally:  # the models take tens of GB of disk (a --work folder is the caller's)
        shutil.rmtree(_HOME, ignore_errors=True)
    sys.exit(status)
