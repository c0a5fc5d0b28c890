"""What a program's host and pointwise calls may do (issue 31, items 1-3 and 10):
only ops on the checked-in allow-list (which matches what its generator
derives), never a result of another size than declared (checked before the
kernel runs), never uninitialised memory, never a signal or an unbounded loop.
The hostile programs through `rducc-opt`/`rducc-run` are rows of
`error_cases.py` (one error line, exit 1, no file touched)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
from test_mapping import parse_module
from test_pointwise import _CALL, _ops, _parse

from rducc.dialects.rdu.aten import ALLOWLIST, HOST, POINTWISE, allowlists
from rducc.dialects.rdu.dataflow import MapOp
from rducc.errors import RduccError
from rducc.runtime import call_limits
from rducc.runtime.executor import GraphExecutor
from rducc.runtime.host_calls import _checked, fresh_memory_filled
from rducc.runtime.map_body import compile_map


def test_the_checked_in_allowlist_is_what_the_generator_derives() -> None:
    """`python -m rducc.frontend.aten_allowlist` rewrites it: a stale list fails here."""
    from rducc.frontend.aten_allowlist import derive, render

    assert ALLOWLIST.read_text(encoding="utf-8") == render(derive())


def test_the_allowlist_holds_no_op_that_touches_files_devices_or_fresh_memory() -> None:
    from rducc.frontend.aten_allowlist import denial

    lists = allowlists()
    for name in ("aten::from_file.default", "aten::empty.memory_format", "aten::new_empty.default",
                 "aten::empty_like.default", "aten::empty_strided.default", "aten::resize.default",
                 "aten::set.source_Tensor", "aten::_index_put_impl.default", "aten::clone.default",
                 "aten::_reshape_alias_copy.default", "aten::adaptive_max_pool2d_backward.default",
                 "aten::_segment_reduce_backward.default", "aten::_ctc_loss_backward.default",
                 "aten::_embedding_bag_dense_backward.default"):
        assert name not in lists[HOST] and name not in lists[POINTWISE], name
    assert denial("aten::resize.default") and denial("aten::new_empty.default")
    # the ops the importer runs on the host in test_host_ops are on it
    for name in ("aten::_linalg_svd.default", "aten::linalg_qr.default", "aten::mode.default",
                 "aten::segment_reduce.default", "aten::_histogramdd_bin_edges.default"):
        assert name in lists[HOST], name
    assert "aten::special_laguerre_polynomial_l.default" in lists[POINTWISE]


HUGE_RESULT = """
builtin.module {
  func.func @forward(%x: tensor<4xf32> {rdu.input = "x"}) -> tensor<4x1xi64> {
    %y = rdu.host_call #rdu.aten<"aten::nonzero_static.default", {size = 68719476736 : i64}>(%x) tensors ["self"]
        : (tensor<4xf32>) -> tensor<4x1xi64>
    func.return %y : tensor<4x1xi64>
  }
}
"""


def test_a_result_larger_than_declared_is_refused_before_the_kernel_runs() -> None:
    """2^36 rows of int64 (512 GiB) would be allocated and filled if the kernel ran."""
    executor = GraphExecutor(parse_module(HUGE_RESULT))
    start = time.monotonic()
    expected = r"result #0 is int64\[68719476736, 1\], but the program declares int64\[4, 1\]"
    with pytest.raises(RduccError, match=expected):
        executor.run([np.ones(4, np.float32)], {})
    assert time.monotonic() - start < 10


def test_a_non_dense_result_is_an_error_not_a_crash() -> None:
    """A sparse tensor where the program declares a dense one: one error naming the op."""
    [op] = [o for o in parse_module(HUGE_RESULT).walk() if o.name == "rdu.host_call"]
    with pytest.raises(RduccError, match="result #0 is a torch.sparse_coo tensor, not a dense one"):
        _checked(torch.eye(4).to_sparse(), ((4, 4), np.dtype(np.float32)), op, 0)


def test_fresh_memory_is_filled_during_a_host_call_and_the_settings_restored() -> None:
    before = torch.are_deterministic_algorithms_enabled()
    with fresh_memory_filled():
        assert torch.isnan(torch.empty(1024)).all()
        assert (torch.empty(1024, dtype=torch.int64) == torch.iinfo(torch.int64).max).all()
    assert torch.are_deterministic_algorithms_enabled() == before


def _laguerre(x: np.ndarray, n: np.ndarray) -> np.ndarray:
    text = _CALL.format(callee='"aten::special_laguerre_polynomial_l.default"', type="f32").replace(
        "%x: tensor<2x8xf32>", "%x: tensor<2x8xf32>, %n: tensor<2x8xf32>").replace(
        "rdu.map %x : (tensor<2x8xf32>)", "rdu.map %x, %n : (tensor<2x8xf32>, tensor<2x8xf32>)").replace(
        "^bb0(%a: f32):", "^bb0(%a: f32, %b: f32):").replace("(%a) : (f32) -> f32", "(%a, %b) : (f32, f32) -> f32")
    [map_op] = _ops(_parse(text), MapOp)
    return np.asarray(compile_map(map_op)(x, n))


def test_a_polynomial_runs_in_chunks_that_match_eager(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks of 3 elements (steps 40 each, limit 120): the same values as one call of eager."""
    monkeypatch.setattr(call_limits, "CHUNK_STEPS", 120)
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(2, 8)
    n = np.arange(25, 41, dtype=np.float32).reshape(2, 8)
    expected = torch.special.laguerre_polynomial_l(torch.from_numpy(x), torch.from_numpy(n)).numpy()
    np.testing.assert_array_equal(_laguerre(x, n), expected)


