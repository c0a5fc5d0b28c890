"""An OpInfo-driven op sweep: what a held-out single-op corpus would hit.

torch's own OpInfo database (`op_db`, the sample inputs torch tests its ops
with) gives, for each op, a few samples of one dtype (`--dtype`, float32 by
default; ops whose OpInfo does not list that dtype on CPU are left out). Each sample becomes a small
`nn.Module` (the sample's tensors are its inputs; its other arguments are
constants), exported with `torch.export`, compiled with rducc at -O0 (and
-O2 for every `--o2-every`-th op), run, and compared with eager. Each sample
is classified:

- `export`: torch.export fails: torch's problem, not counted;
- `skipped`: eager fails, is not deterministic (random ops), or returns no tensor;
- `refused`: rducc's one-line error (an `RduccError`; a failure inside torch's
  decomposition, which rducc runs with its own decompositions, counts here);
- `crash`: any other exception inside rducc (an internal error);
- `mismatch`: the program runs but differs from eager (values, shape or dtype;
  float32 within rtol 1e-3/atol 1e-4, other dtypes within
  `torch.testing.assert_close`'s defaults for the output's dtype; bf16/f16
  within the loosest `toleranceOverride` the op's OpInfo sets for the dtype,
  or no farther from the float64 result than eager is, plus that atol, the
  rule torch's test_decomp holds decompositions to; index outputs of ops whose
  order among ties torch leaves unspecified (sort, topk, ...) by the values
  they select);
- `pass`.

The pass rate counts refused, crash, mismatch and pass. The failures are
printed grouped by cause (the error's first line with numbers and names
blurred). `--write-doc` replaces the "OpInfo sweep" section of
docs/aten-coverage.md with a summary. Nothing is cached.

Run: python bench/op_sweep.py [--samples 2] [--ops add,mul] [--limit N] [--dtype bfloat16] [--write-doc]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import random
import re
import signal
import sys
import time
import warnings
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils import _pytree as pytree

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "aten-coverage.md"
HEADING = "## OpInfo sweep"  # rducc.tools.coverage keeps this section when it regenerates the rest
DTYPES = {
    name: getattr(torch, name) for name in ("float32", "float16", "bfloat16", "float64", "int64", "int32", "bool")
}
"""The sample dtypes `--dtype` takes."""
PER_DTYPE = "Other sample dtypes (`--dtype`), one line each:"
COUNTED = ("pass", "mismatch", "refused", "crash")
SAMPLE_SECONDS = 20
"""A sample still compiling or running after this long is a crash (`timeout`)."""

warnings.filterwarnings("ignore")


def op_db() -> list[Any]:
    """torch's OpInfo list (needs the `expecttest` package, in rducc's test extra)."""
    from torch.testing._internal.common_methods_invocations import op_db as database

    return list(database)


def sampled_ops(count: int, dtype: torch.dtype, seed: int = 30) -> set[str]:
    """`count` OpInfo names drawn with a fixed seed among the ops whose OpInfo lists
    `dtype` on CPU (the quick subset `test_op_sweep.py` holds to the full figure)."""
    names = sorted({op_name(i) for i in op_db() if dtype in i.supported_dtypes("cpu")})
    return set(random.Random(seed).sample(names, count))


def op_name(info: Any) -> str:
    return info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")


@dataclass
class Outcome:
    """One sample's result."""

    op: str
    status: str
    cause: str = ""
    opt_level: int = 0


class SampleModule(torch.nn.Module):
    """Calls the op on the sample: the tensors are inputs, the rest constants."""

    def __init__(self, function: Any, leaves: list[Any], spec: Any, tensor_at: list[int]) -> None:
        super().__init__()
        self.function, self.leaves, self.spec, self.tensor_at = function, leaves, spec, tensor_at

    def forward(self, *tensors: torch.Tensor) -> Any:
        leaves = list(self.leaves)
        for at, tensor in zip(self.tensor_at, tensors):
            leaves[at] = tensor
        args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.function(*args, **kwargs)


def _usable(tensors: list[torch.Tensor]) -> bool:
    return bool(tensors) and all(
        t.layout == torch.strided and not t.is_complex() and not t.requires_grad for t in tensors
    )


