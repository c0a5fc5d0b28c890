"""A seeded fuzzer for rducc's tools: mutate valid inputs, run the tools in-process.

    .venv/bin/python bench/fuzz.py --seed 0 --cases 600 [--models mlp,cnn,attention] [--show internal]

Seeds (built once, in a temporary folder): the bundled example archive, the
placed programs rducc compiles from it and from a small conv net and an
attention block (with their weights), their graph-level MLIR, a good input
.npy and the sn40l target file. Each case mutates one seed (MLIR text lines,
integers, types, shapes, op names, SSA names; zip members and the archive's
JSON fields; safetensors and .npy headers; target TOML values) and runs
`rducc`, `rducc-opt` or `rducc-run` on it through their `main` functions,
under a watchdog. Each outcome is one class:

- `ok`: exit 0 (`accepted-garbage` when the mutation cannot be valid, or rducc-run
  wrote NaN results: memory read before anything wrote it),
- `clean`: exit 1 with one `TOOL: error:` line and no traceback,
- `noisy`: exit 1 but more than one line of standard error,
- `internal`: exit 70, a traceback, or an exception out of `main`,
- `hang`: the watchdog fired,
- `partial`: an existing output changed, or a new file left behind, on failure.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import re
import shutil
import signal
import struct
import sys
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "mlp.pt2"
TARGET = ROOT / "compiler" / "targets" / "sn40l.toml"
CLASSES = ("ok", "accepted-garbage", "clean", "noisy", "internal", "hang", "partial")
SENTINEL = b"an earlier output that a failed run must leave alone\n"


class Hang(BaseException):
    """Raised by the watchdog: a BaseException, so no tool's handler swallows it."""


@dataclass
class Case:
    """One mutated input and the command that reads it."""

    kind: str  # which seed and tool
    mutation: str  # what was done to the seed
    tool: str
    args: list[str]
    must_fail: bool = False  # no valid reading of the input exists


@dataclass
class Outcome:
    case: Case
    outcome: str
    status: int
    stderr: str
    seconds: float


@dataclass
class Seeds:
    """The valid inputs mutations start from, all in `directory`."""

    directory: Path
    placed: dict[str, str] = field(default_factory=dict)  # name -> placed MLIR text
    graph: dict[str, str] = field(default_factory=dict)  # name -> graph-level MLIR text
    inputs: dict[str, list[Path]] = field(default_factory=dict)  # name -> .npy inputs
    weights: dict[str, bytes] = field(default_factory=dict)  # name -> safetensors bytes
    archive: bytes = b""
    target: str = ""


# --------------------------------------------------------------------------
# seeds
# --------------------------------------------------------------------------


