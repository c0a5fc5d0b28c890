"""rdu-partition on outlined decoder layers: the multi-socket -O pipeline outlines
the identical layers first (`rducc.pipeline.with_partition`), so the partitioner
splits `@layer` once and each call passes its own weights and cache sharded as
`@layer` takes them, whatever the number of layers (Llama 3.1 405B: 126 layers,
one partition). The program runs equal to eager on every rank, and is modeled
as the same model partitioned layer by layer inline."""

from __future__ import annotations

from collections import Counter

import models
import pytest
import torch

import rducc
from rducc.api import after
from rducc.dialects.contracts import calls_of, is_outlined, partition_of, shard_of
from rducc.dialects.program import functions
from rducc.driver import import_exported, lower
from rducc.errors import RduccError
from rducc.model.cost_model import partition_estimate
from rducc.passes import rdu_partition
from rducc.passes.rdu_partition import RduPartition, partition_module
from rducc.pipeline import parse_passes, pipeline_text
from rducc.targets import load_target

LAYERS = 4


@pytest.fixture(scope="module")
def decode():
    return models.tiny_llama8_decode(layers=LAYERS)


@pytest.fixture(scope="module")
def exported(decode):
    """The decode step exported once for the tests that import it themselves."""
    return models.export(*decode)


def _visits(monkeypatch) -> Counter:
    """Count the ops the partitioner visits, by the function that holds them."""
    visits: Counter = Counter()
    original = rdu_partition._TensorPartitioner._partition_op

    def counting(self, op):
        visits[self.function.sym_name.data] += 1
        return original(self, op)

    monkeypatch.setattr(rdu_partition._TensorPartitioner, "_partition_op", counting)
    return visits


