"""A held-out zoo of architectures no other test or bench of rducc uses (issue 30, round 14).

Tiny configurations of transformers families (decoders, encoder-decoders, encoders with their
own attention or mixing, state-space and hybrid models, mixtures of experts), vision backbones and
speech encoders, random init. Each is compiled at -O0 and -O2 through `rducc.compile` and, with
`--cli`, through the command line (`torch.export.save`, `rducc`, `rducc-run`), and compared with
eager on its example and on another input (`heldout_sweep.run_case` / `run_case_cli`).

    .venv/bin/python bench/heldout_zoo.py [--cli] [NAME ...]
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import transformers
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_sweep import Case, run_case, run_case_cli  # noqa: E402

_TEXT = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, vocab_size=96,
             max_position_embeddings=64)
_SEQ2SEQ = dict(d_model=32, encoder_layers=1, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
                encoder_ffn_dim=64, decoder_ffn_dim=64, vocab_size=96, max_position_embeddings=64, pad_token_id=0,
                decoder_start_token_id=0)
_MOE = dict(_TEXT, num_key_value_heads=2, num_experts_per_tok=2)
_CONV_AUDIO = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64, conv_dim=(16, 16),
                   conv_stride=(5, 2), conv_kernel=(10, 3), num_conv_pos_embeddings=8, num_conv_pos_embedding_groups=2)

ZOO: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    # decoders
    "mpt": ("text", "MptConfig", "MptForCausalLM",
            dict(d_model=32, n_heads=4, n_layers=2, expansion_ratio=2, vocab_size=96, max_seq_len=64)),
    "codegen": ("text", "CodeGenConfig", "CodeGenForCausalLM",
                dict(n_embd=32, n_layer=2, n_head=4, rotary_dim=4, vocab_size=96, n_positions=64, n_ctx=64)),
    "xglm": ("text", "XGLMConfig", "XGLMForCausalLM",
             dict(d_model=32, num_layers=2, attention_heads=4, ffn_dim=64, vocab_size=96, max_position_embeddings=64)),
    "xlnet": ("text", "XLNetConfig", "XLNetLMHeadModel",
              dict(d_model=32, n_layer=2, n_head=4, d_inner=64, vocab_size=96)),
    # encoder-decoders
    "pegasus": ("seq2seq", "PegasusConfig", "PegasusForConditionalGeneration", _SEQ2SEQ),
    "marian": ("seq2seq", "MarianConfig", "MarianMTModel", _SEQ2SEQ),
    # encoders
    "bigbird_full": ("text", "BigBirdConfig", "BigBirdForMaskedLM", dict(_TEXT, attention_type="original_full")),
    "roformer": ("text", "RoFormerConfig", "RoFormerForMaskedLM", dict(_TEXT, embedding_size=32)),
    "convbert": ("text", "ConvBertConfig", "ConvBertForMaskedLM",
                 dict(_TEXT, embedding_size=32, conv_kernel_size=3, head_ratio=2)),
    "squeezebert": ("text", "SqueezeBertConfig", "SqueezeBertForMaskedLM",
                    dict(_TEXT, embedding_size=32, q_groups=2, k_groups=2, v_groups=2, post_attention_groups=2,
                         intermediate_groups=4, output_groups=4)),
    "esm_rotary": ("text", "EsmConfig", "EsmForMaskedLM",
                   dict(_TEXT, pad_token_id=1, mask_token_id=2, position_embedding_type="rotary")),
    "fnet": ("text", "FNetConfig", "FNetForMaskedLM", dict(_TEXT, use_tpu_fourier_optimizations=False)),
    "megatron_bert": ("text", "MegatronBertConfig", "MegatronBertForMaskedLM", _TEXT),
    "ernie": ("text", "ErnieConfig", "ErnieForMaskedLM", _TEXT),
    # state-space and hybrids
    "rwkv": ("text", "RwkvConfig", "RwkvForCausalLM",
             dict(hidden_size=32, num_hidden_layers=2, attention_hidden_size=32, intermediate_size=64, vocab_size=96,
                  context_length=64)),
    "mamba2": ("text", "Mamba2Config", "Mamba2ForCausalLM",
               dict(hidden_size=32, num_hidden_layers=2, num_heads=4, head_dim=16, state_size=8, n_groups=1,
                    vocab_size=96, expand=2, chunk_size=4)),
    "falcon_mamba": ("text", "FalconMambaConfig", "FalconMambaForCausalLM",
                     dict(hidden_size=32, num_hidden_layers=2, state_size=8, vocab_size=96, expand=2,
                          use_mambapy=True)),
    "jamba": ("text", "JambaConfig", "JambaForCausalLM",
              dict(_MOE, num_experts=4, expert_layer_period=2, expert_layer_offset=1, attn_layer_period=2,
                   attn_layer_offset=1, mamba_d_state=4, mamba_d_conv=4, mamba_expand=2, mamba_dt_rank=4,
                   use_mamba_kernels=False)),
    "bamba": ("text", "BambaConfig", "BambaForCausalLM",
              dict(_TEXT, num_key_value_heads=2, attn_layer_indices=[1], mamba_n_heads=4, mamba_d_head=16,
                   mamba_n_groups=1, mamba_d_state=8, mamba_chunk_size=4, mamba_expand=2)),
    # mixtures of experts
    "olmoe": ("text", "OlmoeConfig", "OlmoeForCausalLM", dict(_MOE, num_experts=4)),
    "granitemoe": ("text", "GraniteMoeConfig", "GraniteMoeForCausalLM", dict(_MOE, num_local_experts=4)),
    "jetmoe": ("text", "JetMoeConfig", "JetMoeForCausalLM", dict(_MOE, kv_channels=8, num_local_experts=4)),
    "phimoe": ("text", "PhimoeConfig", "PhimoeForCausalLM", dict(_MOE, num_local_experts=4)),
    # vision
    "pvt_v2": ("image", "PvtV2Config", "PvtV2ForImageClassification",
               dict(hidden_sizes=[16, 32], depths=[1, 1], num_encoder_blocks=2, num_attention_heads=[1, 2],
                    sr_ratios=[2, 1], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2], num_labels=5)),
    "focalnet": ("image", "FocalNetConfig", "FocalNetForImageClassification",
                 dict(embed_dim=16, depths=[1, 1], focal_levels=[2, 2], focal_windows=[3, 3], image_size=32,
                      patch_size=4, num_labels=5)),
    "hiera": ("image", "HieraConfig", "HieraForImageClassification",
              dict(embed_dim=16, image_size=[32, 32], patch_size=[3, 3], patch_stride=[2, 2], patch_padding=[1, 1],
                   depths=[1, 1], num_heads=[1, 2], query_stride=[2, 2], masked_unit_size=[4, 4], num_query_pool=1,
                   masked_unit_attention=[True, False], num_labels=5)),
    "bit": ("image", "BitConfig", "BitForImageClassification",
            dict(embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], num_groups=8, num_labels=5)),
    "dpt": ("image", "DPTConfig", "DPTForDepthEstimation",
            dict(hidden_size=32, num_hidden_layers=4, num_attention_heads=4, intermediate_size=64, image_size=32,
                 patch_size=8, backbone_out_indices=[0, 1, 2, 3], neck_hidden_sizes=[8, 16, 16, 32],
                 fusion_hidden_size=16, head_hidden_size=8)),
    "glpn": ("image", "GLPNConfig", "GLPNForDepthEstimation",
             dict(hidden_sizes=[8, 16], depths=[1, 1], num_encoder_blocks=2, num_attention_heads=[1, 2],
                  sr_ratios=[2, 1], patch_sizes=[7, 3], strides=[4, 2], mlp_ratios=[2, 2], decoder_hidden_size=16)),
    "swin2sr": ("image16", "Swin2SRConfig", "Swin2SRForImageSuperResolution",
                dict(image_size=16, embed_dim=16, depths=[1], num_heads=[2], window_size=4, upscale=2)),
    # speech
    "hubert": ("audio", "HubertConfig", "HubertModel", _CONV_AUDIO),
    "wavlm": ("audio", "WavLMConfig", "WavLMModel", dict(_CONV_AUDIO, num_buckets=16, max_bucket_distance=32)),
}
"""name -> (input kind, config class, model class, tiny config)."""


class Head(nn.Module):
    """The model called as its family is, returning its first output (logits, depth, hidden states)."""

    def __init__(self, model: nn.Module, kind: str) -> None:
        super().__init__()
        self.model, self.kind = model, kind

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.kind == "seq2seq":
            out = self.model(input_ids=x, decoder_input_ids=x[:, :5], use_cache=False)
        elif self.kind == "text":
            out = self.model(input_ids=x, use_cache=False) if hasattr(self.model.config, "use_cache") \
                else self.model(input_ids=x)
        elif self.kind.startswith("image"):
            out = self.model(pixel_values=x)
        else:
            out = self.model(x)
        return out.logits if hasattr(out, "logits") else out[0]


def _inputs(kind: str) -> list[tuple[torch.Tensor]]:
    def seeded(seed: int) -> torch.Generator:
        return torch.Generator().manual_seed(seed)

    if kind in ("text", "seq2seq"):
        return [(torch.randint(3, 96, (2, 8), generator=seeded(s)),) for s in (1, 2)]
    if kind.startswith("image"):
        side = 16 if kind == "image16" else 32
        return [(torch.randn(1, 3, side, side, generator=seeded(s)),) for s in (1, 2)]
    return [(torch.randn(1, 400, generator=seeded(s)),) for s in (1, 2)]


def zoo_case(name: str) -> Case:
    kind, config_class, model_class, config = ZOO[name]
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config_class)(**config)).eval()
    return Case(name, "zoo", Head(model, kind), _inputs(kind))


def main(argv: list[str]) -> int:
    wanted = [a for a in argv if not a.startswith("-")] or list(ZOO)
    passed, total = 0, 0
    for name in wanted:
        start = time.time()
        case = zoo_case(name)
        for level in (0, 2):
            verdicts = [run_case(case, level)]
            if "--cli" in argv:
                with tempfile.TemporaryDirectory() as directory:
                    verdicts.append(run_case_cli(case, level, Path(directory)))
            passed += sum(v == "ok" for v in verdicts)
            total += len(verdicts)
            print(f"{name:14} -O{level} {' | cli '.join(verdicts)} ({time.time() - start:.0f} s)", flush=True)
    print(f"{passed}/{total} compile and match eager ({passed / max(total, 1):.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
