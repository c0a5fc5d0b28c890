"""dp x tp on sn40l-8 (issue 27, item 4): a training step split across the batch
(dp replicas) and, within each replica, across the weights (tp) compiles, runs
with collectives over replica groups (tp's of consecutive ranks, dp's of ranks
tp apart) and trains as eager does; the cost model costs each collective over
its group's sockets; the split chooser compiles the dp x tp winner it reports."""

from __future__ import annotations

import copy
import re
from collections import Counter

import pytest
import torch
from test_train_parallel import LlamaLoss, MLPLoss, _imported_step

from rducc.dialects.contracts import Phase, arg_attrs, data_parallel_of, is_input, partition_of, phase_of, shard_of
from rducc.dialects.program import entry_function
from rducc.dialects.rdu.collectives import GROUPED_OPS, AllReduceOp
from rducc.dialects.tier import GlobalOp
from rducc.model.kernel_timing import collective_seconds
from rducc.model.training_speed import training_speed
from rducc.targets import load_target
from rducc.training import compile_training

CASES = {  # the MLP at dp=2 x tp=2 (AdamW, -O2, 20 steps): test_train_parallel.py's twenty-step test
    "llama": (LlamaLoss, lambda: (torch.randint(0, 64, (2, 8)), torch.randint(0, 64, (2, 8))), torch.optim.SGD,
              {"lr": 0.05, "momentum": 0.9}, 2),
}


@pytest.mark.parametrize("name", list(CASES))
def test_dp_by_tp_trains_as_eager(name):
    """dp=2 x tp=2 (4 of sn40l-8's sockets): 2 steps' losses and the updated weights
    equal eager's; the inputs split over the replicas (rank / 2), the weights over
    tp (rank % 2), and the program's all-reduces span both kinds of groups."""
    make, batch, optimizer, options, opt_level = CASES[name]
    torch.manual_seed(0)
    model = make().train()
    batches = [batch() for _ in range(2)]
    eager = copy.deepcopy(model)
    program = compile_training(model, batches[0], optimizer=optimizer.__name__.lower(), target="sn40l-8",
                               opt_level=opt_level, dp=2, tp=2, **options)
    module = program.module
    assert (partition_of(module), data_parallel_of(module)) == ((2, 1), 2)
    forward = entry_function(module)
    inputs = [shard_of(attrs) for attrs in arg_attrs(forward) if is_input(attrs)]
    assert inputs and all(split is not None and split.entries == ((0, 2, 2, 0),) for split in inputs)
    weights = [split for op in module.ops if isinstance(op, GlobalOp) and (split := shard_of(op)) is not None]
    assert weights and all(stride == 1 for split in weights for _, _, stride, _ in split.entries)
    groups = {op.groups(4) for op in module.walk() if isinstance(op, AllReduceOp)}
    assert groups == {((0, 1), (2, 3)), ((0, 2), (1, 3))}
    reference = optimizer(eager.parameters(), **options)
    for step, inputs_ in enumerate(batches):
        reference.zero_grad()
        loss = eager(*inputs_)
        loss.backward()
        reference.step()
        assert float(program.step(*inputs_)) == pytest.approx(loss.item(), rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for key, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[key], parameter.detach(), rtol=1e-4, atol=1e-5, msg=key)


def test_collectives_cost_over_their_groups_sockets():
    """On sn40l-8 (modules of 2 sockets): a ring over a tp pair stays in its module
    (1 hop a step), one over ranks 2 apart leaves it (cross_module_hops)."""
    target = load_target("sn40l-8")
    pair = collective_seconds("all_reduce", 4096, 2, target, (0, 1))[0]
    strided = collective_seconds("all_reduce", 4096, 2, target, (0, 2))[0]
    assert collective_seconds("all_reduce", 4096, 2, target)[0] == pair  # the default: consecutive sockets
    assert strided - pair == pytest.approx((target.cross_module_hops - 1) * target.link_latency_s)


