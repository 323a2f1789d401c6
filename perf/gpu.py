"""Where a GPU's time goes (issue 23): the project against bare loops and the roofline, in one run.

Models of the real architectures at their real sizes are built with random weights directly on the
GPU in bfloat16 (float16 for the diffusion model), saved with ``save_pretrained`` and loaded back the
way a user loads them (``hf:<folder>``, ``DiffusionPipeline.from_pretrained``); speed does not depend
on the weights' values, and the scores they give mean nothing (../shared/gpu.md has the method).

- **VQAScore** (P("Yes"), ms a pair) with a LLaVA-1.5-7B-shaped judge (6.8B parameters, 576 image
  tokens) and a Qwen2.5-VL-7B-shaped one (7.2B, 512 px images), on 128 PNG files of 512 px: the
  project (``judge.yes_probability`` on the files, batch 1 and 32) beside a bare per-pair forward
  loop (t2v_metrics style), a bare batched loop preprocessing inline, one preprocessing the next batch
  in a thread, the model's forward alone on ready inputs and the compute roofline (2 x parameters x
  tokens at the measured bf16 matmul rate).
- **JSON judgements** (tokens/s, batch 8 and 32), LLaVA-7B shape, 32 requests of about 800 prompt
  tokens: the project with the schema enforced, eager and with ``compiled_decoding`` (static cache,
  ``torch.compile``; its first call's compile time printed), beside bare ``generate`` (eager, and
  static-cache compiled) and the HBM floor (the weights read once a step at the measured copy rate).
- **Generation** (ms an image), Stable Diffusion 1.5 shape (860M UNet), 512 px, 20 steps, batch 8,
  float16: the project's ``generate`` (PNGs written by its pool) beside the bare diffusers loop
  without saving, saving inline, and saving with a 4-thread pool.

Targets (one H100): VQAScore with the LLaVA judge at batch 32 within 1.15x of its forward alone;
batching at least 2.5x faster than one pair at a time; generation within 1.05x of the bare loop
without saving; JSON decoding with the compiled path at least 2x the eager one at batch 8. The
figures of ../shared/gpu.md (the project before issue 23) are printed beside ours as ``.gpu_md``.

Without CUDA it prints a note and exits 0. ``--small`` runs the same code path with small models on
whatever device there is (a smoke run: figures printed, targets not checked).

    python perf/gpu.py [--small] [--only vqascore_llava,vqascore_qwen,json,generation]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

# Like the tests: never reach a hub, keep caches out of the user's home.
_HOME = tempfile.mkdtemp(prefix="t2ireason-perf-gpu-")
os.environ.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=_HOME,
                  TOKENIZERS_PARALLELISM="false")
ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "perf")]

import numpy as np  # noqa: E402
import torch  # noqa: E402
from _report import figure, summary  # noqa: E402
from PIL import Image  # noqa: E402

SECTIONS = ("vqascore_llava", "vqascore_qwen", "json", "generation")
#: The project before issue 23 and the bare loops, one H100 (../shared/gpu.md), for comparison
GPU_MD = {
    "vqascore_llava": {"project_b1": 67.4, "project_b32": 41.6, "bare_per_pair": 68.4, "bare_batched": 39.6,
                       "bare_batched_threaded": 28.4, "forward_alone": 24.2, "roofline": 13.5},
    "vqascore_qwen": {"project_b1": 111.8, "project_b32": 84.5, "roofline": 12.0},
    "json": {"project_b8": 228, "project_b32": 694, "bare_eager_b8": 292, "bare_eager_b32": 870,
             "bare_static_b8": 622, "bare_static_b32": 1248, "hbm_floor_b8": 1705, "hbm_floor_b32": 6820},
    "generation": {"project": 261, "bare_inline_save": 256, "bare_no_save": 186, "bare_pool_save": 165},
}
TARGETS = {
    "vqascore_llava_vs_forward_ratio": ("<=", 1.15),
    "vqascore_llava_batching_speedup": (">=", 2.5),
    "json_compiled_vs_eager_batch8": (">=", 2.0),
    "generation_vs_bare_no_save_ratio": ("<=", 1.05),
}


class Setup:
    """Sizes and device of one run: the real shapes on CUDA, or small ones anywhere (``--small``)."""

    def __init__(self, small: bool):
        self.small = small
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.dtype = torch.bfloat16 if self.device == "cuda" else torch.float32
        self.pairs = 8 if small else 128
        self.image_px = 64 if small else 512
        self.big_batch = 4 if small else 32
        self.json_requests = 8 if small else 32
        self.json_batches = (2, 4) if small else (8, 32)
        self.json_tokens = 8 if small else 128
        self.sd_images, self.sd_batch, self.sd_steps, self.sd_px = (4, 2, 2, 64) if small else (32, 8, 20, 512)

    @property
    def dtype_name(self) -> str:
        return str(self.dtype).removeprefix("torch.")

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()


def timed(setup: Setup, fn) -> float:
    setup.sync()
    start = time.perf_counter()
    fn()
    setup.sync()
    return time.perf_counter() - start


def free(*objects) -> None:
    import gc

    del objects
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


# -- building the models -----------------------------------------------------------------------------------------------


def scale_init(model: torch.nn.Module, layers: int) -> None:
    """Normal(0, 0.02) linear and embedding weights, output projections smaller (GPT-2's 1/sqrt(2 x layers)),
    biases zero: 30-layer random stacks in bfloat16 keep finite activations."""
    outputs = ("o_proj", "down_proj", "out_proj", "fc2", "proj", "linear_2")
    with torch.no_grad():
        for name, module in model.named_modules():
            if isinstance(module, torch.nn.Linear):
                std = 0.02 / math.sqrt(2 * layers) if name.endswith(outputs) else 0.02
                module.weight.normal_(0.0, std)
                if module.bias is not None:
                    module.bias.zero_()
            elif isinstance(module, torch.nn.Embedding):
                module.weight.normal_(0.0, 0.02)


def build_llava(setup: Setup, folder: Path) -> Path:
    """LLaVA-1.5-7B's shape (CLIP ViT-L/14 at 336 px, Llama-2-7B, vocabulary 32,064) with the tests'
    tokenizer, processor and chat template (:mod:`t2ireason.testing`)."""
    from transformers import LlavaForConditionalGeneration

    from t2ireason.testing import VLMShape, _vlm_parts

    shape = VLMShape(image_size=56, patch_size=14, vision_hidden=64, vision_intermediate=128, vision_layers=2,
                     vision_heads=4, text_hidden=64, text_intermediate=128, text_layers=2, text_heads=4,
                     text_kv_heads=4, max_positions=2048) if setup.small else VLMShape(
        image_size=336, patch_size=14, vision_hidden=1024, vision_intermediate=4096, vision_layers=24,
        vision_heads=16, text_hidden=4096, text_intermediate=11008, text_layers=32, text_heads=32, text_kv_heads=32,
        max_positions=4096)
    tokenizer, processor, config = _vlm_parts(shape)
    if not setup.small:
        config.text_config.vocab_size = 32064
    with torch.device(setup.device):
        model = LlavaForConditionalGeneration._from_config(config, dtype=setup.dtype)
    scale_init(model, shape.text_layers)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    free(model)
    return folder


def build_qwen(setup: Setup, folder: Path) -> Path:
    """Qwen2.5-VL-7B's shape (a 32-block window-attention vision tower of width 1280, a 28-layer text model
    of width 3584, vocabulary 152,064) with the tiny family's tokenizer, processor and the checkpoint's
    chat template (:mod:`t2ireason.testing_families`), images up to Qwen's default pixel budget."""
    from transformers import AutoConfig, AutoModelForImageTextToText, AutoProcessor

    from t2ireason.testing_families import build_family

    tiny = build_family("qwen2.5-vl", Path(_HOME) / "families")
    processor, config = AutoProcessor.from_pretrained(tiny), AutoConfig.from_pretrained(tiny)
    if not setup.small:
        values = config.to_dict()
        values["text_config"].pop("layer_types", None)  # derived from the depth, derived again
        values["text_config"].update(
            hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
            num_key_value_heads=4, head_dim=128, vocab_size=152064, max_position_embeddings=32768,
            rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]})
        values["vision_config"].update(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16,
                                       out_hidden_size=3584, window_size=112, fullatt_block_indexes=[7, 15, 23, 31])
        config = type(config).from_dict(values)
        image_processor = processor.image_processor
        image_processor.size = {"shortest_edge": 56 * 56, "longest_edge": 28 * 28 * 1280}  # Qwen's defaults
        for key, value in (("min_pixels", 56 * 56), ("max_pixels", 28 * 28 * 1280)):
            if hasattr(image_processor, key):
                setattr(image_processor, key, value)
    with torch.device(setup.device):
        model = AutoModelForImageTextToText.from_config(config, dtype=setup.dtype)
    scale_init(model, 32)
    model.generation_config.pad_token_id = processor.tokenizer.pad_token_id
    model.generation_config.eos_token_id = processor.tokenizer.eos_token_id
    model.save_pretrained(folder)
    processor.save_pretrained(folder)
    free(model)
    return folder


