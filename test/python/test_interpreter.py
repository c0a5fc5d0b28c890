"""The level-4 interpreter (`rducc.runtime.interpreter.PlacedProgram`) on
lowered, placed programs, checked against PyTorch eager.

- the four small models at -O0 and -O2 for sn40l (-O1, whose only difference
  is rdu-fuse's level, for the CNN here and tiny GPT-2 tiled), the MLP in bf16, and
  tiled programs (tile loops, double buffering) on a small target, and
  values kept in SRAM between tiled kernels (tiny_llama); each placed program
  that a test only reads and runs is lowered once (`placed_once`);
- the SRAM arena is real: moving one buffer or body value onto a live one
  (bypassing the verifier) changes the numbers; rotating copies sit back to
  back and each DMA fills the next;
- prepare once, run many; argument and placement errors.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable

import ml_dtypes
import numpy as np
import pytest
import torch
from error_cases import GATHER_PROGRAM
from sram_checker import check_placed
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func, scf
from xdsl.dialects import math as xmath
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, i64
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.contracts import BODY_OFFSET
from rducc.dialects.rdu.dataflow import Dataflow, MatmulOp
from rducc.dialects.tier import AllocOp, ComputeOp, DmaOp, Memory, Tier, views_operand_bytes
from rducc.driver import import_exported, lower, module_text
from rducc.errors import RduccError
from rducc.model.cost_model import estimate
from rducc.passes.rdu_insert_dma import RduInsertDma
from rducc.pipeline import default_passes
from rducc.runtime.executor import GraphExecutor, to_numpy, weights_of
from rducc.dialects.shapes import value_bytes
from rducc.runtime.interpreter import PlacedProgram
from rducc.targets import load_target

BF16 = np.dtype(ml_dtypes.bfloat16)
MODELS = ["mlp", "cnn", "tiny_llama", "tiny_gpt2"]


def _small_target():
    """12 KB of SRAM: the MLP's fc2 weight (16 KB) streams in double-buffered tiles."""
    return dataclasses.replace(load_target("sn40l"), name="small", sram_bytes=12_000, pmu_bytes=500, pmus=24)


@pytest.fixture(scope="module")
def imported(exported_small) -> dict[str, ModuleOp]:
    """Each small model imported once (level 1); tests lower clones."""
    return {name: import_exported(program) for name, (_, _, program) in exported_small.items()}


@pytest.fixture(scope="module")
def weights(exported_small) -> dict[str, dict[str, np.ndarray]]:
    return {name: weights_of(program) for name, (_, _, program) in exported_small.items()}


def _placed(module: ModuleOp, opt_level: int, target=None) -> ModuleOp:
    placed = module.clone()
    lower(placed, target or load_target("sn40l"), opt_level)
    return placed


@pytest.fixture(scope="module")
def placed_once(imported) -> Callable[..., ModuleOp]:
    """Each (model, opt level, tiled on the small target) lowered once, shared
    by the tests that only read and run it (a test that moves offsets lowers
    its own with `_placed`)."""
    cache: dict[tuple[str, int, bool], ModuleOp] = {}

    def get(name: str, opt_level: int, tiled: bool = False) -> ModuleOp:
        if (name, opt_level, tiled) not in cache:
            cache[name, opt_level, tiled] = _placed(imported[name], opt_level, _small_target() if tiled else None)
        return cache[name, opt_level, tiled]

    return get


def _eager(model: torch.nn.Module, inputs: tuple) -> list[np.ndarray]:
    with torch.no_grad():
        return [t.numpy() for t in torch.utils._pytree.tree_leaves(model(*inputs))]


def _assert_matches_eager(outputs: list[np.ndarray], expected: list[np.ndarray]) -> None:
    assert len(outputs) == len(expected)
    for out, ref in zip(outputs, expected):
        assert out.dtype == np.float32 and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-5)


def _names(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk()]


# --------------------------------------------------------------------------
# End to end
# --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "opt_level"), [(name, level) for name in MODELS for level in (0, 2)] + [("cnn", 1)])
def test_small_model_matches_eager(exported_small, placed_once, weights, name: str, opt_level: int) -> None:
    model, inputs, _ = exported_small[name]
    placed = placed_once(name, opt_level)
    check_placed(placed, load_target("sn40l").sram_bytes)  # outlined layers' calls included
    program = PlacedProgram(placed)
    assert program.input_types == [(tuple(i.shape), to_numpy(i).dtype) for i in inputs]
    expected = _eager(model, inputs)
    assert program.output_types == [(r.shape, r.dtype) for r in expected]
    outputs = program.run([to_numpy(i) for i in inputs], weights[name])
    _assert_matches_eager(outputs, expected)