def _small_models():
    import torch
    from torch import nn

    class Conv(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = nn.Conv2d(2, 4, 3, padding=1)
            self.fc = nn.Linear(4, 3)

        def forward(self, x):
            y = torch.relu(self.conv(x))
            return self.fc(y.mean(dim=(2, 3)))

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv = nn.Linear(8, 24)

        def forward(self, x):
            q, k, v = self.qkv(x).reshape(1, 4, 3, 2, 4).permute(2, 0, 3, 1, 4)
            y = torch.softmax(q @ k.transpose(-1, -2) * 0.5, dim=-1) @ v
            return y.transpose(1, 2).reshape(1, 4, 8)

    torch.manual_seed(0)
    return {"cnn": (Conv(), (torch.randn(1, 2, 6, 6),)), "attention": (Attention(), (torch.randn(1, 4, 8),))}


def build_seeds(directory: Path, models: tuple[str, ...] = ("mlp",)) -> Seeds:
    """Compile the seeds into `directory` (the example always; cnn/attention on request)."""
    import numpy as np
    import torch

    import rducc
    from rducc.driver import import_file, module_text

    seeds = Seeds(directory, archive=EXAMPLE.read_bytes(), target=TARGET.read_text())
    sources: dict[str, object] = {"mlp": EXAMPLE}
    arrays: dict[str, list] = {"mlp": [np.random.default_rng(0).standard_normal((4, 32)).astype(np.float32)]}
    extra = _small_models()
    for name in models:
        if name in extra:
            module, example = extra[name]
            with torch.no_grad():
                program = torch.export.export(module.eval(), example)
            path = directory / f"{name}.pt2"
            torch.export.save(program, str(path))
            sources[name] = path
            arrays[name] = [t.numpy() for t in example]
    for name, source in sources.items():
        placed = directory / f"{name}.mlir"
        rducc.compile(str(source), opt_level=2).save(placed)
        seeds.placed[name] = placed.read_text()
        seeds.weights[name] = placed.with_suffix(".safetensors").read_bytes()
        seeds.graph[name] = module_text(import_file(Path(str(source)))[0])
        seeds.inputs[name] = []
        for index, array in enumerate(arrays[name]):
            npy = directory / f"{name}_in{index}.npy"
            np.save(npy, array)
            seeds.inputs[name].append(npy)
    return seeds


# --------------------------------------------------------------------------
# mutations
# --------------------------------------------------------------------------

NUMBERS = (0, -1, 1, 2, 3, 7, 2**31, 2**63, 2**64 + 1, 10**20, -(2**63) - 1, 999999999999)
ELEMENTS = ("f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index", "f8E4M3FN", "complex<f32>")
INT_RE = re.compile(r"(?<![\w%@#.])-?\d+(?![\w.])")
DIMS_RE = re.compile(r"(?<=[<, ])((?:\d+x)+)")
ELEMENT_RE = re.compile(r"\b(f16|bf16|f32|f64|i1|i8|i32|i64)\b")
SSA_RE = re.compile(r"%[\w.$-]+")
OP_RE = re.compile(r"\b(?:rdu|tier)\.[a-z_]+\b")


def _pick_line(rng: random.Random, lines: list[str], pattern: re.Pattern | None = None) -> int | None:
    choices = [i for i, line in enumerate(lines) if pattern is None or pattern.search(line)]
    return rng.choice(choices) if choices else None


def _sub_one(rng: random.Random, line: str, pattern: re.Pattern, replace: Callable[[str], str]) -> str:
    matches = list(pattern.finditer(line))
    match = rng.choice(matches)
    return line[: match.start()] + replace(match.group(0)) + line[match.end():]


def mutate_mlir(rng: random.Random, text: str, op_names: list[str]) -> tuple[str, str, bool]:
    """One to three mutations of MLIR text: (new text, description, whether it must fail)."""
    done = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        text, what, _ = _mutate_mlir_once(rng, text, op_names)
        done.append(what)
    return text, "; ".join(done), False


def _mutate_mlir_once(rng: random.Random, text: str, op_names: list[str]) -> tuple[str, str, bool]:
    """One mutation of MLIR text."""
    lines = text.splitlines()
    kind = rng.choice(("delete", "duplicate", "swap", "integer", "integer", "element", "shape", "shape",
                       "terminator", "rename", "opname", "opname", "truncate", "attribute"))
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return text[:cut], f"truncate at {cut}", False
    if kind in ("delete", "duplicate", "swap"):
        i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
        if kind == "delete":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines) + "\n", f"{kind} line {i + 1}" + (f",{j + 1}" if kind == "swap" else ""), False
    if kind == "terminator":
        i = _pick_line(rng, lines, re.compile(r"(func\.return|scf\.yield|rdu\.yield|return)\b"))
        if i is not None:
            del lines[i]
        return "\n".join(lines) + "\n", f"drop terminator at line {(i or 0) + 1}", False
    patterns = {"integer": INT_RE, "element": ELEMENT_RE, "shape": DIMS_RE, "rename": SSA_RE,
                "opname": OP_RE, "attribute": re.compile(r'"[^"]*"')}
    i = _pick_line(rng, lines, patterns[kind])
    if i is None:
        return text, "nothing to change", False
    if kind == "integer":
        value = str(rng.choice(NUMBERS))
        lines[i] = _sub_one(rng, lines[i], INT_RE, lambda _: value)
    elif kind == "element":
        value = rng.choice(ELEMENTS)
        lines[i] = _sub_one(rng, lines[i], ELEMENT_RE, lambda _: value)
    elif kind == "shape":
        def new_dims(dims: str) -> str:
            parts = dims.rstrip("x").split("x")
            k = rng.randrange(len(parts))
            parts[k] = str(rng.choice((0, 1, 2, 3, 5, 33, 1000000)))
            if rng.random() < 0.3:
                del parts[rng.randrange(len(parts))]
            return "".join(p + "x" for p in parts)

        value = "(dims)"
        lines[i] = _sub_one(rng, lines[i], DIMS_RE, new_dims)
    elif kind == "rename":
        names = sorted(set(SSA_RE.findall(text)))
        value = rng.choice(names)
        lines[i] = _sub_one(rng, lines[i], SSA_RE, lambda _: value)
    elif kind == "opname":
        value = rng.choice(op_names)
        lines[i] = _sub_one(rng, lines[i], OP_RE, lambda _: value)
    else:
        value = rng.choice(('""', '"../../etc/passwd"', '"/dev/zero"', '"x"', '"\\ff"', '"%s"'))
        lines[i] = _sub_one(rng, lines[i], patterns[kind], lambda _: value)
    return "\n".join(lines) + "\n", f"{kind} -> {value} at line {i + 1}", False


