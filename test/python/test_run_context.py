"""The run context (`rducc.runtime.context.RunContext`): one per call, carried
through the runtime to the kernels that need it (random ops, collectives).

A random tensor a partitioned program replicates is drawn by every rank: each
rank must draw the same numbers (the run number is the call's, not a counter
each rank's thread advances), so a linear layer split by columns over the
ranks gives what one socket gives for the same tensor."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import rducc
from rducc.api import after
from rducc.errors import RduccError
from rducc.dialects.tier import GlobalOp
from rducc.dialects.contracts import partition_of, shard_of
from rducc.passes.rdu_partition import RduPartition
from rducc.runtime.context import RunContext, SocketGroup
from rducc.runtime.executor import to_numpy
from rducc.runtime.interpreter import PlacedProgram
from rducc.runtime.sockets import run_partitioned


class RandomLinear(torch.nn.Module):
    """A random tensor r (replicated on every rank) and Linear(r) (split by columns)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(16, 32)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        r = torch.rand(4, 16)
        return r, self.linear(r) + x


@pytest.mark.parametrize(("target", "tp"), [("sn40l-8", 2), ("sn40l-8", 4), ("sn40l-16", 8)])
def test_a_replicated_random_tensor_is_the_same_on_every_rank(target: str, tp: int) -> None:
    torch.manual_seed(0)
    model = RandomLinear()
    x = torch.zeros(4, 32)
    program = rducc.compile(model, (x,), target=target, opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=tp, pp=1))])
    assert partition_of(program.module) == (tp, 1)
    split = [op.sym_name.data for op in program.module.ops if isinstance(op, GlobalOp) and shard_of(op) is not None]
    assert split == ["linear.weight", "linear.bias"], "the linear layer should be split by columns"
    draws = []
    for _ in range(4):
        r, out = program(x)
        with torch.no_grad():
            expected = model.linear(r)
        torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5)
        draws.append(r)
    assert not torch.equal(draws[0], draws[1]), "two calls drew the same numbers"


def test_every_rank_draws_the_same_replicated_tensor() -> None:
    """Each rank's own `r` (before any result is joined) is the same, on every call."""
    model = RandomLinear()
    x = torch.zeros(4, 32)
    program = rducc.compile(model, (x,), target="sn40l-8", opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=4, pp=1))])
    ranks = [PlacedProgram(program.module) for _ in range(4)]
    drawn: dict[int, np.ndarray] = {}

    def runner(rank: int):
        def run(inputs, weights, context):
            outputs = ranks[rank].run(inputs, weights, context)
            drawn[context.rank] = outputs[0]
            return outputs
        return run

    draws = []
    for run in (1, 2):
        drawn.clear()
        run_partitioned(program.module, [runner(r) for r in range(4)], [to_numpy(x)], program.weights, run=run)
        assert sorted(drawn) == [0, 1, 2, 3]
        for rank in (1, 2, 3):
            np.testing.assert_array_equal(drawn[rank], drawn[0], err_msg=f"rank {rank}, run {run}")
        draws.append(drawn[0])
    assert not np.array_equal(draws[0], draws[1]), "two runs drew the same numbers"


def test_a_collective_outside_a_socket_group_is_an_error() -> None:
    from rducc.runtime.collectives import all_reduce

    with pytest.raises(RduccError, match="a collective ran outside a multi-socket run"):
        all_reduce(np.zeros(2, np.float32), 2, RunContext(run=1))


def test_a_context_names_its_rank_in_its_group() -> None:
    group = SocketGroup(4)
    context = RunContext(run=3, group=group, rank=2)
    assert (context.run, context.rank, context.group) == (3, 2, group)
    with pytest.raises(RduccError, match="rank 4 is not in a group of 4 sockets"):
        RunContext(run=3, group=group, rank=4)