def test_outlined_layers_are_partitioned_once_and_match_eager(decode, monkeypatch):
    model, inputs = decode
    visits = _visits(monkeypatch)
    program = rducc.compile(model, inputs, target="sn40l-8", passes=pipeline_text(2, sockets=8, split=(4, 1)))
    assert partition_of(program.module) == (4, 1)
    (layer,) = [f for f in functions(program.module) if is_outlined(f)]
    forward = next(f for f in functions(program.module) if not is_outlined(f))
    assert calls_of(layer) == LAYERS
    # each op of @layer visited once (partitioning only adds ops), and @forward's
    # visits are its own few ops and calls, not the layers' ops inline
    assert 0 < visits[layer.sym_name.data] <= sum(1 for _ in layer.body.walk())
    assert visits[forward.sym_name.data] < visits[layer.sym_name.data]  # inline: LAYERS times as many
    assert any(shard_of(g) is not None for g in program.module.ops if hasattr(g, "sym_name")
               and g.sym_name.data.startswith(f"layers.{LAYERS - 1}."))  # the last call's weights split too
    with torch.no_grad():
        expected = model(*inputs)
    for got, want in zip(program(*inputs), expected, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    inline = rducc.compile(model, inputs, target="sn40l-8",
                           passes=[after("rdu-canonicalize", RduPartition(tp=4, pp=1))])
    assert program.simulate().modeled_time_s == pytest.approx(inline.simulate().modeled_time_s, rel=1e-9)


def test_partition_estimate_counts_each_call_of_a_layer(exported):
    """The split chooser's level-1 estimate costs an outlined layer once a call:
    the same seconds as the inline layers (a split with tp and pp)."""
    target = load_target("sn40l-8")
    outlined, inline = import_exported(exported), import_exported(exported)
    lower(outlined, target, passes=parse_passes("rdu-canonicalize,rdu-outline-layers"))
    lower(inline, target, passes=parse_passes("rdu-canonicalize"))
    assert any(is_outlined(f) for f in functions(outlined))
    partition_module(outlined, 2, 2)  # the calls sharded and put in stages
    partition_module(inline, 2, 2)
    assert partition_estimate(outlined, target) == pytest.approx(partition_estimate(inline, target), rel=1e-9)


def test_the_chooser_partitions_only_candidates_that_could_win(exported, monkeypatch):
    """`chosen_split` picks what modeling every pp = 1 candidate picks (the least
    level-1 estimate, the earlier on ties), partitions fewer of them (a split
    without experts models no faster than the unsplit estimate / tp), and hands
    back the partitioned copy that rdu-partition adopts."""
    import dataclasses

    from rducc.dialects.contracts import set_target

    # a slow HBM, so that the weight reads (not the collectives) decide, as at full size
    target = dataclasses.replace(load_target("sn40l-16"), name="slow-hbm", hbm_bandwidth=1e8)
    module = import_exported(exported)
    lower(module, target, passes=parse_passes("rdu-canonicalize,rdu-outline-layers"))
    set_target(module, target)
    modeled = {}
    for tp, pp in rdu_partition.candidate_splits(target.sockets):
        trial = module.clone()
        try:
            if pp == 1:
                partition_module(trial, tp, 1)
                modeled[tp] = partition_estimate(trial, target)
        except RduccError:
            continue  # tp does not divide the heads
    best = min(modeled, key=lambda tp: (modeled[tp], tp))
    partitioned = []
    original = rdu_partition.partition_module

    def counting(trial, tp, pp, *args, **kwargs):
        partitioned.append((tp, pp))
        return original(trial, tp, pp, *args, **kwargs)

    monkeypatch.setattr(rdu_partition, "partition_module", counting)
    tp, pp, ep, trial = rdu_partition.chosen_split(module.clone())
    assert (tp, pp, ep) == (best, 1, 1), modeled
    assert len(partitioned) < len(modeled), (partitioned, modeled)
    assert trial is not None and partition_of(trial) == (best, 1)
    assert partition_estimate(trial, target) == pytest.approx(modeled[best], rel=1e-12)


def test_the_chooser_prunes_by_bounds_without_ddr_reads(exported, monkeypatch):
    """A pipelined split can beat the same tp at pp = 1 when that split's weights
    spill past one socket's HBM and the pipelined one's fit: the chooser bounds a
    candidate by its references' in-HBM part (`partition_estimate_parts`), never
    by their DDR reads. HBM is cut so that every pp = 1 split spills (read from a
    slow DDR) and a pipelined one fits: the chooser must model it and pick it (the
    old bound, the whole pp = 1 estimate, skipped it and kept tp = 8, pp = 1), and
    pick the fastest of all candidates, not the first pipelined one that fits (it
    stopped at tp = 8, pp = 2 where tp = 4, pp = 4 models faster)."""
    import dataclasses

    from rducc.dialects.contracts import set_target
    from rducc.model import cost_model

    base = load_target("sn40l-16")
    module = import_exported(exported)
    lower(module, base, passes=parse_passes("rdu-canonicalize,rdu-outline-layers"))
    target = dataclasses.replace(base, name="cut-hbm", hbm_bytes=max(cost_model.stage_weight_bytes(module)) // 8,
                                 ddr_bandwidth=1e8)
    set_target(module, target)
    modeled: dict[tuple[int, int], tuple[float, float]] = {}
    original = cost_model.partition_estimate_parts

    def recording(trial, on):
        modeled[partition_of(trial)] = parts = original(trial, on)
        return parts

    monkeypatch.setattr(cost_model, "partition_estimate_parts", recording)
    tp, pp, _, chosen = rdu_partition.chosen_split(module.clone())
    alone = [parts for (_, stages), parts in modeled.items() if stages == 1]
    assert alone and all(spilled > 0 for _, spilled in alone), modeled  # every pp = 1 split modeled spills
    assert pp > 1 and chosen is not None and modeled[(tp, pp)][1] == 0, modeled
    assert sum(modeled[(tp, pp)]) < min(sum(parts) for parts in alone), modeled
    every = {}  # every candidate, partitioned: the chooser's split must be the fastest, not the first that fits
    for split in rdu_partition.candidate_splits(target.sockets):
        trial = module.clone()
        try:
            partition_module(trial, *split)
        except RduccError:
            continue
        every[split] = original(trial, target)
    assert sum(modeled[(tp, pp)]) == pytest.approx(min(sum(parts) for parts in every.values()), rel=1e-12), every
    assert len(modeled) < len(every), (modeled, every)  # the bounds still prune
