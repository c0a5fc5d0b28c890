"""The one implementation of `rdu.host_call`: torch's CPU kernel of the named
ATen overload (or the registered kernel of a user's custom op, once the user
named the module registering it: `rducc.dialects.rdu.custom_op`), on the
operand arrays (`torch.from_numpy` in, `.numpy()` out, bf16 through its bits).

Before the kernel runs, the call is checked as far as it can be without
running it: the op is one the verifier admits (`rducc.dialects.rdu.aten`'s
allow-list), the call's limits hold (`rducc.runtime.call_limits`), and the
results torch's fake (meta) kernel gives for the operands' shapes are dense
tensors of the shapes and dtypes the IR declares, so a result is never
allocated, computed or copied at a size the program did not declare. The
kernel runs with torch's deterministic mode filling fresh memory
(`torch.utils.deterministic.fill_uninitialized_memory`), so no result can
hold what the heap held before. Each real result is checked again (a dense
tensor of the declared shape and dtype). Every failure is an `RduccError`
naming the op, not a crash or a silent wrong answer.

A complex operand or result the call names in `pairs` crosses as its real
pair (a trailing dim of 2): the kernel reads the operand as the complex
tensor it is the `view_as_real` of, and a complex result is written as its
pair (`as_complex_operands`, `as_pair_results`).
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
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
from xdsl.utils.exceptions import VerifyException

from rducc.dialects.rdu.aten import AtenOpAttr, NotCallable, is_none
from rducc.dialects.rdu.custom_op import CustomOpAttr
from rducc.dialects.rdu.host_call import HostCallOp
from rducc.dialects.tier import BufferType
from rducc.errors import RduccError
from rducc.runtime.call_limits import check_call
from rducc.runtime.dtypes import BF16, element_dtype
from rducc.runtime.registry import Kernel, implements
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


def call_constants(callee: AtenOpAttr | CustomOpAttr) -> dict[str, Any]:
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


def _dense(value: Any, op: Operation, index: int) -> torch.Tensor:
    """The result as a dense (strided, unquantized) tensor, else an `RduccError`."""
    if not isinstance(value, torch.Tensor):
        raise RduccError(
            f"the host kernel's result #{index} is {type(value).__name__}, not a tensor"
        )
    if value.layout != torch.strided or value.is_quantized or value.is_nested:
        kind = "quantized" if value.is_quantized else "nested" if value.is_nested else str(value.layout)
        raise RduccError(f"the host kernel's result #{index} is a {kind} tensor, "
                         "not a dense one (rducc's buffers hold dense tensors)")
    return value


def _mismatch(op: Operation, index: int, got: str, expected: tuple[tuple[int, ...], np.dtype]) -> RduccError:
    shape, dtype = expected
    return RduccError(f"the host kernel's result #{index} is {got}, "
                      f"but the program declares {dtype}{list(shape)}")


def _checked(value: Any, expected: tuple[tuple[int, ...], np.dtype], op: Operation, index: int) -> np.ndarray:
    tensor = _dense(value, op, index)
    shape, _ = expected
    if tuple(tensor.shape) != shape:  # before the copy
        raise _mismatch(op, index, f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}", expected)
    array = torch_to_numpy(tensor)
    if array.dtype != expected[1]:
        raise _mismatch(op, index, f"{array.dtype}{list(array.shape)}", expected)
    return array


def _results(out: Any) -> tuple[Any, ...]:
    return (out,) if isinstance(out, torch.Tensor) else tuple(out)


def _expected_torch_dtype(dtype: np.dtype) -> torch.dtype | None:
    try:
        return torch_dtype(dtype)
    except (TypeError, ValueError):
        return None  # a dtype numpy holds through its bits: checked on the real result


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def as_complex_operands(tensors: Mapping[str, torch.Tensor], names: Sequence[str]) -> dict[str, torch.Tensor]:
    """The operands, those of `names` (real pairs, a trailing dim of 2) as the complex tensors they hold."""
    return {name: torch.view_as_complex(_dense_pair(t)) if name in names else t for name, t in tensors.items()}


def _dense_pair(pair: torch.Tensor) -> torch.Tensor:
    """`pair` with the strides `view_as_complex` needs (an empty array's may be anything)."""
    pair = pair.contiguous()
    return pair if pair.stride(-1) == 1 else pair.new_empty(pair.shape).copy_(pair)


def as_pair_results(values: Sequence[Any], indices: Sequence[int], op: HostCallOp) -> tuple[Any, ...]:
    """The kernel's results, those at `indices` (complex) as their `view_as_real` pairs."""
    out = list(values)
    for index in indices:
        if index >= len(out):
            continue  # the count is checked with the rest
        value = _dense(out[index], op, index)
        if not value.is_complex():
            raise RduccError(f"the host kernel's result #{index} is {str(value.dtype).removeprefix('torch.')}, "
                             "but the program declares it complex (a real pair)")
        out[index] = torch.view_as_real(value.resolve_conj())
    return tuple(out)


def _check_before_running(
    overload: Any, constants: Mapping[str, Any], tensors: Mapping[str, torch.Tensor],
    expected: Sequence[tuple[tuple[int, ...], np.dtype]], op: HostCallOp,
) -> None:
    """The results torch's fake kernel gives for the operands' shapes (no data is
    read, no result allocated) are dense tensors of the declared shapes and dtypes.
    An op torch has no fake kernel for runs only when no integer argument exceeds
    the elements the program declares (`_check_sizing_arguments`)."""
    from torch._subclasses.fake_tensor import FakeTensorMode, UnsupportedOperatorException

    try:
        with FakeTensorMode(allow_fallback_kernels=False) as mode, torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fakes = {name: mode.from_tensor(t) for name, t in tensors.items()}
            values = as_pair_results(_results(overload(**constants, **fakes)), op.pair_result_indices(), op)
    except UnsupportedOperatorException:
        _check_sizing_arguments(constants, expected, op)
        return
    except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError) as error:
        if "data-dependent" in str(error) or "dynamic output shape" in str(error).lower():
            raise RduccError(f"the size of {op.overload}'s result depends on its operands' "
                             "values, which a program cannot declare") from None
        raise RduccError(f"the host kernel of {op.overload} failed: {_reason(error)}") from None
    if len(values) != len(expected):
        raise RduccError(f"the host kernel gives {len(values)} results, "
                         f"the program declares {len(expected)}")
    for index, (value, declared_type) in enumerate(zip(values, expected)):
        tensor = _dense(value, op, index)
        dtype = _expected_torch_dtype(declared_type[1])
        if tuple(tensor.shape) != declared_type[0] or (dtype is not None and tensor.dtype != dtype):
            raise _mismatch(op, index, f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)}",
                            declared_type)