def _json_leaves(node: object, path: tuple = ()) -> list[tuple]:
    if isinstance(node, dict):
        return [leaf for key, value in node.items() for leaf in _json_leaves(value, path + (key,))] + [path]
    if isinstance(node, list):
        return [leaf for index, value in enumerate(node) for leaf in _json_leaves(value, path + (index,))] + [path]
    return [path]


def _json_mutate(rng: random.Random, document: object) -> tuple[object, str]:
    leaves = [p for p in _json_leaves(document) if p]
    path = rng.choice(leaves)
    parent = document
    for key in path[:-1]:
        parent = parent[key]  # type: ignore[index]
    old = parent[path[-1]]  # type: ignore[index]
    choices: list[object] = [None, 0, -1, 2**63, 1e308, "", "torch.float64", [], {}, "aten.bogus.default"]
    if isinstance(old, int) and not isinstance(old, bool):
        choices += [old + 1, old - 1, -old, old * 1000]
    if isinstance(old, list) and old:
        choices += [old[:-1], old + old[-1:]]
    if isinstance(old, str):
        choices += [old + "x", old[:-1], "torch.ops.aten.add.Tensor", "aten.add.Tensor"]
    new = rng.choice(choices)
    if rng.random() < 0.15 and isinstance(parent, dict):
        del parent[path[-1]]
        return document, f"drop {'/'.join(map(str, path))}"
    parent[path[-1]] = new  # type: ignore[index]
    return document, f"{'/'.join(map(str, path))}: {str(old)[:30]!r} -> {str(new)[:30]!r}"


def mutate_archive(rng: random.Random, data: bytes) -> tuple[bytes, str, bool]:
    """One zip-level or JSON-field mutation of a .pt2 archive."""
    kind = rng.choice(("truncate", "flip", "flip", "drop", "rename", "json", "json", "json", "json"))
    if kind == "truncate":
        cut = rng.randrange(len(data))
        return data[:cut], f"truncate at {cut}", True
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        members = [(info, source.read(info)) for info in source.infolist()]
    index = rng.randrange(len(members))
    if kind == "json":
        jsons = [i for i, (info, body) in enumerate(members) if info.filename.endswith(".json") and body.strip()]
        index = rng.choice(jsons)
    info, body = members[index]
    description = f"{kind} {info.filename}"
    must_fail = False
    if kind == "flip" and body:
        position = rng.randrange(len(body))
        body = body[:position] + bytes([body[position] ^ 0xFF]) + body[position + 1:]
        description += f" byte {position}"
    elif kind == "drop":
        del members[index]
    elif kind == "rename":
        info.filename = info.filename + rng.choice(("x", "/../x", ".bak"))
    elif kind == "json":
        document, what = _json_mutate(rng, json.loads(body))
        body = json.dumps(document).encode()
        description += f" {what}"
    if kind != "drop":
        members[index] = (info, body)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for member, content in members:
            archive.writestr(member.filename, content)
    if kind == "flip":  # rewrite with the CRC of the flipped bytes, then break nothing else
        pass
    return out.getvalue(), description, must_fail