def build_sd(setup: Setup, folder: Path) -> Path:
    """Stable Diffusion 1.5's shape (860M UNet, its VAE, a CLIP ViT-L text encoder) in float16, DDIM."""
    if setup.small:
        from t2ireason.testing import build_tiny_sd

        return build_tiny_sd(folder)
    from diffusers import AutoencoderKL, DDIMScheduler, StableDiffusionPipeline, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    from t2ireason.testing import _clip_tokenizer

    with torch.device(setup.device):
        unet = UNet2DConditionModel(sample_size=64, cross_attention_dim=768, attention_head_dim=8,
                                    block_out_channels=(320, 640, 1280, 1280), layers_per_block=2).half()
        vae = AutoencoderKL(block_out_channels=(128, 256, 512, 512), latent_channels=4, sample_size=512,
                            down_block_types=("DownEncoderBlock2D",) * 4, up_block_types=("UpDecoderBlock2D",) * 4,
                            layers_per_block=2).half()
        tokenizer = _clip_tokenizer(model_max_length=77)
        text_encoder = CLIPTextModel(CLIPTextConfig(
            vocab_size=49408, hidden_size=768, intermediate_size=3072, num_hidden_layers=12, num_attention_heads=12,
            max_position_embeddings=77, bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
            pad_token_id=tokenizer.pad_token_id)).half()
    for module in (unet, vae, text_encoder):
        scale_init(module, 16)
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012, beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    StableDiffusionPipeline(vae=vae, text_encoder=text_encoder, tokenizer=tokenizer, unet=unet, scheduler=scheduler,
                            safety_checker=None, feature_extractor=None, image_encoder=None,
                            requires_safety_checker=False).save_pretrained(folder)
    free(unet, vae, text_encoder)
    return folder


