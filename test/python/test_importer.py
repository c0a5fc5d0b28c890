"""The importer on the four small models and the Llama 3.1 8B meta model."""

from __future__ import annotations

from collections import Counter

import pytest
import torch
from xdsl.dialects import func
from xdsl.dialects.builtin import FileLineColLoc, ModuleOp, NameLoc, SymbolRefAttr, TensorType

from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.tier import GlobalOp
from rducc.driver import import_exported
from rducc.frontend.types import element_type_of


def _forward(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def _op_counts(module: ModuleOp) -> Counter[str]:
    return Counter(op.name for op in module.walk())


def _expected_type(tensor: torch.Tensor) -> TensorType:
    return TensorType(element_type_of(tensor.dtype), list(tensor.shape))


def _check_signature(module: ModuleOp, program: torch.export.ExportedProgram, outputs: list) -> None:
    """User inputs first, then one argument per weight naming a global of its type."""
    forward = _forward(module)
    globals_by_name = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    user_inputs = program.graph_signature.user_inputs
    weights = [s for s in program.graph_signature.input_specs if s.kind.name != "USER_INPUT"]
    assert len(forward.args) == len(user_inputs) + len(weights)
    assert set(globals_by_name) == {s.target for s in weights}
    attrs = forward.arg_attrs.data if forward.arg_attrs else []
    for arg, arg_attrs in list(zip(forward.args, attrs))[len(user_inputs):]:
        ref = arg_attrs.data["rdu.global"]
        assert isinstance(ref, SymbolRefAttr)
        assert globals_by_name[ref.root_reference.data].global_type == arg.type
    assert list(forward.function_type.outputs) == [_expected_type(t) for t in outputs]


def _check_locations(module: ModuleOp) -> None:
    """Every op of @forward carries a source location (file:line:col or node name)."""
    for op in _forward(module).walk():
        if op is _forward(module):
            continue
        assert isinstance(op.location, FileLineColLoc | NameLoc), op


def _eager(model: torch.nn.Module, inputs: tuple) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(*inputs)
    return [out] if isinstance(out, torch.Tensor) else list(out)


@pytest.mark.parametrize("name", ["mlp", "cnn", "tiny_llama", "tiny_gpt2"])
def test_small_model_imports(exported_small, name: str) -> None:
    model, inputs, program = exported_small[name]
    module = import_exported(program)
    _check_signature(module, program, _eager(model, inputs))
    _check_locations(module)
    assert module.attributes["rdu.level"].data == "graph"


def test_mlp_ops(exported_small) -> None:
    module = import_exported(exported_small["mlp"][2])
    counts = _op_counts(module)
    assert counts["rdu.matmul"] == 3
    assert counts["math.erf"] == 1  # exact gelu
    assert counts["arith.maximumf"] == 1  # relu
    file_locs = {op.location.filename.data for op in module.walk() if isinstance(op.location, FileLineColLoc)}
    assert any(f.endswith("examples/models.py") for f in file_locs)


def test_cnn_ops(exported_small) -> None:
    module = import_exported(exported_small["cnn"][2])
    counts = _op_counts(module)
    assert counts["rdu.conv"] == 2
    pools = [op for op in module.walk() if isinstance(op, rdu.PoolOp)]
    assert [p.kind.data for p in pools] == [rdu.PoolKind.MAX]
    # adaptive_avg_pool2d(x, 1) reaches Core ATen as mean over H and W
    spatial_sums = [op for op in module.walk() if isinstance(op, rdu.ReduceOp) and op.dims.get_values() == (2, 3)]
    assert len(spatial_sums) == 1
    conv = next(op for op in module.walk() if isinstance(op, rdu.ConvOp))
    assert conv.stride.get_values() == (2, 2) and conv.padding.get_values() == (1, 1)
    assert counts["math.rsqrt"] == 2  # one per batch norm


def test_llama_ops(exported_small) -> None:
    module = import_exported(exported_small["tiny_llama"][2])
    counts = _op_counts(module)
    assert counts["rdu.gather"] >= 1  # embedding lookup
    # per layer: q, k, v, o, gate, up, down projections + 2 attention matmuls; plus lm_head
    assert counts["rdu.matmul"] == 2 * 9 + 1
    reduces = Counter(op.kind.data.value for op in module.walk() if isinstance(op, rdu.ReduceOp))
    assert reduces["max"] == 2 and reduces["sum"] >= 2  # softmax per layer


def test_gpt2_uses_tanh_gelu(exported_small) -> None:
    module = import_exported(exported_small["tiny_gpt2"][2])
    counts = _op_counts(module)
    assert counts["math.tanh"] == 2  # gelu_new in each of 2 layers
    assert counts["math.rsqrt"] == 5  # 2 layer norms per layer + final


def test_llama31_8b_meta_imports(llama8b_meta) -> None:
    module = import_exported(llama8b_meta)
    globals_ = {g.sym_name.data: g for g in module.ops if isinstance(g, GlobalOp)}
    assert len([g for g in globals_.values() if g.attributes["kind"].data == "parameter"]) == 32 * 9 + 3
    embed = globals_["model.model.embed_tokens.weight"].global_type
    assert embed.get_shape() == (128256, 4096) and str(embed.element_type) == "bf16"
    q = globals_["model.model.layers.0.self_attn.q_proj.weight"].global_type
    k = globals_["model.model.layers.0.self_attn.k_proj.weight"].global_type
    mlp_up = globals_["model.model.layers.31.mlp.up_proj.weight"].global_type
    assert q.get_shape() == (4096, 4096) and k.get_shape() == (1024, 4096)
    assert mlp_up.get_shape() == (14336, 4096)
    forward = _forward(module)
    assert str(forward.function_type.outputs.data[0]) == "tensor<1x128x128256xbf16>"
    assert _op_counts(module)["rdu.matmul"] == 32 * 9 + 1
    assert all(g.initial_value is None for g in globals_.values() if g.attributes["kind"].data == "parameter")


class _IndexBuffers(torch.nn.Module):
    """A head map as a non-persistent integer buffer (inlined), the same map as a
    persistent buffer and a non-persistent float buffer (both left to the sidecar)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("head_map", torch.arange(4) // 2, persistent=False)
        self.register_buffer("saved_map", torch.arange(4) // 2)
        self.register_buffer("scale", torch.ones(4), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x[:, self.head_map] * self.scale + x[:, self.saved_map]


def test_non_persistent_index_buffer_is_inlined() -> None:
    """Its values reach the passes (rdu-partition splits a gather by a head map per rank)."""
    x = torch.randn(2, 2)
    module = import_exported(torch.export.export(_IndexBuffers(), (x,)))
    values = {g.sym_name.data: g.initial_value for g in module.ops if isinstance(g, GlobalOp)}
    assert values["head_map"] is not None and values["head_map"].get_values() == (0, 0, 1, 1)
    assert values["saved_map"] is None and values["scale"] is None
