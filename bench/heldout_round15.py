"""Held-out training round 15 (issue 27; bench/train_heldout.py imports these).

Training programs no test or bench wrote before (rounds 1-14, train_zoo and the zoo rows read first), and
the first built with torchvision's and timm's own classes (bench-only dependencies, not rducc's:
`.venv/bin/pip install --no-deps torchvision==0.28.0 timm`; a model that needs one exits naming it).
torchvision at tiny widths where its classes take them: GoogLeNet with both auxiliary heads in train mode
(three logits, the aux losses weighted 0.3), SqueezeNet 1.1 (Fire modules, ceil-mode max pools, a
convolution classifier), MNASNet at alpha 0.25, ShuffleNetV2 (its own InvertedResidual units),
EfficientNet built from a mixed FusedMBConv / MBConv setting (the V2 layout), RegNet from BlockParams
(group widths, squeeze-excitation). timm: ConvMixer (depthwise residual mixing, patchify stem), CoaT
(convolutional relative position encoding over head splits, factorized attention, class tokens per stage),
LeViT (its own attention-bias table indexed by a buffer, BatchNorm'd Linear layers, subsample attention)
and MobileViT-v2 (separable self-attention over unfolded patches). By hand: a tied autoencoder whose
decoder uses each encoder layer's weight transposed over widths 12 -> 20 -> 9 -> 5 and one Linear module's
weight assigned to another module (`tied_autoencoder`); a neural ODE integrated by RK4, one field called a
fixed 4 x steps times in a Python loop with a per-stage step count (`rk4_field`); torch.utils.checkpoint
nested inside a checkpointed function, with keyword arguments and a tuple result (`nested_checkpoint`),
and the same with `use_reentrant=True` (`reentrant_checkpoint`); a CTC head trained by `F.ctc_loss`
(`ctc_head`); TripletMarginWithDistanceLoss with a cosine distance + CosineEmbeddingLoss summed +
KL divergence with log targets summed (`metric_losses`); buffers the forward updates other than a running
mean: a step counter, a running max normalizing the features, a ring of past batch means written at the
counter's slot (`buffer_stats`). Random init, dropout and stochastic depth 0; one input tensor per model.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import torch
from torch import nn
from torch.nn import functional as F
from torch.utils.checkpoint import checkpoint

Built = tuple[nn.Module, tuple[torch.Tensor, ...]]

_TORCHVISION_SCHEMAS: list[torch.library.Library] = []
"""Kept alive: the schemas `needs_torchvision` defines when torchvision's C++ ops cannot load."""


def _bench_dependency(model: str, package: str) -> SystemExit:
    return SystemExit(f"bench/train_heldout.py: model {model} needs {package}, a bench-only held-out probe that is "
                      "not a dependency of rducc (.venv/bin/pip install --no-deps torchvision==0.28.0 timm), or "
                      "leave it out of --models")