@pytest.mark.parametrize("name", MODELS)
def test_untiled_placed_program_computes_what_the_graph_does(exported_small, imported, placed_once, weights,
                                                           name: str) -> None:
    """Fusion, tier placement, DMA and SRAM allocation move data but change no
    numbers: an untiled -O2 program gives the level-1 executor's result, to the
    last bits of a product (with more than one thread torch's BLAS runs the
    matmuls and picks its kernel by the operands' layout, which placement
    changes: it materializes transposes)."""
    _, inputs, _ = exported_small[name]
    arrays = [to_numpy(i) for i in inputs]
    graph = GraphExecutor(imported[name]).run(arrays, weights[name])
    placed = PlacedProgram(placed_once(name, 2)).run(arrays, weights[name])
    for out, ref in zip(placed, graph):
        assert out.dtype == ref.dtype and out.shape == ref.shape
        np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-6)


def test_mlp_bf16_matches_eager() -> None:
    import models  # examples/models.py, on sys.path through conftest

    model, (x,) = models.mlp()
    model = copy.deepcopy(model).to(torch.bfloat16)
    inputs = (x.to(torch.bfloat16),)
    exported = models.export(model, inputs)
    program = PlacedProgram(_placed(import_exported(exported), 2))
    assert program.input_types == [((4, 32), BF16)]
    out = program.run([to_numpy(x) for x in inputs], weights_of(exported))[0]
    assert out.dtype == BF16 and out.shape == (4, 10)
    with torch.no_grad():
        ref = model(*inputs).float().numpy()
    scale = float(np.abs(ref).max())
    np.testing.assert_allclose(out.astype(np.float32), ref, rtol=2**-6, atol=2**-6 * scale)


@pytest.mark.parametrize("name, opt_level", [("mlp", 0), ("tiny_llama", 2), ("tiny_gpt2", 1)])
def test_tiled_program_matches_eager(exported_small, placed_once, weights, name: str, opt_level: int) -> None:
    """On 12 KB of SRAM kernels become scf.for tile loops with windowed,
    double-buffered DMA; the result is still the model's."""
    model, inputs, _ = exported_small[name]
    placed = placed_once(name, opt_level, tiled=True)
    assert "scf.for" in _names(placed)
    assert any(isinstance(op, AllocOp) and op.copies == 2 for op in placed.walk())
    check_placed(placed, 12_000)  # tile loops' buffers included
    program = PlacedProgram(placed)
    assert program.sram_bytes == 12_000
    outputs = program.run([to_numpy(i) for i in inputs], weights[name])
    _assert_matches_eager(outputs, _eager(model, inputs))


@pytest.mark.parametrize("name", ["tiny_llama"])  # tiny_gpt2 tiled: test_tiled_program_matches_eager
def test_values_kept_on_chip_between_tiled_kernels_match_eager(exported_small, imported, weights, name: str) -> None:
    """On 16 KB of SRAM a decoder layer splits into tiled kernels; a value
    passed between two of them stays in one SRAM buffer (written and read by
    SRAM-to-SRAM tile copies) instead of going through HBM: fewer HBM bytes than
    with every value in HBM, a plan the independent checker accepts, and the
    model's result."""
    model, inputs, _ = exported_small[name]
    target = dataclasses.replace(load_target("sn40l"), name="small16", sram_bytes=16_000, pmu_bytes=100, pmus=160)
    placed = _placed(imported[name], 2, target)
    on_chip_copies = [
        op for op in placed.walk()
        if isinstance(op, DmaOp) and (op.src_offsets or op.dst_offsets)
        and op.source.type.tier.data == op.dest.type.tier.data == Tier.SRAM
    ]
    assert on_chip_copies
    through_hbm = imported[name].clone()
    passes = [p if p.name != "rdu-insert-dma" else RduInsertDma(keep_on_chip=False) for p in default_passes(2, "placed")]
    lower(through_hbm, target, passes=passes)
    assert estimate(placed, target).hbm_bytes < estimate(through_hbm, target).hbm_bytes
    check_placed(placed, target.sram_bytes)
    outputs = PlacedProgram(placed).run([to_numpy(i) for i in inputs], weights[name])
    _assert_matches_eager(outputs, _eager(model, inputs))


