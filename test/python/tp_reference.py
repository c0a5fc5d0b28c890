"""Eager tensor parallelism as torch computes it: the reference of a tp=N training
cell (issue 27, bench/train_matrix.py).

rducc's tp step splits a linear layer's weight by output columns (its result
split: q/k/v, gate/up, an LM or class head) or by rows (its input split, its
result a partial sum all-reduced: o_proj, down_proj). `tp_plan` reads that
split from the compiled step (each weight's `rdu.shard`) and names torch's own
style for each layer: `ColwiseParallel` for a weight split along dim 0,
`RowwiseParallel` for one split along dim 1; a head whose output is the model's
output (its classes or vocabulary split) keeps its output split and the loss is
taken under `loss_parallel` (each rank's log-sum-exp over its columns, all-reduced),
as rducc's vocabulary-split cross entropy. A convolution rducc splits by output
channels convolves each rank's channels and gathers them, its input's gradient
all-reduced (`_split_channels`); another module's split parameter (a class token,
a position table, a norm's scale) is gathered where it is used (`_Gathered`:
exact, as rducc's split of it, where no sum runs along the split dim).
`train_tp` trains the model so parallelized over `plan.ranks` processes (gloo on
this machine, a file store: no network), eager and torch.optim, under CPU
autocast to bf16 and in float32: what a user training tensor-parallel in eager
gets, with its own rounding (DTensor all-reduces a bf16 partial sum in bf16).

A split that torch's styles cannot express (a weight split in periodic blocks,
a fused q/k/v Conv1D's; a linear weight along another dim) raises
`Unexpressible` naming it: the caller keeps the one-socket reference there.
"""

from __future__ import annotations

import copy
import os
import tempfile
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import torch
from torch import nn

STYLES = {0: "colwise", 1: "rowwise"}
"""The dim of an nn.Linear weight rducc splits -> torch's parallel style (weight is [out, in])."""


class Unexpressible(Exception):
    """rducc's split of a parameter has no torch tensor-parallel style."""


@dataclass(frozen=True)
class TpPlan:
    """torch's styles for rducc's split: layer name -> "colwise" / "rowwise" (an nn.Linear),
    "channels" (a convolution split by output channels), "sharded" (another module whose
    parameters rducc splits, each along `shards[parameter]`: torch's DTensor ops propagate it);
    `head`: the colwise layer whose output is the model's output (its output stays split:
    `loss_parallel`)."""

    styles: tuple[tuple[str, str], ...]
    shards: tuple[tuple[str, int], ...]
    head: str | None
    ranks: int


def split_parameters(module: object, prefix: str) -> dict[str, tuple[int, int, int]]:
    """Each split weight of a compiled step (its `rdu.shard`): name -> (dim, parts, period)."""
    from rducc.dialects.contracts import shard_of

    splits = {}
    for op in module.walk():  # type: ignore[attr-defined]
        split, name = shard_of(op), op.properties.get("sym_name")
        if split is None or name is None or not name.data.startswith(prefix):
            continue
        if len(split.entries) != 1:
            raise Unexpressible(f"{name.data}: split along several dims ({split.describe()})")
        dim, parts, _stride, period = split.entries[0]
        splits[name.data.removeprefix(prefix)] = (dim, parts, period)
    return splits


def tp_plan(splits: dict[str, tuple[int, int, int]], model: nn.Module, example: Sequence[torch.Tensor]) -> TpPlan:
    """torch's styles for rducc's `splits` of `model`'s parameters (`split_parameters`)."""
    owners = {f"{name}.{kind}": (name, module, kind) for name, module in model.named_modules()
              for kind, _ in module.named_parameters(recurse=False)}
    styles: dict[str, str] = {}
    shards: dict[str, int] = {}
    ranks = 1
    for parameter, (dim, parts, period) in splits.items():
        if parameter not in owners:
            continue  # optimizer state, a buffer
        name, module, kind = owners[parameter]
        if period:
            raise Unexpressible(f"{parameter}: {type(module).__name__} split along dim {dim} in periodic "
                                "blocks: no torch parallel style")
        style = _style(module, kind, dim)
        if style is None or styles.get(name, style) != style:
            raise Unexpressible(f"{parameter}: {type(module).__name__} split along dim {dim}: no torch parallel style")
        styles[name], shards[parameter], ranks = style, dim, parts
    head = _head(model, example, [n for n, s in styles.items() if s == "colwise"])
    return TpPlan(tuple(sorted(styles.items())), tuple(sorted(shards.items())), head, ranks)