def write_images(setup: Setup, folder: Path) -> list[Path]:
    """PNG files of smooth random pictures with some grain (they compress about as photographs do)."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    paths = []
    for i in range(setup.pairs):
        coarse = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8)).resize(
            (setup.image_px, setup.image_px), Image.Resampling.BICUBIC)
        grain = rng.integers(-6, 7, (setup.image_px, setup.image_px, 3))
        pixels = np.clip(np.asarray(coarse, dtype=np.int16) + grain, 0, 255).astype(np.uint8)
        paths.append(folder / f"{i:04d}.png")
        Image.fromarray(pixels).save(paths[-1])
    return paths


# -- the hardware's own rates --------------------------------------------------------------------------------------------


def matmul_flops(setup: Setup) -> float:
    """The measured rate of one large matmul in the run's dtype (FLOP/s): the roofline's peak."""
    n = 1024 if setup.small or setup.device == "cpu" else 8192
    a = torch.randn(n, n, device=setup.device, dtype=setup.dtype)
    a @ a
    runs = 3 if setup.device == "cpu" else 20
    seconds = timed(setup, lambda: [a @ a for _ in range(runs)]) / runs
    return 2 * n**3 / seconds


def copy_bandwidth(setup: Setup) -> float:
    """The measured device-memory rate (bytes/s: read plus write of a large copy)."""
    n = (64 if setup.small else 1024) * 2**20
    x = torch.empty(n, dtype=torch.uint8, device=setup.device)
    y = torch.empty_like(x)
    y.copy_(x)
    seconds = timed(setup, lambda: [y.copy_(x) for _ in range(10)]) / 10
    return 2 * n / seconds


# -- VQAScore ----------------------------------------------------------------------------------------------------------


QUESTION = ('Does this figure show "a red double-decker bus parked beside a stone bridge over a river at dusk, '
            'with three people waiting at the stop"? Please answer yes or no.')


def vqascore(setup: Setup, folder: Path, paths: list[Path], peak: float) -> dict[str, float]:
    """ms a pair: the project at batch 1 and the big batch, the bare loops, the forward alone, the roofline."""
    from t2ireason.images import as_image
    from t2ireason.judges import load_judge

    judge = load_judge(f"hf:{folder}", dtype=setup.dtype_name, device=setup.device)
    model, processor = judge.hf_model, judge.processor
    questions = [QUESTION] * len(paths)
    n, big = len(paths), setup.big_batch
    out = {}
    for batch in (1, big):
        judge.batch_size = batch
        judge.yes_probability([as_image(p) for p in paths[:batch]], questions[:batch])  # warm up
        out[f"project_b{batch}"] = timed(setup, lambda: judge.yes_probability([str(p) for p in paths], questions))
    yes = judge.tokenizer("Yes", add_special_tokens=False).input_ids[-1]

    def encode(batch_paths):
        images = [Image.open(p).convert("RGB") for p in batch_paths]
        conversation = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": QUESTION}]}]
        text = processor.apply_chat_template(conversation, add_generation_prompt=True)
        return processor(text=[text] * len(images), images=images, padding=True, return_tensors="pt")

    def forward(enc):
        with torch.inference_mode():
            enc = enc.to(setup.device, dtype=setup.dtype)
            # no KV cache: a batch of 32 LLaVA-7B prompts would keep 12 GB of it
            return model(**enc, use_cache=False, logits_to_keep=1).logits[:, -1].float().softmax(-1)[:, yes].tolist()

    batches = [paths[i : i + big] for i in range(0, n, big)]
    forward(encode(paths[:1])), forward(encode(batches[0]))  # warm up
    out["bare_per_pair"] = timed(setup, lambda: [forward(encode([p])) for p in paths])
    out["bare_batched"] = timed(setup, lambda: [forward(encode(b)) for b in batches])

    def threaded():
        with ThreadPoolExecutor(1) as pool:
            pending = pool.submit(encode, batches[0])
            for following in [*batches[1:], None]:
                enc = pending.result()
                if following is not None:
                    pending = pool.submit(encode, following)
                forward(enc)

    out["bare_batched_threaded"] = timed(setup, threaded)
    ready = [encode(b).to(setup.device, dtype=setup.dtype) for b in batches]
    tokens = sum(int(enc["attention_mask"].sum()) for enc in ready) / n
    def alone():
        with torch.inference_mode():
            for enc in ready:
                model(**enc, use_cache=False, logits_to_keep=1)

    out["forward_alone"] = timed(setup, alone)
    out = {key: seconds / n * 1000 for key, seconds in out.items()}
    parameters = sum(p.numel() for p in model.parameters())
    out["roofline"] = 2 * parameters * tokens / peak * 1000
    out["tokens_a_pair"] = tokens
    out["parameters_billions"] = parameters / 1e9
    out["attn_implementation"] = str(judge.identity().get("attn_implementation", "sdpa (transformers' default)"))
    free(judge, model, ready)
    return out


# -- JSON judgements ---------------------------------------------------------------------------------------------------


SCHEMA = {"type": "object", "properties": {"reasoning": {"type": "string"},
                                           "score": {"type": "integer", "minimum": 0, "maximum": 10}},
          "required": ["reasoning", "score"], "additionalProperties": False}
JSON_PROMPT = ("You are a careful judge of text-to-image models. Read the prompt and look at the picture. "
               "Say, step by step, which parts of the prompt the picture shows and which it misses, then give "
               "a score from 0 to 10. Prompt: a red double-decker bus parked beside a stone bridge over a river "
               "at dusk, with three people waiting at the stop. Answer in JSON with reasoning and score.")


def json_decoding(setup: Setup, folder: Path, paths: list[Path], bandwidth: float) -> dict[str, float]:
    """tokens/s of JSON judgements: the project eager and compiled, bare generate eager and static, the floor."""
    from t2ireason.judges import ChatRequest, Sampling, load_judge

    judge = load_judge(f"hf:{folder}", dtype=setup.dtype_name, device=setup.device,
                       sampling=Sampling(max_tokens=setup.json_tokens))
    model, processor = judge.hf_model, judge.processor
    images = [Image.open(p).convert("RGB") for p in paths[: setup.json_requests]]
    requests = [ChatRequest.simple(image, JSON_PROMPT, json_schema=SCHEMA) for image in images]
    out: dict[str, float] = {}
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())

    def project(batch: int, compiled: bool) -> float:
        judge.batch_size, judge.compiled_decoding = batch, compiled
        replies = []
        seconds = timed(setup, lambda: replies.extend(judge.chat(requests)))
        return sum(r.usage["completion_tokens"] for r in replies) / seconds

    conversation = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": JSON_PROMPT}]}]
    text = processor.apply_chat_template(conversation, add_generation_prompt=True)

    def bare(batch: int, static: bool) -> float:
        encs = [processor(text=[text] * len(images[i : i + batch]), images=images[i : i + batch], padding=True,
                          return_tensors="pt").to(setup.device, dtype=setup.dtype)
                for i in range(0, len(images), batch)]
        kwargs = {"max_new_tokens": setup.json_tokens, "min_new_tokens": setup.json_tokens, "do_sample": False,
                  "pad_token_id": judge.tokenizer.pad_token_id}
        if static:
            kwargs["cache_implementation"] = "static"
        with torch.inference_mode():
            seconds = timed(setup, lambda: [model.generate(**enc, **kwargs) for enc in encs])
        return len(images) * setup.json_tokens / seconds

    first_batch = setup.json_batches[0]
    project(first_batch, False)  # warm up (and llguidance's vocabulary, once)
    for batch in setup.json_batches:
        out[f"project_b{batch}"] = project(batch, False)
        out[f"bare_eager_b{batch}"] = bare(batch, False)
    for batch in setup.json_batches:  # compiled: the first call of each batch size compiles
        judge.batch_size, judge.compiled_decoding = batch, True
        out[f"compile_seconds_b{batch}"] = timed(setup, lambda b=batch: judge.chat(requests[:b]))
        out[f"project_compiled_b{batch}"] = project(batch, True)
        bare(batch, True)  # compiles
        out[f"bare_static_b{batch}"] = bare(batch, True)
        out[f"hbm_floor_b{batch}"] = batch * bandwidth / 2 / weight_bytes  # the copy rate counts read and write
    out["prompt_tokens"] = judge.chat(requests[:1])[0].usage["prompt_tokens"]
    free(judge, model)
    return out


# -- generation --------------------------------------------------------------------------------------------------------


def generation(setup: Setup, folder: Path) -> dict[str, float]:
    """ms an image: the project's generate, the bare loop without saving, saving inline, saving by a pool."""
    from t2ireason.generation import GenerationConfig, Job, generate, image_seed, load_pipeline

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
    out, root = {}, Path(tempfile.mkdtemp(dir=_HOME))
    out["project"] = timed(setup, lambda: generate(jobs, config, root / "project", pipeline=pipe, progress=False))
    out["bare_no_save"] = timed(setup, lambda: [draw(b) for b in batches])
    (root / "inline").mkdir()
    out["bare_inline_save"] = timed(setup, lambda: [image.save(root / "inline" / j.file)
                                                    for b in batches for j, image in zip(b, draw(b))])
    (root / "pool").mkdir()

    def pooled():
        with ThreadPoolExecutor(4) as pool:
            for b in batches:
                for j, image in zip(b, draw(b)):
                    pool.submit(image.save, root / "pool" / j.file)

    out["bare_pool_save"] = timed(setup, pooled)
    free(pipe)
    return {key: seconds / len(jobs) * 1000 for key, seconds in out.items()}