def test_program_read_back_from_text_runs(exported_small, imported, weights) -> None:
    """What `rducc` writes (tiled: loops, windows, double buffering) runs the same
    after printing and parsing."""
    model, inputs, _ = exported_small["mlp"]
    placed = _placed(imported["mlp"], 0, _small_target())
    text = module_text(placed, locations=False)
    arrays = [to_numpy(i) for i in inputs]
    direct = PlacedProgram(placed).run(arrays, weights["mlp"])
    reparsed = PlacedProgram(parse(text)).run(arrays, weights["mlp"])
    np.testing.assert_array_equal(reparsed[0], direct[0])
    _assert_matches_eager(reparsed, _eager(model, inputs))


# --------------------------------------------------------------------------
# The arena is real
# --------------------------------------------------------------------------


def _forward(module: ModuleOp) -> func.FuncOp:
    return next(op for op in module.ops if isinstance(op, func.FuncOp))


def _offset(value) -> int:
    owner = value.owner
    assert isinstance(owner, AllocOp) and owner.offset is not None
    return owner.offset.value.data


def _set_offset(op, offset: int) -> None:
    """Move a buffer or body value, bypassing the verifier."""
    if isinstance(op, AllocOp):
        op.offset = IntegerAttr(offset, i64)
    else:
        op.attributes[BODY_OFFSET] = IntegerAttr(offset, i64)


def _corrupt_and_compare(module: ModuleOp, op, offset: int, model, inputs, weights, views=()) -> None:
    """Move `op` (and `views`, the reshapes and transposes on its bytes) to `offset`."""
    expected = _eager(model, inputs)
    arrays = [to_numpy(i) for i in inputs]
    _assert_matches_eager(PlacedProgram(module).run(arrays, weights), expected)  # sound before
    for moved in (op, *views):
        _set_offset(moved, offset)
    with pytest.raises(VerifyException, match="overlaps"):
        module.verify()  # a real overlap of live buffers
    out = PlacedProgram(module).run(arrays, weights)[0]
    assert not np.allclose(out, expected[0], rtol=1e-4, atol=1e-5)


def test_overlapping_sram_buffers_give_wrong_numbers(exported_small, imported, weights) -> None:
    """-O0: put the first kernel's input %x_sram on its weight buffer; the weight's
    DMA lands on x before the matmul reads it."""
    model, inputs, _ = exported_small["mlp"]
    module = _placed(imported["mlp"], 0)
    compute = next(op for op in module.walk() if isinstance(op, ComputeOp))
    x_sram, weight_sram = compute.ins[0], compute.ins[1]
    _corrupt_and_compare(module, x_sram.owner, _offset(weight_sram), model, inputs, weights["mlp"])


def test_overlapping_body_value_gives_wrong_numbers(exported_small, imported, weights) -> None:
    """-O2 (one kernel): put the first matmul's value on a weight buffer that a
    later op of the body still reads."""
    model, inputs, _ = exported_small["mlp"]
    module = _placed(imported["mlp"], 2)
    compute = next(op for op in module.walk() if isinstance(op, ComputeOp))
    block = compute.body.block
    first = block.first_op
    assert first is not None and BODY_OFFSET in first.attributes
    later = [i for i, arg in enumerate(block.args) if arg not in first.operands and arg.uses]
    victim = max(later, key=lambda i: compute.ins[i].type.size_in_bytes)
    _corrupt_and_compare(module, first, _offset(compute.ins[victim]), model, inputs, weights["mlp"])


