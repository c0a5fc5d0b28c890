"""Every bad input rducc's tools refuse, as one table: case -> command -> message.

`test_errors.py` runs each command (in a directory holding an `out.mlir` /
`out.npz` from an earlier run, which must survive untouched) and checks the
message; `docs/errors.md` is generated from this table, and a test fails when
it is stale. Regenerate it with

    .venv/bin/python test/python/error_cases.py

A command's `{name}` fields are the input files `make_inputs` builds (the docs
show their file names); every other path is relative to the run's directory.
"""

from __future__ import annotations

import pickle
import sys
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "errors.md"
EXAMPLE = ROOT / "examples" / "mlp.pt2"


@dataclass(frozen=True)
class ErrorCase:
    """One bad input: the tool, its arguments, and a fragment of the message."""

    name: str
    tool: str
    args: tuple[str, ...]
    expected: str
    located: bool = False  # the message starts `file:line:col: error:`

    def command(self, files: dict[str, str]) -> list[str]:
        return [arg.format(**files) for arg in self.args]


# The input files: placeholder -> (file name, what it is).
INPUTS: dict[str, tuple[str, str]] = {
    "model": ("mlp.pt2", "the bundled example, a good archive"),
    "empty": ("empty.pt2", "a file of 0 bytes"),
    "directory": ("a_directory.pt2", "a directory"),
    "pickle": ("pickle.pt2", "a plain pickle of a dict"),
    "checkpoint": ("checkpoint.pt2", "torch.save(state_dict)"),
    "torchscript": ("scripted.pt2", "torch.jit.save of a scripted module"),
    "random": ("random.pt2", "4 KiB of random bytes"),
    "truncated": ("truncated.pt2", "the first half of a good archive"),
    "other_zip": ("other.zip", "a zip of text files"),
    "mlir_text": ("model.mlir", "MLIR text"),
    "damaged": ("damaged.pt2", "a good archive with 16 bytes of a weight flipped"),
    "opaque": ("opaque.pt2", "the example plus a constant stored as an opaque object (a pickle)"),
    "aotinductor": ("aoti.pt2", "the example plus a shared library under data/aotinductor/"),
    "zip_slip": ("slip.pt2", "the example plus a member named data/aotinductor/model/../../../../evil"),
    "onnx": ("model.onnx", "a non-zip file named .onnx"),
    "safetensors": ("weights.safetensors", "a safetensors file"),
    "unsupported": ("unsupported.pt2", "a model using torch.fft (unsupported) beside torch.sort"),
    "dynamic": ("dynamic.pt2", "a model exported with a dynamic batch dimension"),
    "data_dependent": ("nonzero.pt2", "a model whose output size depends on the data (torch.nonzero)"),
    "complex": ("complex.pt2", "a model taking a complex64 input"),
    "train_dropout": ("train_dropout.pt2", "a model with nn.Dropout exported without eval()"),
    "train_batchnorm": ("train_batchnorm.pt2", "a model with nn.BatchNorm1d exported without eval()"),
    "tiny_memory": ("tiny_memory.toml", "a target with 4 KB of HBM and of DDR"),
    "tiny_sram": ("tiny_sram.toml", "a target with 256 bytes of SRAM"),
    "unknown_key": ("unknown_key.toml", "a target file with a misspelt key"),
    "negative": ("negative.toml", "a target file with a negative bandwidth"),
    "missing_field": ("missing_field.toml", "a target file without `pcus`"),
    "not_a_number": ("not_a_number.toml", "a target file with `pcus = \"many\"`"),
    "bad_toml": ("bad.toml", "a file that is not TOML"),
    "syntax": ("syntax.mlir", "MLIR with a missing type"),
    "unknown_op": ("unknown_op.mlir", "MLIR using `rdu.bogus`"),
    "verifier": ("verifier.mlir", "a function returning nothing though it declares i32"),
    "placed": ("placed.mlir", "the example compiled by rducc (with placed.safetensors)"),
    "overlap": ("overlap.mlir", "the placed example with two live SRAM buffers moved to overlap"),
    "past_capacity": ("past_capacity.mlir", "the placed example with an SRAM offset past the capacity"),
    "graph": ("graph.mlir", "the example at --emit graph"),
    "x": ("x.npy", "a good input, float32[4, 32]"),
    "x_shape": ("x_shape.npy", "float32[2, 3]"),
    "x_f64": ("x_f64.npy", "float64[4, 32]"),
    "x_object": ("x_object.npy", "a pickled object array"),
    "x_text": ("x_text.npy", "a text file"),
    "weights_garbage": ("garbage.safetensors", "16 bytes that are not safetensors"),
    "weights_shape": ("wrong_shape.safetensors", "the example's weights with fc1.bias of shape [3]"),
    "weights_partial": ("partial.safetensors", "the example's weights without fc2.weight"),
    "plugin_syntax": ("syntax_error.py", "a pass plugin file that does not parse"),
    "plugin_raises": ("raises_on_load.py", "a pass plugin file that raises KeyError while loading"),
    "plugin_faulty": ("faulty_passes.py", "a pass plugin with a pass that breaks the IR, one that crashes and one that calls exit()"),
    "plugin_exits": ("exits_on_load.py", "a pass plugin file that calls sys.exit(0) while loading"),
    "silu_graph": ("silu.mlir", "x * sigmoid(x) at the graph level"),
    "huge_splat": ("huge_splat.mlir", "a dense splat constant of 999999999999 elements"),
    "open_string": ("open_string.mlir", "a string literal left open on its line"),
}

