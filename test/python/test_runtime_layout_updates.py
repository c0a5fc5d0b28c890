"""Random small programs of layout ops and in-place updates, run against eager
(issue 32: layout ops run as NumPy views, `rducc.runtime.layout_views`).

Each program takes views of an input and of a buffer (permutes, transposes,
reshapes, slices, broadcasts, selects), reads some before an in-place update
of one of them (a row copy, an index put through a permuted view, a slice
copy, a scatter, a whole-tensor change) and some after it, through a consumer
(a map, a reduce, a softmax, a gather, a cumulative sum, a product): the
readers of a view get strided arrays, and what eager reads through an alias
after the update must come out the same. Two calls: the buffer's update is
carried into the next one; the caller's input is updated as torch updates it.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable

import pytest
import torch

import rducc

SHAPE = (4, 6, 8)
Layout = Callable[[torch.Tensor], torch.Tensor]


def _layout(rng: random.Random, rank: int) -> tuple[str, Layout, int]:
    """One layout op for a tensor of `rank` dims: (its name, the op, the rank after it)."""
    choice = rng.choice(["permute", "transpose", "reshape", "slice", "broadcast", "select"] if rank > 1
                        else ["reshape", "slice", "broadcast"])
    if choice == "permute":
        perm = list(range(rank))
        rng.shuffle(perm)
        return f"permute{perm}", lambda t: t.permute(*perm), rank
    if choice == "transpose":
        a, b = rng.sample(range(rank), 2)
        return f"transpose({a},{b})", lambda t: t.transpose(a, b), rank
    if choice == "reshape":
        if rank > 1 and rng.random() < 0.5:
            dim = rng.randrange(rank - 1)
            return f"flatten({dim})", lambda t: t.flatten(dim, dim + 1), rank - 1
        return "split(-1)", lambda t: t.unflatten(-1, (2, t.shape[-1] // 2)) if t.shape[-1] % 2 == 0 \
            else t.unsqueeze(-1), rank + 1
    if choice == "slice":
        dim, step = rng.randrange(rank), rng.choice([1, 2])
        return f"slice({dim},::{step})", lambda t: t.narrow(dim, 1, t.shape[dim] - 1)[
            (slice(None),) * dim + (slice(None, None, step),)] if t.shape[dim] > 1 else t, rank
    if choice == "broadcast":
        return "expand", lambda t: t.unsqueeze(0).expand(2, *t.shape), rank + 1
    index = rng.randrange(rank)
    return f"select({index})", lambda t: t.select(index, t.shape[index] - 1), rank - 1


CONSUMERS: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "map": lambda t, pos: t * 2 + 1,
    "sum": lambda t, pos: t.sum(-1),
    "softmax": lambda t, pos: torch.softmax(t, dim=-1),
    "gather": lambda t, pos: t.index_select(0, pos % t.shape[0]),
    "cumsum": lambda t, pos: torch.cumsum(t, dim=0),
    "product": lambda t, pos: t @ torch.linspace(-1, 1, t.shape[-1] * 3).reshape(t.shape[-1], 3),
}

UPDATES: dict[str, Callable[[torch.Tensor, torch.Tensor, torch.Tensor], object]] = {
    "index_copy": lambda target, x, pos: target.index_copy_(1, pos, x),
    "put_through_permute": lambda target, x, pos: target.permute(1, 0, 2).__setitem__(pos, x.permute(1, 0, 2)),
    "slice_copy": lambda target, x, pos: target[1:3, 2:3].copy_(x[1:3]),
    "scatter": lambda target, x, pos: target.scatter_(1, (torch.arange(8) % 3).expand(4, 1, 8), x),
    "whole": lambda target, x, pos: target.mul_(2).add_(1),
}


class Chain:
    """Layout ops from an input or the buffer, then a consumer."""

    def __init__(self, rng: random.Random) -> None:
        self.base = rng.choice(["state", "buf"])
        self.layouts: list[tuple[str, Layout]] = []
        rank = len(SHAPE)
        for _ in range(rng.randint(1, 3)):
            name, op, rank = _layout(rng, rank)
            self.layouts.append((name, op))
        self.consumer = rng.choice(list(CONSUMERS))

    def view(self, bases: dict[str, torch.Tensor]) -> torch.Tensor:
        value = bases[self.base]
        for _, op in self.layouts:
            value = op(value)
        return value

    def __repr__(self) -> str:
        return f"{self.base}.{'.'.join(name for name, _ in self.layouts)} -> {self.consumer}"


class LayoutUpdates(torch.nn.Module):
    """Chains read before an update of `target`, and chains read (as eager's aliases) after it."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        rng = random.Random(seed)
        self.register_buffer("buf", torch.linspace(-3, 3, 4 * 6 * 8).reshape(SHAPE))
        self.before = [Chain(rng) for _ in range(2)]
        self.after = [Chain(rng) for _ in range(2)]
        self.target, self.update = rng.choice(["state", "buf"]), rng.choice(list(UPDATES))

    def forward(self, x: torch.Tensor, pos: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        bases = {"state": state, "buf": self.buf}
        read = [CONSUMERS[c.consumer](c.view(bases), pos) for c in self.before]
        aliases = [c.view(bases) for c in self.after]
        UPDATES[self.update](bases[self.target], x, pos)
        read += [CONSUMERS[c.consumer](alias, pos) for c, alias in zip(self.after, aliases)]
        return (*read, bases[self.target] * 1)

    def __repr__(self) -> str:
        return f"before {self.before}, {self.update} of {self.target}, after {self.after}"


def _inputs(step: int) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(step)
    return torch.randn(4, 1, 8, generator=generator), torch.tensor([step + 1]), torch.randn(*SHAPE, generator=generator)


@pytest.mark.parametrize("seed", range(3))
def test_random_layout_views_and_in_place_updates_match_eager(seed: int) -> None:
    module = LayoutUpdates(seed)
    eager = copy.deepcopy(module)
    program = rducc.compile(torch.export.export(module, _inputs(0)), opt_level=2)
    for step in range(2):
        ours, theirs = _inputs(step), _inputs(step)
        with torch.no_grad():
            expected = eager(*theirs)
        got = program(*ours)
        for index, (a, e) in enumerate(zip(got, expected)):
            torch.testing.assert_close(torch.as_tensor(a), e, rtol=1e-5, atol=1e-5,
                                       msg=lambda m, i=index, s=step: f"{module!r}, step {s}, result {i}: {m}")
        torch.testing.assert_close(ours[2], theirs[2], msg=lambda m: f"{module!r}: the input state: {m}")
    torch.testing.assert_close(torch.as_tensor(program.weights["buf"]), eager.buf)