def test_overwritten_body_value_gives_wrong_numbers(exported_small, imported, weights) -> None:
    """Later ops read a body value from its SRAM bytes, not from the Python
    result: put a value's first reader on it while another op still needs it
    (llama's normed hidden state feeds the q, k and v matmuls)."""
    model, inputs, _ = exported_small["tiny_llama"]
    module = _placed(imported["tiny_llama"], 2)
    layer = next(op for op in module.ops if isinstance(op, func.FuncOp) and op.sym_name.data == "layer")
    compute = next(op for op in layer.walk() if isinstance(op, ComputeOp))  # the outlined decoder layer
    block = compute.body.block
    position = {op: i for i, op in enumerate(block.ops)}
    for value_op in block.ops:
        readers = sorted({u.operation for r in value_op.results for u in r.uses}, key=position.get)
        if BODY_OFFSET in value_op.attributes and len(readers) >= 2 and BODY_OFFSET in readers[0].attributes \
                and isinstance(readers[0], MatmulOp) \
                and value_bytes(readers[0].results[0]) >= value_bytes(value_op.results[0]):
            break  # a product as large overwrites the whole value (a layout op may be a view
            # writing nothing, rducc.runtime.layout_views; a norm chain's ops may not run)
    else:
        pytest.fail("no body value with two readers")
    offset = value_op.attributes[BODY_OFFSET].value.data
    on_its_bytes = [op for op in block.ops if views_operand_bytes(op)
                    and op.attributes[BODY_OFFSET] == readers[0].attributes[BODY_OFFSET]]
    _corrupt_and_compare(module, readers[0], offset, model, inputs, weights["tiny_llama"], on_its_bytes)


def test_overlapping_tile_buffer_gives_wrong_numbers(exported_small, imported, weights) -> None:
    """Tiled: put the resident activation on the double-buffered weight tile it
    is multiplied with; each tile's DMA overwrites it."""
    model, inputs, _ = exported_small["mlp"]
    module = _placed(imported["mlp"], 0, _small_target())
    loop = next(op for op in module.walk() if isinstance(op, scf.ForOp))
    compute = next(op for op in loop.walk() if isinstance(op, ComputeOp))
    rotating = next(v for v in compute.ins if v.owner.copies == 2)
    resident = next(v for v in compute.ins if v.owner.copies == 1)
    _corrupt_and_compare(module, resident.owner, _offset(rotating), model, inputs, weights["mlp"])


def parse(text: str, verify: bool = True) -> ModuleOp:
    ctx = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, xmath.Math, scf.Scf, Dataflow, Memory):
        ctx.load_dialect(dialect)
    module = Parser(ctx, text).parse_module()
    if verify:
        module.verify()
    return module


def unverified_reader_of_unwritten_sram(text: str) -> ModuleOp:
    """A program the verifier refuses (`tier.alloc`: an SRAM buffer read before
    anything writes it), parsed anyway: the runtime's own defences are tested on it."""
    module = parse(text, verify=False)
    with pytest.raises(VerifyException, match="before anything writes it"):
        module.verify()
    return module


ROTATING = """
builtin.module {
  tier.global @scale in hbm : tensor<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32> {kind = "constant"}
  func.func @forward(%x: !tier.buffer<hbm, 2x4xf32> {rdu.input = "x"})
      -> (!tier.buffer<hbm, 2x4xf32>, !tier.buffer<hbm, 2x4xf32>) attributes {tier.sram_capacity = 256 : i64} {
    %scale = tier.get_global @scale : !tier.buffer<hbm, 4xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %rows = tier.alloc offset 0 buffers 2 : !tier.buffer<sram, 1x4xf32>
    %scale_sram = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
    %y_sram = tier.alloc offset 128 : !tier.buffer<sram, 1x4xf32>
    %y = tier.alloc : !tier.buffer<hbm, 2x4xf32>
    tier.dma %scale -> %scale_sram : !tier.buffer<hbm, 4xf32> -> !tier.buffer<sram, 4xf32>
    scf.for %i = %c0 to %c2 step %c1 {
      %row = arith.muli %i, %c1 : index
      %at = arith.addi %row, %c0 : index
      tier.dma %x[%at, %c0] -> %rows : !tier.buffer<hbm, 2x4xf32> -> !tier.buffer<sram, 1x4xf32>
      tier.compute "k0" ins(%rows, %scale_sram : !tier.buffer<sram, 1x4xf32>, !tier.buffer<sram, 4xf32>)
                        outs(%y_sram : !tier.buffer<sram, 1x4xf32>) {
      ^bb0(%r: tensor<1x4xf32>, %s: tensor<4xf32>):
        %m = rdu.map %r, %s {tier.offset = 192 : i64} : (tensor<1x4xf32>, tensor<4xf32>) -> tensor<1x4xf32> {
        ^bb1(%a: f32, %b: f32):
          %p = arith.mulf %a, %b : f32
          rdu.yield %p : f32
        }
        %n = rdu.map %m : (tensor<1x4xf32>) -> tensor<1x4xf32> {
        ^bb2(%a: f32):
          %one = arith.constant 1.0 : f32
          %q = arith.addf %a, %one : f32
          rdu.yield %q : f32
        }
        rdu.yield %n : tensor<1x4xf32>
      }
      tier.dma %y_sram -> %y[%i, %c0] : !tier.buffer<sram, 1x4xf32> -> !tier.buffer<hbm, 2x4xf32>
      scf.yield
    }
    tier.dealloc %rows : !tier.buffer<sram, 1x4xf32>
    %both = tier.alloc offset 0 : !tier.buffer<sram, 2x4xf32>
    %copies = tier.alloc : !tier.buffer<hbm, 2x4xf32>
    tier.dma %both -> %copies : !tier.buffer<sram, 2x4xf32> -> !tier.buffer<hbm, 2x4xf32>
    func.return %y, %copies : !tier.buffer<hbm, 2x4xf32>, !tier.buffer<hbm, 2x4xf32>
  }
}
"""


