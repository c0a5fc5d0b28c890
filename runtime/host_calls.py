"""The one implementation of `rdu.host_call`: torch's CPU kernel of the named
ATen overload, on the operand arrays (`torch.from_numpy` in, `.numpy()` out,
bf16 through its bits). Each result is checked against the type the IR
declares: a kernel that returns another shape or dtype (a data-dependent
size the compile could not know, an op whose dtype rules differ) is an
`RduccError` naming the op, not a silent wrong answer.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from xdsl.dialects.builtin import (
    ArrayAttr,
    FloatAttr,
    IntegerAttr,
    IntegerType,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, TypeAttribute

from rducc.dialects.rdu.aten import AtenOpAttr, is_none
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.tier import BufferType
from rducc.errors import RduccError
from rducc.runtime.dtypes import BF16, element_dtype
from rducc.runtime.registry import Kernel, describe_op, implements
from rducc.weights import numpy_to_torch, torch_to_numpy


def constant_value(attr: Attribute) -> Any:
    """The Python value a constant of `#rdu.aten` stands for (a dtype for an element type)."""
    if isinstance(attr, IntegerAttr) and attr.type == IntegerType(1):
        return bool(attr.value.data)
    if isinstance(attr, IntegerAttr):
        return int(attr.value.data)
    if isinstance(attr, FloatAttr):
        return float(attr.value.data)
    if isinstance(attr, StringAttr):
        return attr.data
    if is_none(attr):
        return None
    if isinstance(attr, ArrayAttr):
        return [constant_value(a) for a in attr.data]
    if isinstance(attr, TypeAttribute):
        return torch_dtype(element_dtype(attr))
    raise RduccError(f"a host call's argument {attr} has no Python value")


def _typed(value: Any, schema_type: str) -> Any:
    """A memory format (an int argument held by name) as torch's object."""
    if schema_type.removeprefix("Optional[").removesuffix("]") == "int" and isinstance(value, str):
        return getattr(torch, value)
    return value


def call_constants(callee: AtenOpAttr) -> dict[str, Any]:
    """The callee's constant arguments as the torch op takes them, by name."""
    types = callee.schema().types
    return {name: _typed(constant_value(attr), types[name]) for name, attr in callee.constants.data.items()}


def torch_dtype(dtype: np.dtype) -> torch.dtype:
    """The torch dtype of a NumPy dtype (ml_dtypes' bfloat16 included)."""
    if dtype == BF16:
        return torch.bfloat16
    return torch.from_numpy(np.empty(0, dtype)).dtype


def declared(kind: Attribute) -> tuple[tuple[int, ...], np.dtype]:
    """(shape, dtype) of a tensor or buffer type."""
    assert isinstance(kind, TensorType | BufferType)
    return tuple(kind.get_shape()), element_dtype(kind.element_type)


def _checked(value: Any, expected: tuple[tuple[int, ...], np.dtype], op: Operation, index: int) -> np.ndarray:
    if not isinstance(value, torch.Tensor):
        raise RduccError(
            f"{describe_op(op)}: the host kernel's result #{index} is {type(value).__name__}, not a tensor"
        )
    array = torch_to_numpy(value)
    shape, dtype = expected
    if array.shape != shape or array.dtype != dtype:
        raise RduccError(
            f"{describe_op(op)}: the host kernel's result #{index} is {array.dtype}{list(array.shape)}, "
            f"but the program declares {dtype}{list(shape)}"
        )
    return array


@implements(HostCallOp)
def _host_call(op: Operation) -> Kernel:
    assert isinstance(op, HostCallOp)
    overload = op.callee.torch_op()
    constants = call_constants(op.callee)
    names = op.tensor_names()
    expected = [declared(r.type) for r in op.outputs]
    single = len(expected) == 1

    def kernel(context: Any, *arrays: np.ndarray) -> Any:
        kwargs = dict(constants)
        kwargs.update((name, numpy_to_torch(np.asarray(a))) for name, a in zip(names, arrays))
        try:
            with torch.no_grad():
                out = overload(**kwargs)
        except (RuntimeError, TypeError, ValueError, IndexError) as error:
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise RduccError(f"{describe_op(op)}: the host kernel of {op.overload} failed: {first}") from error
        values = (out,) if isinstance(out, torch.Tensor) else tuple(out)
        if len(values) != len(expected):
            raise RduccError(f"{describe_op(op)}: the host kernel gave {len(values)} results, "
                             f"the program declares {len(expected)}")
        results = tuple(_checked(v, e, op, i) for i, (v, e) in enumerate(zip(values, expected)))
        return results[0] if single else results

    return kernel


__all__ = ["call_constants", "constant_value", "declared", "torch_dtype"]
