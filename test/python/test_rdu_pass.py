"""`RduPass`: the one place a pass's levels are checked and set (issue 29).

Every rducc pass is an `RduPass`; none checks or sets an IR level itself (a
scan of their source), and the base class refuses a module at a level the
pass does not accept, runs `rewrite`, and marks the level it `produces`.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import ClassVar

import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import Level, level_of, set_level
from rducc.errors import RduccError
from rducc.passes import ALL_PASSES
from rducc.passes.common import RduPass

LEVEL_CALLS = {"set_level", "require_level", "require_tensor_program"}


@dataclass(frozen=True)
class _Marking(RduPass):
    """A pass taking kernels to memory that only records it ran."""

    name = "test-marking"
    accepts: ClassVar[tuple[Level, ...]] = (Level.KERNELS,)
    produces: ClassVar[Level | None] = Level.MEMORY
    ran: list = None  # type: ignore[assignment]

    def rewrite(self, ctx: Context, op: ModuleOp) -> None:
        self.ran.append(level_of(op))


def _module_at(level: Level) -> ModuleOp:
    module = ModuleOp([])
    set_level(module, level)
    return module


@pytest.mark.parametrize("name", sorted(ALL_PASSES))
def test_every_pass_is_an_rdu_pass_that_leaves_levels_to_it(name):
    cls = ALL_PASSES[name]()
    assert issubclass(cls, RduPass), name
    assert "apply" not in vars(cls), f"{name} overrides apply: its levels are RduPass's to check and set"
    tree = ast.parse(inspect.getsource(inspect.getmodule(cls)))
    calls = {node.func.id for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
    assert not calls & LEVEL_CALLS, f"{name} checks or sets a level itself: {calls & LEVEL_CALLS}"


def test_the_base_checks_accepts_runs_rewrite_and_sets_produces():
    ran: list = []
    module = _module_at(Level.KERNELS)
    _Marking(ran=ran).apply(Context(), module)
    assert ran == [Level.KERNELS]
    assert level_of(module) == Level.MEMORY


def test_a_module_at_a_level_not_accepted_is_refused_before_rewrite():
    ran: list = []
    with pytest.raises(RduccError, match="test-marking takes IR at level kernels; this module is at level graph"):
        _Marking(ran=ran).apply(Context(), _module_at(Level.GRAPH))
    assert ran == []


def test_the_target_option_is_the_base_class_s():
    assert all("target" in {f for f in ALL_PASSES[name]().__dataclass_fields__} for name in ALL_PASSES)
    assert "target" not in {n for name in ALL_PASSES for n in vars(ALL_PASSES[name]()).get("__annotations__", {})}