def test_rotating_copies_and_inline_global() -> None:
    """`buffers 2`: the copies sit back to back from the offset and each DMA into
    the buffer fills the next one (the first fills copy 0); compute reads the one
    just written. A buffer placed over them after they are freed sees both rows
    in order. The global's inline value needs no weight."""
    program = PlacedProgram(unverified_reader_of_unwritten_sram(ROTATING))  # %both reads what %rows left
    assert program.weight_names == ["scale"]
    x = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], np.float32)
    y, copies = program.run([x], {})
    np.testing.assert_array_equal(y, x * np.array([1, 2, 3, 4], np.float32) + 1)
    np.testing.assert_array_equal(copies, x)
    y2, _ = program.run([x], {"scale": np.full(4, 2.0, np.float32)})
    np.testing.assert_array_equal(y2, x * 2 + 1)


UNWRITTEN = """
builtin.module {
  func.func @forward(%x: !tier.buffer<hbm, 4xf32> {rdu.input = "x"})
      -> (!tier.buffer<hbm, 4xf32>, !tier.buffer<hbm, 4xi32>) attributes {tier.sram_capacity = 128 : i64} {
    %a = tier.alloc offset 0 : !tier.buffer<sram, 4xf32>
    %b = tier.alloc offset 64 : !tier.buffer<sram, 4xf32>
    %y = tier.alloc : !tier.buffer<hbm, 4xf32>
    %never = tier.alloc : !tier.buffer<hbm, 4xi32>
    tier.compute "k0" ins(%a : !tier.buffer<sram, 4xf32>) outs(%b : !tier.buffer<sram, 4xf32>) {
    ^bb0(%r: tensor<4xf32>):
      rdu.yield %r : tensor<4xf32>
    }
    tier.dma %b -> %y : !tier.buffer<sram, 4xf32> -> !tier.buffer<hbm, 4xf32>
    func.return %y, %never : !tier.buffer<hbm, 4xf32>, !tier.buffer<hbm, 4xi32>
  }
}
"""


def test_reading_unwritten_memory_shows() -> None:
    """Fresh SRAM and HBM hold 0xFF bytes (NaN, -1), not zeros that could pass
    for data; a body that yields its input copies it to the output buffer."""
    y, never = PlacedProgram(unverified_reader_of_unwritten_sram(UNWRITTEN)).run([np.zeros(4, np.float32)])
    assert np.isnan(y).all()
    np.testing.assert_array_equal(never, np.full(4, 0x7FFF7FFF, np.int32))  # past any table


UNWRITTEN_INDICES = GATHER_PROGRAM.replace(  # nothing writes the indices
    "    tier.dma %ids -> %ids_sram : !tier.buffer<hbm, 3xi64> -> !tier.buffer<sram, 3xi64>\n", ""
).replace("-> %rows :", "-> %rows WRAPS:")


