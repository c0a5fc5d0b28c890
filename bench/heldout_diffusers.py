"""A held-out zoo of diffusers architectures (issue 30, round 15): a local probe, not part of CI.

diffusers is not a dependency of rducc: this bench needs it installed (`pip install diffusers`) and says
so and exits 1 when it is absent. Tiny configurations, random init (every parameter nudged by noise, so
the zero-initialized output convolutions of ControlNet and DiT do not hide a wrong path): UNet2DModel,
UNet2DConditionModel (cross attention, timestep and class embeddings; attention processors
`AttnProcessor` and `AttnProcessor2_0`), AutoencoderKL encode and decode, VQModel, DiT, PixArt-alpha,
SD3's MM-DiT and a ControlNet. Each is compiled at -O0 and -O2 through `rducc.compile` and, with `--cli`,
through the command line, and compared with eager (1e-4) on its example and on another input
(`heldout_sweep.run_case` / `run_case_cli`).

    .venv/bin/python bench/heldout_diffusers.py [--cli | --cli-only] [NAME ...]

`--cli-only`: the command line alone (its verdicts without `rducc.compile`'s, for a second process).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_sweep import Case, run_case, run_case_cli  # noqa: E402

try:
    import diffusers
except ImportError:  # pragma: no cover - the probe's one dependency
    diffusers = None

_UNET = dict(sample_size=8, block_out_channels=(16, 32), layers_per_block=1, norm_num_groups=8)
_COND = dict(_UNET, in_channels=4, out_channels=4, cross_attention_dim=16, attention_head_dim=4,
             down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"), up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"))
_VAE = dict(block_out_channels=(16, 32), down_block_types=("DownEncoderBlock2D",) * 2,
            up_block_types=("UpDecoderBlock2D",) * 2, latent_channels=4, norm_num_groups=8, sample_size=16)
_DIT = dict(num_attention_heads=2, attention_head_dim=8, in_channels=4, num_layers=1, sample_size=8, patch_size=2)


def _seeded(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _noise(*shape: int, seed: int) -> torch.Tensor:
    return torch.randn(*shape, generator=_seeded(seed))


class Call(nn.Module):
    """The model called by `call(model, *inputs)`, its outputs as a tensor or a tuple of tensors."""

    def __init__(self, model: nn.Module, call: Callable[..., Any]) -> None:
        super().__init__()
        self.model, self.call = model, call

    def forward(self, *inputs: torch.Tensor) -> Any:
        return self.call(self.model, *inputs)


def _nudged(model: nn.Module) -> nn.Module:
    torch.manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.05)
    return model.eval()


def _unet2d() -> tuple[nn.Module, Callable[..., Any], Callable[[int], tuple]]:
    config = dict(_UNET, sample_size=16, in_channels=3, out_channels=3, attention_head_dim=8,
                  down_block_types=("DownBlock2D", "AttnDownBlock2D"), up_block_types=("AttnUpBlock2D", "UpBlock2D"))
    return (diffusers.UNet2DModel(**config), lambda m, x, t: m(x, t).sample,
            lambda s: (_noise(1, 3, 16, 16, seed=s), torch.tensor([10 + 40 * s])))


def _unet_cond(processor: str) -> Callable[[], tuple]:
    def make() -> tuple[nn.Module, Callable[..., Any], Callable[[int], tuple]]:
        model = diffusers.UNet2DConditionModel(**_COND, num_class_embeds=3)
        if processor:
            model.set_attn_processor(getattr(diffusers.models.attention_processor, processor)())
        return (model, lambda m, x, t, c, y: m(x, t, c, class_labels=y).sample,
                lambda s: (_noise(2, 4, 8, 8, seed=s), torch.tensor([5 + 30 * s, 900 - s]), _noise(2, 3, 16, seed=s + 9),
                           torch.tensor([s % 3, 2])))
    return make


def _vae_encode() -> tuple:
    return (diffusers.AutoencoderKL(**_VAE), lambda m, x: m.encode(x).latent_dist.mean,
            lambda s: (_noise(1, 3, 16, 16, seed=s),))


def _vae_decode() -> tuple:
    return (diffusers.AutoencoderKL(**_VAE), lambda m, z: m.decode(z).sample, lambda s: (_noise(1, 4, 8, 8, seed=s),))


def _vq() -> tuple:
    model = diffusers.VQModel(**dict(_VAE, latent_channels=4), num_vq_embeddings=16, vq_embed_dim=4)
    return model, lambda m, x: m(x).sample, lambda s: (_noise(1, 3, 16, 16, seed=s),)


def _dit() -> tuple:
    model = diffusers.DiTTransformer2DModel(**_DIT, out_channels=8, num_embeds_ada_norm=10, norm_num_groups=8)
    return (model, lambda m, x, t, y: m(x, timestep=t, class_labels=y).sample,
            lambda s: (_noise(2, 4, 8, 8, seed=s), torch.tensor([3 + s, 700]), torch.tensor([s, 4])))


def _pixart() -> tuple:
    model = diffusers.PixArtTransformer2DModel(**_DIT, out_channels=8, cross_attention_dim=16, caption_channels=16,
                                               norm_num_groups=8)
    return (model, lambda m, x, c, t: m(x, encoder_hidden_states=c, timestep=t,
                                        added_cond_kwargs={"resolution": None, "aspect_ratio": None}).sample,
            lambda s: (_noise(2, 4, 8, 8, seed=s), _noise(2, 5, 16, seed=s + 3), torch.tensor([3 + s, 700])))


def _sd3() -> tuple:
    model = diffusers.SD3Transformer2DModel(sample_size=8, patch_size=2, in_channels=4, num_layers=2, attention_head_dim=8,
                                            num_attention_heads=2, joint_attention_dim=16, caption_projection_dim=16,
                                            pooled_projection_dim=12, out_channels=4, pos_embed_max_size=16)
    return (model, lambda m, x, c, p, t: m(x, encoder_hidden_states=c, pooled_projections=p, timestep=t).sample,
            lambda s: (_noise(1, 4, 8, 8, seed=s), _noise(1, 5, 16, seed=s + 3), _noise(1, 12, seed=s + 5),
                       torch.tensor([3.0 + 100 * s])))


def _residuals(m: nn.Module, x: torch.Tensor, t: torch.Tensor, c: torch.Tensor, hint: torch.Tensor) -> tuple:
    """ControlNet's down-block residuals and its mid-block residual, as one tuple."""
    down, mid = m(x, t, c, controlnet_cond=hint, return_dict=False)
    return (*down, mid)