def _integers(value: Any) -> list[int]:
    if isinstance(value, bool):
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, list | tuple):
        return [i for v in value for i in _integers(v)]
    return []


def _check_sizing_arguments(
    constants: Mapping[str, Any], expected: Sequence[tuple[tuple[int, ...], np.dtype]], op: HostCallOp,
) -> None:
    """For an op without a fake kernel: no integer argument (which may size a
    result: `bins`, `size`) is larger than all the elements the program declares."""
    declared_elements = sum(int(np.prod(shape, dtype=np.int64)) for shape, _ in expected)
    for name, value in constants.items():
        largest = max(_integers(value), default=0)
        if largest > max(declared_elements, 1):
            raise RduccError(
                f"{op.overload} has no fake kernel to size its results before it runs, "
                f"and its argument '{name}' ({largest}) exceeds the {declared_elements} elements the program declares"
            )


_FILL_LOCK = threading.Lock()
_FILL_USERS = [0]
_FILL_SAVED: list[tuple[bool, bool, bool]] = []


@contextmanager
def fresh_memory_filled() -> Iterator[None]:
    """Run with torch's deterministic mode on and filling fresh memory (NaN, or an
    integer type's largest value), the caller's settings restored after the last
    concurrent host call ends; a kernel without a deterministic version only warns."""
    import torch.utils.deterministic

    deterministic: Any = torch.utils.deterministic  # its setting is a property of the module object
    with _FILL_LOCK:
        if _FILL_USERS[0] == 0:
            _FILL_SAVED.append((torch.are_deterministic_algorithms_enabled(),
                                torch.is_deterministic_algorithms_warn_only_enabled(),
                                deterministic.fill_uninitialized_memory))
            torch.use_deterministic_algorithms(True, warn_only=True)
            deterministic.fill_uninitialized_memory = True
        _FILL_USERS[0] += 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        with _FILL_LOCK:
            _FILL_USERS[0] -= 1
            if _FILL_USERS[0] == 0:
                enabled, warn_only, fill = _FILL_SAVED.pop()
                torch.use_deterministic_algorithms(enabled, warn_only=warn_only)
                deterministic.fill_uninitialized_memory = fill


@implements(HostCallOp)
def _host_call(op: Operation) -> Kernel:
    assert isinstance(op, HostCallOp)
    try:
        op.verify()  # an unverified module: the runtime calls no op the verifier refuses
        overload = op.callee.torch_op()
    except (VerifyException, NotCallable) as error:
        raise RduccError(str(error)) from None
    constants = call_constants(op.callee)
    names = op.tensor_names()
    expected = [declared(r.type) for r in op.outputs]
    single = len(expected) == 1
    pairs = op.pair_operand_names()

    def kernel(context: Any, *arrays: np.ndarray) -> Any:
        operands = [np.asarray(a) for a in arrays]
        check_call(op.callee.full_name, {**constants, **dict(zip(names, operands))}, "the host kernel")
        tensors = as_complex_operands({name: numpy_to_torch(a) for name, a in zip(names, operands)}, pairs)
        _check_before_running(overload, constants, tensors, expected, op)
        try:
            with torch.no_grad(), fresh_memory_filled():
                out = overload(**constants, **tensors)
        except (RuntimeError, TypeError, ValueError, IndexError, NotImplementedError) as error:
            raise RduccError(f"the host kernel of {op.overload} failed: {_reason(error)}") from None
        values = as_pair_results(_results(out), op.pair_result_indices(), op)
        if len(values) != len(expected):
            raise RduccError(f"the host kernel gave {len(values)} results, "
                             f"the program declares {len(expected)}")
        results = tuple(_checked(v, e, op, i) for i, (v, e) in enumerate(zip(values, expected)))
        return results[0] if single else results

    return kernel


__all__ = ["as_complex_operands", "as_pair_results", "call_constants", "constant_value", "declared",
           "fresh_memory_filled", "torch_dtype"]