def test_a_polynomial_degree_past_the_limit_is_refused_up_front() -> None:
    x = np.full((2, 8), 0.5, np.float32)
    n = np.full((2, 8), 3, np.float32)
    n[1, 5] = call_limits.MAX_DEGREE + 1
    start = time.monotonic()
    with pytest.raises(RduccError, match="with n = 1048577 is past rducc's limit of 1048576"):
        _laguerre(x, n)
    assert time.monotonic() - start < 5
    n[1, 5] = np.inf  # torch reads a non-finite degree as negative: no work
    assert np.isfinite(_laguerre(x, n)).sum() >= 15


_DIVIDE = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from test_pointwise import _CALL, _ops, _parse
from rducc.dialects.rdu.dataflow import MapOp
from rducc.errors import RduccError
from rducc.runtime.map_body import compile_map

for name in ("int32", "int64"):
    t = name.replace("int", "i")
    text = _CALL.format(callee='"aten::div.Tensor_mode", {rounding_mode = "trunc"}', type=t)
    text = text.replace(f"%x: tensor<2x8x{t}>", f"%x: tensor<2x8x{t}>, %d: tensor<2x8x{t}>")
    text = text.replace(f"rdu.map %x : (tensor<2x8x{t}>)", f"rdu.map %x, %d : (tensor<2x8x{t}>, tensor<2x8x{t}>)")
    text = text.replace(f"^bb0(%a: {t}):", f"^bb0(%a: {t}, %b: {t}):")
    text = text.replace(f"(%a) : ({t}) -> {t}", f"(%a, %b) : ({t}, {t}) -> {t}")
    [m] = _ops(_parse(text), MapOp)
    smallest = np.full((2, 8), np.iinfo(name).min, name)
    try:
        compile_map(m)(smallest, np.full((2, 8), -1, name))
    except RduccError as error:
        print(error)
    print(compile_map(m)(np.full((2, 8), -7, name), np.full((2, 8), 2, name))[0, 0])
    [m] = _ops(_parse(text.replace('"aten::div.Tensor_mode", {rounding_mode = "trunc"}', '"aten::lcm.default"')), MapOp)
    try:
        compile_map(m)(smallest, np.full((2, 8), 5, name))
    except RduccError as error:
        print(error)
