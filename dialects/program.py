"""Walking an rducc program: its functions, callees first, its entry, and
where its globals live. Shared by passes, the runtime and the tools."""

from __future__ import annotations

from collections.abc import Iterator

from xdsl.dialects import arith, func, scf
from xdsl.dialects.builtin import IntegerAttr, ModuleOp, StringAttr
from xdsl.ir import Operation

from rducc.dialects.contracts import arg_attrs, bucket_of, global_of, is_outlined, op_stage, padding_of
from rducc.errors import RduccError

ENTRY = "forward"
"""The name of a program's entry function."""


def functions(module: ModuleOp) -> Iterator[func.FuncOp]:
    """The module's functions with bodies."""
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.body.blocks:
            yield op


def kernel_name(kernel: Operation) -> str:
    """How a kernel (`rdu.kernel` or `tier.compute`) is named to the user, in the
    report, the graph, the SRAM map and messages: its name, qualified by the
    function it lives in unless that is the entry (`layer.k0` beside @forward's `k0`)."""
    name = kernel.properties["sym_name"]
    assert isinstance(name, StringAttr)
    parent = kernel.parent_op()
    while parent is not None and not isinstance(parent, func.FuncOp):
        parent = parent.parent_op()
    if parent is None or parent.sym_name.data == ENTRY:
        return name.data
    return f"{parent.sym_name.data}.{name.data}"


def kernel_run_name(kernel: Operation, calls: tuple[func.CallOp, ...],
                    indices: dict[func.CallOp, int] | None = None) -> str:
    """The name of one run of a kernel, unique in the report and the plots: its
    `kernel_name`, or under calls each call's callee with the call's index
    among the caller's calls of it (`layer[0].k0`, `layer[1].k0` for the two
    calls of @layer). `indices`: a cache of call indices (`call_index`), for
    naming many runs of a program that does not change meanwhile."""
    if not calls:
        return kernel_name(kernel)
    name = kernel.properties["sym_name"]
    assert isinstance(name, StringAttr)
    known = indices if indices is not None else {}
    return ".".join([*(f"{call.callee.string_value()}[{call_index(call, known)}]" for call in calls), name.data])


def call_index(call: func.CallOp, indices: dict[func.CallOp, int] | None = None) -> int:
    """Which call of its callee `call` is in its function (0 the first, in program
    order). `indices`: a cache, filled with every call of that function the first
    time one of them is asked for (one walk of a function, not one a call)."""
    known = indices if indices is not None else {}
    if call not in known:
        function = call.parent_op()
        while function is not None and not isinstance(function, func.FuncOp):
            function = function.parent_op()
        known.update(call_indices(function) if function is not None else {})
    return known[call]


def call_indices(function: func.FuncOp) -> dict[func.CallOp, int]:
    """Each call in `function`: which call of its callee it is (0 the first, in program order)."""
    seen: dict[str, int] = {}
    found: dict[func.CallOp, int] = {}
    for op in function.walk():
        if isinstance(op, func.CallOp):
            callee = op.callee.string_value()
            found[op] = seen.get(callee, 0)
            seen[callee] = found[op] + 1
    return found


def callees_first(module: ModuleOp) -> list[func.FuncOp]:
    """The functions with bodies, outlined layers (`rdu.calls`) first, so that a
    pass handles a callee before the calls of it."""
    every = list(functions(module))
    return [f for f in every if is_outlined(f)] + [f for f in every if not is_outlined(f)]


def find_entry(module: ModuleOp, name: str = ENTRY) -> func.FuncOp | None:
    """The function @name with a body, or None."""
    return next((f for f in functions(module) if f.sym_name.data == name), None)


def entry_function(module: ModuleOp, name: str = ENTRY) -> func.FuncOp:
    """The function @name with a body; an error naming it when there is none."""
    found = find_entry(module, name)
    if found is None:
        raise RduccError(f"the module has no 'func.func @{name}'")
    return found


def global_stages(module: ModuleOp) -> dict[str, int]:
    """The pipeline stage whose sockets hold each global: that of its first reader.

    An op's stage (`op_stage`: a walk of a kernel's body) is asked once, and only
    of an op that is some global's first reader: a fused optimizer kernel reads
    many globals, and asking it per global made the walk quadratic in depth."""
    stages: dict[str, int] = {}
    for function in functions(module):
        by_arg = {arg: name for arg, a in zip(function.args, arg_attrs(function))
                  if (name := global_of(a)) is not None}
        for op in function.body.block.ops:
            first_read = [by_arg[v] for v in op.operands if v in by_arg and by_arg[v] not in stages]
            if first_read:
                stage = op_stage(op)
                stages.update((name, stage) for name in first_read)
    return stages


def check_buckets(module: ModuleOp) -> None:
    """A module of shape buckets (`rducc --shapes`) holds nothing but named modules
    marked `rdu.bucket`, all for the same dims, no two for the same sizes (a
    run picks one by its inputs' shapes, which must be unambiguous)."""
    nested = [op for op in module.ops if isinstance(op, ModuleOp) and bucket_of(op) is not None]
    if not nested:
        return
    seen: dict[tuple[int, ...], str] = {}
    dims = list(bucket_of(nested[0]) or {})
    for op in module.ops:
        values = bucket_of(op) if isinstance(op, ModuleOp) else None
        if values is None:
            raise RduccError(f"'{op.name}' at {op.location}: a module of shape buckets holds only modules "
                             "marked rdu.bucket")
        assert isinstance(op, ModuleOp)
        name = op.sym_name.data if op.sym_name is not None else None
        if name is None:
            raise RduccError(f"bucket {values}: its module needs a name (builtin.module @forward__...)")
        if list(values) != dims:
            raise RduccError(f"bucket @{name} is for dims {', '.join(values)}, the others for {', '.join(dims)}")
        key = tuple(values.values())
        if key in seen:
            raise RduccError(f"buckets @{seen[key]} and @{name} are for the same sizes "
                             f"({', '.join(f'{k}={v}' for k, v in values.items())})")
        seen[key] = name
    padding = padding_of(module)
    if padding is not None and not set(padding[0]) <= set(dims):
        raise RduccError(f"rdu.padding names dims {', '.join(padding[0])}; the buckets are for {', '.join(dims)}")


def check_loop_steps(module: ModuleOp) -> None:
    """Refuse an `scf.for` whose step is a constant <= 0 (it would never end):
    xDSL's verifier accepts it; rducc-opt and rducc-run must not."""
    for op in module.walk():
        if not isinstance(op, scf.ForOp):
            continue
        step = op.step.owner
        if isinstance(step, arith.ConstantOp) and isinstance(step.value, IntegerAttr):
            if step.value.value.data <= 0:
                raise RduccError(f"'scf.for' at {op.location}: step {step.value.value.data} must be > 0 "
                                 "(the loop would never end)")