def _style(module: nn.Module, kind: str, dim: int) -> str | None:
    """The style of `module` whose parameter `kind` rducc splits along `dim`."""
    if isinstance(module, nn.Linear):
        return STYLES.get(dim) if kind == "weight" else "colwise" if dim == 0 else None
    if isinstance(module, nn.modules.conv._ConvNd):
        return "channels" if dim == 0 and not module.transposed else None
    return "sharded"


def _head(model: nn.Module, example: Sequence[torch.Tensor], colwise: list[str]) -> str | None:
    """The colwise layer whose output is the model's output (same storage), if any."""
    probe, outputs = copy.deepcopy(model), dict[str, torch.Tensor]()  # a copy: the forward may update buffers
    for name in colwise:
        probe.get_submodule(name).register_forward_hook(lambda _m, _i, out, name=name: outputs.__setitem__(name, out))
    with torch.no_grad():
        result = probe(*example)
    storage = result.untyped_storage().data_ptr()
    return next((name for name, out in outputs.items() if out.untyped_storage().data_ptr() == storage), None)


TrainedRun = tuple[list[float], dict[str, torch.Tensor]]


def train_tp(build: Callable[[], nn.Module], state: dict[str, torch.Tensor], plan: TpPlan,
             loss: Callable[..., torch.Tensor], optimizer: str, data: list[tuple[torch.Tensor, torch.Tensor]],
             precisions: Sequence[bool] = (True, False)) -> list[TrainedRun]:
    """Train the model `build()` makes (picklable: each process builds its own), loaded with
    `state`, tensor-parallel as `plan` says over `plan.ranks` processes, one run per entry of
    `precisions` (True: under CPU autocast to bf16; False: float32), each from `state` on `data`
    with `training_cases.OPTIMIZERS[optimizer]`: the losses and the whole parameters after the
    last step."""
    import torch.multiprocessing as mp

    with tempfile.TemporaryDirectory() as folder:
        store, out = Path(folder) / "store", Path(folder) / "runs.pt"
        mp.spawn(_rank, args=(plan, build, state, loss, optimizer, data, list(precisions), str(store), str(out)),
                 nprocs=plan.ranks, join=True)
        return torch.load(out, weights_only=False)


def _rank(rank: int, plan: TpPlan, build: Callable[[], nn.Module], state: dict[str, torch.Tensor],
          loss: Callable[..., torch.Tensor], optimizer: str, data: list[tuple[torch.Tensor, torch.Tensor]],
          precisions: list[bool], store: str, out: str) -> None:
    """Process `rank` of `train_tp`: its replica of each run; rank 0 saves the runs to `out`."""
    import torch.distributed as dist
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor
    from torch.distributed.tensor.parallel import loss_parallel
    from training_cases import OPTIMIZERS, Around

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // plan.ranks))
    dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=plan.ranks)
    try:
        mesh = init_device_mesh("cpu", (plan.ranks,))
        model = build()
        model.load_state_dict(state)
        runs = []
        for autocast in precisions:
            replica = parallelized(copy.deepcopy(model), plan, mesh)
            step_optimizer = OPTIMIZERS[optimizer](replica.parameters())
            with loss_parallel() if plan.head else nullcontext():
                losses = [Around().step(replica, loss, step_optimizer, x, y, autocast) for x, y in data]
            whole = {parameter_name(name): p.full_tensor() if isinstance(p, DTensor) else p
                     for name, p in replica.named_parameters()}
            runs.append((losses, {name: p.detach().clone() for name, p in whole.items()}))
        if rank == 0:
            torch.save(runs, out)
    finally:
        dist.destroy_process_group()


def parallelized(model: nn.Module, plan: TpPlan, mesh: object) -> nn.Module:
    """`model` split over `mesh` as `plan` says, with torch's tensor-parallel styles; every
    value between the layers a plain tensor, whole on every rank."""
    from torch.distributed.tensor import Shard, distribute_tensor
    from torch.distributed.tensor.parallel import ColwiseParallel, RowwiseParallel, parallelize_module
    from torch.nn.utils import parametrize

    styles = dict(plan.styles)
    linear = {name: RowwiseParallel() if style == "rowwise" else
              ColwiseParallel(output_layouts=Shard(-1), use_local_output=False) if name == plan.head else
              ColwiseParallel() for name, style in styles.items() if style in STYLES.values()}
    for name, style in styles.items():
        if style == "rowwise":
            model.get_submodule(name).register_forward_pre_hook(partial(_rows_of_whole, mesh=mesh))
    model = parallelize_module(model, mesh, linear)  # type: ignore[arg-type]
    for parameter, dim in plan.shards:
        name, _, kind = parameter.rpartition(".")
        if styles[name] in STYLES.values():
            continue
        owner = model.get_submodule(name)
        setattr(owner, kind, nn.Parameter(distribute_tensor(getattr(owner, kind).data, mesh, [Shard(dim)])))
        if styles[name] == "sharded":
            parametrize.register_parametrization(owner, kind, _Gathered())
    for name, style in styles.items():
        if style == "channels":
            _split_channels(model.get_submodule(name), mesh)
    return model


