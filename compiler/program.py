"""The Python API: `rducc.compile(model) -> Program`, and running it.

    program = rducc.compile(model, (x,), target="sn40l", opt_level=2)
    y = program(x)                 # runs the lowered, placed program (numpy runtime)
    program.report.modeled_time_s  # the cost model's figures
    program.save("out.mlir")       # out.mlir + out.safetensors, as `rducc -o` writes

A Program always runs the placed program through rducc's interpreter, never
the original PyTorch graph.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import cached_property
from pathlib import Path
from typing import Any, overload

import numpy as np
import torch
from torch.utils import _pytree as pytree
from xdsl.dialects.builtin import ModuleOp

from rducc.dialects.contracts import (
    Update,
    arg_attrs,
    complex_inputs,
    complex_outputs,
    f64_demoted,
    input_label,
    is_placed,
    output_edges,
    result_updates,
    set_weights_file,
)
from rducc.dialects.program import entry_function
from rducc.dialects.rdu.custom_op import import_op_modules
from rducc.driver import CompileOptions, CompileResult, PassesLike, compile_module, module_text, resolve_passes
from rducc.errors import RduccError
from rducc.frontend.joint_graph import is_joint
from rducc.frontend.loader import export_model, load_exported_program
from rducc.runtime.dtypes import complex_to_pair, pair_to_complex
from rducc.runtime.output_edges import edge_tensor
from rducc.targets import DEFAULT_TARGET, Target, load_target
from rducc.weights import numpy_to_torch, save_weights, sidecar_path, through_bits, torch_to_numpy

ModelLike = torch.export.ExportedProgram | str | Path | torch.nn.Module
ShapesSpec = dict[str, Sequence[int] | int]
"""{dim name: sizes} of `compile(..., shapes=...)` (`rducc.shapes.ShapesSpec`)."""


def _exported(model: ModelLike, example_inputs: tuple | None,
              dynamic_shapes: Any = None) -> torch.export.ExportedProgram:
    if isinstance(model, torch.export.ExportedProgram):
        return model
    if isinstance(model, str | Path):
        return load_exported_program(model)
    if isinstance(model, torch.nn.Module):
        if example_inputs is None:
            raise RduccError("rducc.compile of an nn.Module needs example_inputs (a tuple of tensors)")
        if not isinstance(example_inputs, tuple):
            example_inputs = (example_inputs,)
        return export_model(model, example_inputs, dynamic_shapes=dynamic_shapes)
    raise RduccError(
        f"rducc.compile takes an ExportedProgram, a path to a saved archive or an nn.Module, "
        f"not {type(model).__name__}"
    )


@overload
def compile(  # noqa: A001 - the public name the API promises
    model: ModelLike,
    example_inputs: tuple | None = None,
    *,
    target: str | Target = DEFAULT_TARGET,
    opt_level: int = 2,
    passes: PassesLike | None = None,
    verify_each: bool = False,
    f64: str = "emulate",
    host_ops: bool = True,
    split: tuple[int, ...] = (0, 0),
    capacity: int | None = None,
    shapes: None = None,
    dynamic_shapes: Any = None,
    import_modules: Sequence[str] = (),
) -> Program: ...


@overload
def compile(  # noqa: A001
    model: ModelLike,
    example_inputs: tuple | None = None,
    *,
    target: str | Target = DEFAULT_TARGET,
    opt_level: int = 2,
    passes: PassesLike | None = None,
    verify_each: bool = False,
    f64: str = "emulate",
    host_ops: bool = True,
    split: tuple[int, ...] = (0, 0),
    capacity: int | None = None,
    shapes: ShapesSpec,
    dynamic_shapes: Any = None,
    pad_dims: Sequence[str] = (),
    import_modules: Sequence[str] = (),
) -> BucketedProgram: ...


def compile(  # noqa: A001 - the public name the API promises
    model: ModelLike,
    example_inputs: tuple | None = None,
    *,
    target: str | Target = DEFAULT_TARGET,
    opt_level: int = 2,
    passes: PassesLike | None = None,
    verify_each: bool = False,
    f64: str = "emulate",
    host_ops: bool = True,
    split: tuple[int, ...] = (0, 0),
    capacity: int | None = None,
    shapes: ShapesSpec | None = None,
    dynamic_shapes: Any = None,
    pad_dims: Sequence[str] = (),
    import_modules: Sequence[str] = (),
) -> Program | BucketedProgram:
    """Compile a model for the target and return the runnable Program.

    `model` is an ExportedProgram, a path to a `torch.export.save` archive, or
    an nn.Module (exported with `example_inputs`). `passes`, when given, is
    pipeline text (`"rdu-canonicalize,cse,..."`) or a list of ModulePass
    instances, which replace the -O pipeline, or a list of
    `rducc.api.before(name, pass)` / `after(name, pass)` edits, which insert
    passes into it. `verify_each` verifies the IR after every pass, naming
    the pass that broke it. `f64` is the f64 policy (`rducc.frontend.f64`):
    `emulate` (exact in the runtime, marked in the report), `refuse`, or
    `demote` (computed in f32; the Program casts float64 inputs and outputs).
    `host_ops` runs an op the chip has no lowering for on the host CPU (an
    `rdu.host_call`, listed by `Program.host_ops`); False refuses it instead.
    `split` is a multi-socket target's (tp, pp), (tp, pp, dp) or (tp, pp, dp, ep)
    as `rducc --tp N --pp M --dp D --ep E` gives it (0: the cost model picks).
    `capacity` bounds each per-expert count a mixture-of-experts routing makes
    (`rducc.frontend.capacity`: each expert's rows padded to it; a count above
    it is a run-time error); None compiles for the bound torch.export recorded
    (every token to one expert).

    A program exported with `dynamic_shapes` (or an nn.Module exported here with
    `dynamic_shapes=`, torch.export's argument) is compiled once per combination
    of `shapes`' sizes (`{"batch": [1, 4], "seq": [128, 512]}`, as `rducc
    --shapes batch=1,4 seq=128,512`): a `BucketedProgram`, which runs the bucket
    matching its inputs' shapes (docs/shapes.md). Inputs smaller than every
    bucket's along a dim the program keeps apart (its batch rows never meet) are
    padded up to the smallest bucket that covers them; `pad_dims` names dims you
    vouch may be padded at the end too (a sequence an attention mask covers).

    `import_modules` names the Python modules that register the custom ops the
    model calls (as `rducc --import-module`): they are imported first, and a
    custom op compiled as a host call (its implementation does not trace)
    runs only when one of them registers it (`rducc.dialects.rdu.custom_op`).
    """
    import_op_modules(import_modules, "import_modules")
    chosen = load_target(target)
    custom = resolve_passes(passes, opt_level)
    options = CompileOptions(chosen, opt_level, passes=custom, verify_each=verify_each, f64=f64, host_ops=host_ops,
                             split=split, capacity=capacity)
    if shapes is not None and dynamic_shapes is None and isinstance(model, torch.nn.Module):
        raise RduccError("rducc.compile(model, example_inputs, shapes=...) of an nn.Module needs dynamic_shapes= "
                         "too (torch.export's: which input dims are dynamic, e.g. ({0: Dim('batch')},))")
    exported = _exported(model, example_inputs, dynamic_shapes)
    if pad_dims and shapes is None:
        raise RduccError("pad_dims= pads an input up to a larger shape bucket: it needs shapes= too")
    if shapes is not None:
        from rducc.shapes import bucket_modules, compile_buckets

        compiled = compile_buckets(exported, shapes, options, pad_dims)
        shared = {name: torch_to_numpy(t) for name, t in compiled.weights.items()}
        alone = [module for _, module in bucket_modules(compiled.module)]  # each a whole program again
        programs = [(b.values, _program_of(replace(b.result, module=m), chosen, f64, shared))
                    for b, m in zip(compiled.buckets, alone)]
        return BucketedProgram(compiled.module, programs, shared, chosen,
                               (exported.call_spec.in_spec, forward_arg_names(exported)))
    return _program_of(compile_module(exported, options), chosen, f64)  # its modules imported above


def _program_of(result: CompileResult, chosen: Target, f64: str,
                weights: dict[str, np.ndarray] | None = None) -> Program:
    """The runnable Program of one compile (with `weights`: those arrays, shared with other buckets)."""
    if weights is None:
        weights = {name: torch_to_numpy(t) for name, t in result.weights.items()}
    decomposed = result.decomposed
    # a joint graph returns (loss, *gradients): its call spec describes the loss alone
    out_spec = None if is_joint(decomposed) else result.exported.call_spec.out_spec
    return Program(
        result.module, weights, chosen, result.exported.call_spec.in_spec, out_spec,
        number_outputs(decomposed), _float64_outputs(decomposed) if f64 == "demote" else frozenset(),
        forward_arg_names(result.exported),
    )


def forward_arg_names(exported: torch.export.ExportedProgram) -> list[str] | None:
    """The names of the exported `forward`'s arguments (positional first), if torch recorded them."""
    calls = exported.module_call_graph
    signature = calls[0].signature if calls else None
    return list(signature.forward_arg_names) if signature is not None and signature.forward_arg_names else None


def bind_inputs(
    in_spec: Any, arg_names: Sequence[str] | None, tensors: tuple, named: dict[str, Any]
) -> tuple[tuple, dict[str, Any]]:
    """(positional, keyword) inputs as the exported call takes them: an input the
    model was exported with positionally may be given by its name (`program(b=y,
    a=x)` binds `a=x`), one exported as a keyword is given by name; an unknown
    name, an input given twice or one missing is an error naming it."""
    positional_count = in_spec.child(0).num_children
    keywords = list(in_spec.child(1).context or [])
    names = list(arg_names or [])[:positional_count]
    if len(tensors) > positional_count:
        raise RduccError(
            f"the program takes {positional_count} positional input{'s' * (positional_count != 1)}"
            f"{_listed(names)}, got {len(tensors)}" + (f" (pass {_quoted(keywords)} by name)" if keywords else "")
        )
    slots: list[Any] = [*tensors, *[_MISSING] * (positional_count - len(tensors))]
    by_keyword: dict[str, Any] = {}
    for key, value in named.items():
        if key in keywords:
            by_keyword[key] = value
        elif key in names:
            at = names.index(key)
            if at < len(tensors):
                raise RduccError(f"the program got input '{key}' twice: by position and by name")
            slots[at] = value
        else:
            known = [*names, *keywords]
            raise RduccError(
                f"the program has no input named '{key}'"
                + (f"; its inputs are {_quoted(known)}" if known else "; pass its inputs by position")
            )
    missing = [names[i] if i < len(names) else f"#{i}" for i, v in enumerate(slots) if v is _MISSING]
    missing += [key for key in keywords if key not in by_keyword]
    if missing:
        raise RduccError(f"the program is missing input{'s' * (len(missing) != 1)} {_quoted(missing)}")
    return tuple(slots), {key: by_keyword[key] for key in keywords}


_MISSING = object()


def _quoted(names: Sequence[str]) -> str:
    return ", ".join(f"'{name}'" for name in names)


def _listed(names: Sequence[str]) -> str:
    return f" ({_quoted(names)})" if names else ""


def flatten_as(value: Any, spec: Any, where: str) -> list[Any]:
    """`value`'s leaves in the order of the exported structure `spec` (a dict by
    the exported keys, whatever the caller's order); an error naming `where`
    when the structure differs."""
    if spec.is_leaf():
        return [value]
    if spec.type is dict:
        keys = list(spec.context)
        if not isinstance(value, dict) or set(value) != set(keys):
            found = sorted(map(str, value)) if isinstance(value, dict) else type(value).__name__
            raise RduccError(f"{where} must be a dict with keys {sorted(map(str, keys))} as exported, not {found}")
        return [leaf for i, key in enumerate(keys)
                for leaf in flatten_as(value[key], spec.child(i), f"{where}[{key!r}]")]
    if spec.type in (tuple, list):
        if not isinstance(value, tuple | list) or len(value) != spec.num_children:
            found = type(value).__name__ + (f" of {len(value)}" if isinstance(value, tuple | list) else "")
            raise RduccError(f"{where} must be a {spec.type.__name__} of {spec.num_children} as exported, not {found}")
        return [leaf for i, item in enumerate(value) for leaf in flatten_as(item, spec.child(i), f"{where}[{i}]")]
    leaves, structure = pytree.tree_flatten(value)
    if structure != spec:
        raise RduccError(f"{where} does not have the structure the model was exported with")
    return leaves


def _float64_outputs(exported: torch.export.ExportedProgram) -> frozenset[int]:
    """Positions of the user outputs that are float64 tensors."""
    output = next(n for n in exported.graph.nodes if n.op == "output")
    values = [a.meta.get("val") if isinstance(a, torch.fx.Node) else a for a in output.args[0]]
    return frozenset(i for i, v in enumerate(values) if isinstance(v, torch.Tensor) and v.dtype == torch.float64)


def number_outputs(exported: torch.export.ExportedProgram) -> dict[int, Any]:
    """The user outputs that are Python numbers, by position: the Python type of
    a `tensor.item()` read (int, float or bool), or the constant itself."""
    from torch.export.graph_signature import ConstantArgument, SymBoolArgument, SymFloatArgument, SymIntArgument

    kinds: dict[int, Any] = {}
    user = [s for s in exported.graph_signature.output_specs if s.kind.name == "USER_OUTPUT"]
    for index, spec in enumerate(user):
        argument = spec.arg
        if isinstance(argument, SymIntArgument):
            kinds[index] = int
        elif isinstance(argument, SymFloatArgument):
            kinds[index] = float
        elif isinstance(argument, SymBoolArgument):
            kinds[index] = bool
        elif isinstance(argument, ConstantArgument) and isinstance(argument.value, bool | int | float):
            kinds[index] = _Constant(argument.value)
    return kinds


class _Constant:
    """An output the model returns as a constant number."""

    def __init__(self, value: bool | int | float):
        self.value = value


def _input_array(tensor: torch.Tensor) -> np.ndarray:
    """A CPU tensor's memory as a numpy array, without a copy (the runtime only
    reads its inputs, through read-only views); a copy for bf16, float8 and other devices."""
    tensor = tensor.detach()
    if tensor.device.type != "cpu" or through_bits(tensor.dtype) or tensor.is_conj() or tensor.is_neg():
        return torch_to_numpy(tensor)
    return tensor.numpy()


def _output_tensor(array: np.ndarray) -> torch.Tensor:
    """A result as a tensor: a fresh array the runtime handed over (its own
    contiguous memory) is shared, anything else copied."""
    flags = array.flags
    torch_reads = array.dtype.kind in "fiub" and not through_bits(array.dtype)
    if flags.owndata and flags.c_contiguous and flags.writeable and torch_reads:
        return torch.from_numpy(array)
    return numpy_to_torch(array)


def flat_inputs(in_spec: Any, arg_names: Sequence[str] | None, tensors: tuple,
                named: dict[str, Any]) -> list[torch.Tensor]:
    """A call's inputs in the exported program's order, bound as the model's `forward`
    binds them (`bind_inputs`) and flattened by the exported structure `in_spec` (a
    dict input by the exported keys, not the caller's order)."""
    if in_spec is None:
        if named:
            raise RduccError("this Program has no input names: pass its inputs by position")
        return list(tensors)
    if in_spec.num_children != 2:
        return pytree.tree_flatten((tensors, named))[0]
    args, kwargs = bind_inputs(in_spec, arg_names, tensors, named)
    positional, keyword = in_spec.child(0), in_spec.child(1)
    names = arg_names or []
    flat: list[Any] = []
    for i, value in enumerate(args):
        flat += flatten_as(value, positional.child(i), f"input '{names[i]}'" if i < len(names) else f"input {i}")
    for i, key in enumerate(keyword.context or []):
        flat += flatten_as(kwargs[key], keyword.child(i), f"input '{key}'")
    return flat


class Program:
    """A compiled model: its placed program, weights and the model's I/O structure."""

    def __init__(
        self,
        module: ModuleOp,
        weights: dict[str, np.ndarray],
        target: Target,
        in_spec: Any = None,
        out_spec: Any = None,
        numbers: dict[int, Any] | None = None,
        f64_outputs: frozenset[int] = frozenset(),
        arg_names: Sequence[str] | None = None,
        import_modules: Sequence[str] = (),
    ):
        import_op_modules(import_modules, "import_modules")  # the custom ops its host calls may run
        self.module = module
        self.weights = weights
        self.target = target
        self._in_spec = in_spec
        self._out_spec = out_spec
        self._numbers = numbers or {}
        self._f64_outputs = f64_outputs
        """Outputs computed in f32 under `f64="demote"`, handed back as float64."""
        self._arg_names = list(arg_names) if arg_names is not None else None
        """The names of the model's `forward` arguments, positional ones first (torch.export's)."""

    @property
    def host_ops(self) -> dict[str, int]:
        """The ATen overloads the program runs on the host CPU (`rdu.host_call`), with their counts."""
        from rducc.dialects.rdu.host_call import host_op_counts

        return dict(host_op_counts(self.module))

    @cached_property
    def _runner(self):
        from rducc.runtime.sockets import placed_runner

        if not is_placed(self.module):
            raise RduccError("this Program is not a placed program; it cannot run")
        return placed_runner(self.module)  # every socket's program when partitioned

    def _flat_inputs(self, tensors: tuple, named: dict[str, Any]) -> list[torch.Tensor]:
        """The inputs in the exported program's order (`flat_inputs`)."""
        return flat_inputs(self._in_spec, self._arg_names, tensors, named)

    def __call__(self, *tensors: torch.Tensor, **named: torch.Tensor) -> Any:
        """Run the placed program on these inputs (positional, or by keyword as
        exported); outputs in the model's structure. Buffers and inputs the model
        updates in place are written back (`_write_back`)."""
        return self._call_flat(self._flat_inputs(tensors, named))

    def _call_flat(self, given: list[Any]) -> Any:
        """Run on the inputs flattened in the exported program's order (`_flat_inputs`)."""
        if not all(isinstance(t, torch.Tensor) for t in given):
            raise RduccError("Program inputs must be torch tensors")
        flat = [t.float() if t.dtype == torch.float64 else t for t in given] if f64_demoted(self.module) else given
        arrays = self._complex_inputs_as_pairs([_input_array(t) for t in flat])
        results = self._write_back(self._runner.run(arrays, self.weights), given)
        for index in complex_outputs(self.module):
            results[index] = pair_to_complex(results[index])
        outputs: list[Any] = [_output_tensor(r) for r in results]
        for index, edge in output_edges(self.module).items():
            outputs[index] = edge_tensor(outputs[index], edge)
        for index in self._f64_outputs:
            outputs[index] = outputs[index].double()
        for index, kind in self._numbers.items():
            outputs[index] = kind.value if isinstance(kind, _Constant) else kind(outputs[index].item())
        if self._out_spec is None:
            return outputs[0] if len(outputs) == 1 else tuple(outputs)
        return pytree.tree_unflatten(outputs, self._out_spec)

    def _complex_inputs_as_pairs(self, arrays: list[np.ndarray]) -> list[np.ndarray]:
        """The complex user inputs (`rdu.complex_inputs`) as the real pairs the program reads."""
        complex_labels = set(complex_inputs(self.module))
        if not complex_labels:
            return arrays
        labels = [label for label in map(input_label, arg_attrs(entry_function(self.module))) if label is not None]
        return [complex_to_pair(a) if label in complex_labels and np.iscomplexobj(a) else a
                for label, a in zip(labels, arrays)]

    @cached_property
    def _updates(self) -> list[Update | None]:
        return result_updates(entry_function(self.module))

    def _write_back(self, results: list[np.ndarray], inputs: list[torch.Tensor]) -> list[np.ndarray]:
        """The user outputs of `results`; the rest, the new values of buffers and
        inputs the model updates in place, written back as torch's
        `ExportedProgram.module()` does: a buffer in `weights` (the next call reads
        it), a user input into the caller's tensor."""
        if not self._updates:
            return results
        labels = [input_label(attrs) for attrs in arg_attrs(entry_function(self.module))]
        labels = [label for label in labels if label is not None]
        for update, value in zip(self._updates, results):
            if update is None:
                continue
            if update.kind == "buffer":
                self.weights[update.name] = np.array(value)
            else:
                inputs[labels.index(update.name)].copy_(numpy_to_torch(np.array(value)))
        return [value for update, value in zip(self._updates, results) if update is None]

    @property
    def mlir(self) -> str:
        """The placed program as MLIR text (with source locations)."""
        return module_text(self.module)

    @cached_property
    def report(self):
        """The cost model's report for this program on its target."""
        return self.simulate()

    def simulate(self):
        """The cost report, from shapes alone (no data is touched)."""
        from rducc.model.cost_model import estimate

        return estimate(self.module, self.target)

    def ranges(self, headlines=None):
        """The report's headlines (modeled time, runs/s, or `{name: f(report)}`) as
        low..high over the target's ranged figures, with the tornado table
        (`Report.ranges`; `.table()` prints it)."""
        return self.report.ranges(self.module, self.target, headlines)

    def save(self, path: str | Path) -> None:
        """Write the MLIR to `path` and the weights beside it (PATH.safetensors)."""
        from rducc.files import write_atomically

        path = Path(path)
        module = self.module.clone()
        if self.weights:
            weights_path = sidecar_path(path)
            save_weights(weights_path, {k: numpy_to_torch(v) for k, v in self.weights.items()})
            set_weights_file(module, weights_path.name)
        write_atomically(str(path), module_text(module))



class BucketedProgram:
    """A program compiled for several sizes of its dynamic dims (`compile(...,
    shapes=...)`): one placed program a bucket, in one module, sharing one set
    of weights. A call runs the bucket whose inputs have the given shapes."""

    def __init__(self, module: ModuleOp, programs: Sequence[tuple[dict[str, int], Program]],
                 weights: dict[str, np.ndarray], target: Target,
                 inputs: tuple[Any, Sequence[str] | None] | None = None):
        from rducc.shapes.padding import plan_of

        self.module = module
        self.padding = plan_of(module)
        """Which dims a call may pad up to a larger bucket (`rducc.shapes.padding`; docs/shapes.md)."""
        """The module holding every bucket (`rducc.shapes.buckets`)."""
        self.programs = list(programs)
        self.weights = weights
        """The weights every bucket reads (one dict: a buffer one bucket updates, the others read)."""
        self.target = target
        self._inputs = inputs
        """The dynamic program's input structure and `forward` argument names: a bucket whose
        reductions read hidden validity inputs was re-exported with flat inputs, so a call is
        bound by these (keywords as for any program)."""

    @property
    def buckets(self) -> list[dict[str, int]]:
        """Each bucket's size of each dynamic dim, in compile order."""
        return [dict(values) for values, _ in self.programs]

    def program_for(self, *tensors: torch.Tensor, **named: torch.Tensor) -> Program:
        """The bucket's Program a call with these inputs runs (their exact shapes, else
        the smallest bucket they pad up to); else one error listing the compiled ones."""
        given = self._user_inputs(tensors, named)
        return self.programs[self._pick(given).index][1]

    def _user_inputs(self, tensors: tuple, named: dict[str, Any]) -> list[Any]:
        """The user inputs flattened as exported (the hidden validity inputs of masked reductions,
        `rducc.shapes.padding`, are added by the call, never given)."""
        if self._inputs is not None:
            return flat_inputs(*self._inputs, tensors, named)
        return self.programs[0][1]._flat_inputs(tensors, named)

    def _pick(self, given: Sequence[Any]) -> Any:
        from rducc.shapes import pick_bucket

        shapes = [tuple(t.shape) for t in given if isinstance(t, torch.Tensor)]
        return pick_bucket(self._declared, shapes, self.padding)

    @cached_property
    def _declared(self) -> list[tuple[dict[str, int], list[tuple[int, ...]]]]:
        """Each bucket's sizes and its inputs' shapes, read once."""
        from rducc.shapes import input_shapes

        return [(values, input_shapes(p.module, p._runner)) for values, p in self.programs]

    def __call__(self, *tensors: torch.Tensor, **named: torch.Tensor) -> Any:
        """Run the bucket matching the inputs' shapes (as `Program.__call__`); inputs
        of a smaller size of a dim the program lets pad run the smallest bucket that
        covers them, padded with zeros (or the neutral value of a max, min or
        product they meet), and its outputs are cut back (docs/shapes.md)."""
        from rducc.shapes.padding import cut_outputs, pad_arrays, validity_inputs

        given = self._user_inputs(tensors, named)
        call = self._pick(given)
        program = self.programs[call.index][1]
        declared = self._declared[call.index][1]
        if self.padding is not None:  # the hidden validity inputs of masked reductions (none when none)
            given = [*given, *(torch.from_numpy(v) for v in validity_inputs(self.padding, call.real))]
        if [tuple(t.shape) for t in given] == [tuple(s) for s in declared]:
            return program._call_flat(given)
        assert self.padding is not None
        padded = pad_arrays([t.detach() for t in given], declared, self.padding.fills)
        outputs = program._call_flat(padded)
        flat, spec = pytree.tree_flatten(outputs)
        return pytree.tree_unflatten(cut_outputs(flat, self.padding, call), spec)

    @property
    def mlir(self) -> str:
        """Every bucket's placed program, as one module's MLIR text."""
        return module_text(self.module)

    @cached_property
    def report(self) -> dict[str, Any]:
        """The cost model's report of each bucket, by its label (`batch=1 seq=128`)."""
        return self.simulate()

    def simulate(self) -> dict[str, Any]:
        """Each bucket's cost report, by its label, from shapes alone."""
        from rducc.frontend.dynamic_dims import bucket_label

        return {bucket_label(values): program.simulate() for values, program in self.programs}

    def save(self, path: str | Path) -> None:
        """Write the MLIR of every bucket to `path` and the shared weights beside it, once."""
        from rducc.files import write_atomically

        path = Path(path)
        module = self.module.clone()
        if self.weights:
            weights_path = sidecar_path(path)
            save_weights(weights_path, {k: numpy_to_torch(v) for k, v in self.weights.items()})
            set_weights_file(module, weights_path.name)
        write_atomically(str(path), module_text(module))