def sample_modules(
    info: Any, count: int, dtype: torch.dtype = torch.float32
) -> Iterator[tuple[SampleModule, tuple[torch.Tensor, ...]]]:
    """The op's first `count` usable samples of `dtype`, as a module and its inputs."""
    if dtype not in info.supported_dtypes("cpu"):
        return
    taken = 0
    with contextlib.suppress(Exception):
        for sample in info.sample_inputs("cpu", dtype, requires_grad=False):
            leaves, spec = pytree.tree_flatten(((sample.input, *sample.args), dict(sample.kwargs)))
            tensor_at = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
            tensors = [leaves[i].detach().clone() for i in tensor_at]
            if not _usable(tensors):
                continue
            yield SampleModule(info.op, leaves, spec, tensor_at), tuple(tensors)
            taken += 1
            if taken >= count:
                return


class _Timeout(Exception):
    pass


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: Any) -> None:
        raise _Timeout(f"over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _clone(tensors: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return tuple(t.clone() for t in tensors)


def _tensors(value: Any) -> list[Any] | None:
    leaves = pytree.tree_leaves(value)
    if not leaves or not all(isinstance(x, torch.Tensor | bool | int | float) for x in leaves):
        return None
    return leaves


def _first_line(error: BaseException) -> str:
    text = [t.strip() for t in str(error).strip().splitlines() if t.strip()]
    line = text[0] if text else ""
    if line.endswith(":") and len(text) > 1:  # the unsupported-ops error lists the ops below
        line += " " + text[1]
    line = line.removeprefix("error: ")
    return f"{type(error).__name__}: {line}"[:300]


def _cause(line: str) -> str:
    """The error line with what varies between samples blurred (numbers, names, shapes)."""
    line = re.sub(r"\[[^\]]*\]", "[..]", line)
    line = re.sub(r"'[^']*'", "'..'", line)
    line = re.sub(r"\b\d+(\.\d+)?\b", "N", line)
    line = re.sub(r", first at .*$", "", line)  # where: the sample's own line, the same for all
    line = re.sub(r"\S+\.py:N:N: (return self\.function\(\*args, \*\*kwargs\): )?", "", line)
    return line[:200]


UNINITIALIZED = frozenset({"empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "empty_permuted"})
"""Ops whose values are unspecified (uninitialized memory): only shape and dtype are compared."""


TIES_UNORDERED = frozenset({"sort", "argsort", "topk", "kthvalue", "mode", "median", "nanmedian", "msort"})
"""Ops whose index outputs torch leaves unspecified among tied values: an index output passes when it
selects the same values from the input as eager's (torch's own tests compare them so)."""
REDUCED = (torch.bfloat16, torch.float16)


@dataclass
class Reference:
    """What a sample's outputs are judged against beyond eager's own values."""

    tolerance: dict[str, float] = field(default_factory=dict)
    """rtol/atol for reduced-precision outputs: the loosest `toleranceOverride` the op's OpInfo sets for
    the dtype, else `torch.testing.assert_close`'s defaults."""
    exact: list[Any] | None = None
    """The outputs computed from the inputs in float64 (reduced-precision samples only): rducc passes
    where it is no farther from them than eager is (torch's test_decomp rule for decompositions)."""
    inputs: tuple[torch.Tensor, ...] = ()
    """The sample's inputs (an index output of `TIES_UNORDERED` is checked by the values it selects)."""
    ties: bool = False


def opinfo_tolerance(info: Any, dtype: torch.dtype) -> dict[str, float]:
    """The loosest atol/rtol any of `info`'s `toleranceOverride` (or `precisionOverride`: an atol)
    decorations sets for `dtype` ({} when none)."""
    found: dict[str, float] = {}
    for decoration in getattr(info, "decorators", ()) or ():
        for decorator in getattr(decoration, "decorators", [decoration]):
            overrides = getattr(decorator, "d", None)
            tol = overrides.get(dtype) if isinstance(overrides, dict) else None
            if tol is None:
                continue
            atol, rtol = (tol, 0.0) if isinstance(tol, float) else (tol.atol, tol.rtol)  # precisionOverride: atol
            found["atol"] = max(found.get("atol", 0.0), atol)
            found["rtol"] = max(found.get("rtol", 0.0), rtol)
    return found


def _selects_same(inputs: tuple[torch.Tensor, ...], got: torch.Tensor, want: torch.Tensor) -> bool:
    """Whether index outputs `got` and `want` pick the same values of the first input along some dim
    (a reduced one too: kthvalue's and median's indices lose their dim)."""
    source = inputs[0] if inputs else None
    if source is None or got.dtype != torch.int64 or source.dim() - got.dim() not in (0, 1):
        return False
    if source.dim() == 0:
        return True
    for dim in range(source.dim()):
        along = [index if index.dim() == source.dim() else index.unsqueeze(dim) for index in (got, want)]
        with contextlib.suppress(RuntimeError, IndexError):
            if torch.equal(source.gather(dim, along[0]), source.gather(dim, along[1])):
                return True
    return False


def _close(got: torch.Tensor, want: torch.Tensor, exact: Any, reference: Reference) -> bool:
    """Values within the sample's tolerance; a reduced-precision one also passes when it is no farther
    from the float64 result than eager's is (plus the tolerance's atol)."""
    loose = {"rtol": 1e-3, "atol": 1e-4} if want.dtype == torch.float32 else {}
    if want.dtype in REDUCED and reference.tolerance:
        loose = {"rtol": max(reference.tolerance["rtol"], 1.6e-2), "atol": max(reference.tolerance["atol"], 1e-5)}
    try:
        torch.testing.assert_close(got, want, equal_nan=True, **loose)
        return True
    except AssertionError:
        pass
    if want.dtype in REDUCED and isinstance(exact, torch.Tensor) and exact.shape == want.shape:
        truth = exact.double()
        ours, eagers = (got.double() - truth).abs(), (want.double() - truth).abs()
        same_nan = torch.equal(got.isnan(), want.isnan())
        return same_nan and bool(ours.nan_to_num(0).max() <= eagers.nan_to_num(0).max() + loose.get("atol", 1e-5))
    return False


def _compare(expected: list[Any], actual: list[Any], values: bool = True, reference: Reference | None = None) -> str:
    """'' when `actual` matches eager's `expected` (`values`: and its values), else why not."""
    reference = reference or Reference()
    if len(expected) != len(actual):
        return f"{len(actual)} outputs, eager has {len(expected)}"
    exact = reference.exact if reference.exact is not None and len(reference.exact) == len(expected) else None
    for index, (want, got) in enumerate(zip(expected, actual)):
        if not isinstance(want, torch.Tensor):
            want = torch.tensor(want)
        if not isinstance(got, torch.Tensor):
            got = torch.tensor(got)
        if want.shape != got.shape:
            return f"shape {list(got.shape)}, eager {list(want.shape)}"
        if want.dtype != got.dtype:
            return f"dtype {got.dtype}, eager {want.dtype}"
        if not values:
            continue
        if reference.ties and want.dtype == torch.int64 and _selects_same(reference.inputs, got, want):
            continue
        if not _close(got, want, exact[index] if exact else None, reference):
            return "values differ"
    return ""


def _float64(inputs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    return tuple(t.double() if t.dtype in REDUCED else t.clone() for t in inputs)


def _random(exported: torch.export.ExportedProgram) -> bool:
    """Whether the program draws random numbers (eager's values cannot be matched)."""
    return any(
        isinstance(node.target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in node.target.tags
        for node in exported.graph.nodes
    )


def _reference(module: SampleModule, inputs: tuple[torch.Tensor, ...], name: str,
               tolerance: dict[str, float]) -> Reference:
    """The sample's reference: its float64 outputs when it has reduced-precision inputs."""
    exact = None
    if any(t.dtype in REDUCED for t in inputs):
        with contextlib.suppress(Exception), torch.no_grad():
            exact = _tensors(module(*_float64(inputs)))
    return Reference(tolerance, exact, _clone(inputs), name.split(".")[0] in TIES_UNORDERED)


def run_sample(name: str, module: SampleModule, inputs: tuple[torch.Tensor, ...], opt_level: int,
               tolerance: dict[str, float] | None = None) -> Outcome:
    """Export, compile, run and compare one sample (`tolerance`: the OpInfo's for the dtype)."""
    import rducc
    from rducc.errors import RduccError

    try:
        with torch.no_grad():
            first, second = module(*_clone(inputs)), module(*_clone(inputs))
    except Exception as error:
        return Outcome(name, "skipped", "eager: " + _first_line(error))
    expected, again = _tensors(first), _tensors(second)
    if expected is None or again is None:
        return Outcome(name, "skipped", "no tensor output")
    if any(isinstance(t, torch.Tensor) and t.is_complex() for t in expected):
        return Outcome(name, "skipped", "complex output (rducc takes and returns real pairs)")
    values = name.split(".")[0] not in UNINITIALIZED
    if _compare(expected, again, values):
        return Outcome(name, "skipped", "not deterministic")
    try:
        with _time_limit(SAMPLE_SECONDS), torch.no_grad():
            exported = torch.export.export(module, _clone(inputs))
    except Exception as error:
        return Outcome(name, "export", _first_line(error))
    if _random(exported):
        return Outcome(name, "skipped", "random op (checked statistically elsewhere)")
    try:
        with _time_limit(SAMPLE_SECONDS), contextlib.redirect_stderr(io.StringIO()):
            program = rducc.compile(exported, opt_level=opt_level)
            actual = _tensors(program(*_clone(inputs)))
    except RduccError as error:  # a failure inside torch's decomposition too: rducc runs it
        return Outcome(name, "refused", _first_line(error), opt_level)
    except Exception as error:
        return Outcome(name, "crash", _first_line(error), opt_level)
    if actual is None:
        return Outcome(name, "mismatch", "no tensor output", opt_level)
    why = _compare(expected, actual, values, _reference(module, inputs, name, tolerance or {}))
    return Outcome(name, "mismatch" if why else "pass", why, opt_level)


@dataclass
class Sweep:
    """All outcomes, and their summary."""

    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    def counts(self) -> Counter[str]:
        return Counter(o.status for o in self.outcomes)

    def pass_rate(self) -> float:
        counts = self.counts()
        counted = sum(counts[s] for s in COUNTED)
        return counts["pass"] / counted if counted else 1.0

    def ops_passing(self) -> tuple[int, int]:
        """(ops whose every counted sample passes, ops with a counted sample)."""
        by_op: dict[str, set[str]] = defaultdict(set)
        for o in self.outcomes:
            if o.status in COUNTED:
                by_op[o.op].add(o.status)
        return sum(s == {"pass"} for s in by_op.values()), len(by_op)

    def failures(self) -> dict[tuple[str, str], list[str]]:
        """(status, cause) -> the ops, largest groups first."""
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for o in self.outcomes:
            if o.status in COUNTED[1:]:
                ops = groups[(o.status, _cause(o.cause))]
                label = o.op + (" (-O2)" if o.opt_level == 2 else "")
                if label not in ops:
                    ops.append(label)
        return dict(sorted(groups.items(), key=lambda item: -len(item[1])))

    def report(self) -> str:
        counts = self.counts()
        good, ops = self.ops_passing()
        lines = [
            f"samples: {len(self.outcomes)} in {self.seconds:.0f} s; "
            + ", ".join(f"{s} {counts[s]}" for s in (*COUNTED, "export", "skipped")),
            f"pass rate (pass / (pass + mismatch + refused + crash)): {100 * self.pass_rate():.1f}%",
            f"ops with every sample passing: {good} of {ops}",
            "",
        ]
        for (status, cause), names in self.failures().items():
            lines.append(f"[{status}] x{len(names)} {cause}")
            lines.append("    " + ", ".join(names[:12]) + (" ..." if len(names) > 12 else ""))
        return "\n".join(lines)

    def markdown(self, command: str) -> str:
        counts = self.counts()
        good, ops = self.ops_passing()
        lines = [
            HEADING,
            "",
            f"Generated by `{command}` (bench/op_sweep.py): torch's OpInfo samples (float32,",
            "dense, no grad), each op wrapped in a module, exported, compiled and run against eager.",
            "",
            "| outcome | samples |",
            "| --- | --- |",
            *(f"| {s} | {counts[s]} |" for s in (*COUNTED, "export", "skipped")),
            "",
            f"Pass rate {100 * self.pass_rate():.1f}% of the samples rducc is given "
            f"(export failures and skipped samples not counted); {good} of {ops} ops pass every sample.",
            "",
            "| outcome | cause | ops |",
            "| --- | --- | --- |",
        ]
        for (status, cause), names in self.failures().items():
            shown = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
            lines.append(f"| {status} | {cause.replace('|', '/')} | {shown} |")
        return "\n".join(lines) + "\n"


def sweep(
    names: set[str] | None,
    samples: int,
    limit: int | None,
    o2_every: int,
    verbose: bool,
    dtype: torch.dtype = torch.float32,
) -> Sweep:
    result = Sweep()
    start = time.perf_counter()
    infos = [i for i in op_db() if names is None or op_name(i) in names or i.name in names]
    for index, info in enumerate(infos[:limit]):
        name = op_name(info)
        levels = (0, 2) if o2_every and index % o2_every == 0 else (0,)
        tolerance = opinfo_tolerance(info, dtype)
        for module, inputs in sample_modules(info, samples, dtype):
            for level in levels:
                outcome = run_sample(name, module, inputs, level, tolerance)
                result.outcomes.append(outcome)
                if verbose and outcome.status != "pass":
                    print(f"  {name} -O{level}: {outcome.status} {outcome.cause}", file=sys.stderr, flush=True)
    result.seconds = time.perf_counter() - start
    return result


def dtype_line(result: Sweep, dtype: str, command: str) -> str:
    """The one line of the sweep section that sums up a non-float32 run."""
    counts = result.counts()
    good, ops = result.ops_passing()
    return (
        f"- {dtype} (`{command}`): pass rate {100 * result.pass_rate():.1f}% of "
        f"{sum(counts[s] for s in COUNTED)} samples; {good} of {ops} ops pass every sample"
    )


def _dtype_lines(text: str) -> list[str]:
    section = text.split(HEADING)[1] if HEADING in text else ""
    return [line for line in section.splitlines() if line.startswith("- ") and "(`python bench/op_sweep.py" in line]


def write_doc(section: str, dtype: str = "float32", line: str = "") -> None:
    """Replace (or append) the sweep section of docs/aten-coverage.md.

    A float32 run writes the section, keeping the other dtypes' lines; another
    dtype's run replaces only its own line.
    """
    text = DOC.read_text()
    kept = text.split(HEADING)[0]
    lines = {entry.split(" ")[1]: entry for entry in _dtype_lines(text)}
    if dtype != "float32":
        lines[dtype] = line
        section = HEADING + text.split(HEADING)[1].split("\n" + PER_DTYPE)[0].rstrip("\n") + "\n"
    if lines:
        section += "\n" + PER_DTYPE + "\n\n" + "\n".join(lines[k] for k in DTYPES if k in lines) + "\n"
    notes = _notes(text)
    DOC.write_text(kept + ("" if kept.endswith("\n\n") else "\n") + section + (f"\n{notes}\n" if notes else ""))


def _notes(text: str) -> str:
    """The prose after the per-dtype lines (kept by every run; written by hand)."""
    if PER_DTYPE not in text:
        return ""
    rest = text.split(PER_DTYPE, 1)[1].splitlines()
    start = 0
    while start < len(rest) and (not rest[start].strip() or rest[start].startswith("- ")):
        start += 1
    return "\n".join(rest[start:]).strip("\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2, help="samples per op (default 2)")
    parser.add_argument("--ops", default="", help="comma-separated OpInfo names (default: all)")
    parser.add_argument("--limit", type=int, default=None, help="the first N ops only")
    parser.add_argument("--o2-every", type=int, default=5, help="-O2 too for every N-th op (0: never)")
    parser.add_argument("--verbose", action="store_true", help="print each failure as it happens")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="the samples' dtype")
    parser.add_argument("--write-doc", action="store_true", help="write the section of docs/aten-coverage.md")
    args = parser.parse_args(argv)
    names = set(args.ops.split(",")) if args.ops else None
    result = sweep(names, args.samples, args.limit, args.o2_every, args.verbose, DTYPES[args.dtype])
    print(result.report())
    if args.write_doc:
        command = "python bench/op_sweep.py " + " ".join(a for a in (argv or sys.argv[1:]) if a != "--write-doc")
        write_doc(result.markdown(command.strip()), args.dtype, dtype_line(result, args.dtype, command.strip()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