def _controlnet() -> tuple:
    model = diffusers.ControlNetModel(**{k: v for k, v in _COND.items() if k not in ("up_block_types", "out_channels",
                                                                                      "sample_size")},
                                      conditioning_embedding_out_channels=(8, 16))
    return (model, _residuals,
            lambda s: (_noise(1, 4, 8, 8, seed=s), torch.tensor([50 + s]), _noise(1, 3, 16, seed=s + 2),
                       _noise(1, 3, 16, 16, seed=s + 4)))


ZOO: dict[str, Callable[[], tuple]] = {
    "unet2d": _unet2d,
    "unet_cond": _unet_cond(""),
    "unet_cond_attnproc": _unet_cond("AttnProcessor"),
    "unet_cond_attnproc2": _unet_cond("AttnProcessor2_0"),
    "vae_encode": _vae_encode,
    "vae_decode": _vae_decode,
    "vqmodel": _vq,
    "dit": _dit,
    "pixart": _pixart,
    "sd3": _sd3,
    "controlnet": _controlnet,
}
"""name -> () -> (model, how it is called, seed -> inputs)."""


def zoo_case(name: str) -> Case:
    torch.manual_seed(0)
    model, call, inputs = ZOO[name]()
    return Case(name, "diffusers", Call(_nudged(model), call), [inputs(1), inputs(2)])


def main(argv: list[str]) -> int:
    if diffusers is None:
        print("bench/heldout_diffusers.py needs diffusers (a local probe, not a dependency of rducc): "
              "pip install diffusers", file=sys.stderr)
        return 1
    wanted = [a for a in argv if not a.startswith("-")] or list(ZOO)
    passed, total = 0, 0
    for name in wanted:
        start = time.time()
        case = zoo_case(name)
        for level in (0, 2):
            verdicts = [] if "--cli-only" in argv else [run_case(case, level)]
            if "--cli" in argv or "--cli-only" in argv:
                with tempfile.TemporaryDirectory() as directory:
                    verdicts.append(run_case_cli(case, level, Path(directory)))
            passed += sum(v == "ok" for v in verdicts)
            total += len(verdicts)
            shown = " | cli ".join(verdicts) if "--cli-only" not in argv else f"cli {verdicts[0]}"
            print(f"{name:20} -O{level} {shown} ({time.time() - start:.0f} s)", flush=True)
    print(f"{passed}/{total} compile and match eager ({passed / max(total, 1):.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