def _rows_of_whole(layer: nn.Module, args: tuple[torch.Tensor, ...], mesh: object) -> tuple[torch.Tensor, ...] | None:
    """A row-split layer's input when it arrives whole (a convolution's gathered channels): this
    rank's features of it, and the input's gradient all-gathered from the ranks' in the backward."""
    from torch.distributed.tensor import DTensor, Replicate, Shard

    x = args[0]
    if isinstance(x, DTensor) or x.shape[-1] != layer.in_features:
        return None
    whole = DTensor.from_local(x, mesh, [Replicate()], run_check=False)
    return (whole.redistribute(mesh, [Shard(x.dim() - 1)]).to_local(), *args[1:])


def parameter_name(name: str) -> str:
    """A parametrized parameter's name as the model names it (`a.parametrizations.w.original` -> `a.w`)."""
    return name.replace("parametrizations.", "").removesuffix(".original")


class _Gathered(nn.Module):
    """A split parameter of a module with no torch style, all-gathered where the module uses it: its
    values (and its gradient, each rank's slice of the whole) are the unsplit module's. Exact when no
    sum runs along the split dim (a class token or position table split along the features, a
    norm's scale by channels: rducc's split then changes no rounding either)."""

    def forward(self, shard: torch.Tensor) -> torch.Tensor:
        return shard.full_tensor()  # type: ignore[attr-defined]


def _split_channels(conv: nn.Module, mesh: object) -> None:
    """A convolution whose weight and bias are split by output channels (DTensors, Shard(0)): each
    rank convolves the whole input with its channels, the result is all-gathered along dim 1, and
    the input's gradient, each rank's partial sum over its channels, is all-reduced (as
    ColwiseParallel does for a linear layer's)."""
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard

    def forward(x: torch.Tensor) -> torch.Tensor:
        local = DTensor.from_local(x, mesh, [Replicate()], run_check=False).to_local(grad_placements=[Partial()])
        bias = conv.bias.to_local() if conv.bias is not None else None
        y = conv._conv_forward(local, conv.weight.to_local(), bias)
        return DTensor.from_local(y, mesh, [Shard(1)], run_check=False).full_tensor()

    conv.forward = forward  # type: ignore[method-assign]


def split_sums(model: nn.Module, plan: TpPlan) -> nn.Module:
    """`model` (changed in place) computing, in one process, each layer `plan` splits as rducc's
    tp step computes it (`rdu_partition`'s `_widen_partial`): a sum that runs along the split dim
    is `plan.ranks` partial sums, each a product of the layer's 16-bit operands kept in float32,
    added in float32 (the all-reduce) with the bias and rounded to the 16-bit type once. That is
    a row-split linear layer's forward and a column-split one's input gradient (and a convolution
    split by output channels: its input gradient). Every other value is one kernel's, as eager
    autocast computes it on one device: a column-split layer's outputs and its weight's gradient
    (no sum along the split), the other split parameters (exact: gathered, as `_Gathered`). Under
    autocast it is the honest eager reference of a bf16 tp cell (torch's TP, `train_tp`, rounds
    each rank's partial sum to bf16 before a bf16 all-reduce, which rducc does not); in float32
    it computes the model's function. A vocabulary-split head's loss is taken whole (rducc sums
    each rank's exponentials in float32: an order, not a rounding)."""
    for name, style in plan.styles:
        layer = model.get_submodule(name)
        if style in STYLES.values():
            layer.forward = partial(_split_linear, layer, dim=0 if style == "colwise" else 1,  # type: ignore[method-assign]
                                    ranks=plan.ranks)
        elif style == "channels":
            layer.forward = partial(_split_channels_once, layer, ranks=plan.ranks)  # type: ignore[method-assign]
    return model


def _autocast_operands(*tensors: torch.Tensor | None) -> list[torch.Tensor | None]:
    """`tensors` cast as autocast casts a matmul's operands (none outside autocast)."""
    if not torch.is_autocast_enabled("cpu"):
        return list(tensors)
    dtype = torch.get_autocast_dtype("cpu")
    return [None if t is None else t.to(dtype) for t in tensors]