PLUGIN_INPUTS = ROOT / "test" / "plugins" / "Inputs"

RDUCC, OPT, RUN = "rducc", "rducc-opt", "rducc-run"
OUT = ("-o", "out.mlir")

CASES: list[ErrorCase] = [
    # --- the model file
    ErrorCase("missing file", RDUCC, ("no_such_model.pt2", *OUT), "no_such_model.pt2: no such file"),
    ErrorCase("empty file", RDUCC, ("{empty}", *OUT), "file is empty, expected a torch.export archive"),
    ErrorCase("directory as model", RDUCC, ("{directory}", *OUT), "is a directory, expected a torch.export archive"),
    ErrorCase("plain pickle", RDUCC, ("{pickle}", *OUT), "a plain Python pickle; rducc accepts a torch.export archive"),
    ErrorCase("torch.save checkpoint", RDUCC, ("{checkpoint}", *OUT), "a torch.save checkpoint (pickled tensors or modules)"),
    ErrorCase("TorchScript file", RDUCC, ("{torchscript}", *OUT), "a TorchScript file (torch.jit.save)"),
    ErrorCase("non-torch file", RDUCC, ("{random}", *OUT), "not a zip archive; rducc accepts"),
    ErrorCase("truncated archive", RDUCC, ("{truncated}", *OUT), "a truncated or damaged zip archive"),
    ErrorCase("zip that is not an export", RDUCC, ("{other_zip}", *OUT), "a zip archive that is not a torch.export archive"),
    ErrorCase("MLIR given to rducc", RDUCC, ("{mlir_text}", *OUT), "MLIR text (use rducc-opt for that)"),
    ErrorCase("damaged archive member", RDUCC, ("{damaged}", *OUT), "damaged zip archive (bad entry"),
    ErrorCase("opaque object constant (a pickle)", RDUCC, ("{opaque}", *OUT),
              "opaque_obj_0' is a pickled Python object, which rducc refuses to load"),
    ErrorCase("AOTInductor code in the archive", RDUCC, ("{aotinductor}", *OUT),
              "is AOTInductor compiled code, which rducc refuses to load"),
    ErrorCase("member escaping the archive (zip slip)", RDUCC, ("{zip_slip}", *OUT),
              "has an unsafe name (absolute or with '..')"),
    ErrorCase("wrong extension", RDUCC, ("{onnx}", *OUT), "an ONNX model (.onnx file), not a zip archive"),
    ErrorCase("weights file given as model", RDUCC, ("{safetensors}", *OUT), "a safetensors weights file (weights only, no program)"),
    ErrorCase("no input", RDUCC, OUT, "no input file given"),
    # --- the model
    ErrorCase("unsupported op", RDUCC, ("{unsupported}", *OUT), "operators rducc cannot import:\n  aten._fft_r2c.default: 1 use, first at"),
    ErrorCase("dynamic shapes", RDUCC, ("{dynamic}", *OUT), "static shapes only"),
    ErrorCase("data-dependent shapes", RDUCC, ("{data_dependent}", *OUT), "data-dependent shape [u0, 2] on 'nonzero'"),
    ErrorCase("unsupported dtype", RDUCC, ("{complex}", *OUT), "dtype complex64, which rducc does not support"),
    ErrorCase("dropout exported in training mode", RDUCC, ("{train_dropout}", *OUT), "export the model in eval() mode (torch.export.export(model.eval(), ...)):\n  aten.native_dropout.default (dropout with train=True, in nn.Dropout): 1 use, first at"),
    ErrorCase("BatchNorm exported in training mode", RDUCC, ("{train_batchnorm}", *OUT), "aten._native_batch_norm_legit_functional.default (batch norm with training=True): 1 use, first at"),
    ErrorCase("model too large for HBM+DDR", RDUCC, ("{model}", "--target", "{tiny_memory}", *OUT), "the model does not fit tiny_memory"),
    ErrorCase("kernel impossible to tile into SRAM", RDUCC, ("{model}", "--target", "{tiny_sram}", *OUT), "cannot be tiled", located=True),
    # --- targets and flags
    ErrorCase("unknown target", RDUCC, ("{model}", "--target", "sn50", *OUT), "unknown target 'sn50'"),
    ErrorCase("missing target file", RDUCC, ("{model}", "--target", "no_such_chip.toml", *OUT), "no_such_chip.toml"),
    ErrorCase("target: unknown key", RDUCC, ("{model}", "--target", "{unknown_key}", *OUT), "unknown key 'warp_drive'"),
    ErrorCase("target: non-positive figure", RDUCC, ("{model}", "--target", "{negative}", *OUT), "field 'hbm_bandwidth' must be > 0"),
    ErrorCase("target: missing field", RDUCC, ("{model}", "--target", "{missing_field}", *OUT), "missing field 'pcus'"),
    ErrorCase("target: not a number", RDUCC, ("{model}", "--target", "{not_a_number}", *OUT), "field 'pcus' must be a number"),
    ErrorCase("target: not TOML", RDUCC, ("{model}", "--target", "{bad_toml}", *OUT), "not valid TOML"),
    ErrorCase("report of an unplaced program", RDUCC, ("{model}", "--emit", "graph", "--report", *OUT), "need the placed program"),
    # --- pipelines and pass plugins
    ErrorCase("unknown pass in --pass-pipeline", RDUCC, ("{model}", "--pass-pipeline", "rdu-canonicalize,rdu-bogus", *OUT), "unknown pass 'rdu-bogus'"),
    ErrorCase("--pass-pipeline with -O", RDUCC, ("{model}", "--pass-pipeline", "cse", "-O1", *OUT), "--pass-pipeline replaces the -O pipeline"),
    ErrorCase("partition over more sockets than the target has", RDUCC, ("{model}", "--target", "sn40l-8", "--pass-pipeline", "rdu-canonicalize,rdu-partition{{tp=4 pp=4}}", *OUT), "tp=4 x pp=4 needs 16 sockets; target sn40l-8 has 8"),
    ErrorCase("pipeline stages without decoder layers", RDUCC, ("{model}", "--target", "sn40l-8", "--pass-pipeline", "rdu-canonicalize,rdu-partition{{pp=2}}", *OUT), "pp=2 needs at least 2 decoder layers"),
    ErrorCase("--tp on a one-socket target", RDUCC, ("{model}", "--tp", "2", *OUT), "--tp 2 splits the model across sockets, but target sn40l has one"),
    ErrorCase("--tp x --pp above the target's sockets", RDUCC, ("{model}", "--target", "sn40l-8", "--tp", "4", "--pp", "4", *OUT), "--tp 4 --pp 4 needs 16 sockets; target sn40l-8 has 8"),
    ErrorCase("--tp that splits nothing in the model", RDUCC, ("{model}", "--target", "sn40l-8", "--tp", "3", *OUT), "tp=3 splits nothing in this model"),
    ErrorCase("partition after fusion", RDUCC, ("{model}", "--target", "sn40l-8", "--pass-pipeline", "rdu-canonicalize,rdu-fuse,rdu-partition", *OUT), "rdu-partition works on the imported graph: run it before rdu-fuse"),
    ErrorCase("pass plugin that does not parse", RDUCC, ("{model}", "--load-pass-plugin", "{plugin_syntax}", "--pass-pipeline", "cse", *OUT), "pass plugin does not parse", located=True),
    ErrorCase("pass plugin that raises while loading", RDUCC, ("{model}", "--load-pass-plugin", "{plugin_raises}", "--pass-pipeline", "cse", *OUT), "pass plugin failed while loading: KeyError"),
    ErrorCase("plugin pass that raises", RDUCC, ("{model}", "--load-pass-plugin", "{plugin_faulty}", "--pass-pipeline", "rdu-canonicalize,crash", *OUT), "pass 'crash' failed at"),
    ErrorCase("rducc-opt: plugin pass that breaks the IR", OPT, ("--load-pass-plugin", "{plugin_faulty}", "-p", "break-ir", "{silu_graph}", *OUT), "the IR does not verify after pass 'break-ir'"),
    # --- plugins that end the process, and output names checked before compiling
    ErrorCase("pass plugin that calls exit() while loading", RDUCC, ("{model}", "--load-pass-plugin", "{plugin_exits}", "--pass-pipeline", "cse", *OUT), "pass plugin called exit() while loading (SystemExit: 0)"),
    ErrorCase("plugin pass that calls exit()", RDUCC, ("{model}", "--load-pass-plugin", "{plugin_faulty}", "--pass-pipeline", "rdu-canonicalize,exit", *OUT), "pass 'exit' failed at"),
    ErrorCase("rducc-opt: plugin pass that calls exit()", OPT, ("--load-pass-plugin", "{plugin_faulty}", "-p", "exit", "{silu_graph}", *OUT), "pass 'exit' failed at"),
    ErrorCase("output name that is not UTF-8", RDUCC, ("{model}", "-o", "\udcff.mlir"), "the name is not valid UTF-8"),
    ErrorCase("--plot into a file", RDUCC, ("{model}", "--plot", "{mlir_text}", *OUT), "it is a file; --plot takes a directory"),
    # --- where the output goes
    ErrorCase("output into a missing directory", RDUCC, ("{model}", "-o", "no/such/dir/out.mlir"), "directory no/such/dir does not exist"),
    ErrorCase("output onto a directory", RDUCC, ("{model}", "-o", "."), "cannot write .: it is a directory"),
    ErrorCase("output under a regular file", RDUCC, ("{model}", "-o", "out.mlir/x.mlir"), "out.mlir is not a directory"),
    ErrorCase("weights into a missing directory", RDUCC, ("{model}", "--weights", "gone/w.safetensors", *OUT), "directory gone does not exist"),
    # --- rducc-opt
    ErrorCase("rducc-opt: malformed MLIR", OPT, ("{syntax}", *OUT), "error: type expected", located=True),
    ErrorCase("rducc-opt: unknown op", OPT, ("{unknown_op}", *OUT), "Operation rdu.bogus is not registered", located=True),
    ErrorCase("rducc-opt: IR that does not verify", OPT, ("{verifier}", *OUT), "does not verify"),
    ErrorCase("rducc-opt: overlapping SRAM allocations", OPT, ("{overlap}", *OUT), "overlap"),
    ErrorCase("rducc-opt: SRAM offset past the capacity", OPT, ("{past_capacity}", *OUT), "capacity"),
    ErrorCase("rducc-opt: unknown pass", OPT, ("-p", "rdu-bogus", "{placed}", *OUT), "unknown pass 'rdu-bogus'"),
    ErrorCase("rducc-opt: bad pass option value", OPT, ("-p", "rdu-fuse{{level=7}}", "{placed}", *OUT), "level must be 0, 1 or 2, got 7"),
    ErrorCase("rducc-opt: unknown pass option", OPT, ("-p", "rdu-fuse{{colour=1}}", "{placed}", *OUT), 'arguments ["colour"] not found'),
    ErrorCase("rducc-opt: a pass on a lowered program", OPT, ("-p", "rdu-fuse", "{placed}", *OUT), "rdu-fuse works on tensor programs"),
    ErrorCase("rducc-opt: huge dense splat", OPT, ("{huge_splat}", *OUT), "a dense splat of 999999999999 elements is too large", located=True),
    ErrorCase("rducc-opt: unclosed string literal", OPT, ("{open_string}", *OUT), "a string literal is not closed on its line", located=True),
    ErrorCase("rducc-opt: missing file", OPT, ("no_such.mlir", *OUT), "No such file"),
    ErrorCase("rducc-opt: a model archive", OPT, ("{model}", *OUT), "Unrecognized file extension 'pt2'"),
    # --- rducc-run
    ErrorCase("rducc-run: malformed MLIR", RUN, ("{syntax}", "--output", "out.npz"), "error: type expected", located=True),
    ErrorCase("rducc-run: binary file as program", RUN, ("{x}", "--output", "out.npz"), "not MLIR text (a binary file)"),
    ErrorCase("rducc-run: unplaced program", RUN, ("{graph}", "--output", "out.npz"), "not a placed program"),
    ErrorCase("rducc-run: overlapping SRAM allocations", RUN, ("{overlap}", "--input", "{x}", "--output", "out.npz"), "overlap"),
    ErrorCase("rducc-run: too few inputs", RUN, ("{placed}", "--output", "out.npz"), "@forward takes 1 input (x: float32[4, 32]), got 0"),
    ErrorCase("rducc-run: too many inputs", RUN, ("{placed}", "--input", "{x}", "--input", "{x}", "--output", "out.npz"), "takes 1 input (x: float32[4, 32]), got 2"),
    ErrorCase("rducc-run: wrong input shape", RUN, ("{placed}", "--input", "{x_shape}", "--output", "out.npz"), "input #0 ('x') has shape [2, 3], expected [4, 32]"),
    ErrorCase("rducc-run: wrong input dtype", RUN, ("{placed}", "--input", "{x_f64}", "--output", "out.npz"), "input #0 ('x') has dtype float64, expected float32"),
    ErrorCase("rducc-run: missing input file", RUN, ("{placed}", "--input", "no_such.npy", "--output", "out.npz"), "input no_such.npy: no such file"),
    ErrorCase("rducc-run: input that is not .npy", RUN, ("{placed}", "--input", "{x_text}", "--output", "out.npz"), "not a .npy array"),
    ErrorCase("rducc-run: pickled input", RUN, ("{placed}", "--input", "{x_object}", "--output", "out.npz"), "allow_pickle=False"),
    ErrorCase("rducc-run: missing weights file", RUN, ("{placed}", "--input", "{x}", "--weights", "no_such.safetensors", "--output", "out.npz"), "weights file no_such.safetensors: No such file"),
    ErrorCase("rducc-run: garbage weights file", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_garbage}", "--output", "out.npz"), "not a safetensors file"),
    ErrorCase("rducc-run: weight of the wrong shape", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_shape}", "--output", "out.npz"), "weight 'fc1.bias' has shape [3], expected [64]"),
    ErrorCase("rducc-run: weight missing from the file", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_partial}", "--output", "out.npz"), "missing weight: fc2.weight"),
    ErrorCase("rducc-run: output into a missing directory", RUN, ("{placed}", "--input", "{x}", "--output", "no/such/out.npz"), "directory no/such does not exist"),
]