# -- the run -----------------------------------------------------------------------------------------------------------


def report(setup: Setup, name: str, value: float, details: dict, section: str) -> bool:
    if not setup.small:
        details = {**details, **{f"gpu_md_{k}": v for k, v in GPU_MD.get(section, {}).items()}}
    target = None if setup.small else TARGETS.get(name)
    return figure(name, value, details, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], allow_abbrev=False)
    parser.add_argument("--small", action="store_true", help="small models on any device: a smoke run of the code path")
    parser.add_argument("--only", default=",".join(SECTIONS), help=f"comma-separated sections among {SECTIONS}")
    args = parser.parse_args(argv)
    sections = [s for s in args.only.split(",") if s]
    unknown = set(sections) - set(SECTIONS)
    if unknown:
        parser.error(f"unknown section(s) {sorted(unknown)}; choose among {SECTIONS}")
    if not torch.cuda.is_available() and not args.small:
        print("note=no CUDA device here: perf/gpu.py measures the judges and the generator on a GPU and measured "
              "nothing (perf/gpu.py --small runs its code path with small models on this machine)")
        return 0
    setup = Setup(args.small)
    device = torch.cuda.get_device_name() if setup.device == "cuda" else "cpu"
    print(f"device={device}")
    print(f"torch={torch.__version__}")
    if setup.small:
        print("note=small models: a smoke run of the code path; the figures mean nothing and no target is checked")
    work = Path(_HOME)
    peak, bandwidth = matmul_flops(setup), copy_bandwidth(setup)
    print(f"matmul_tflops={peak / 1e12:.1f}")
    print(f"copy_gb_per_s={bandwidth / 1e9:.0f}")
    paths = write_images(setup, work / "images")
    met = True
    if "vqascore_llava" in sections or "json" in sections:
        llava = build_llava(setup, work / "llava")
    if "vqascore_llava" in sections:
        r = vqascore(setup, llava, paths, peak)
        big = setup.big_batch
        value = r.pop(f"project_b{big}")
        met &= report(setup, f"vqascore_llava_ms_a_pair_batch{big}", value, r, "vqascore_llava")
        met &= report(setup, "vqascore_llava_vs_forward_ratio", value / r["forward_alone"], {}, "")
        met &= report(setup, "vqascore_llava_batching_speedup", r["project_b1"] / value, {}, "")
    if "vqascore_qwen" in sections:
        if importlib.util.find_spec("torchvision") is None:
            print("vqascore_qwen=skipped")
            print("vqascore_qwen.note=Qwen2.5-VL's processor needs torchvision, not installed here")
        else:
            r = vqascore(setup, build_qwen(setup, work / "qwen"), paths, peak)
            big = setup.big_batch
            value = r.pop(f"project_b{big}")
            met &= report(setup, f"vqascore_qwen_ms_a_pair_batch{big}", value, r, "vqascore_qwen")
            met &= report(setup, "vqascore_qwen_vs_forward_ratio", value / r["forward_alone"], {}, "")
    if "json" in sections:
        r = json_decoding(setup, llava, paths, bandwidth)
        small_batch = setup.json_batches[0]
        met &= report(setup, f"json_tokens_per_s_batch{small_batch}", r[f"project_b{small_batch}"], r, "json")
        met &= report(setup, f"json_compiled_vs_eager_batch{small_batch}" if setup.small
                      else "json_compiled_vs_eager_batch8",
                      r[f"project_compiled_b{small_batch}"] / r[f"project_b{small_batch}"], {}, "")
    if "generation" in sections:
        r = generation(setup, build_sd(setup, work / "sd"))
        met &= report(setup, "generation_ms_an_image", r["project"], r, "generation")
        met &= report(setup, "generation_vs_bare_no_save_ratio", r["project"] / r["bare_no_save"], {}, "")
    return summary(met)


if __name__ == "__main__":
    try:
        status = main()
    finally:  # the models take tens of GB of disk
        shutil.rmtree(_HOME, ignore_errors=True)
    sys.exit(status)
