"""Compile time of a training step's optimizer stage: torch.optim's update traced
per parameter shape (and decomposed per parameter) against traced once per
(optimizer, dtype, rank) and reused for every shape (`rducc.training.update_shapes`).

    python bench/train_optimizer_trace.py              # diffusers' UNet2DModel (bench/train_zoo.py's), AdamW
    python bench/train_optimizer_trace.py --model llama --optimizer sgd

Both ways append the update of every trained parameter to the same imported
joint graph, in the same run; the ratio and the traces each needed are printed,
and the two steps' optimizer ops are checked to be the same program (the same
op names and types, in order).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import torch
from xdsl.dialects.builtin import ModuleOp

from rducc.driver import StageTimes, decompose_and_import
from rducc.frontend.importer import decompose
from rducc.training import update_shapes
from rducc.training.compile import _trained_parameters, joint_graph
from rducc.training.optimizers import Trained, named_optimizer, update_program
from rducc.training.program import export_for_training
from rducc.training.step import append_optimizer


def _unet() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from train_zoo import _unet2d

    return _unet2d()


def _llama() -> tuple[torch.nn.Module, dict[str, torch.Tensor]]:
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=128, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    ids = torch.randint(0, 128, (2, 16))
    return LlamaForCausalLM(config), {"input_ids": ids, "labels": ids}


MODELS: dict[str, Callable[[], tuple[torch.nn.Module, dict[str, torch.Tensor]]]] = {"unet": _unet, "llama": _llama}


def _per_shape(spec: Any, parameter: torch.Tensor, unscale: float | None) -> torch.export.ExportedProgram:
    """Before: `update_program` traced once per shape, decomposed once per parameter."""
    return decompose(update_program(spec, parameter, unscale))


def _timed_append(imported: ModuleOp, trained: Trained, parameters: dict[str, torch.Tensor],
                  way: Callable[..., torch.export.ExportedProgram]) -> tuple[float, ModuleOp]:
    module = imported.clone()
    original = update_shapes.decomposed_update
    import rducc.training.step as step

    step.decomposed_update = way  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        append_optimizer(module, [trained], parameters)
        return time.perf_counter() - start, module
    finally:
        step.decomposed_update = original  # type: ignore[assignment]


def _optimizer_ops(module: ModuleOp) -> list[str]:
    return [f"{op.name} {[str(r.type) for r in op.results]}" for op in module.walk()
            if "optimizer" in str(op.attributes.get("rdu.phase", ""))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(MODELS), default="unet")
    parser.add_argument("--optimizer", default="adamw")
    args = parser.parse_args()
    torch.manual_seed(0)
    model, inputs = MODELS[args.model]()
    start = time.perf_counter()
    ep = export_for_training(model, inputs, None)[0]
    joint = joint_graph(ep)
    imported, _ = decompose_and_import(joint, StageTimes())
    print(f"{args.model}: export, joint graph and import {time.perf_counter() - start:.1f} s")
    names = _trained_parameters(imported)
    parameters = {name: ep.state_dict[name] for name in names}
    trained = Trained(named_optimizer(args.optimizer, {}), names)
    shapes = {tuple(p.shape) for p in parameters.values()}
    ranks = {p.dim() for p in parameters.values()}
    before_s, before = _timed_append(imported, trained, parameters, _per_shape)
    update_shapes.TRACES.update(traced=0, reshaped=0)
    after_s, after = _timed_append(imported, trained, parameters, update_shapes.decomposed_update)
    same = _optimizer_ops(before) == _optimizer_ops(after)
    print(f"{len(parameters)} trained parameters, {len(shapes)} shapes, {len(ranks)} ranks ({args.optimizer})")
    print(f"  before (traced per shape, decomposed per parameter): {before_s:.1f} s")
    print(f"  after  (traced per rank: {update_shapes.TRACES['traced']} traces, "
          f"{update_shapes.TRACES['reshaped']} reshaped): {after_s:.1f} s")
    print(f"  {before_s / after_s:.1f}x faster; the same optimizer ops: {same}")
    if not same:
        raise SystemExit("the two ways appended different optimizer programs")


if __name__ == "__main__":
    main()
