"""The Qwen-VL vision towers' attention in one call a layer (issue 41): the same outputs as transformers' SDPA
window by window (image by image), at float32, on tiny towers built from their configs (no processor, so no
torchvision needed)."""

import pytest
import torch
import transformers

from t2ireason.judges.vision_attention import VARLEN_SDPA, use_varlen_sdpa

TEXT = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 8, "vocab_size": 100, "bos_token_id": 1, "eos_token_id": 2,
        "pad_token_id": 0}
ROPE = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 2]}
FAMILIES = {
    # a Qwen2.5-VL tower: windows of 4 x 4 merged patches (56 px), full attention in blocks 1 and 3
    "qwen2_5_vl": ("Qwen2_5_VLConfig", "Qwen2_5_VLForConditionalGeneration",
                   {"depth": 4, "hidden_size": 32, "num_heads": 4, "patch_size": 14, "spatial_merge_size": 2,
                    "temporal_patch_size": 2, "intermediate_size": 64, "out_hidden_size": 32, "window_size": 56,
                    "fullatt_block_indexes": [1, 3]}, 14),
    "qwen2_vl": ("Qwen2VLConfig", "Qwen2VLForConditionalGeneration",
                 {"depth": 2, "embed_dim": 32, "hidden_size": 32, "num_heads": 4, "mlp_ratio": 2, "patch_size": 14,
                  "spatial_merge_size": 2, "temporal_patch_size": 2}, 14),
    "qwen3_vl": ("Qwen3VLConfig", "Qwen3VLForConditionalGeneration",
                 {"depth": 2, "hidden_size": 32, "intermediate_size": 64, "num_heads": 4, "patch_size": 16,
                  "spatial_merge_size": 2, "temporal_patch_size": 2, "out_hidden_size": 32,
                  "num_position_embeddings": 16, "deepstack_visual_indexes": [1]}, 16),
}
#: images of several sizes (windows cut at their edges) and, for the even path, all of one size
MIXED = [[1, 10, 14], [1, 6, 6], [1, 10, 14], [1, 4, 8]]
EVEN = [[1, 8, 8]] * 3


def _model(family):
    config_class, model_class, vision, _ = FAMILIES[family]
    text = {**TEXT, "rope_parameters": {**ROPE, **({"mrope_interleaved": True} if family == "qwen3_vl" else {})}}
    torch.manual_seed(0)
    config = getattr(transformers, config_class)(text_config=text, vision_config=vision)
    return getattr(transformers, model_class)(config).eval()


def _sdpa_calls(monkeypatch):
    calls, real = [], torch.nn.functional.scaled_dot_product_attention

    def counting(*args, **kwargs):
        calls.append(args[0].shape)
        return real(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", counting)
    return calls


@pytest.mark.parametrize("family", list(FAMILIES))
@pytest.mark.parametrize("grid", [MIXED, EVEN], ids=["mixed-sizes", "one-size"])
def test_one_call_a_layer_gives_the_window_by_window_outputs(family, grid, monkeypatch):
    model = _model(family)
    visual = model.model.visual
    patch = FAMILIES[family][3]
    grid = torch.tensor(grid)
    pixels = torch.randn(int(grid.prod(-1).sum()), 3 * 2 * patch * patch, generator=torch.Generator().manual_seed(1))
    calls = _sdpa_calls(monkeypatch)
    with torch.inference_mode():
        reference = visual(pixels, grid_thw=grid).pooler_output
        window_by_window = len(calls)
        assert use_varlen_sdpa(model) == {"vision_config": VARLEN_SDPA}
        assert visual.config._attn_implementation == VARLEN_SDPA
        assert model.config.text_config._attn_implementation == "sdpa"  # the language model is left alone
        calls.clear()
        got = visual(pixels, grid_thw=grid).pooler_output
    depth = visual.config.depth
    assert len(calls) == depth < window_by_window  # one call a layer, where the pieces were called one by one
    assert torch.allclose(got, reference, atol=2e-6, rtol=1e-5), (got - reference).abs().max()


def test_only_the_families_that_attend_piece_by_piece_and_only_by_default(tiny_models):
    from transformers import AutoModelForImageTextToText

    llava = AutoModelForImageTextToText.from_pretrained(tiny_models["vlm"])
    assert use_varlen_sdpa(llava) is None and llava.config.vision_config._attn_implementation == "sdpa"
    chosen = _model("qwen2_5_vl")
    chosen.set_attn_implementation({"vision_config": "eager"})  # the user's choice stays
    assert use_varlen_sdpa(chosen) is None and chosen.config.vision_config._attn_implementation == "eager"