def mutate_safetensors(rng: random.Random, data: bytes) -> tuple[bytes, str, bool]:
    """One header-field or body mutation of a safetensors file."""
    size = struct.unpack("<Q", data[:8])[0]
    header, body = json.loads(data[8:8 + size]), data[8 + size:]
    kind = rng.choice(("field", "field", "field", "body", "length", "drop"))
    if kind == "body":
        cut = rng.randrange(len(body))
        return data[:8 + size] + body[:cut], f"body truncated to {cut}", True
    if kind == "length":
        new = rng.choice((0, size - 1, size + 1, 2**63, len(data)))
        return struct.pack("<Q", new) + data[8:], f"header length {new}", True
    name = rng.choice([k for k in header if k != "__metadata__"])
    if kind == "drop":
        del header[name]
        what = f"drop {name}"
    else:
        key = rng.choice(("dtype", "shape", "data_offsets"))
        entry = header[name]
        if key == "dtype":
            entry[key] = rng.choice(("F16", "F64", "I64", "BOOL", "U8", "F8_E4M3", "XX", 4))
        elif key == "shape":
            shape = list(entry[key])
            choice = rng.choice(("dim", "drop", "add", "negative"))
            if choice == "dim" and shape:
                shape[rng.randrange(len(shape))] = rng.choice((0, 1, 3, 2**40))
            elif choice == "drop" and shape:
                shape.pop()
            elif choice == "add":
                shape.append(1)
            else:
                shape = [-1] + shape[1:]
            entry[key] = shape
        else:
            start, end = entry[key]
            entry[key] = rng.choice(([start, end + 4], [start + 4, end], [end, start], [start, 2**63],
                                     [0, end - start]))
        what = f"{name}.{key} -> {entry[key]}"
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + body, what, False


def mutate_npy(rng: random.Random, data: bytes) -> tuple[bytes, str, bool]:
    """One header or body mutation of a .npy array."""
    length = struct.unpack("<H", data[8:10])[0]
    header, body = data[10:10 + length].decode("latin1"), data[10 + length:]
    kind = rng.choice(("descr", "shape", "fortran", "body", "length"))
    if kind == "body":
        cut = rng.randrange(len(body))
        return data[:10 + length] + body[:cut], f"body truncated to {cut}", True
    if kind == "length":
        new = rng.choice((0, length - 1, length + 7, 65535))
        return data[:8] + struct.pack("<H", new) + data[10:], f"header length {new}", True
    if kind == "descr":
        new = rng.choice(("'<f8'", "'<i8'", "'|b1'", "'<c8'", "'|O'", "'>f4'", "'<f2'", "'<U4'", "'V4'"))
        header = re.sub(r"'descr': '[^']*'", f"'descr': {new}", header)
    elif kind == "shape":
        new = rng.choice(("()", "(0,)", "(4,)", "(32, 4)", "(4, 32, 1)", "(1000000, 1000000)", "(-1, 32)",
                          "(2**63, 1)", "(4, 'a')"))
        header = re.sub(r"'shape': \([^)]*\)", f"'shape': {new}", header)
    else:
        new = "True"
        header = header.replace("'fortran_order': False", "'fortran_order': True")
    padded = header.rstrip("\n").ljust(length - 1) + "\n"
    encoded = padded.encode("latin1")
    head = data[:8] + struct.pack("<H", len(encoded)) + encoded
    return head + body, f"{kind} -> {new}", kind == "shape" and "1000000" in new


def mutate_toml(rng: random.Random, text: str) -> tuple[str, str, bool]:
    """One mutation of a target file."""
    lines = text.splitlines()
    assignments = [i for i, line in enumerate(lines) if re.match(r"^\w+\s*=", line)]
    i = rng.choice(assignments)
    kind = rng.choice(("value", "value", "value", "delete", "rename", "duplicate", "truncate"))
    key = lines[i].split("=")[0].strip()
    if kind == "truncate":
        cut = rng.randrange(len(text))
        return text[:cut], f"truncate at {cut}", False
    if kind == "delete":
        del lines[i]
    elif kind == "duplicate":
        lines.insert(i, lines[i])
    elif kind == "rename":
        lines[i] = lines[i].replace(key, key + "_x", 1)
    else:
        value = rng.choice(("0", "-1", "1", "inf", "nan", "-inf", "1e-300", "1e300", "2e-9", '"many"', "[]",
                            "true", str(2**63), str(10**30), "0.5", '"sn40l"', "{}"))
        lines[i] = f"{key} = {value}"
        return "\n".join(lines) + "\n", f"{key} = {value}", False
    return "\n".join(lines) + "\n", f"{kind} {key}", kind == "duplicate"


# --------------------------------------------------------------------------
# cases
# --------------------------------------------------------------------------


def _rducc_op_names() -> list[str]:
    from rducc.dialects import Dataflow, Memory

    return sorted({op.name for dialect in (Dataflow, Memory) for op in dialect.operations})


