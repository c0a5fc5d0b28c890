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