@pytest.mark.parametrize("wraps", [False, True])
def test_unwritten_sram_read_as_indices_is_an_error(wraps: bool) -> None:
    """Indices nobody wrote (the DMA of %x into %ids is missing) are the poison
    bytes: out of range even where negative indices count from the end, so the
    gather fails naming the op and the cause instead of reading a plausible row."""
    program = PlacedProgram(unverified_reader_of_unwritten_sram(UNWRITTEN_INDICES.replace("WRAPS", "wraps " if wraps else "")))
    with pytest.raises(RduccError, match=r"^'tier.gather' at model.py:3:8: rdu.gather: index \d+ \(never written: the bytes are the poison"):
        program.run([np.zeros(3, np.int64)])


# --------------------------------------------------------------------------
# Prepare once, run many; errors
# --------------------------------------------------------------------------


@pytest.mark.parametrize("tiled", [False, True], ids=["sn40l", "small"])
def test_runs_are_repeatable(exported_small, placed_once, weights, tiled: bool) -> None:
    model, inputs, _ = exported_small["tiny_llama"]
    program = PlacedProgram(placed_once("tiny_llama", 2, tiled))
    ids = to_numpy(inputs[0])
    other = (ids + 7) % 256
    first = program.run([ids], weights["tiny_llama"])[0]
    second = program.run([other], weights["tiny_llama"])[0]
    third = program.run([ids], weights["tiny_llama"])[0]
    np.testing.assert_array_equal(first, third)
    assert not np.allclose(first, second)
    _assert_matches_eager([second], _eager(model, (torch.from_numpy(other),)))
    first[...] = 0  # results are the caller's: nothing of the program is shared
    np.testing.assert_array_equal(program.run([ids], weights["tiny_llama"])[0], third)


@pytest.fixture(scope="module")
def mlp_program(imported) -> PlacedProgram:
    return PlacedProgram(_placed(imported["mlp"], 1))


@pytest.mark.parametrize(
    "inputs, drop, message",
    [
        ([], None, r"@forward takes 1 input \(x: float32\[4, 32\]\), got 0"),
        ([np.ones((4, 32), np.float32)] * 2, None, r"takes 1 input .* got 2"),
        ([np.ones((2, 3), np.float32)], None, r"input #0 \('x'\) has shape \[2, 3\], expected \[4, 32\]"),
        ([np.ones((4, 32), np.float64)], None, r"input #0 \('x'\) has dtype float64, expected float32"),
        ([torch.ones(4, 32)], None, r"input #0 \('x'\) is a Tensor, expected a numpy array"),
        ([np.ones((4, 32), np.float32)], "fc2.weight", r"missing weight: fc2\.weight"),
    ],
)
def test_argument_errors(mlp_program, weights, inputs, drop, message) -> None:
    given = {k: v for k, v in weights["mlp"].items() if k != drop}
    with pytest.raises(RduccError, match=message):
        mlp_program.run(inputs, given)


def test_wrong_weight_and_untouched_arguments(mlp_program, weights) -> None:
    given = dict(weights["mlp"], **{"fc1.bias": np.zeros(3, np.float32)})
    with pytest.raises(RduccError, match=r"weight 'fc1\.bias' has shape \[3\], expected \[64\]"):
        mlp_program.run([np.ones((4, 32), np.float32)], given)
    x = np.ones((4, 32), np.float32)
    before = {k: v.copy() for k, v in weights["mlp"].items()}
    mlp_program.run([x], weights["mlp"])
    np.testing.assert_array_equal(x, np.ones((4, 32), np.float32))
    for k, v in before.items():
        np.testing.assert_array_equal(weights["mlp"][k], v)


def test_unplaced_program_and_small_arena_are_errors(imported) -> None:
    memory = imported["mlp"].clone()
    lower(memory, load_target("sn40l"), 1, emit="memory")
    with pytest.raises(RduccError, match=r"has no offset: the program is not placed"):
        PlacedProgram(memory)
    placed = _placed(imported["mlp"], 2)
    with pytest.raises(RduccError, match=r"does not fit the SRAM arena of 1000 bytes"):
        PlacedProgram(placed, sram_bytes=1000)


def test_runtime_error_names_the_op(imported, weights) -> None:
    program = PlacedProgram(_placed(imported["tiny_llama"], 2))
    ids = np.full((1, 8), 300, np.int64)  # past the 256-row embedding table
    with pytest.raises(RduccError, match=r"^'tier.gather' at .*\.py:\d+:\d+: rdu.gather: index 300 is out of bounds"):
        program.run([ids], weights["tiny_llama"])
