"""Every op of rducc's dialects has a numpy implementation registered for its
class (`rducc.runtime.registry`), or is named as one an engine runs itself;
nothing falls back silently."""

from __future__ import annotations

import pytest
from xdsl.dialects import arith, func, scf
from xdsl.ir import Operation

import rducc.runtime.executor
import rducc.runtime.interpreter  # noqa: F401 - registers the ops the interpreter runs itself
from rducc.dialects import ALL_DIALECTS
from rducc.dialects.rdu import dataflow as rdu
from rducc.dialects.rdu.collectives import COLLECTIVE_OPS
from rducc.errors import RduccError
from rducc.runtime.map_body import map_body_ops
from rducc.runtime.registry import implementation_for, implements, prepare, structural_role


def _op_classes() -> list[type[Operation]]:
    classes = {op for factory in ALL_DIALECTS.values() for op in factory().operations}
    return sorted(classes | set(COLLECTIVE_OPS), key=lambda op: op.name)


@pytest.mark.parametrize("op_class", _op_classes(), ids=lambda op: op.name)
def test_every_op_has_an_implementation_or_a_structural_role(op_class: type[Operation]) -> None:
    implementation, role = implementation_for(op_class), structural_role(op_class)
    assert (implementation is None) != (role is None), (
        f"'{op_class.name}' needs exactly one of a registered numpy implementation "
        f"(@implements in rducc.runtime) or a structural role (handled_structurally), got {implementation}, {role}"
    )


def test_the_collectives_are_among_the_walked_ops() -> None:
    assert set(COLLECTIVE_OPS) <= set(_op_classes())
    assert all(implementation_for(op) is not None for op in COLLECTIVE_OPS)


def test_structural_roles_are_run_by_an_engine() -> None:
    """The tier ops the interpreter claims are in its top-level dispatch; remf is a map-body op."""
    top_level = rducc.runtime.interpreter._TOP_LEVEL
    for op_class in (op for op in _op_classes() if op.name.startswith("tier.")):
        role = structural_role(op_class)
        assert role is None or "interpreter" not in role or op_class in top_level, op_class.name
    assert rdu.RemFOp.name in map_body_ops()
    assert {scf.ForOp, func.CallOp, arith.AddiOp} <= set(top_level)


def test_an_op_without_an_implementation_is_an_error() -> None:
    from xdsl.dialects.test import TestOp

    with pytest.raises(RduccError, match=r"the level-1 executor cannot run 'test.op': it has no numpy implementation"):
        prepare(TestOp(), "level-1 executor")


def test_an_op_class_cannot_be_registered_twice() -> None:
    with pytest.raises(AssertionError, match="'rdu.matmul' has two implementations"):
        implements(rdu.MatmulOp)(lambda op: None)
