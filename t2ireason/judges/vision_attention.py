"""Attention for the vision towers that attend window by window or image by image (Qwen2-VL, Qwen2.5-VL,
Qwen3-VL): one attention call a layer instead of one a window (issue 41).

transformers runs these towers' attention on a packed sequence (every patch of every image, one after the
other) cut into pieces by ``cu_seqlens``: windows of 8 x 8 patches for Qwen2.5-VL's windowed layers,
whole images for its full-attention layers and for Qwen2-VL and Qwen3-VL. With a flash-attention
implementation it passes the boundaries to one varlen kernel call; with any other (SDPA, the default) it
splits the sequence and calls the kernel once a piece: for Qwen2.5-VL-7B at batch 32 (512 px images),
about 45,000 small calls a batch, half its time on an H100 (../shared/gpu.md).

Where ``flash_attn`` is installed, the model is on CUDA in half precision and the user chose nothing,
:func:`fitting_attention` asks for flash-attention 2 for the vision tower. Everywhere else,
:func:`use_varlen_sdpa` gives the tower :func:`varlen_sdpa`: the pieces gathered into one padded batch
(a key-padding mask for the shorter ones) and attended to in one ``scaled_dot_product_attention`` call,
then scattered back; when every piece has the same length (full-attention layers over images of one
size) the batch is a view, with no padding and no mask. Float32 outputs equal the window-by-window ones
to rounding (tests/judges/test_vision_attention.py).

How it is selected: transformers decides whether a vision attention module receives the boundaries by
the implementation's *name* (``"flash" in config._attn_implementation``), and validates a name with
"flash" in it at load time as a flash-attention package or a Hub kernel. So the function is registered
with transformers' ``AttentionInterface`` under :data:`VARLEN_SDPA` (which says "flash" for that
reason) and set on the vision sub-config after loading; nothing of transformers' own code is replaced.
"""

from __future__ import annotations

from typing import Any

__all__ = ["VARLEN_VISION_FAMILIES", "VARLEN_SDPA", "varlen_sdpa", "use_varlen_sdpa", "fitting_attention"]

#: families whose vision tower attends image by image (Qwen2-VL, Qwen3-VL) or window by window (Qwen2.5-VL)
VARLEN_VISION_FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe")

#: the name :func:`varlen_sdpa` is registered under: transformers passes the pieces' boundaries only to an
#: implementation whose name contains "flash" (it is SDPA, in one call a layer)
VARLEN_SDPA = "t2ireason_varlen_sdpa_via_flash_path"