OUTPUT_FILE = {RDUCC: "out.mlir", OPT: "out.mlir", RUN: "out.npz"}
"""The output each case's run directory holds beforehand, which must survive."""


# --------------------------------------------------------------------------
# docs/errors.md
# --------------------------------------------------------------------------


def _shown(case: ErrorCase) -> str:
    files = {key: name for key, (name, _) in INPUTS.items()}
    return " ".join([case.tool, *case.command(files)])


def _cell(text: str) -> str:
    shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")  # a non-UTF-8 name
    return shown.replace("|", "\\|").replace("\n", "<br>")


def render_doc() -> str:
    """docs/errors.md: every case's command and the message it gets."""
    lines = [
        "# What rducc refuses, and what it says",
        "",
        "<!-- Generated from test/python/error_cases.py by",
        "     `.venv/bin/python test/python/error_cases.py`; do not edit. -->",
        "",
        "Every row is a test (`test/python/test_errors.py`): the command exits with",
        "status 1, prints one `TOOL: error:` message containing the text shown (a",
        "located one starts `file:line:col: error:`), no Python traceback, and leaves",
        "the output file (`out.mlir` or `out.npz`, already there from an earlier run)",
        "untouched, with no other file written. A bug in rducc itself is different:",
        "`TOOL: internal error: ...`, a request to report it, exit status 70 (`--debug`",
        "shows the traceback). The exit statuses of all three tools: 0 success, 1 bad",
        "input (every row below), 2 a command line argparse cannot parse (its usage",
        "message), 70 a bug in rducc, 130 interrupted (Ctrl-C, one line, also while",
        "the tool starts), 141 standard output closed by its reader (`rducc-run ... |",
        "head`: nothing printed, as Unix tools stopped by SIGPIPE).",
        "",
        "| bad input | command | the message contains |",
        "| --- | --- | --- |",
    ]
    for case in CASES:
        located = "`file:line:col: error:` " if case.located else ""
        lines.append(f"| {case.name} | `{_cell(_shown(case))}` | {located}`{_cell(case.expected)}` |")
    lines += ["", "The input files of the commands:", "", "| file | what it is |", "| --- | --- |"]
    used = {key for case in CASES for arg in case.args for key in _fields(arg)}
    for key, (name, description) in INPUTS.items():
        if key in used:
            lines.append(f"| `{name}` | {_cell(description)} |")
    return "\n".join(lines) + "\n"