def make_case(rng: random.Random, seeds: Seeds, number: int, op_names: list[str]) -> Case:
    """Case `number`: pick a seed and a tool, mutate, write the input file."""
    work = seeds.directory
    model = rng.choice(sorted(seeds.placed))
    inputs = [str(p) for p in seeds.inputs[model]]
    kind = rng.choices(("run-mlir", "opt-placed", "opt-graph", "archive", "weights", "npy", "target"),
                       weights=(5, 3, 3, 3, 2, 2, 2))[0]
    run_args = ["--output", str(work / "out.npz")]
    if kind == "run-mlir":
        text, what, must_fail = mutate_mlir(rng, seeds.placed[model], op_names)
        path = work / f"case{number}.mlir"
        path.write_text(text)
        args = [str(path)] + [a for x in inputs for a in ("--input", x)] + run_args
        if rng.random() < 0.25:
            args = [str(path), "--simulate"]
        # the sidecar beside the mutated program, named as the program names it
        shutil.copyfile(work / f"{model}.safetensors", work / f"case{number}.safetensors")
        return Case(f"{kind}:{model}", what, "rducc-run", args + ["--weights", str(work / f"{model}.safetensors")]
                    if "--simulate" not in args else args, must_fail)
    if kind in ("opt-placed", "opt-graph"):
        source = seeds.placed[model] if kind == "opt-placed" else seeds.graph[model]
        text, what, must_fail = mutate_mlir(rng, source, op_names)
        path = work / f"case{number}.mlir"
        path.write_text(text)
        args = [str(path), "-o", str(work / "out.mlir")]
        if kind == "opt-graph" and rng.random() < 0.5:
            args += ["-p", rng.choice(("rdu-canonicalize", "rdu-fuse", "rdu-fuse,rdu-tile",
                                       "rdu-fuse,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc"))]
        return Case(f"{kind}:{model}", what, "rducc-opt", args, must_fail)
    if kind == "archive":
        data, what, must_fail = mutate_archive(rng, seeds.archive)
        path = work / f"case{number}.pt2"
        path.write_bytes(data)
        return Case(kind, what, "rducc", [str(path), "-o", str(work / "out.mlir")], must_fail)
    if kind == "weights":
        data, what, must_fail = mutate_safetensors(rng, seeds.weights[model])
        path = work / f"case{number}.safetensors"
        path.write_bytes(data)
        args = [str(work / f"{model}.mlir")] + [a for x in inputs for a in ("--input", x)]
        return Case(f"{kind}:{model}", what, "rducc-run", args + run_args + ["--weights", str(path)], must_fail)
    if kind == "npy":
        position = rng.randrange(len(inputs))
        data, what, must_fail = mutate_npy(rng, Path(inputs[position]).read_bytes())
        path = work / f"case{number}.npy"
        path.write_bytes(data)
        inputs[position] = str(path)
        args = [str(work / f"{model}.mlir")] + [a for x in inputs for a in ("--input", x)]
        return Case(f"{kind}:{model}", what, "rducc-run", args + run_args, must_fail)
    text, what, must_fail = mutate_toml(rng, seeds.target)
    path = work / f"case{number}.toml"
    path.write_text(text)
    if rng.random() < 0.7:
        return Case(kind, what, "rducc-run", [str(work / f"{model}.mlir"), "--simulate", "--target", str(path)],
                    must_fail)
    return Case(kind, what, "rducc", [str(EXAMPLE), "-o", str(work / "out.mlir"), "--target", str(path)], must_fail)


# --------------------------------------------------------------------------
# running
# --------------------------------------------------------------------------


def _main(tool: str) -> Callable[[list[str]], int]:
    from rducc.tools import cli, opt, run

    return {"rducc": cli.main, "rducc-opt": opt.main, "rducc-run": run.main}[tool]


def _on_alarm(signum, frame):  # noqa: ARG001 - the signal handler's signature
    raise Hang()


def _outputs(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in directory.iterdir() if p.name.startswith("out")}


@contextlib.contextmanager
def _fd_captured(fd: int):
    """Capture what is written to file descriptor `fd` (past sys.stderr) into a StringIO."""
    captured = io.StringIO()
    sys.__stderr__.flush()
    saved = os.dup(fd)
    with tempfile.TemporaryFile() as sink:
        os.dup2(sink.fileno(), fd)
        try:
            yield captured
        finally:
            sys.__stderr__.flush()
            os.dup2(saved, fd)
            os.close(saved)
            sink.seek(0)
            captured.write(sink.read().decode(errors="replace"))