def test_chooser_compiles_the_dp_by_tp_winner(monkeypatch):
    """When a dp x tp candidate wins (here the only ones weighed besides one socket,
    and one socket made slow), rdu-partition compiles that split: the module's
    partition is the table's chosen line, its collectives over replica groups."""
    from rducc.dialects.contracts import split_choice_of
    from rducc.model import split_choice
    from rducc.pipeline import parse_passes, run_passes

    real = split_choice.candidates
    monkeypatch.setattr(split_choice, "candidates", lambda sockets, batch: [
        c for c in real(sockets, batch) if c.dp > 1 and c.tp > 1 and c.pp == 1 and not c.zero])
    module = _imported_step(64)
    run_passes(module, parse_passes("rdu-partition{target=sn40l-8}"))
    table = split_choice_of(module)
    (tp, pp), dp = partition_of(module), data_parallel_of(module)
    assert dp > 1 and tp > 1 and table[0].endswith(f"chosen: dp={dp} tp={tp} pp={pp}):")
    ranks = dp * tp
    found = {op.groups(ranks) for op in module.walk() if isinstance(op, GROUPED_OPS)}
    consecutive = tuple(tuple(range(start, start + tp)) for start in range(0, ranks, tp))
    strided = tuple(tuple(range(start, ranks, tp)) for start in range(tp))
    assert consecutive in found and strided in found


def _optimizer_state_bytes(module) -> int:
    from rducc.model.training_speed import memory_table

    return sum(memory_table(module)["optimizer state"].values())


def _memory_bytes(module, cls: str) -> int:
    from rducc.model.training_speed import memory_table

    return sum(memory_table(module)[cls].values())