def _fields(arg: str) -> list[str]:
    from string import Formatter

    return [field for _, field, _, _ in Formatter().parse(arg) if field]


# --------------------------------------------------------------------------
# The input files
# --------------------------------------------------------------------------

_TARGETS = {
    "tiny_memory": 'inherits = "sn40l"\nname = "tiny_memory"\nhbm_bytes = 4000\nddr_bytes = 4000\n',
    "tiny_sram": 'inherits = "sn40l"\nname = "tiny_sram"\nsram_bytes = 256\npmu_bytes = 64\n',
    "unknown_key": 'inherits = "sn40l"\nname = "x"\nwarp_drive = 1\n',
    "negative": 'inherits = "sn40l"\nname = "x"\nhbm_bandwidth = -1.0\n',
    "missing_field": 'name = "x"\nsockets = 1\n',
    "not_a_number": 'inherits = "sn40l"\npcus = "many"\n',
    "bad_toml": "name = [\n",
}

_MLIR = {
    "mlir_text": "func.func @forward() {\n  func.return\n}\n",
    "syntax": 'builtin.module {\n  %0 = "test.op"() : () -> \n}\n',
    "unknown_op": "func.func @f() {\n  %x = rdu.bogus\n}\n",
    "verifier": "func.func @f() -> i32 {\n  func.return\n}\n",
    "huge_splat": "func.func @f() -> tensor<999999999999xf32> {\n  %c = arith.constant dense<1.0> : tensor<999999999999xf32>\n  func.return %c : tensor<999999999999xf32>\n}\n",
    "open_string": 'builtin.module {\n  %0 = "test.op"() {note = "' + "an unclosed string " * 4 + '} : () -> ()\n}\n',
}