def _split_linear(layer: nn.Linear, x: torch.Tensor, dim: int, ranks: int) -> torch.Tensor:
    """`layer(x)` with its weight split along `dim` (0: output features, 1: input features) over `ranks`."""
    x, weight, bias = _autocast_operands(x, layer.weight, layer.bias)
    with torch.autocast("cpu", enabled=False):
        return _SplitLinear.apply(x, weight, bias, dim, ranks)


def _partial_sums(products: list[torch.Tensor], out: torch.dtype, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The all-reduce of float32 partial sums (in rank order), the bias added in float32, rounded to `out` once."""
    total = products[0].float()
    for product in products[1:]:
        total = total + product.float()
    return (total if bias is None else total + bias.float()).to(out)


class _SplitLinear(torch.autograd.Function):
    """A linear layer computed as rducc's tp=N step computes it (`split_sums`)."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, dim: int,
                ranks: int) -> torch.Tensor:
        ctx.save_for_backward(x, weight)  # type: ignore[attr-defined]
        ctx.dim, ctx.ranks, ctx.bias = dim, ranks, bias is not None  # type: ignore[attr-defined]
        flat = x.reshape(-1, x.shape[-1])
        if dim == 0:
            biases = bias.chunk(ranks) if bias is not None else [None] * ranks
            y = torch.cat([nn.functional.linear(flat, w, b) for w, b in zip(weight.chunk(ranks), biases)], -1)
        else:
            y = _partial_sums([xr.float() @ wr.float().T for xr, wr in zip(flat.chunk(ranks, -1),
                                                                          weight.chunk(ranks, -1))], x.dtype, bias)
        return y.reshape(*x.shape[:-1], weight.shape[0])

    @staticmethod
    def backward(ctx: object, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors  # type: ignore[attr-defined]
        flat, dy = x.reshape(-1, x.shape[-1]), dy.reshape(-1, weight.shape[0]).to(x.dtype)
        if ctx.dim == 0:  # type: ignore[attr-defined]
            dx = _partial_sums([dr.float() @ wr.float() for dr, wr in zip(dy.chunk(ctx.ranks, -1),  # type: ignore[attr-defined]
                                                                          weight.chunk(ctx.ranks))], x.dtype)
        else:
            dx = dy @ weight
        db = dy.sum(0) if ctx.bias else None  # type: ignore[attr-defined]
        return dx.reshape(x.shape), dy.T @ flat, db, None, None


def _split_channels_once(conv: nn.Module, x: torch.Tensor, ranks: int) -> torch.Tensor:
    """`conv(x)` with its output channels split over `ranks`: each rank's channels by one kernel,
    the input's gradient the float32 sum of each rank's (`split_sums`)."""
    x, weight, bias = _autocast_operands(x, conv.weight, conv.bias)
    with torch.autocast("cpu", enabled=False):
        return _SplitChannels.apply(x, weight, bias, conv, ranks)


class _SplitChannels(torch.autograd.Function):
    """A convolution split by output channels as rducc's tp=N step computes it."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, conv: nn.Module,
                ranks: int) -> torch.Tensor:
        ctx.save_for_backward(x, weight, bias)  # type: ignore[attr-defined]
        ctx.conv, ctx.ranks = conv, ranks  # type: ignore[attr-defined]
        return conv._conv_forward(x, weight, bias)  # type: ignore[operator]

    @staticmethod
    def backward(ctx: object, dy: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        from torch.func import vjp

        x, weight, bias = ctx.saved_tensors  # type: ignore[attr-defined]
        conv, ranks = ctx.conv, ctx.ranks  # type: ignore[attr-defined]
        dy = dy.to(x.dtype)
        if bias is None:
            (dweight,), dbias = vjp(lambda w: conv._conv_forward(x, w, None), weight)[1](dy), None
        else:
            dweight, dbias = vjp(lambda w, b: conv._conv_forward(x, w, b), weight, bias)[1](dy)
        dx = None
        if ctx.needs_input_grad[0]:  # type: ignore[attr-defined]
            wide = x.float()
            dx = _partial_sums([vjp(lambda inp, w=wr: conv._conv_forward(inp, w.float(), None), wide)[1](dr.float())[0]
                                for wr, dr in zip(weight.chunk(ranks), dy.chunk(ranks, 1))], x.dtype)
        return dx, dweight, dbias, None, None