def varlen_sdpa(module: Any, query: Any, key: Any, value: Any, attention_mask: Any = None, scaling: float | None = None,
                dropout: float = 0.0, cu_seq_lens_q: Any = None, cu_seq_lens_k: Any = None,
                max_length_q: int | None = None, max_length_k: int | None = None, is_causal: bool = False,
                **kwargs: Any) -> tuple[Any, None]:
    """Attention within each piece of a packed sequence, in one SDPA call.

    ``query``, ``key``, ``value``: ``(1, heads, tokens, dim)``, the pieces one after the other, bounded by
    ``cu_seq_lens_q`` (``(pieces + 1,)`` cumulative lengths, the same for the keys: self-attention);
    ``max_length_q`` the longest piece. Returns ``((1, tokens, heads, dim), None)`` as transformers'
    attention functions do. A call without boundaries is transformers' own SDPA.
    """
    import torch
    from torch.nn.functional import scaled_dot_product_attention
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if cu_seq_lens_q is None or query.shape[0] != 1:
        return sdpa_attention_forward(module, query, key, value, attention_mask, scaling=scaling, dropout=dropout,
                                      is_causal=is_causal, **kwargs)
    _, heads, total, dim = query.shape
    bounds = cu_seq_lens_q.to(device=query.device, dtype=torch.long)
    pieces = bounds.shape[0] - 1
    longest = int(max_length_q) if max_length_q is not None else int((bounds[1:] - bounds[:-1]).max())
    if pieces * longest == total:  # every piece as long as the longest: a batch by reshaping, nothing padded
        def batch(x):
            return x[0].unflatten(1, (pieces, longest)).transpose(0, 1)  # (pieces, heads, longest, dim)

        out = scaled_dot_product_attention(batch(query), batch(key), batch(value), scale=scaling,
                                           dropout_p=dropout, is_causal=is_causal)
        return out.transpose(1, 2).reshape(1, total, heads, dim), None
    position = torch.arange(longest, device=query.device)
    valid = position < (bounds[1:] - bounds[:-1]).unsqueeze(1)  # (pieces, longest): real tokens, not padding
    gather = (bounds[:-1].unsqueeze(1) + position).clamp_(max=total - 1)  # a padded slot reads any real token

    def padded(x):
        return x[0][:, gather].transpose(0, 1)  # (pieces, heads, longest, dim)

    # padded keys are masked out; padded queries attend to their piece's real keys and are dropped below
    out = scaled_dot_product_attention(padded(query), padded(key), padded(value), attn_mask=valid[:, None, None, :],
                                       scale=scaling, dropout_p=dropout, is_causal=is_causal)
    token = torch.arange(total, device=query.device)
    piece = torch.searchsorted(bounds[1:], token, right=True)  # each token's piece, without a host sync
    out = out.transpose(1, 2)[piece, token - bounds[piece]]  # (tokens, heads, dim), in the packed order
    return out.unsqueeze(0), None


def use_varlen_sdpa(model: Any) -> dict | None:
    """Give the vision tower of a :data:`VARLEN_VISION_FAMILIES` model loaded with transformers' default
    attention (SDPA) :func:`varlen_sdpa`; returns what was set (``{"vision_config": VARLEN_SDPA}``, for
    the judge's identity) or None when the model is of another family or its tower uses another
    implementation (one the user chose, flash-attention, eager)."""
    from transformers import AttentionInterface

    config = model.config
    vision = getattr(config, "vision_config", None)
    if config.model_type not in VARLEN_VISION_FAMILIES or vision is None or vision._attn_implementation != "sdpa":
        return None
    AttentionInterface.register(VARLEN_SDPA, varlen_sdpa)
    # the tower's modules read the config they were built with: the vision config, or a copy of it
    configs = {id(vision): vision}
    for module in model.modules():
        sub = getattr(module, "config", None)
        if type(sub) is type(vision):
            configs[id(sub)] = sub
    for sub in configs.values():
        sub._attn_implementation = VARLEN_SDPA
    return {"vision_config": VARLEN_SDPA}


def fitting_attention(model: str, load: dict, dtype: Any, device_map: Any, device: str | None) -> dict | None:
    """The attention implementation to ask ``from_pretrained`` for when the user names none: flash-attention 2
    for the vision tower of :data:`VARLEN_VISION_FAMILIES` when ``flash_attn`` is installed and the model
    goes to CUDA in half precision (the kernel takes nothing else), else ``None`` (transformers' default,
    SDPA, which :func:`use_varlen_sdpa` then turns into one call a layer for those towers)."""
    import torch
    from transformers import AutoConfig
    from transformers.utils import is_flash_attn_2_available

    if not (torch.cuda.is_available() and is_flash_attn_2_available()):
        return None
    target = device_map if device_map is not None else device or "cuda"
    if isinstance(target, str) and not target.startswith(("cuda", "auto", "balanced", "sequential")):
        return None
    config = AutoConfig.from_pretrained(model, **load)
    if config.model_type not in VARLEN_VISION_FAMILIES or "vision_config" not in getattr(config, "sub_configs", {}):
        return None
    resolved = getattr(config, "dtype", None) if dtype == "auto" else dtype
    if str(resolved).removeprefix("torch.") not in ("float16", "bfloat16"):
        return None
    return {"vision_config": "flash_attention_2"}