def _export(module, example, path: Path, **kwargs) -> None:
    import torch

    with torch.no_grad():
        torch.export.save(torch.export.export(module.eval(), example, **kwargs), str(path))


def _model_files(paths: dict[str, Path]) -> None:
    import torch
    from torch import nn

    class UsesUnsupportedOps(nn.Module):
        def forward(self, x):
            return torch.fft.fft(x).real + torch.sort(x).values

    class Doubles(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2.0

    class ComplexScale(nn.Module):
        def forward(self, z):
            return z * 2

    torch.manual_seed(0)
    _export(UsesUnsupportedOps(), (torch.randn(4, 8),), paths["unsupported"])
    _export(Doubles(), (torch.randn(4, 8),), paths["dynamic"],
            dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    _export(ComplexScale(), (torch.randn(4, 8, dtype=torch.complex64),), paths["complex"])
    class NonZero(nn.Module):
        def forward(self, x):
            return torch.nonzero(x)

    _export(NonZero(), (torch.randn(4, 8),), paths["data_dependent"])
    torch.save(nn.Linear(4, 3).state_dict(), paths["checkpoint"])
    with torch.no_grad():  # left in training mode (no .eval()), as a new user exports
        for key, layer in (("train_dropout", nn.Dropout(0.1)), ("train_batchnorm", nn.BatchNorm1d(8))):
            model = nn.Sequential(nn.Linear(8, 8), layer)
            torch.export.save(torch.export.export(model, (torch.randn(4, 8),)), str(paths[key]))

    class Tiny(nn.Module):
        def forward(self, x):
            return x + 1

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.jit.save(torch.jit.script(Tiny()), str(paths["torchscript"]))


def _archive_files(paths: dict[str, Path]) -> None:
    data = EXAMPLE.read_bytes()
    paths["truncated"].write_bytes(data[: len(data) // 2])
    damaged = bytearray(data)
    with zipfile.ZipFile(EXAMPLE) as archive:
        member = next(i for i in archive.infolist() if i.filename.endswith("weights/weight_0"))
    start = member.header_offset + 30 + len(member.filename.encode()) + len(member.extra)
    damaged[start:start + 16] = bytes(b ^ 0xFF for b in damaged[start:start + 16])
    paths["damaged"].write_bytes(damaged)
    with zipfile.ZipFile(paths["other_zip"], "w") as archive:
        archive.writestr("readme.txt", "not a model")
    _example_plus(paths["aotinductor"], {"data/aotinductor/model/model.so": b"\x7fELF" + bytes(60)})
    _example_plus(paths["zip_slip"], {"data/aotinductor/model/../../../../evil": b"outside"})
    _example_plus(paths["opaque"], {"data/constants/opaque_obj_0": pickle.dumps({"not": "a tensor"})})


def _example_plus(path: Path, members: dict[str, bytes]) -> None:
    """A copy of the example archive with `members` added below its root folder."""
    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(path, "w") as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info))
        root = source.namelist()[0].split("/")[0]
        for name, data in members.items():
            archive.writestr(f"{root}/{name}", data)


def _program_files(paths: dict[str, Path], directory: Path) -> None:
    """The example compiled (placed and graph level), broken copies, inputs, weights."""
    import numpy as np
    import rducc
    from rducc.driver import import_file, module_text
    from safetensors.numpy import save_file

    from rducc.weights import load_weights

    rducc.compile(str(EXAMPLE), opt_level=2).save(paths["placed"])
    placed = paths["placed"].read_text()
    paths["graph"].write_text(module_text(import_file(EXAMPLE)[0]))
    # two SRAM buffers live together (x and fc1's weight) made to share bytes
    x_offset = placed.split("%x_sram = tier.alloc offset ")[1].split(" ")[0]
    w_offset = placed.split("%p_fc1_weight_sram = tier.alloc offset ")[1].split(" ")[0]
    paths["overlap"].write_text(placed.replace(
        f"%x_sram = tier.alloc offset {x_offset} ", f"%x_sram = tier.alloc offset {w_offset} "))
    paths["past_capacity"].write_text(placed.replace(
        f"%x_sram = tier.alloc offset {x_offset} ", "%x_sram = tier.alloc offset 600000000 "))
    weights = load_weights(directory / "placed.safetensors")
    paths["safetensors"].write_bytes((directory / "placed.safetensors").read_bytes())
    save_file({**weights, "fc1.bias": np.zeros(3, np.float32)}, paths["weights_shape"])
    save_file({k: v for k, v in weights.items() if k != "fc2.weight"}, paths["weights_partial"])
    paths["weights_garbage"].write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00{bad}" + b"\x00" * 3)
    rng = np.random.default_rng(0)
    np.save(paths["x"], rng.standard_normal((4, 32)).astype(np.float32))
    np.save(paths["x_shape"], np.zeros((2, 3), np.float32))
    np.save(paths["x_f64"], np.zeros((4, 32), np.float64))
    np.save(paths["x_object"], np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    paths["x_text"].write_text("4 32\n1.0 2.0\n")


def make_inputs(directory: Path) -> dict[str, str]:
    """Build every input file of the table in `directory`; placeholder -> path."""
    paths = {key: directory / name for key, (name, _) in INPUTS.items()}
    paths["model"] = EXAMPLE
    paths["empty"].write_bytes(b"")
    paths["directory"].mkdir()
    paths["pickle"].write_bytes(pickle.dumps({"weights": [1.0, 2.0], "name": "mlp"}))
    paths["random"].write_bytes(bytes((i * 197 + 89) % 256 for i in range(4096)))
    paths["onnx"].write_bytes(b"\x08\x07\x12\x07pytorch" + bytes(64))
    for key, text in {**_TARGETS, **_MLIR}.items():
        paths[key].write_text(text)
    for key in ("plugin_syntax", "plugin_raises", "plugin_faulty", "plugin_exits"):
        paths[key].write_text((PLUGIN_INPUTS / INPUTS[key][0]).read_text())
    paths["silu_graph"].write_text((ROOT / "test" / "examples" / "fuse-silu.mlir").read_text())
    _archive_files(paths)
    _model_files(paths)
    _program_files(paths, directory)
    return {key: str(path) for key, path in paths.items()}


if __name__ == "__main__":
    DOC.write_text(render_doc())
    print(f"wrote {DOC.relative_to(ROOT)} ({len(CASES)} cases)", file=sys.stderr)
