"""Multi-socket partitioning (passes/rdu_partition/, runtime/sockets.py): a tiny
Llama split 8 ways (tp=8) and 4 x 2 (tp=4, pp=2) runs and matches eager at -O0
and -O2; every socket's SRAM plan passes the independent checker; the link
figures of the targets; the collectives' modeled time, and their overlap with
the next kernel's weight reads; Llama 3.1 8B and 70B (exact configs, one
layer, meta) compile for sn40l-16; grouped-query attention with more ranks
than KV heads (KV heads replicated over a factor of the ranks)."""

from __future__ import annotations

import dataclasses
import math
import re

import numpy as np
import pytest
import torch
from xdsl.dialects.builtin import ModuleOp

import models
import rducc
from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp, AllReduceOp, SendRecvOp
from rducc.dialects.tier import ComputeOp, GlobalOp
from rducc.errors import RduccError
from rducc.dialects.contracts import calls_of, is_outlined, op_stage, partition_of, shard_of
from rducc.dialects.split import Split
from rducc.passes.rdu_partition import RduPartition
from rducc.tools.report import socket_use
from rducc.model.kernel_timing import KernelWork, Overlap, collective_cost, kernel_time
from rducc.runtime.sockets import run_partitioned
from rducc.targets import load_target
from sram_checker import check_placed

SN40L_8 = load_target("sn40l-8")


def _compile(model, inputs, tp: int, pp: int, opt_level: int) -> rducc.Program:
    return rducc.compile(model, inputs, target="sn40l-8", opt_level=opt_level,
                         passes=[after("rdu-canonicalize", RduPartition(tp=tp, pp=pp))])


def _ops(module: ModuleOp, kind: type) -> list:
    return [op for op in module.walk() if isinstance(op, kind)]


def _executed_count(module: ModuleOp, kind: type) -> int:
    """How many `kind` ops a run executes: an outlined layer's ops once per call."""
    count = 0
    for function in module.ops:
        count += (calls_of(function) if is_outlined(function) else 1) * sum(isinstance(op, kind) for op in function.walk())
    return count