def run_case(case: Case, directory: Path, limit_s: float) -> Outcome:
    """Run one case in-process and classify what it did."""
    for name in ("out.mlir", "out.safetensors", "out.npz"):
        (directory / name).write_bytes(SENTINEL)
    before = set(os.listdir(directory))
    stderr, stdout = io.StringIO(), io.StringIO()
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    start = time.perf_counter()
    status, outcome = -1, ""
    with _fd_captured(2) as raw:  # what libraries write to the real stderr (torch's logs)
        signal.setitimer(signal.ITIMER_REAL, limit_s)
        try:
            with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(stdout):
                try:
                    status = _main(case.tool)(list(case.args))
                except SystemExit as exit_:
                    status = exit_.code if isinstance(exit_.code, int) else 1
        except Hang:
            outcome = "hang"
        except Exception as error:  # noqa: BLE001 - an exception out of main is the finding
            stderr.write(f"Traceback (escaped main): {type(error).__name__}: {error}\n")
            status = 70
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    text = raw.getvalue() + stderr.getvalue()
    if not outcome:
        outcome = _classify(case, status, text, stdout.getvalue(), directory, before)
    return Outcome(case, outcome, status, text, seconds)


def _classify(case: Case, status: int, text: str, out: str, directory: Path, before: set[str]) -> str:
    """The outcome class; `clean` is test_errors.py's rule: one `TOOL: error:` line
    (a located message's source line and caret may follow), none before it."""
    lines = text.splitlines()
    if "Hang" in text:  # the watchdog's exception, caught and reported by a tool
        return "hang"
    if status == 70 or "Traceback" in text or "internal error" in text or status not in (0, 1):
        return "internal"
    if status == 0:
        return "accepted-garbage" if case.must_fail or _nan_results(directory) else "ok"
    left = set(os.listdir(directory)) - before
    changed = [name for name, data in _outputs(directory).items() if data != SENTINEL]
    if left or changed:
        return "partial"
    starts = [i for i, line in enumerate(lines) if line.startswith(f"{case.tool}: error:")]
    if len(starts) == 1 and out == "" and not any(line.startswith(f"{case.tool}:") for line in lines[:starts[0]]):
        return "clean"
    return "noisy"


def _nan_results(directory: Path) -> bool:
    """Whether rducc-run wrote NaN results: the seeds' results are finite, and a
    mutated program computing NaN read memory nothing wrote (or poison)."""
    import numpy as np

    path = directory / "out.npz"
    if not path.exists() or path.read_bytes() == SENTINEL:
        return False
    with np.load(path) as results:
        return any(np.isnan(results[name]).any() for name in results.files
                   if results[name].dtype.kind in "fc")


def fuzz(seeds: Seeds, seed: int, cases: int, limit_s: float = 60.0,
         report: Callable[[Outcome], None] | None = None) -> list[Outcome]:
    """Run `cases` mutations from `seed`; the outcomes in order."""
    rng = random.Random(seed)
    op_names = _rducc_op_names()
    outcomes = []
    for number in range(cases):
        case = make_case(rng, seeds, number, op_names)
        outcome = run_case(case, seeds.directory, limit_s)
        for leftover in seeds.directory.glob(f"case{number}.*"):
            leftover.unlink()
        outcomes.append(outcome)
        if report is not None:
            report(outcome)
    return outcomes


def summary(outcomes: list[Outcome]) -> str:
    counts = Counter(o.outcome for o in outcomes)
    return ", ".join(f"{name} {counts[name]}" for name in CLASSES) + f" (of {len(outcomes)})"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--models", default="mlp,cnn,attention")
    parser.add_argument("--limit", type=float, default=60.0, help="seconds a case may take")
    parser.add_argument("--show", default="internal,hang,partial,noisy,accepted-garbage",
                        help="outcome classes to print case by case")
    args = parser.parse_args(argv)
    show = set(args.show.split(","))

    def report(outcome: Outcome) -> None:
        if outcome.outcome in show:
            lines = outcome.stderr.strip().splitlines() or [""]
            last = next((line for line in lines if "error" in line), lines[-1])[:240]
            print(f"[{outcome.outcome}] {outcome.case.kind} {outcome.case.tool} | {outcome.case.mutation} | "
                  f"{last}", flush=True)

    with tempfile.TemporaryDirectory(prefix="rducc-fuzz-") as folder:
        start = time.perf_counter()
        seeds = build_seeds(Path(folder), tuple(args.models.split(",")))
        print(f"seeds built in {time.perf_counter() - start:.1f} s", flush=True)
        start = time.perf_counter()
        outcomes = fuzz(seeds, args.seed, args.cases, args.limit, report)
        print(f"{summary(outcomes)} in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
