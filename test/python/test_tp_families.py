"""Tensor parallelism at batch > 1 on transformers' own decoders (issue 17, item 3):
the split of the heads goes through the reshapes that merge batch x heads
(a split with a period), so q/k/v and o_proj stay split with no all-gather,
and the result equals eager. A representative subset; `bench/tp_families.py`
runs every family at tp = 2, 4, 8 (and tp x pp) at batch 1, 2 and 4."""

from __future__ import annotations

import pytest
import torch

import decoders
import rducc
from rducc.api import after
from rducc.dialects.rdu.collectives import AllGatherOp, SendRecvOp
from rducc.dialects.contracts import partition_of
from rducc.passes.rdu_partition import RduPartition

CASES = [  # family, batch, tp, pp, target, opt level
    ("qwen2", 4, 8, 1, "sn40l-8", 0),  # more ranks than the 4 KV heads
    ("gpt_neox", 2, 2, 1, "sn40l-8", 2),
    ("mistral", 2, 4, 2, "sn40l-8", 0),
    ("gemma2", 2, 8, 2, "sn40l-16", 0),
    ("gpt2", 2, 4, 1, "sn40l-8", 0),  # c_attn: one linear for q, k and v, split per slice
]


@pytest.fixture(scope="module")
def exported():
    """Each (family, batch) of CASES: model, inputs, eager logits and the exported program, once."""
    cache: dict[tuple[str, int], tuple] = {}

    def get(family: str, batch: int) -> tuple:
        if (family, batch) not in cache:
            model, inputs = decoders.decoder(family, batch)
            with torch.no_grad():
                expected = model(*inputs)
            cache[(family, batch)] = (inputs, expected, torch.export.export(model, inputs))
        return cache[(family, batch)]

    return get


@pytest.mark.parametrize(("family", "batch", "tp", "pp", "target", "opt_level"), CASES)
def test_decoder_family_splits_at_batch_above_one(exported, family, batch, tp, pp, target, opt_level):
    inputs, expected, program_in = exported(family, batch)
    program = rducc.compile(program_in, inputs, target=target, opt_level=opt_level,
                            passes=[after("rdu-canonicalize", RduPartition(tp=tp, pp=pp))])
    assert partition_of(program.module) == (tp, pp)
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    assert any(isinstance(op, SendRecvOp) for op in program.module.walk()) == (pp > 1)
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)


QKV_BLOCKS = {2: (64, 32, 32), 4: (64, 32, 32), 8: (64, (32, 4), (32, 4))}
"""Phi-3's qkv_proj split per tp: q's block tp ways, k's and v's over their 4 KV heads."""


@pytest.mark.parametrize(("batch", "tp"), [(1, 2), (2, 4), (1, 8)])
def test_fused_projection_is_split_per_slice(exported, batch, tp):
    """Phi-3's gate_up_proj (one linear, then sliced into gate and up) is split with
    a period, and its qkv_proj (q of 8 heads, k and v of 4 KV heads each: unequal
    blocks) in its blocks: each rank holds its part of q, of k and of v, and
    nothing is all-gathered. At tp=8 (more ranks than KV heads) q's block splits
    8 ways and k's and v's 4 ways, each KV head held by a pair of ranks."""
    from rducc.runtime.sockets import shard_specs

    inputs, expected, program_in = exported("phi3", batch)
    program = rducc.compile(program_in, inputs, target="sn40l-8", opt_level=0,
                            passes=[after("rdu-canonicalize", RduPartition(tp=tp))])
    weights = shard_specs(program.module)[1]
    gate_up = [split for name, split in weights.items() if "gate_up_proj" in name]
    assert gate_up and all(split.entries == ((0, tp, 1, 128),) for split in gate_up)
    qkv = [split for name, split in weights.items() if "qkv_proj" in name]
    assert qkv and all(split.entries == ((0, tp, 1, QKV_BLOCKS[tp]),) for split in qkv)
    assert not any(isinstance(op, AllGatherOp) for op in program.module.walk())
    torch.testing.assert_close(program(*inputs), expected, rtol=1e-4, atol=1e-5)