def _check_each_socket(module: ModuleOp) -> None:
    """The plan passes the checker, and so does each stage's part of it (one socket's plan)."""
    capacity = SN40L_8.sram_bytes
    check_placed(module, capacity)
    _, pp = partition_of(module)
    for stage in range(pp):
        socket = module.clone()
        for compute in [op for op in socket.walk() if isinstance(op, ComputeOp)]:
            if op_stage(compute) != stage:
                compute.detach()
                compute.erase(safe_erase=False)
        check_placed(socket, capacity)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_tiny_llama_tp8_matches_eager(opt_level):
    model, inputs = models.tiny_llama8()
    program = _compile(model, inputs, tp=8, pp=1, opt_level=opt_level)
    assert partition_of(program.module) == (8, 1)
    assert _executed_count(program.module, AllReduceOp) == 2 * 2  # after o_proj and down_proj, 2 layers
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)
    _check_each_socket(program.module)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_tiny_llama_decode_tp4_pp2_matches_eager(opt_level):
    model, inputs = models.tiny_llama8_decode()
    program = _compile(model, inputs, tp=4, pp=2, opt_level=opt_level)
    assert partition_of(program.module) == (4, 2)
    sends = _ops(program.module, SendRecvOp)
    assert [(s.source.value.data, s.dest.value.data) for s in sends] == [(0, 1)]
    with torch.no_grad():
        expected = model(*inputs)
    for got, want in zip(program(*inputs), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    _check_each_socket(program.module)
    use = socket_use(program.module)
    assert [u["first_socket"] for u in use] == [0, 4]
    assert all(u["hbm_weight_bytes"] > 0 for u in use)
    report = program.simulate()
    assert sum(k.link_s for k in report.kernels) > 0


def test_a_wrong_shard_gives_a_wrong_result():
    """The ranks really compute on their own parts: swap two ranks' weights and the result moves."""
    model, inputs = models.tiny_llama8()
    program = _compile(model, inputs, tp=2, pp=1, opt_level=0)
    expected = program(*inputs)
    weights = dict(program.weights)
    name = next(n for n in weights if n.endswith("mlp.down_proj.weight"))
    half = weights[name].shape[1] // 2
    weights[name] = np.concatenate([weights[name][:, half:], weights[name][:, :half]], axis=1)
    program.weights = weights
    assert not torch.allclose(program(*inputs), expected, atol=1e-3)


def _shards(module: ModuleOp) -> dict:
    return {g.sym_name.data: shard_of(g) for g in module.ops if isinstance(g, GlobalOp)}


@pytest.fixture(scope="module")
def gqa_program():
    """tiny Llama decode (2 KV heads, 4 query heads) at tp=4, -O0, and its model and inputs."""
    model, inputs = models.tiny_llama_decode()
    return model, inputs, _compile(model, inputs, tp=4, pp=1, opt_level=0)


@pytest.mark.parametrize("opt_level", [0, 2])
def test_gqa_more_ranks_than_kv_heads_matches_eager(opt_level, gqa_program):
    """2 KV heads, 4 query heads, tp=4: rank r holds KV head r // 2 (k/v weights and the
    KV cache replicated over the pair) and query head r; no gather; equals eager."""
    model, inputs, program = gqa_program
    if opt_level:
        program = _compile(model, inputs, tp=4, pp=1, opt_level=opt_level)
    shards = _shards(program.module)
    assert shards["layers.0.k_proj.weight"] == shards["layers.1.v_proj.weight"] == Split(((0, 2, 2),))
    assert shards["layers.0.q_proj.weight"] == shards["layers.0.gate_proj.weight"] == Split.whole(0, 4)
    assert shards["layers.0.o_proj.weight"] == Split.whole(1, 4)
    assert not _ops(program.module, AllGatherOp)
    with torch.no_grad():
        expected = model(*inputs)
    for got, want in zip(program(*inputs), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    _check_each_socket(program.module)


def test_hf_llama_repeated_kv_heads_split_over_the_pairs():
    """Hugging Face's Llama repeats each KV head for its query heads (expand + reshape):
    at tp=4 with 2 KV heads the repeated copy splits over the pair, no gather; equals eager."""
    model, inputs = models.tiny_llama()
    program = _compile(model, inputs, tp=4, pp=1, opt_level=2)
    shards = _shards(program.module)
    assert shards["model.model.layers.0.self_attn.k_proj.weight"] == Split(((0, 2, 2),))
    assert shards["model.model.layers.0.self_attn.o_proj.weight"] == Split.whole(1, 4)
    assert not _ops(program.module, AllGatherOp)
    with torch.no_grad():
        expected = model(*inputs)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)


def test_gqa_swapped_rank_shards_change_the_result(gqa_program):
    """Each rank computes on its own part of a factored split: swap two ranks' parts
    (ranks 0 and 1's query heads, or the KV head of ranks 0-1 with that of 2-3) and the
    logits move."""
    _, inputs, program = gqa_program
    original = dict(program.weights)
    expected = program(*inputs)[0]
    for name, ways in (("layers.0.q_proj.weight", 4), ("layers.0.k_proj.weight", 2)):
        weights = dict(original)
        rows = weights[name].shape[0] // ways
        weights[name] = np.concatenate([weights[name][rows:2 * rows], weights[name][:rows], weights[name][2 * rows:]])
        program.weights = weights
        assert not torch.allclose(program(*inputs)[0], expected, atol=1e-3), name
    program.weights = original


def test_strided_all_gather_joins_the_ranks_of_a_factor():
    """all_gather over a factor of the ranks (stride 2 of 4): ranks 0, 2 and 1, 3."""
    from rducc.runtime import collectives

    def run(inputs, weights, context):
        return [collectives.all_gather(inputs[0], 0, 2, context, stride=2)]

    whole = np.arange(8, dtype=np.float32).reshape(4, 2)
    # rank r holds row r; a gather over stride 2 gives ranks r % 2, r % 2 + 2.
    gathered = run_partitioned(_stub_module(4), [run] * 4, [whole], {})[0]
    np.testing.assert_array_equal(gathered, whole[[0, 2]])


def test_collectives_combine_every_rank_in_rank_order():
    """run_partitioned splits the input by its rdu.shard, and all_reduce / all_gather
    see every rank's array in rank order."""
    from rducc.runtime import collectives

    def run(inputs, weights, context):
        return [collectives.all_reduce(inputs[0], 3, context), collectives.all_gather(inputs[0], 1, 3, context)]

    parts = [np.full((2, 2), rank + 1, np.float32) for rank in range(3)]
    total, gathered = run_partitioned(_stub_module(), [run] * 3, [np.concatenate(parts, axis=0)], {})
    np.testing.assert_array_equal(total, np.full((2, 2), 6, np.float32))
    np.testing.assert_array_equal(gathered, np.concatenate(parts, axis=1))


def _stub_module(tp: int = 3) -> ModuleOp:
    """A module with @forward whose one input is split `tp` ways along dim 0."""
    from xdsl.context import Context
    from xdsl.dialects import builtin, func
    from xdsl.parser import Parser

    from rducc.dialects import Dataflow

    context = Context()
    for dialect in (builtin.Builtin, func.Func, Dataflow):
        context.load_dialect(dialect)
    text = """
    builtin.module attributes {rdu.partition = {tp = TP : i64, pp = 1 : i64}} {
      func.func @forward(%x: tensor<2x2xf32> {rdu.input = "x", rdu.shard = #rdu.split<(0, TP, 1)>}) -> tensor<2x2xf32> {
        func.return %x : tensor<2x2xf32>
      }
    }""".replace("TP", str(tp))
    return Parser(context, text).parse_module()


def test_link_figures_and_collective_times():
    target = load_target("sn40l-16")
    assert target.sockets == 16 and target.link_bandwidth > 0 and target.link_latency_s > 0
    from xdsl.dialects.builtin import TensorType, bf16
    from xdsl.dialects.test import TestOp

    value = TestOp(result_types=[TensorType(bf16, [1, 4096])]).results[0]
    op = AllReduceOp(value, 16)
    seconds, sent = collective_cost(op, target)
    size = 4096 * 2
    # sn40l-16: 8 modules of 2 sockets. Recursive doubling's first step pairs the
    # two sockets of a module (1 hop), the other three cross modules
    # (cross_module_hops each); a ring step over 16 sockets crosses modules.
    hop, cross = target.link_latency_s, target.cross_module_hops * target.link_latency_s
    assert target.module_sockets == 2 and target.cross_module_hops >= 1
    doubling = hop + 3 * cross + 4 * size / target.link_bandwidth
    ring = 30 * (cross + size / 16 / target.link_bandwidth)
    assert math.isclose(seconds, min(doubling, ring))
    assert sent in (4 * size, 30 * size // 16)
    assert collective_cost(SendRecvOp(value, 0, 1), target)[0] == pytest.approx(
        target.link_latency_s + size / target.link_bandwidth)


def test_a_target_without_link_latency_is_refused(tmp_path):
    text = (load_target.__globals__["BUILTIN_DIR"] / "sn40l.toml").read_text()
    bad = tmp_path / "chip.toml"
    line = re.compile(r"^link_latency_s = .*$", re.MULTILINE)  # a table with its range and source
    bad.write_text(line.sub("link_latency_s = -1", text))
    with pytest.raises(RduccError, match="field 'link_latency_s' must be >= 0"):
        load_target(str(bad))
    bad.write_text(line.sub("", text))
    with pytest.raises(RduccError, match="missing field 'link_latency_s'"):
        load_target(str(bad))


@pytest.mark.parametrize("size", ["8b", "70b"])
def test_llama31_compiles_for_sn40l_16(size):
    """Exact configs, one decoder layer, meta device: the cost model picks the split."""
    model, inputs = models.llama31_decode_meta(size, cached=128, layers=1)
    program = rducc.compile(models.export(model, inputs), target="sn40l-16")
    tp, pp = partition_of(program.module)
    assert tp * pp <= 16 and tp > 1
    report = program.simulate()
    assert report.modeled_time_s > 0 and sum(k.link_s for k in report.kernels) > 0
    assert dataclasses.asdict(report)["kernels"]


def test_rducc_run_runs_every_socket(tmp_path):
    """rducc-run on a saved partitioned program: the sidecar holds whole weights, each rank slices."""
    from rducc.tools.run import main

    model, inputs = models.tiny_llama8()
    program = _compile(model, inputs, tp=2, pp=1, opt_level=0)
    program.save(tmp_path / "p.mlir")
    np.save(tmp_path / "ids.npy", inputs[0].numpy())
    assert main([str(tmp_path / "p.mlir"), "--input", str(tmp_path / "ids.npy"),
                 "--output", str(tmp_path / "out.npz")]) == 0
    got = np.load(tmp_path / "out.npz")
    with torch.no_grad():
        expected = model(*inputs).numpy()
    np.testing.assert_allclose(got[next(iter(got.keys()))], expected, rtol=1e-4, atol=1e-5)


def _work(hbm_s: float = 0.0, compute_s: float = 0.0, link_s: float = 0.0, prefetch_bytes: int = 0) -> KernelWork:
    return KernelWork(name="k", ops_fused={}, flops=0, bytes_by_tier={}, sram_bytes=0, tiles=1,
                      compute_s=compute_s, sram_s=0.0, hbm_s=hbm_s, ddr_s=0.0, startup_s=0.0, link_s=link_s,
                      prefetch_bytes=prefetch_bytes)


@pytest.mark.parametrize(("prefetch_us", "compute_us", "room_us", "hidden_us"), [
    (10.0, 0.0, 1e3, 5.0),    # 10 us of weights to read ahead: all 5 us of links hidden
    (2.0, 0.0, 1e3, 2.0),     # only 2 us of weights before the tile loop: 2 us hidden
    (10.0, 18.0, 1e3, 2.0),   # HBM 20 -> 15 us, but compute takes 18: 2 us saved
    (10.0, 0.0, 3.0, 3.0),    # SRAM room for 3 us of the weights: those 3 us read during the wait
    (10.0, 0.0, 0.0, 0.0),    # no SRAM room: serial
])
def test_overlap_hides_links_behind_the_next_kernels_weight_reads(prefetch_us, compute_us, room_us, hidden_us):
    """The next kernel reads ahead, during the links, what the wait covers and the free SRAM holds."""
    target = load_target("sn40l-8")
    rate = target.hbm_bandwidth * target.hbm_efficiency
    room = int(room_us * 1e-6 * rate)
    first = _work(hbm_s=1e-6, link_s=5e-6)
    second = _work(hbm_s=20e-6, compute_s=compute_us * 1e-6, prefetch_bytes=int(prefetch_us * 1e-6 * rate))
    serial = kernel_time(second, target).modeled_time_s
    first_cost = kernel_time(first, target, overlap=Overlap(0.0, room))
    second_cost = kernel_time(second, target, overlap=Overlap(first.link_s, room))
    assert second_cost.overlap_s == pytest.approx(hidden_us * 1e-6, abs=1e-9)
    assert second_cost.modeled_time_s == pytest.approx(serial - hidden_us * 1e-6, abs=1e-9)
    assert first_cost.overlap_s == 0


def test_overlapped_decode_lies_between_link_free_and_serial():
    """Llama 3.1 8B (2 layers, meta) on sn40l-8: the modeled time with the collectives
    behind the next layer's weight reads is at or above the time without any link
    time (equal when all is hidden) and below the serial one."""
    model, inputs = models.llama31_decode_meta("8b", cached=128, layers=2)
    program = rducc.compile(models.export(model, inputs), target="sn40l-8")
    report = program.simulate()
    serial = sum(k.modeled_time_s + k.overlap_s for k in report.kernels)
    link_free = serial - sum(k.link_s for k in report.kernels)
    assert link_free <= report.modeled_time_s * (1 + 1e-12) and report.modeled_time_s < serial  # the schedule sums floats
    assert sum(k.overlap_s for k in report.kernels) > 0