def needs_torchvision(model: str) -> Any:
    """torchvision, or exit naming the model. PyPI's torchvision 0.28.0 wheel is built against CUDA torch: with
    torch 2.13.0+cpu its C++ ops (nms, roi_align, ...) cannot load, and its `_meta_registrations` registers fake
    kernels for `torchvision::nms` / `qnms` without checking, so the import fails. Those two schemas are then
    defined (no kernels) and torchvision imported again: the classification models used here need none of its
    C++ ops (calling one raises torch's "no kernel" error)."""
    try:
        import torchvision
    except ImportError:
        raise _bench_dependency(model, "torchvision") from None
    except RuntimeError as error:
        if "torchvision::" not in str(error):
            raise
        for name in [name for name in sys.modules if name == "torchvision" or name.startswith("torchvision.")]:
            del sys.modules[name]
        schemas = torch.library.Library("torchvision", "DEF")
        for op in ("nms", "qnms"):
            schemas.define(f"{op}(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _TORCHVISION_SCHEMAS.append(schemas)
        import torchvision
    return torchvision


def torchvision_first_if_installed() -> None:
    """Import torchvision (by `needs_torchvision`'s route) before transformers does, where it is installed:
    transformers' image utilities import torchvision on their own, and the plain import's failure (above) then
    makes every transformers vision and Mamba class "Could not import module ..."."""
    if importlib.util.find_spec("torchvision") is not None:
        needs_torchvision("(torchvision preload)")


def needs_timm(model: str) -> Any:
    """timm (which imports torchvision), or exit naming the model."""
    needs_torchvision(model)
    try:
        import timm
    except ImportError:
        raise _bench_dependency(model, "timm") from None
    return timm


def _images(size: int = 32) -> tuple[torch.Tensor, ...]:
    return (torch.randn(2, 3, size, size),)


class _Heads(nn.Module):
    """GoogLeNet in train mode with aux_logits: its (logits, aux2, aux1) concatenated along classes."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.model(x)
        return torch.cat([out.logits, out.aux_logits2, out.aux_logits1], dim=1)


GOOGLENET_CLASSES = 5


def googlenet_aux() -> Built:
    models = needs_torchvision("googlenet_aux").models
    torch.manual_seed(0)
    model = models.GoogLeNet(num_classes=GOOGLENET_CLASSES, aux_logits=True, transform_input=True,
                             init_weights=True, dropout=0.0, dropout_aux=0.0)
    return _Heads(model), _images()


def googlenet_loss(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """torchvision's reference recipe: the main head's cross entropy plus 0.3 x each auxiliary head's."""
    main, aux2, aux1 = out.split(GOOGLENET_CLASSES, dim=1)
    return F.cross_entropy(main, labels) + 0.3 * (F.cross_entropy(aux1, labels) + F.cross_entropy(aux2, labels))


def squeezenet() -> Built:
    models = needs_torchvision("squeezenet").models
    torch.manual_seed(0)
    return models.SqueezeNet(version="1_1", num_classes=5, dropout=0.0), _images()


def mnasnet() -> Built:
    models = needs_torchvision("mnasnet").models
    torch.manual_seed(0)
    return models.MNASNet(alpha=0.25, num_classes=5, dropout=0.0), _images(64)


def shufflenet_v2() -> Built:
    models = needs_torchvision("shufflenet_v2").models
    torch.manual_seed(0)
    # 64 x 64: at 32 x 32 the last stage is 1 x 1 and its batch norms normalize 2 values per channel; 4 SGD
    # steps of eager float32 then land 0.21 from float64's (the case is ill-conditioned, whoever computes it)
    return models.ShuffleNetV2(stages_repeats=[2, 1, 1], stages_out_channels=[8, 16, 32, 48, 64],
                               num_classes=5), _images(64)


def efficientnet_mixed() -> Built:
    efficientnet = needs_torchvision("efficientnet_mixed").models.efficientnet
    torch.manual_seed(0)
    setting = [efficientnet.FusedMBConvConfig(1, 3, 1, 8, 8, 1), efficientnet.FusedMBConvConfig(4, 3, 2, 8, 16, 2),
               efficientnet.MBConvConfig(4, 3, 2, 16, 24, 1), efficientnet.MBConvConfig(6, 5, 1, 24, 32, 1)]
    model = efficientnet.EfficientNet(setting, dropout=0.0, stochastic_depth_prob=0.0, num_classes=5,
                                      last_channel=48)
    return model, _images()


def regnet() -> Built:
    regnet_module = needs_torchvision("regnet").models.regnet
    torch.manual_seed(0)
    params = regnet_module.BlockParams.from_init_params(depth=4, w_0=8, w_a=6.0, w_m=2.0, group_width=4,
                                                        se_ratio=0.25)
    return regnet_module.RegNet(params, num_classes=5, stem_width=8), _images()


def convmixer() -> Built:
    timm = needs_timm("convmixer")
    torch.manual_seed(0)
    return timm.models.convmixer.ConvMixer(dim=16, depth=2, kernel_size=5, patch_size=2, num_classes=5), _images(16)


def coat() -> Built:
    timm = needs_timm("coat")
    torch.manual_seed(0)
    model = timm.models.coat.CoaT(img_size=32, patch_size=4, num_classes=5, embed_dims=(8, 16, 16, 24),
                                  serial_depths=(1, 1, 1, 1), parallel_depth=0, num_heads=2, mlp_ratios=(2, 2, 2, 2),
                                  crpe_window={3: 1, 5: 1})
    return model, _images()


def levit() -> Built:
    timm = needs_timm("levit")
    torch.manual_seed(0)
    model = timm.models.levit.Levit(img_size=64, num_classes=5, embed_dim=(16, 24), key_dim=8,
                                    depth=(1, 1), num_heads=(2, 3), attn_ratio=2.0, mlp_ratio=2.0)
    return model, _images(64)


def mobilevit_v2() -> Built:
    timm = needs_timm("mobilevit_v2")
    torch.manual_seed(0)
    cfg = timm.models.mobilevit._mobilevitv2_cfg(multiplier=0.25)
    return timm.models.byobnet.ByobNet(cfg, num_classes=5), _images(64)


class _TiedAutoencoder(nn.Module):
    """Encoder Linear layers over widths 12 -> 20 -> 9 -> 5; the decoder runs back through each encoder
    layer's weight transposed (F.linear with weight.t()) with biases of its own; a classifier Linear whose
    weight is the bottleneck's: `classify.weight = encoder[2].weight` assigned across modules. Output: the
    classes and the reconstruction residual."""

    def __init__(self, widths: tuple[int, ...] = (12, 20, 9, 5)) -> None:
        super().__init__()
        self.encoder = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:], strict=False))
        self.decoder_bias = nn.ParameterList(nn.Parameter(torch.zeros(w)) for w in widths[:-1])
        self.classify = nn.Linear(widths[-2], widths[-1])
        self.classify.weight = self.encoder[2].weight

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h, hidden = x, []
        for layer in self.encoder:
            hidden.append(h)
            h = torch.tanh(layer(h))
        for i in reversed(range(len(self.encoder))):
            h = F.linear(h, self.encoder[i].weight.t(), self.decoder_bias[i])
            h = torch.tanh(h) if i else h
        return torch.cat([self.classify(hidden[-1]), h - x], dim=1)