@pytest.mark.parametrize(("tp", "clip", "stage", "opt_level"), [(1, 1.0, 1, 0), (2, None, 2, 0), (2, 1.0, 3, 2)])
def test_zero_trains_as_eager_with_sharded_state(tp, clip, stage, opt_level):
    """ZeRO at dp=2 (x tp): each replica holds half of AdamW's moments (the report's
    optimizer-state bytes). Stage 1 all-reduces the gradients (every gradient's bytes
    held) and each replica updates its part; stage 2 reduce-scatters them (under
    max_grad_norm before the clip, whose norm is each replica's part all-reduced), the
    report's gradients the 1/dp share; both all-gather the updated parameters. Stage 3
    holds the parameters split too (the report's weights the 1/dp share), all-gathers
    each before the forward reads it and again before the backward does (fc2's weight:
    the gradient of its input), and gathers nothing after the update. 3 steps' losses,
    the parameters and `state_dict()` (gathered on the host, torch.optim's format)
    equal eager's, and torch.optim's state loads back. At -O2 the step is one kernel:
    its gradients never leave SRAM (the report's gradient bytes are 0)."""
    from rducc.dialects.contracts import zero_of
    from rducc.dialects.rdu.collectives import AllGatherOp, ReduceScatterOp

    torch.manual_seed(0)
    model = MLPLoss()
    eager = copy.deepcopy(model)
    batches = [(torch.randn(4, 16), torch.randint(0, 8, (4,))) for _ in range(3)]
    options = {"lr": 1e-2, "weight_decay": 0.1}
    clipping = {"max_grad_norm": clip} if clip else {}
    program = compile_training(model, batches[0], optimizer="adamw", target="sn40l-8", opt_level=opt_level,
                               dp=2, tp=tp, zero=stage, **options, **clipping)
    module = program.module
    assert zero_of(module) == stage and data_parallel_of(module) == 2
    scatters = [op for op in module.walk() if isinstance(op, ReduceScatterOp)]
    dp_groups = tuple(tuple(range(r, 2 * tp, tp)) for r in range(tp))
    gathers = Counter(phase_of(op) for op in module.walk()
                      if isinstance(op, AllGatherOp) and op.groups(2 * tp) == dp_groups)
    sharded = 3 if tp > 1 else 4  # the parameters ZeRO splits (tp=2: fc1's bias is split by tp only)
    if stage < 3:
        assert gathers == {Phase.OPTIMIZER: sharded}  # each updated parameter, whole for the next forward
    else:
        assert gathers == {Phase.FORWARD: sharded, Phase.BACKWARD: 1}
    # the gradients (float32) the optimizer reads and the weights: tp's share of each, and
    # the replica's half of those ZeRO splits where the stage shards them
    tp_share = {"fc1.weight": tp, "fc1.bias": tp, "fc2.weight": tp, "fc2.bias": 1}
    whole = {key: 4 * p.numel() // tp_share[key] for key, p in eager.named_parameters()}
    halves = sum(n // (1 if tp > 1 and key == "fc1.bias" else 2) for key, n in whole.items())
    if stage >= 2:
        assert len(scatters) == sharded and all(op.groups(2 * tp) == dp_groups for op in scatters)
        assert _memory_bytes(module, "gradients") == (halves if opt_level == 0 else 0)
    else:
        assert not scatters and _memory_bytes(module, "gradients") == sum(whole.values())  # held whole
    assert _memory_bytes(module, "weights") == (halves if stage == 3 else sum(whole.values()))
    # a socket's exp_avg and exp_avg_sq (float32): 1/dp of each, 1/(dp x tp) of those tp splits too
    # but fc1's bias (tp splits its only dim); the float32 step counts whole, and the one param
    # group's learning rate
    shares = {"fc1.weight": 2 * tp, "fc1.bias": tp if tp > 1 else 2, "fc2.weight": 2 * tp, "fc2.bias": 2}
    held = sum(2 * 4 * p.numel() // shares[key] for key, p in eager.named_parameters())
    assert _optimizer_state_bytes(module) == held + 4 * len(shares) + 8  # and the learning rate (float64)
    # MFU's model FLOPs count the whole model, however its parameters are split
    speed = training_speed(module, load_target("sn40l-8"))
    assert speed.parameters == sum(p.numel() for p in eager.parameters()) and speed.sockets == 2 * tp
    reference = torch.optim.AdamW(eager.parameters(), **options)
    for step, batch in enumerate(batches):
        reference.zero_grad()
        loss = eager(*batch)
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(eager.parameters(), clip)
        reference.step()
        assert float(program.step(*batch)) == pytest.approx(loss.item(), rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for key, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[key], parameter.detach(), rtol=1e-4, atol=1e-5, msg=key)
    ours, theirs = program.state_dict(), reference.state_dict()
    for index, state in theirs["state"].items():
        for name, value in state.items():
            torch.testing.assert_close(torch.as_tensor(ours["state"][index][name]), value, rtol=1e-4, atol=1e-7)
    restored = torch.optim.AdamW(copy.deepcopy(eager).parameters(), **options)
    restored.load_state_dict(ours)  # torch.optim takes the gathered state back
    program.load_state_dict(theirs)  # and the program takes torch.optim's, split again on each step
    assert float(program.step(*batches[0])) == pytest.approx(eager(*batches[0]).item(), rel=1e-5, abs=1e-6)


def test_zero_needs_replicas_and_state():
    """ZeRO without dp, or on a step with no optimizer state, is one clear error."""
    from rducc.errors import RduccError
    from rducc.pipeline import parse_passes, run_passes

    step = _imported_step(4)  # the checks read the step and refuse before changing it: one serves both
    with pytest.raises(RduccError, match="zero shards the optimizer state over the data-parallel replicas: "
                                         "it needs dp >= 2, got dp=0"):
        run_passes(step, parse_passes("rdu-partition{tp=2 zero=true target=sn40l-8}"))
    with pytest.raises(RduccError, match="zero shards the optimizer state, but this step has none"):
        run_passes(step, parse_passes("rdu-partition{dp=2 zero=true target=sn40l-8}"))


@pytest.mark.parametrize(("target", "keywords", "message"), [
    ("sn40l-8", {"dp": 2, "zero": 4}, "zero=4: the ZeRO stage is 1 (optimizer state sharded), 2 (and gradients) or 3"),
    ("sn40l-8", {"tp": 2, "zero": 1}, "zero=1 shards the optimizer state over the data-parallel replicas: give dp=2"),
    ("sn40l-8", {"dp": -1}, "dp=-1: dp, tp, pp and zero must be whole numbers >= 0"),
    ("sn40l-8", {"dp": 4, "tp": 4}, "dp=4 tp=4 needs 16 sockets; target sn40l-8 has 8"),
    ("sn40l", {"dp": 2}, "dp=2 splits the step across sockets, but target sn40l has one"),
    ("sn40l-8", {"dp": 2, "passes": "rdu-canonicalize"}, "dp=2 sets the -O pipeline's rdu-partition; with passes="),
])
def test_compile_training_split_keywords_are_checked(target, keywords, message):
    """compile_training's dp/tp/pp/zero keywords (rducc --train's --dp/--tp/--pp/--zero)
    refuse what the CLI refuses, with one clear error, before anything is exported."""
    from rducc.errors import RduccError

    with pytest.raises(RduccError, match=re.escape(message)):
        compile_training(MLPLoss(), (torch.randn(4, 16), torch.randint(0, 8, (4,))), target=target, **keywords)


def test_pp_by_tp_trains_as_eager():
    """pp=2 x tp=2 (4 of sn40l-8's sockets): each stage's ops on its own stage
    (`rdu.stage`), the weights split over tp within it, sends between the stages,
    the 1F1B microbatches; 3 AdamW steps' losses and the parameters equal eager's."""
    from test_train_parallel import _train_both

    from rducc.dialects.contracts import microbatches_of, op_stage
    from rducc.dialects.rdu.collectives import SendRecvOp

    torch.manual_seed(0)
    batches = [(torch.randn(4, 16), torch.randint(0, 8, (4,))) for _ in range(3)]
    program, eager, losses = _train_both(MLPLoss(), batches, "adamw", 2, tp=2, pp=2)
    module = program.module
    assert partition_of(module) == (2, 2) and microbatches_of(module) > 1
    assert any(isinstance(op, SendRecvOp) for op in module.walk())
    assert {op_stage(op) for op in module.walk() if op.name == "rdu.matmul"} == {0, 1}
    assert any(isinstance(op, AllReduceOp) for op in module.walk())  # fc2's rows: a partial sum over tp
    weights = {op.sym_name.data: shard_of(op) for op in module.ops if isinstance(op, GlobalOp)}
    assert set(weights["fc1.weight"].dims()) == {0} and set(weights["fc2.weight"].dims()) == {1}  # columns, rows
    for step, (got, want) in enumerate(losses):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for key, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[key], parameter.detach(), rtol=1e-4, atol=1e-5, msg=key)


class ChannelCNN(torch.nn.Module):
    """Two 3x3 convolutions with batch norm (train mode) and a residual, then a linear head."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(3, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.c2, self.b2 = nn.Conv2d(8, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8)
        self.fc = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.b1(self.c1(x)))
        h = torch.relu(self.b2(self.c2(h)) + h)
        return torch.nn.functional.cross_entropy(self.fc(h.mean([2, 3])), y)


def test_tp_splits_convolution_channels_and_trains_as_eager():
    """tp=2 through convolutions (rdu-partition-conv.mlir): the first convolution's
    output channels split (column-parallel, weight dim 0), its batch norm on each
    rank's channels, the second's input channels (row-parallel, weight dim 1, an
    all-reduce of its partial sums); AdamW, 3 steps' losses and parameters equal
    eager's (SGD: bench/train_matrix.py --models cnn,resnet --splits tp2)."""
    from test_train_parallel import _train_both

    torch.manual_seed(0)
    batches = [(torch.randn(2, 3, 6, 6), torch.randint(0, 4, (2,))) for _ in range(3)]
    program, eager, losses = _train_both(ChannelCNN().train(), batches, "adamw", 0, tp=2)
    weights = {op.sym_name.data: shard_of(op) for op in program.module.ops if isinstance(op, GlobalOp)}
    assert weights["c1.weight"].entries == ((0, 2, 1, 0),) and weights["c2.weight"].entries == ((1, 2, 1, 0),)
    assert weights["b1.weight"].entries == ((0, 2, 1, 0),) and weights["b1.running_var"] is not None
    for step, (got, want) in enumerate(losses):
        assert got == pytest.approx(want, rel=1e-5, abs=1e-6), f"step {step}"
    trained = program.parameters()
    for key, parameter in eager.named_parameters():
        torch.testing.assert_close(trained[key], parameter.detach(), rtol=1e-4, atol=1e-5, msg=key)
