"""Identical decoder layers imported once (`rducc.frontend.layer_reuse`): the IR is the
one `rdu-outline-layers` gives after an inline import, the compiled program
is today's and matches eager; layers that differ are imported inline."""

from __future__ import annotations

import pytest
import torch
from xdsl.context import Context
from xdsl.dialects import builtin, func
from xdsl.parser import Parser

import rducc
from rducc.dialects import Dataflow
from rducc.driver import module_text, verify
from rducc.frontend.importer import _converted_nodes, decompose, import_program, layer_of
from rducc.frontend.layer_reuse import plan_layers
from rducc.passes.rdu_canonicalize import folds_across
from rducc.pipeline import parse_passes, pipeline_text, run_passes


def _calls(module) -> int:
    return sum(isinstance(op, func.CallOp) for op in module.walk())


def _import_then_outline(program: torch.export.ExportedProgram) -> str:
    module = import_program(decompose(program))
    run_passes(module, parse_passes("rdu-outline-layers"))
    return module_text(module)


@pytest.mark.parametrize("name", ["tiny_llama", "tiny_gpt2", "tiny_llama_decode"])
def test_fast_import_equals_import_then_outline(exported_small, name):
    program = exported_small[name][2]
    fast = import_program(decompose(program), outline_layers=True)
    verify(fast)
    assert _calls(fast) == 2  # outlined by the import itself, no pass run
    assert module_text(fast) == _import_then_outline(program)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_tiny_llama_compiles_as_before_and_matches_eager(exported_small, opt_level):
    """The -O pipeline (layers outlined at import) gives the program the same
    pipeline gives from an inline import (outlined by the pass), and eager's results."""
    model, inputs, program = exported_small["tiny_llama"]
    fast = rducc.compile(program, opt_level=opt_level)
    inline_import = rducc.compile(program, opt_level=opt_level, passes=pipeline_text(opt_level))
    assert fast.mlir == inline_import.mlir
    assert fast.mlir.count("func.call @layer(") == 2
    with torch.no_grad():
        want = model(*inputs)
    torch.testing.assert_close(fast(*inputs), want, rtol=1e-4, atol=1e-4)


class _Block(torch.nn.Module):
    def __init__(self, width: int, activation: torch.nn.Module, out: int | None = None) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(width, out or width)
        self.activation = activation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.activation(self.proj(x)) + x


class _Reshaping(torch.nn.Module):
    """Each layer ends with a reshape and the next begins with one: rdu-canonicalize
    composes the two across the layer boundary."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.proj(x.reshape(4, 8))).reshape(2, 16)


class _Stack(torch.nn.Module):
    def __init__(self, layers: list[torch.nn.Module]) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


DIFFERING = {
    "activation": lambda: _Stack([_Block(8, torch.nn.ReLU()), _Block(8, torch.nn.ReLU()), _Block(8, torch.nn.GELU())]),
    "shape": lambda: _Stack([_Block(8, torch.nn.ReLU()), _Block(8, torch.nn.ReLU()), _Block(8, torch.nn.ReLU(), 1)]),
    "folding across layers": lambda: _Stack([_Reshaping(), _Reshaping(), _Reshaping()]),
}


@pytest.mark.parametrize("kind", list(DIFFERING))
def test_layers_that_differ_are_imported_inline(kind):
    torch.manual_seed(0)
    model = DIFFERING[kind]().eval()
    x = torch.randn(2, 16) if kind == "folding across layers" else torch.randn(4, 8)
    program = torch.export.export(model, (x,))
    imported = import_program(decompose(program), outline_layers=True)
    assert _calls(imported) == 0  # every layer inline: the pass decides, as before
    compiled = rducc.compile(program)
    assert compiled.mlir == rducc.compile(program, passes=pipeline_text(2)).mlir
    with torch.no_grad():
        want = model(x)
    torch.testing.assert_close(compiled(x), want, rtol=1e-4, atol=1e-4)


def test_plan_pairs_outside_values_one_to_one():
    """A layer reading one outside value twice does not match one reading two."""

    class Twice(torch.nn.Module):
        def forward(self, x, a, b):
            return x * a + b

    class Stack(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = torch.nn.ModuleList([Twice(), Twice()])

        def forward(self, x, a, b):
            return self.layers[1](self.layers[0](x, a, a), a, b)

    x = torch.randn(4)
    program = decompose(torch.export.export(Stack(), (x, x, x)))
    nodes = _converted_nodes(program)
    assert plan_layers(nodes, layer_of) is None


def _function(text: str) -> list:
    context = Context()
    for dialect in (builtin.Builtin, func.Func, Dataflow):
        context.load_dialect(dialect)
    module = Parser(context, text).parse_module()
    forward = next(op for op in module.ops if isinstance(op, func.FuncOp))
    return list(forward.body.block.ops)


def test_folds_across_asks_the_canonicalize_patterns():
    """A reshape read by a reshape, or a swapping transpose read as a matmul's rhs,
    folds across a call boundary; a reshape read by a matmul, or a consumer the
    patterns rewrite whatever it reads (an identity reshape), does not."""
    reshape, again, identity, transpose, matmul, _ = _function("""
    builtin.module {
      func.func @forward(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> tensor<4x4xf32> {
        %r = rdu.reshape %x : tensor<4x8xf32> -> tensor<32xf32>
        %rr = rdu.reshape %y : tensor<8x4xf32> -> tensor<2x16xf32>
        %same = rdu.reshape %y : tensor<8x4xf32> -> tensor<8x4xf32>
        %t = rdu.transpose %x perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
        %m = rdu.matmul %x, %y : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
        func.return %m : tensor<4x4xf32>
      }
    }""")
    y = again.operands[0]  # consumers read %y, as a layer reads its parameter
    assert folds_across(transpose.results[0], matmul, y)
    assert not folds_across(reshape.results[0], matmul, y)
    assert not folds_across(matmul.results[0], identity, y)  # rewritten anyway: no fold across
    assert not folds_across(y, again, y)  # a block argument has no op to look through
    assert len(list(y.uses)) == 3 and not list(transpose.results[0].uses)  # the probes left the IR alone
    r_as_y = _function("""
    builtin.module {
      func.func @forward(%x: tensor<4x8xf32>, %y: tensor<8x4xf32>) -> tensor<2x16xf32> {
        %r = rdu.reshape %x : tensor<4x8xf32> -> tensor<8x4xf32>
        %rr = rdu.reshape %y : tensor<8x4xf32> -> tensor<2x16xf32>
        func.return %rr : tensor<2x16xf32>
      }
    }""")
    assert folds_across(r_as_y[0].results[0], r_as_y[1], r_as_y[1].operands[0])