def tied_autoencoder() -> Built:
    torch.manual_seed(0)
    return _TiedAutoencoder(), (torch.randn(6, 12),)


def classes_and_reconstruction(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Cross entropy of the first 5 columns plus the mean squared reconstruction residual."""
    return F.cross_entropy(out[:, :5], labels) + out[:, 5:].pow(2).mean()


class _Field(nn.Module):
    """dh/dt = f(h, t): an MLP of h and t (t a Python float, a constant in the trace)."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.inp, self.time = nn.Linear(width, 2 * width), nn.Linear(1, 2 * width)
        self.out = nn.Linear(2 * width, width)

    def forward(self, h: torch.Tensor, t: float) -> torch.Tensor:
        return self.out(torch.tanh(self.inp(h) + self.time(h.new_full((1,), t))))


class _Rk4Field(nn.Module):
    """Two stages, each a neural ODE integrated by classic RK4 over t in [0, 1] with its own step count (3
    steps of width 10, then 2 of width 6): each stage's field is called 4 x steps times in a Python loop;
    projections between the stages change the width."""

    def __init__(self) -> None:
        super().__init__()
        self.stages = nn.ModuleList([_Field(10), _Field(6)])
        self.steps = (3, 2)
        self.inp, self.join, self.head = nn.Linear(7, 10), nn.Linear(10, 6), nn.Linear(6, 4)

    @staticmethod
    def integrate(field: nn.Module, h: torch.Tensor, steps: int) -> torch.Tensor:
        dt = 1.0 / steps
        for i in range(steps):
            t = i * dt
            k1 = field(h, t)
            k2 = field(h + 0.5 * dt * k1, t + 0.5 * dt)
            k3 = field(h + 0.5 * dt * k2, t + 0.5 * dt)
            k4 = field(h + dt * k3, t + dt)
            h = h + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return h

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.integrate(self.stages[0], self.inp(x), self.steps[0])
        h = self.integrate(self.stages[1], self.join(h), self.steps[1])
        return self.head(h)


def rk4_field() -> Built:
    torch.manual_seed(0)
    return _Rk4Field(), (torch.randn(5, 7),)


class _NestedCheckpoint(nn.Module):
    """A checkpointed function (keyword arguments, a tuple result) that itself checkpoints an inner block;
    widths 8 -> 14 -> 10; `reentrant` picks torch.utils.checkpoint's use_reentrant."""

    def __init__(self, reentrant: bool = False) -> None:
        super().__init__()
        self.reentrant = reentrant
        self.inner = nn.Sequential(nn.LayerNorm(14), nn.Linear(14, 14), nn.GELU())
        self.up, self.down = nn.Linear(8, 14), nn.Linear(14, 10)
        self.gate = nn.Linear(8, 10)
        self.head = nn.Linear(10, 5)

    def outer(self, x: torch.Tensor, scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
        h = torch.relu(self.up(x))
        h = h + checkpoint(self.inner, h, use_reentrant=self.reentrant)
        return self.down(h) * scale, torch.sigmoid(self.gate(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.reentrant:  # the reentrant form takes no keyword arguments for the function
            h, gate = checkpoint(self.outer, x, 0.5, use_reentrant=True)
        else:
            h, gate = checkpoint(self.outer, x, scale=0.5, use_reentrant=False)
        return self.head(h * gate)


def nested_checkpoint() -> Built:
    torch.manual_seed(0)
    return _NestedCheckpoint(), (torch.randn(6, 8),)


def reentrant_checkpoint() -> Built:
    """Refused by design (rducc names the call and use_reentrant=False). Here eager itself gives the
    checkpointed layers no gradient: none of the reentrant checkpoint's inputs requires grad (torch warns)."""
    torch.manual_seed(0)
    return _NestedCheckpoint(reentrant=True), (torch.randn(6, 8),)


CTC_CLASSES, CTC_TARGET = 6, 3


class _CtcHead(nn.Module):
    """Frames by a strided Conv1d over 12 input steps, a GRU-free tagger (two Conv1d, SiLU), per-frame
    classes (blank 0) as (batch, frames, classes) logits."""

    def __init__(self) -> None:
        super().__init__()
        self.frames = nn.Conv1d(4, 12, 3, stride=1, padding=1)
        self.mix = nn.Conv1d(12, 12, 3, padding=1)
        self.out = nn.Linear(12, CTC_CLASSES)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.silu(self.frames(x))
        h = h + F.silu(self.mix(h))
        return self.out(h.transpose(1, 2))


def ctc_head() -> Built:
    torch.manual_seed(0)
    return _CtcHead(), (torch.randn(3, 4, 10),)


def ctc(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """CTC over the frames' log-probabilities ((frames, batch, classes), blank 0); sample b's target is
    1 + (label + k) % 5 for k < 1 + b % CTC_TARGET (lengths 1 to 3, a padded (batch, CTC_TARGET) matrix) and
    its input length the frames less b (every sample a different length)."""
    batch, frames = logits.shape[0], logits.shape[1]
    steps = torch.arange(CTC_TARGET, device=labels.device)
    targets = (labels.view(-1, 1) + steps) % (CTC_CLASSES - 1) + 1
    target_lengths = [1 + b % CTC_TARGET for b in range(batch)]
    input_lengths = [frames - b for b in range(batch)]
    log_probs = logits.log_softmax(-1).transpose(0, 1)
    return F.ctc_loss(log_probs, targets, input_lengths, target_lengths, blank=0, reduction="mean")


class _Embedder(nn.Module):
    """An MLP embedding (9 -> 16 -> 8) and a 5-class head off the same trunk."""

    def __init__(self) -> None:
        super().__init__()
        self.trunk = nn.Sequential(nn.Linear(9, 16), nn.GELU(), nn.Linear(16, 8))
        self.head = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e = self.trunk(x)
        return torch.cat([e, self.head(torch.tanh(e))], dim=1)


def metric_losses_model() -> Built:
    torch.manual_seed(0)
    return _Embedder(), (torch.randn(6, 9),)


def _cosine_distance(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return 1 - F.cosine_similarity(a, b, dim=-1)


def metric_losses(out: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Anchors, positives (the next row) and negatives (rolled by 2): TripletMarginWithDistanceLoss with a
    cosine distance (margin 0.3, swap), CosineEmbeddingLoss of anchor / negative pairs labelled by label
    parity (sum), KL(targets || head) with the targets log-softmaxed labels one-hot smoothed (log_target,
    sum over the batch)."""
    e, logits = out[:, :8], out[:, 8:]
    anchor, positive, negative = e, e.roll(1, 0), e.roll(2, 0)
    triplet = nn.TripletMarginWithDistanceLoss(distance_function=_cosine_distance, margin=0.3, swap=True)
    sign = torch.where(labels % 2 == 0, 1.0, -1.0)
    targets = (F.one_hot(labels, 5).to(out.dtype) * 2.0).log_softmax(-1)
    return (triplet(anchor, positive, negative)
            + F.cosine_embedding_loss(anchor, negative, sign, margin=0.1, reduction="sum")
            + F.kl_div(logits.log_softmax(-1), targets, reduction="sum", log_target=True))


class _BufferStats(nn.Module):
    """Buffers the forward updates: a step counter (int64, += 1), a running max of |features| per feature
    (copy_ of torch.maximum) that normalizes them, and a ring of the last 3 batch means written at slot
    counter % 3 (index_copy_ at a tensor index), whose mean is subtracted."""

    def __init__(self) -> None:
        super().__init__()
        self.inp, self.out = nn.Linear(7, 12), nn.Linear(12, 4)
        self.register_buffer("count", torch.zeros((), dtype=torch.long))
        self.register_buffer("running_max", torch.ones(12))
        self.register_buffer("ring", torch.zeros(3, 12))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.inp(x))
        with torch.no_grad():
            self.running_max.copy_(torch.maximum(self.running_max, h.abs().amax(0)))
            self.ring.index_copy_(0, (self.count % 3).view(1), h.mean(0, keepdim=True))
            self.count += 1
        return self.out(h / self.running_max - self.ring.mean(0))


def buffer_stats() -> Built:
    torch.manual_seed(0)
    return _BufferStats(), (torch.randn(6, 7),)