"""


def test_the_smallest_integer_over_minus_one_is_an_error_not_sigfpe() -> None:
    """In a child process (int32 and int64): a regression kills it with SIGFPE, not this test run."""
    here = str(Path(__file__).parent)
    result = subprocess.run([sys.executable, "-c", _DIVIDE, here], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert len(lines) == 6, result.stdout
    for error, quotient, lcm, name in ((*lines[0:3], "int32"), (*lines[3:6], "int64")):
        assert f"integer overflow in aten::div.Tensor_mode: {np.iinfo(name).min} / -1 does not fit {name}" in error
        assert quotient == "-3"  # trunc(-7 / 2), as eager
        assert f"integer overflow in aten::lcm.default: |{np.iinfo(name).min}| does not fit {name}" in lcm


NO_FAKE_KERNEL = """
builtin.module {
  func.func @forward(%x: tensor<6x2xf32> {rdu.input = "x"}) -> tensor<4xf32> {
    %e0, %e1 = rdu.host_call #rdu.aten<"aten::_histogramdd_bin_edges.default", {bins = [BINS : i64, 2 : i64]}>(%x)
        tensors ["self"] : (tensor<6x2xf32>) -> (tensor<4xf32>, tensor<3xf32>)
    func.return %e0 : tensor<4xf32>
  }
}
"""


def test_an_op_without_a_fake_kernel_runs_only_with_arguments_its_results_can_hold() -> None:
    """torch has no fake kernel of _histogramdd_bin_edges: bins past the declared
    elements (2^40 edges) is refused before the kernel allocates them."""
    x = np.random.default_rng(0).standard_normal((6, 2)).astype(np.float32)
    edges = GraphExecutor(parse_module(NO_FAKE_KERNEL.replace("BINS", "3"))).run([x], {})
    expected = torch.ops.aten._histogramdd_bin_edges.default(torch.from_numpy(x), [3, 2])[0].numpy()
    np.testing.assert_allclose(np.asarray(edges[0] if isinstance(edges, list | tuple) else edges), expected)
    start = time.monotonic()
    with pytest.raises(RduccError, match=r"argument 'bins' \(1099511627776\) exceeds the 7 elements"):
        GraphExecutor(parse_module(NO_FAKE_KERNEL.replace("BINS", str(2**40)))).run([x], {})
    assert time.monotonic() - start < 10


_RUN_SIGNALLING_CHUNKS = """
import sys
from pathlib import Path

from rducc.runtime import elementwise
from rducc.tools.entry import rducc_run

marker, chunks = Path(sys.argv.pop(1)), elementwise.run_in_chunks


def signalling(*args, **kwargs):
    marker.touch()
    return chunks(*args, **kwargs)


elementwise.run_in_chunks = signalling
sys.exit(rducc_run())
"""
"""`rducc-run` (argv after the marker path) that touches the marker as a call enters
`run_in_chunks`: the test's Ctrl-C then lands in the kernel, not in the imports,
without a fixed wait that a loaded machine may outlast (and that burns a core)."""


def test_a_long_polynomial_stops_on_ctrl_c(tmp_path: Path) -> None:
    """Degree 2^20 over 2^16 elements is 2^36 steps (many minutes): run in chunks,
    Ctrl-C stops it within seconds, exit status 130, one line."""
    import signal

    from error_cases import POINTWISE_PROGRAM

    elements = 1 << 16
    program = POINTWISE_PROGRAM.format(t="f32", callee='"aten::special_laguerre_polynomial_l.default"')
    program = program.replace("4xf32", f"{elements}xf32").replace("offset 64 ", f"offset {4 * elements} ")
    program = program.replace("offset 128 ", f"offset {8 * elements} ").replace(
        "tier.sram_capacity = 256", f"tier.sram_capacity = {12 * elements}")
    (tmp_path / "long.mlir").write_text(program)
    np.save(tmp_path / "x.npy", np.full(elements, 0.5, np.float32))
    np.save(tmp_path / "n.npy", np.full(elements, call_limits.MAX_DEGREE, np.float32))
    in_kernel = tmp_path / "in-kernel"
    child = subprocess.Popen([sys.executable, "-c", _RUN_SIGNALLING_CHUNKS, str(in_kernel), "long.mlir",
                              "--input", "x.npy", "--input", "n.npy"], cwd=tmp_path,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while not in_kernel.exists() and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # imports, parse, and into the kernel's chunks
        time.sleep(0.5)  # a few chunks in
        assert child.poll() is None, child.communicate()
        assert in_kernel.exists(), "the call never reached run_in_chunks"
        child.send_signal(signal.SIGINT)
        _, stderr = child.communicate(timeout=20)
    finally:
        child.kill()
    assert child.returncode == 130, stderr
    assert len(stderr.strip().splitlines()) == 1, stderr
