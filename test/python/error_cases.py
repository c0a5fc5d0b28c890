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
import re
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
    "pickle_protocol_4": ("protocol4.pt2", "the example with its sample inputs saved with pickle_protocol=4"),
    "zip_slip": ("slip.pt2", "the example plus a member named data/aotinductor/model/../../../../evil"),
    "onnx": ("model.onnx", "a non-zip file named .onnx"),
    "safetensors": ("weights.safetensors", "a safetensors file"),
    "unsupported": ("unsupported.pt2", "a model using a tensor read back by .item() inside the graph (data-dependent) beside torch.sort"),
    "host_op": ("qr.pt2", "a model using torch.linalg.qr (no chip lowering: run on the host by default)"),
    "host_call_prims": ("host_prims.mlir", "an `rdu.host_call` naming `prims.sin.default`, not an aten op"),
    "host_call_mutating": ("host_mutating.mlir", "an `rdu.host_call` naming `aten.sin_.default`, which writes its operand"),
    "host_mismatch": ("host_mismatch.mlir", "a placed program whose `rdu.host_call` of aten.mode declares its indices i32 (torch gives i64)"),
    "host_custom": ("host_custom.mlir", "a placed program whose `rdu.host_call` runs the custom op `mylib::softsign` (#rdu.custom)"),
    "dynamic": ("dynamic.pt2", "a model exported with a dynamic batch dimension"),
    "buckets": ("buckets.mlir", "dynamic.pt2 compiled with --shapes batch=2,4 (inputs [2, 8] and [4, 8])"),
    "resize_grow": ("resize_grow.pt2", "a model resizing a tensor to more elements (x.clone().resize_(5, 5))"),
    "sized_program": ("nonzero.mlir", "torch.nonzero of a [4, 8] input compiled for its example (3 nonzeros)"),
    "other_count": ("five_nonzeros.npy", "a [4, 8] input with 5 nonzeros"),
    "repeats_program": ("repeats.mlir", "rows.repeat_interleave(r, dim=0) with torch._check(total <= 6): capacity 6"),
    "repeats_rows": ("rows.npy", "a [3, 4] float32 input"),
    "seven_repeats": ("seven_repeats.npy", "repeats [3, 2, 2] (a total of 7)"),
    "float_size_program": ("float_size.mlir", "y.narrow(0, 0, torch.sym_int(x.max().item() * 3)) compiled for 3"),
    "float_size_x": ("float_size_x.npy", "x = [0.5, 0.4] (a length of 1)"),
    "float_size_y": ("float_size_y.npy", "a [6, 2] float32 input"),
    "window_program": ("window.mlir", "y.narrow(0, i.item(), 2) of a [5, 2] input: any start inside"),
    "window_past_end": ("start_4.npy", "i = 4 (a window of 2 from row 4 of 5)"),
    "window_rows": ("window_rows.npy", "a [5, 2] float32 input"),
    "topk_program": ("topk.mlir", "torch.topk(y, k.item()).values.sum(-1) of a [3, 6] input: any k up to 6"),
    "topk_seven": ("k_7.npy", "k = 7 (more than a row of 6 holds)"),
    "topk_rows": ("topk_rows.npy", "a [3, 6] float32 input"),
    "even_program": ("even.mlir", "y[:n.item()].sum(0) with torch._check(n.item() % 2 == 0) of a [6, 2] input"),
    "even_three": ("n_3.npy", "n = 3 (odd)"),
    "even_rows": ("even_rows.npy", "a [6, 2] float32 input"),
    "at_least_two": ("at_least_two.pt2", "y[:n.item()].sum(0) with torch._check(n.item() >= 2) and <= 6"),
    "complex": ("complex.pt2", "a model taking a complex64 input and keeping the largest of its elements in slots "
                "(`index_reduce(..., 'amax')`: complex numbers have no order)"),
    "data_dependent": ("positives.pt2", "a model returning the custom op rducc_test::positives of its input "
                       "(test/python/data_sized_op.py: its fake kernel makes a new size, with no bound)"),
    "sparse_inside": ("sparse_inside.pt2", "a model adding 1 to the dense form of its input's `to_sparse()`"),
    "hash_f64": ("hash_f64.pt2", "a model returning `torch.hash_tensor` of its float64 input"),
    "loss_model": ("loss.pt2", "an MLP whose forward returns its cross-entropy loss (a model to train)"),
    "vector_loss": ("vector_loss.pt2", "a model whose forward returns one loss per sample (not reduced)"),
    "frozen_model": ("frozen.pt2", "loss.pt2 with every parameter frozen (requires_grad False)"),
    "bag_by_frequency": ("bag_by_frequency.pt2",
                         "a model returning its loss through nn.EmbeddingBag(scale_grad_by_freq=True)"),
    "no_derivative": ("no_derivative.pt2", "a model returning its loss through torch.special.zeta of a "
                      "Linear's output (torch has no derivative for zeta's first argument)"),
    "parameter_write": ("max_norm.pt2", "a model returning its loss through nn.Embedding(max_norm=1.0), which "
                        "renormalizes its weight's rows in place"),
    "step": ("step.mlir", "loss.pt2 compiled with rducc --train (with step.safetensors)"),
    "batches_shape": ("bad_batches.npz", "batches for step.mlir whose x is [5, 3, 9] (the step takes [3, 8])"),
    "batches_missing": ("missing_batches.npz", "batches for step.mlir without y"),
    "batches_counts": ("uneven_batches.npz", "batches for step.mlir with 5 of x and 4 of y"),
    "dynamic_loss": ("dynamic_loss.pt2", "loss.pt2's model exported with a dynamic batch (x and y)"),
    "loss_buckets": ("loss_buckets.mlir", "dynamic_loss.pt2 compiled with --train --shapes batch=2 (inputs [2, 8] "
                     "and [2]; with loss_buckets.safetensors)"),
    "batches_uncovered": ("batches_of_4.npz", "batches for loss_buckets.mlir: x.0 [2, 8], y.0 [2], x.1 [4, 8], "
                          "y.1 [4]"),
    "batches_gap": ("gap_batches.npz", "batches for loss_buckets.mlir: x.0, x.2, y.0, y.2 (no batch 1)"),
    "attention_dropout": ("attention_dropout.pt2", "a model calling CPU flash attention's backward with dropout_p=0.1"),
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
    "overlap_kernel": ("overlap_kernel.mlir", "a kernel's value placed over a buffer live across the kernel"),
    "overlap_call": ("overlap_call.mlir", "a buffer live across a call of a function that allocates over it"),
    "overlap_loop": ("overlap_loop.mlir", "a buffer allocated inside a loop over one live around the loop"),
    "gather": ("gather.mlir", "a placed program: rows of a 4-row table by the indices it is given"),
    "rows": ("rows.mlir", "a placed program: rows of a 4-row input written in place at the indices it is given"),
    "ids_past_end": ("ids_past_end.npy", "int64 indices [0, 7, 1]"),
    "ids_negative": ("ids_negative.npy", "int64 indices [0, -1, 1]"),
    "int_floor_divide": ("floor_divide.mlir", "a placed program: `a // b` of two int64[3] inputs (compiled from torch)"),
    "int_fmod": ("fmod.mlir", "a placed program: `torch.fmod(a, b)` of two int64[3] inputs (compiled from torch)"),
    "ints": ("ints.npy", "int64 [7, -7, 5]"),
    "ints_zero": ("ints_zero.npy", "int64 [2, 0, 3]"),
    "no_room": ("no_room.toml", "sn40l with 2 PCUs and 2 PMUs on a 2 x 2 grid"),
    "dynamic_rdu_op": ("dynamic_rdu_op.mlir", "an `rdu.map` written by hand on a `tensor<?x8xf32>`"),
    "unit_twice": ("unit_twice.mlir", "a `#rdu.mapping` giving PCU 1 to two stages"),
    "not_pointwise": ("not_pointwise.mlir", "an `rdu.pointwise_call` naming `os::system` (only pointwise aten ops verify)"),
    "graph": ("graph.mlir", "the example at --emit graph"),
    "x": ("x.npy", "a good input, float32[4, 32]"),
    "x_shape": ("x_shape.npy", "float32[2, 3]"),
    "x_wide": ("x_wide.npy", "float32[5, 8]"),
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
    # hostile files (issue 20, items 6-10)
    "w_negative": ("negative.safetensors", "a tensor with data_offsets [-4, 0]"),
    "w_alias": ("alias.safetensors", "two tensors at the same data_offsets (one aliases the other)"),
    "w_list": ("list.safetensors", "a header that is a JSON list"),
    "w_entry": ("entry.safetensors", "a header entry that is a number, not an object"),
    "w_no_offsets": ("no_offsets.safetensors", "an entry without data_offsets"),
    "w_three_offsets": ("three_offsets.safetensors", "data_offsets of three numbers"),
    "w_string_offsets": ("string_offsets.safetensors", 'data_offsets ["0", "4"]'),
    "w_string_shape": ("string_shape.safetensors", 'shape "4"'),
    "w_huge_shape": ("huge_shape.safetensors", "shape [2^62, 2^62] over 4 bytes (overflows int64)"),
    "w_deep": ("deep.safetensors", "a header of 100000 nested lists"),
    "w_header_size": ("header_size.safetensors", "a header length of 2^60"),
    "w_gap": ("gap.safetensors", "a tensor starting 4 bytes after the previous one ends"),
    "w_dtype": ("dtype.safetensors", 'dtype "Q4"'),
    "w_metadata": ("metadata.safetensors", "__metadata__ holding a number"),
    "zip_bomb": ("bomb.pt2", "the example plus a member of 64 MiB of zeros deflated to 64 KiB"),
    "model_copy": ("copy.pt2", "a copy of the example archive"),
    "no_program": ("no_program.pt2", "the example archive without its program (models/model.json)"),
    "bad_program_json": ("bad_program.pt2", "the example archive with its models/model.json's tensor_values a number"),
    "model_link": ("link.pt2", "a symbolic link to copy.pt2"),
    "fifo": ("fifo.npy", "a FIFO (named pipe) nothing writes to"),
    "fifo_toml": ("fifo.toml", "a FIFO named like a target file"),
    "fifo_pt2": ("fifo.pt2", "a FIFO named like a model"),
    "fifo_mlir": ("fifo.mlir", "a FIFO named like a program"),
    "devzero_weights": ("devzero.mlir", "the placed example naming /dev/zero as its weights"),
    "fifo_target": ("fifo_target.mlir", "the placed example naming fifo.toml as its target"),
    "x_npz": ("x.npz", "a .npz archive holding the good input"),
    "x_huge": ("huge.npy", "a .npy header claiming shape [1000000, 1000000] over 512 bytes"),
    "x_sparse": ("sparse.npy", "a 2 GiB sparse .npy: a good header of float32[32768, 16384], then a hole"),
    "w_sparse": ("sparse.safetensors", "the example's weights plus fc1.bias declared F32[536870912]: 2 GiB, sparse"),
    "member_sparse": ("sparse_member.pt2", "the example with its weight_0 member grown to 2 GiB (sparse)"),
    "member_text": ("big_text.pt2", "the example with its model.json member declaring 2 GiB (sparse)"),
    "t_huge_int": ("huge_int.toml", "pcus = 10^30"),
    "t_not_utf8": ("not_utf8.toml", "a target file with bytes that are not UTF-8"),
    "t_cycle": ("cycle.toml", 'a target file inheriting "./cycle.toml" (itself)'),
    "t_i64": ("i64.json", "sram_bytes = 2^63 (past int64)"),
    "t_inf": ("inf.toml", "hbm_bandwidth = inf"),
    "t_tiny": ("tiny.toml", "hbm_bandwidth = 1e-300"),
    "t_nan_latency": ("nan.toml", "dma_latency_s = nan"),
    "t_bad_range": ("bad_range.toml", "kernel_launch_s = { value = 5e-6, low = 6e-6, high = 9e-6, ... }"),
    "p_use_after_free": ("use_after_free.mlir", "the placed example with x's SRAM buffer freed right after its alloc"),
    "p_step0": ("step0.mlir", "the placed example plus an scf.for of step 0"),
    "p_capacity": ("huge_capacity.mlir", "the placed example with tier.sram_capacity 10^15 and x at offset 10^15 - 1000"),
    "p_hbm": ("huge_hbm.mlir", "the placed example plus an unused HBM buffer of 10^12 floats"),
    "p_digits": ("digits.mlir", "the placed example with an offset of 6000 digits"),
    # found by bench/fuzz.py
    "f_int_range": ("int_range.mlir", "an i8 attribute of value 300"),
    "f_perm_range": ("perm_range.mlir", "rdu.transpose whose perm holds 2^64 + 1 (in the op's own syntax)"),
    "f_weight_shape": ("edited_weight.pt2", "the example with fc2.bias's size edited to 63 in its weights config"),
    "f_weight_offset": ("edited_offset.pt2", "the example with fc1.bias's storage_offset an empty list in its weights config"),
    "f_graph_arg": ("edited_graph.pt2", "the example whose graph passes fc1.weight to fc2's linear"),
    "f_unwritten": ("unwritten.mlir", "the placed example without the DMA that fills x's SRAM buffer"),
    "p_deep_attr": ("deep_attr.mlir", "an attribute of 50000 nested lists"),
    "p_deep_type": ("deep_type.mlir", "a type of 3000 nested tensor types"),
    "p_deep_region": ("deep_region.mlir", "3000 nested regions"),
    # serving simulation (issue 21)
    "deployment": ("deploy", "a deployment directory: manifest.json of a router r and a model x (no programs)"),
    "s_not_jsonl": ("not_jsonl.jsonl", "a trace whose line 2 is not JSON"),
    "s_unknown_model": ("unknown_model.jsonl", 'a trace whose line 1 asks for model "zz"'),
    "s_negative": ("negative.jsonl", "a trace whose line 1 has prompt_tokens -5"),
    "s_not_router": ("not_router.jsonl", 'a trace whose line 1 names x (not a router) as its router'),
    # deployments (issue 21): each a directory holding placed.mlir, placed.safetensors and manifest.json
    "dep_two": ("two_models", "a deployment of two models, a and b (both the placed example)"),
    "dep_missing": ("missing_field", "two_models with the manifest's `sockets` removed"),
    "dep_type": ("wrong_type", 'two_models with model a\'s `weight_bytes` the string "4"'),
    "dep_version": ("version_2", "two_models with `version` 2"),
    "dep_twice": ("named_twice", "two_models with both models named a"),
    "dep_no_file": ("no_program", "two_models with model b's program gone.mlir, not there"),
    "dep_huge": ("huge_weights", "two_models with model a's `weight_bytes` 2^60"),
    # outputs that are inputs, range ends, traces past their bounds (issue 31 items 4, 5, 8, 9)
    "placed_weights": ("placed.safetensors", "the weights file placed.mlir names (rducc wrote it beside it)"),
    "s_good": ("good.jsonl", "a trace of one request for x"),
    "s_late": ("late.jsonl", "a trace whose line 1 arrives at 1e8 s"),
    "s_long_number": ("long_number.jsonl", "a trace whose line 1 has an arrival_s of 5000 digits"),
    "link_loop": ("loop.json", "a symbolic link to itself"),
    "range_pcus": ("range_pcus.toml", "sn40l with pcus ranging up to 2^53"),
    "range_sram": ("range_sram.toml", "sn40l with sram_bytes ranging down to 1 byte"),
    "range_efficiency": ("range_efficiency.toml", "sn40l with hbm_efficiency ranging down to 1e-300"),
    # hostile host and pointwise calls (issue 31, items 1-3): placed programs of one call
    "host_from_file": ("from_file.mlir", "a placed program whose `rdu.host_call` reads `aten::from_file` of created.bin, shared = true (which would create the file)"),
    "host_new_empty": ("new_empty.mlir", "a placed program whose `rdu.host_call` returns `aten::new_empty` (uninitialised memory)"),
    "host_string": ("qr_string.mlir", 'a placed program calling `aten::linalg_qr` with mode = "/etc/passwd"'),
    "host_huge": ("huge_result.mlir", "a placed program whose `aten::nonzero_static` host call asks for 2^40 rows but declares 4"),
    "pw_laguerre": ("laguerre.mlir", "a placed program: `special_laguerre_polynomial_l(x, n)` of two float32[4] inputs"),
    "pw_divide": ("divide.mlir", 'a placed program: `div(a, b, rounding_mode="trunc")` of two int32[4] inputs'),
    "x4": ("x4.npy", "float32[4] of 0.5"),
    "n_huge": ("n_huge.npy", "float32[4] of 1e12"),
    "i32_min": ("i32_min.npy", "int32[4] of -2^31"),
    "i32_minus_one": ("i32_minus_one.npy", "int32[4] of -1"),
    # text generation (issue 32)
    "g_config": ("llama_tiny.json", "a config.json of a 2-layer Llama, hidden size 32, vocabulary 64"),
    "g_encoder": ("t5_tiny.json", "a config.json of a T5 (an encoder-decoder)"),
}

PLUGIN_INPUTS = ROOT / "test" / "plugins" / "Inputs"

RDUCC, OPT, RUN, DEPLOY, GENERATE = "rducc", "rducc-opt", "rducc-run", "rducc deploy", "rducc generate"
OUT = ("-o", "out.mlir")

RUN_WEIGHTS = ("{placed}", "--input", "{x}", "--output", "out.npz", "--weights")


def _bad_weights(name: str, key: str, expected: str) -> ErrorCase:
    return ErrorCase(f"rducc-run: weights header: {name}", RUN, (*RUN_WEIGHTS, "{" + key + "}"), expected)


def _bad_target(name: str, key: str, expected: str) -> ErrorCase:
    return ErrorCase(f"target: {name}", RDUCC, ("{model}", "--target", "{" + key + "}", *OUT), expected)


HOSTILE_FILES: list[ErrorCase] = [
    # --- the weights sidecar's header (issue 20, items 6 and 9)
    _bad_weights("negative offset", "w_negative", "data_offsets must be [start, end] with 0 <= start <= end, got [-4, 0]"),
    _bad_weights("two tensors on the same bytes", "w_alias", "overlaps tensor"),
    _bad_weights("a list", "w_list", "the header is a JSON list, not an object of tensors"),
    _bad_weights("entry not an object", "w_entry", "expected an object with dtype, shape and data_offsets"),
    _bad_weights("no data_offsets", "w_no_offsets", "missing field 'data_offsets'"),
    _bad_weights("three data_offsets", "w_three_offsets", "got [0, 4, 8]"),
    _bad_weights("string data_offsets", "w_string_offsets", 'got ["0", "4"]'),
    _bad_weights("string shape", "w_string_shape", "shape must be a list of at most 64 integers >= 0"),
    _bad_weights("shape overflowing int64", "w_huge_shape", "needs 85070591730234615865843651857942052864 bytes"),
    _bad_weights("deep nesting", "w_deep", "the header nests too deeply"),
    _bad_weights("huge header length", "w_header_size", "a header of 1152921504606846976 bytes"),
    _bad_weights("bytes between tensors", "w_gap", "bytes [4, 8) of the body belong to no tensor"),
    _bad_weights("unknown dtype", "w_dtype", "unsupported dtype 'Q4'"),
    _bad_weights("bad __metadata__", "w_metadata", "'__metadata__' must map names to strings"),
    ErrorCase("zip bomb member", RDUCC, ("{zip_bomb}", *OUT), "inflates from 65"),
    # --- outputs that collide (item 7)
    ErrorCase("--weights is -o", RDUCC, ("{model}", *OUT, "--weights", "out.mlir"), "--weights out.mlir and -o out.mlir are the same file"),
    ErrorCase("--report-json is -o", RDUCC, ("{model}", *OUT, "--report-json", "./out.mlir"), "--report-json ./out.mlir and -o out.mlir are the same file"),
    ErrorCase("-o names the weights sidecar", RDUCC, ("{model}", "-o", "out.safetensors"), "the weights file out.safetensors and -o out.safetensors are the same file"),
    ErrorCase("-o is the input model", RDUCC, ("{model_copy}", "-o", "{model_copy}"), "writing it would replace the input"),
    ErrorCase("-o is a symlink to the input model", RDUCC, ("{model_copy}", "-o", "{model_link}"), "writing it would replace the input"),
    ErrorCase("--weights is the input model", RDUCC, ("{model_copy}", *OUT, "--weights", "{model_copy}"), "writing it would replace the input"),
    ErrorCase("rducc-run: --report is the program", RUN, ("{placed}", "--simulate", "--report", "{placed}"), "--report"),
    ErrorCase("rducc-run: --output is an input", RUN, ("{placed}", "--input", "{x}", "--output", "{x}"), "writing it would replace the input"),
    ErrorCase("rducc-run: --report is --output", RUN, ("{placed}", "--input", "{x}", "--output", "out.npz", "--report", "out.npz"), "are the same file"),
    # --- files that are not regular files (item 10)
    ErrorCase("rducc-run: --weights /dev/zero", RUN, (*RUN_WEIGHTS, "/dev/zero"), "weights file /dev/zero: a character device, not a regular file"),
    _bad_weights("a FIFO", "fifo", "a FIFO (named pipe), not a regular file"),
    ErrorCase("rducc-run: --input a FIFO", RUN, ("{placed}", "--input", "{fifo}", "--output", "out.npz"), "a FIFO (named pipe), not a regular file"),
    ErrorCase("rducc-run: --input /dev/zero", RUN, ("{placed}", "--input", "/dev/zero", "--output", "out.npz"), "input /dev/zero: a character device"),
    ErrorCase("rducc-run: --input of an unknown label", RUN, ("{placed}", "--input", "bias={x}", "--output", "out.npz"), "the program has no input labelled 'bias'; its inputs are x"),
    ErrorCase("rducc-run: an input by position and by label", RUN, ("{placed}", "--input", "{x}", "--input", "x={x}", "--output", "out.npz"), "input 'x' is given twice (by position and by label)"),
    ErrorCase("rducc-run: program is a FIFO", RUN, ("{fifo_mlir}", "--output", "out.npz"), "program"),
    ErrorCase("rducc-run: program naming /dev/zero as weights", RUN, ("{devzero_weights}", "--input", "{x}", "--output", "out.npz"), "weights file /dev/zero: a character device"),
    ErrorCase("rducc-run: program naming a FIFO as target", RUN, ("{fifo_target}", "--simulate"), "a FIFO (named pipe), not a regular file"),
    ErrorCase("model is a FIFO", RDUCC, ("{fifo_pt2}", *OUT), "model"),
    ErrorCase("--target a FIFO", RDUCC, ("{model}", "--target", "{fifo_toml}", *OUT), "target file"),
    ErrorCase("--target /dev/zero", RDUCC, ("{model}", "--target", "/dev/zero", *OUT), "target file /dev/zero: a character device"),
    # --- inputs (item 9)
    ErrorCase("rducc-run: .npz as --input", RUN, ("{placed}", "--input", "{x_npz}", "--output", "out.npz"), "a .npz archive; --input takes one .npy array per argument"),
    ErrorCase("rducc-run: .npy header claiming 10^12 elements", RUN, ("{placed}", "--input", "{x_huge}", "--output", "out.npz"), "input #0 ('x') has shape [1000000, 1000000], expected [4, 32] (the header of"),
    # --- sizes checked against the program before any data is read (item 10): each file takes 2 GiB
    ErrorCase("rducc-run: a 2 GiB .npy of another shape", RUN, ("{placed}", "--input", "{x_sparse}", "--output", "out.npz"),
              "input #0 ('x') has shape [32768, 16384], expected [4, 32] (the header of"),
    ErrorCase("rducc-run: a 2 GiB weight of another shape", RUN, (*RUN_WEIGHTS, "{w_sparse}"),
              "weight 'fc1.bias' has shape [536870912], expected [64] (from the file's header; nothing read)"),
    ErrorCase("a 2 GiB tensor member for 8 KiB of weight", RDUCC, ("{member_sparse}", *OUT),
              "holds 2147483648 bytes, but the tensors stored in it need 8192; refused before reading it"),
    ErrorCase("a 2 GiB program text member", RDUCC, ("{member_text}", *OUT),
              "holds 2147483648 bytes, more than the 268435456 rducc reads"),
    # --- target files (item 9)
    _bad_target("huge integer", "t_huge_int", "field 'pcus' must be > 0 and at most 2^53"),
    _bad_target("not UTF-8", "t_not_utf8", "not UTF-8 text"),
    _bad_target("inherits itself, spelled ./", "t_cycle", "'inherits' makes a cycle"),
    _bad_target("value past int64", "t_i64", "field 'sram_bytes' must be > 0 and at most 2^53"),
    _bad_target("infinite figure", "t_inf", "field 'hbm_bandwidth' must be a finite number, got inf"),
    _bad_target("tiny figure", "t_tiny", "field 'hbm_bandwidth' must be between 1 and 1e+24 a second"),
    # --- programs the verifier must refuse, as the runtime cannot run them (item 9)
    ErrorCase("rducc-run: use after tier.dealloc", RUN, ("{p_use_after_free}", "--input", "{x}", "--output", "out.npz"), "'tier.dealloc' frees a buffer that is used by 'tier.compute' after it"),
    ErrorCase("rducc-opt: use after tier.dealloc", OPT, ("{p_use_after_free}", *OUT), "'tier.dealloc' frees a buffer that is used by"),
    ErrorCase("rducc-run: scf.for of step 0", RUN, ("{p_step0}", "--input", "{x}", "--output", "out.npz"), "step 0 must be > 0 (the loop would never end)"),
    ErrorCase("rducc-opt: scf.for of step 0", OPT, ("{p_step0}", *OUT), "'scf.for' at loc(unknown): step 0 must be > 0"),
    ErrorCase("rducc-run: SRAM capacity of 10^15", RUN, ("{p_capacity}", "--input", "{x}", "--output", "out.npz"), "tier.sram_capacity 1000000000000000 exceeds the target's sram_bytes 520000000"),
    ErrorCase("rducc-opt: SRAM capacity of 10^15", OPT, ("{p_capacity}", *OUT), "exceeds the target's sram_bytes"),
    ErrorCase("rducc-run: huge unused HBM buffer", RUN, ("{p_hbm}", "--input", "{x}", "--output", "out.npz"), "hbm buffer of 4000000000000 bytes exceeds the target's hbm_bytes 64000000000"),
    ErrorCase("rducc-opt: huge unused HBM buffer", OPT, ("{p_hbm}", *OUT), "exceeds the target's hbm_bytes"),
    ErrorCase("rducc-run: 6000-digit integer", RUN, ("{p_digits}", "--input", "{x}", "--output", "out.npz"), "an integer literal of 6000 digits (at most 100)", located=True),
    ErrorCase("rducc-opt: 6000-digit integer", OPT, ("{p_digits}", *OUT), "an integer literal of 6000 digits", located=True),
    ErrorCase("rducc-opt: deeply nested attribute", OPT, ("{p_deep_attr}", *OUT), "nesting deeper than 64 levels", located=True),
    ErrorCase("rducc-opt: deeply nested type", OPT, ("{p_deep_type}", *OUT), "nesting deeper than 64 levels", located=True),
    ErrorCase("rducc-run: deeply nested regions", RUN, ("{p_deep_region}", "--output", "out.npz"), "nesting deeper than 64 levels", located=True),
    _bad_target("nan latency", "t_nan_latency", "field 'dma_latency_s' must be a finite number, got nan"),
    _bad_target("value outside its range", "t_bad_range",
                "field 'kernel_launch_s': value 5e-06 is outside its range [6e-06, 9e-06]"),
    ErrorCase("rducc-run: --ranges without --simulate or --report", RUN, ("{placed}", "--ranges"),
              "--ranges needs --simulate or --report"),
    # --- found by bench/fuzz.py: the parser's own failures, archive fields that disagree
    ErrorCase("rducc-run: integer out of its type's range", RUN, ("{f_int_range}", "--simulate"), "error: Integer value 300 is out of range for type i8", located=True),
    ErrorCase("rducc-opt: array element out of range", OPT, ("{f_perm_range}", *OUT), "cannot parse the program: argument out of range"),
    ErrorCase("rducc-run: array element out of range", RUN, ("{f_perm_range}", "--simulate"), "cannot parse the program: argument out of range", located=True),
    ErrorCase("rducc-run: SRAM buffer read before it is written", RUN, ("{f_unwritten}", "--input", "{x}", "--output", "out.npz"), "'tier.compute' reads the buffer of this 'tier.alloc' before anything writes it"),
    ErrorCase("rducc-opt: SRAM buffer read before it is written", OPT, ("{f_unwritten}", *OUT), "reads the buffer of this 'tier.alloc' before anything writes it"),
    ErrorCase("archive weight disagreeing with its graph", RDUCC, ("{f_weight_shape}", *OUT), "the archive's weight 'fc2.bias' is float32[63] but its graph declares float32[64]"),
    ErrorCase("archive weight config with a malformed storage_offset", RDUCC, ("{f_weight_offset}", *OUT), "cannot load the torch.export archive: expected dict, got list"),
    ErrorCase("archive graph passing a weight of the wrong shape", RDUCC, ("{f_graph_arg}", *OUT), "run_decompositions) failed on aten.linear.default at"),
]

HOSTILE_CALLS: list[ErrorCase] = [
    # --- issue 31, items 1-3: a program file's host and pointwise calls
    ErrorCase("rducc-opt: a host call reading a file", OPT, ("{host_from_file}", *OUT),
              "'rdu.host_call' cannot call 'aten::from_file.default': it is not on the list of ATen ops a host call may run"),
    ErrorCase("rducc-run: a host call reading a file", RUN, ("{host_from_file}", "--input", "{x4}", "--output", "out.npz"),
              "'rdu.host_call' cannot call 'aten::from_file.default': it is not on the list of ATen ops a host call may run"),
    ErrorCase("rducc-run: a host call returning uninitialised memory", RUN, ("{host_new_empty}", "--input", "{x4}", "--output", "out.npz"),
              "'rdu.host_call' cannot call 'aten::new_empty.default': it is not on the list"),
    ErrorCase("rducc-opt: a host call's string argument not a listed value", OPT, ("{host_string}", *OUT),
              "'aten::linalg_qr.default' argument 'mode' cannot be \"/etc/passwd\" (it may be complete, r, reduced)"),
    ErrorCase("rducc-run: a host call's result larger than declared, before it runs", RUN, ("{host_huge}", "--input", "{x4}", "--output", "out.npz"),
              "the host kernel's result #0 is int64[1099511627776, 1], but the program declares int64[4, 1]"),
    ErrorCase("rducc-run: a polynomial degree past the limit", RUN, ("{pw_laguerre}", "--input", "{x4}", "--input", "{n_huge}", "--output", "out.npz"),
              "aten::special_laguerre_polynomial_l.default with n = 999999995904 is past rducc's limit of 1048576"),
    ErrorCase("rducc-run: the smallest integer divided by -1", RUN, ("{pw_divide}", "--input", "{i32_min}", "--input", "{i32_minus_one}", "--output", "out.npz"),
              "integer overflow in aten::div.Tensor_mode: -2147483648 / -1 does not fit int32"),
]

SERVING: list[ErrorCase] = [
    ErrorCase("rducc-run: trace not JSONL", RUN, ("{deployment}", "--simulate", "--trace", "{s_not_jsonl}"), "not_jsonl.jsonl:2: not a JSON object"),
    ErrorCase("rducc-run: trace naming an unknown model", RUN, ("{deployment}", "--simulate", "--trace", "{s_unknown_model}"), "unknown_model.jsonl:1: unknown model 'zz' (deployed: r, x)"),
    ErrorCase("rducc-run: trace with negative tokens", RUN, ("{deployment}", "--simulate", "--trace", "{s_negative}"), "negative.jsonl:1: 'prompt_tokens' must be a whole number from 1"),
    ErrorCase("rducc-run: trace router not a router", RUN, ("{deployment}", "--simulate", "--trace", "{s_not_router}"), "'router' 'x' is not a router model of the deployment (routers: r)"),
    ErrorCase("rducc-run: --trace without --simulate", RUN, ("{deployment}", "--trace", "{s_negative}"), "--trace needs --simulate"),
    ErrorCase("rducc-run: --plot-kernel with a trace", RUN, ("{deployment}", "--simulate", "--trace", "{s_negative}", "--plot", "plots", "--plot-kernel", "k0"), "--plot-kernel draws a compiled program's kernel"),
    ErrorCase("rducc-run: --trace on a program", RUN, ("{placed}", "--simulate", "--trace", "{s_negative}"), "not a deployment directory"),
]


def _bad_manifest(name: str, key: str, expected: str) -> ErrorCase:
    return ErrorCase(f"rducc-run: manifest {name}", RUN, ("{" + key + "}", "--model", "a", "--input", "{x}", "--output", "out.npz"),
                     expected)


DEPLOYMENTS: list[ErrorCase] = [
    # --- rducc deploy (issue 21): checked before anything is written to -o deployed
    ErrorCase("rducc deploy: weights past the system's DDR", DEPLOY, ("{model}", "--target", "{tiny_memory}", "-o", "deployed"),
              "the weights of the 1 model total 27688 bytes; target tiny_memory's DDR holds 4000 bytes (1 x 4000 a socket)"),
    ErrorCase("rducc deploy: two models of one name", DEPLOY, ("{model}", "{model_copy}", "mlp={model_copy}", "-o", "deployed"),
              "two models are named 'mlp'"),
    ErrorCase("rducc deploy: --router naming no model", DEPLOY, ("{model}", "--router", "gate", "-o", "deployed"),
              "--router gate: no model of that name; the models are mlp"),
    ErrorCase("rducc deploy: --hbm-reserve past the HBM", DEPLOY, ("{model}", "--hbm-reserve", "1TB", "-o", "deployed"),
              "--hbm-reserve 1TB: 1000000000000 bytes is more than the system's HBM (512000000000 bytes)"),
    ErrorCase("rducc deploy: a model exported with dynamic dims, without --shapes", DEPLOY,
              ("{model}", "{dynamic}", "-o", "deployed"),
              "rducc deploy compiles one program per size: give its sizes with --shapes dynamic:batch=N,..."),
    ErrorCase("rducc deploy: --shapes not naming its model among several", DEPLOY,
              ("{model}", "{dynamic}", "--shapes", "batch=2,4", "-o", "deployed"),
              "--shapes batch=2,4: name the model it is for (MODEL:batch=2,4); the models are mlp, dynamic"),
    ErrorCase("rducc deploy: --shapes for a model not deployed", DEPLOY,
              ("{model}", "{dynamic}", "--shapes", "other:batch=2", "-o", "deployed"),
              "--shapes other:...: no model of that name; the models are mlp, dynamic"),
    ErrorCase("rducc deploy: --pad-dims for a model without --shapes", DEPLOY,
              ("{model}", "{dynamic}", "--pad-dims", "mlp:batch", "-o", "deployed"),
              "--pad-dims mlp:...: model 'mlp' has no --shapes (padding goes up to a larger shape bucket)"),
    ErrorCase("rducc deploy: --hbm-reserve not a size", DEPLOY, ("{model}", "--hbm-reserve", "lots", "-o", "deployed"),
              "--hbm-reserve lots: give a fraction of HBM (0.25) or bytes"),
    ErrorCase("rducc deploy: -o a directory that is not empty", DEPLOY, ("{model}", "-o", "."),
              "-o .: the directory is not empty; --force replaces it"),
    ErrorCase("rducc deploy: an archive without its program", DEPLOY, ("{model}", "{no_program}", "-o", "deployed"),
              "no_program.pt2: the archive has no models/model.json program to read"),
    ErrorCase("rducc deploy: a model that is not an archive", DEPLOY, ("{model}", "{pickle}", "-o", "deployed"),
              "a plain Python pickle; rducc accepts a torch.export archive"),
    # --- issue 31, item 10
    ErrorCase("rducc deploy: a malformed models/model.json", DEPLOY, ("{model}", "{bad_program_json}", "-o", "deployed"),
              "bad_program.pt2: models/model.json is not a program torch.export wrote"),
    ErrorCase("rducc deploy: --hbm-reserve past any number", DEPLOY, ("{model}", "--hbm-reserve", "1e400", "-o", "deployed"),
              "--hbm-reserve 1e400: that is more than the system's HBM (512000000000 bytes)"),
    ErrorCase("rducc deploy: a GPU comparison target", DEPLOY, ("{model}", "--target", "dgx-h100", "-o", "deployed"),
              "--target dgx-h100 is a GPU node for serving comparisons, not a chip rducc compiles for"),
    ErrorCase("rducc: a GPU comparison target", RDUCC, ("{model}", "--target", "dgx-a100", *OUT),
              "--target dgx-a100 is a GPU node for serving comparisons, not a chip rducc compiles for"),
    # --- rducc-run on a deployment directory, and its manifest
    ErrorCase("rducc-run: deployment without --model", RUN, ("{dep_two}", "--input", "{x}", "--output", "out.npz"),
              "a deployment of 2 models; choose one with --model NAME (a, b)"),
    ErrorCase("rducc-run: unknown --model", RUN, ("{dep_two}", "--model", "c", "--input", "{x}", "--output", "out.npz"),
              "no model 'c' in the deployment; it has a, b"),
    ErrorCase("rducc-run: --model of a program file", RUN, ("{placed}", "--model", "a", "--input", "{x}", "--output", "out.npz"),
              "is a program, not a deployment directory"),
    _bad_manifest("missing a field", "dep_missing", "manifest.json: missing field 'sockets'"),
    _bad_manifest("field of the wrong type", "dep_type", "models[0]: field 'weight_bytes' must be an integer, got \"4\""),
    _bad_manifest("of an unknown version", "dep_version", "version 2 is not supported (this rducc reads version 1)"),
    _bad_manifest("naming a model twice", "dep_twice", "model name 'a' appears twice"),
    _bad_manifest("naming a missing file", "dep_no_file", "model 'b': program file"),
    _bad_manifest("with a number past 2^53", "dep_huge", "models[0]: field 'weight_bytes' must be at most 2^53"),
]

OUTPUTS_ARE_NOT_INPUTS: list[ErrorCase] = [  # issue 31 items 4 and 5: refused before anything is written
    ErrorCase("rducc-run: --output is the weights file the program names", RUN,
              ("{placed}", "--input", "{x}", "--output", "{placed_weights}"),
              "is the weights file the program names"),
    ErrorCase("rducc-run: --report is the weights file the program names (--simulate reads none)", RUN,
              ("{placed}", "--simulate", "--report", "{placed_weights}"), "is the weights file the program names"),
    ErrorCase("rducc-run: --output is the program", RUN, ("{placed}", "--input", "{x}", "--output", "{placed}"),
              "writing it would replace the input"),
    ErrorCase("rducc-run: --output is the manifest of the deployment run", RUN,
              ("{dep_two}", "--model", "a", "--input", "{x}", "--output", "{dep_two}/manifest.json"),
              "is the deployment manifest"),
    ErrorCase("rducc-run: --output is a file of the deployment run", RUN,
              ("{dep_two}", "--model", "b", "--input", "{x}", "--output", "{dep_two}/placed.safetensors"),
              "writing it would replace the input"),
    ErrorCase("rducc-run: --report is the --target file", RUN,
              ("{placed}", "--simulate", "--target", "{no_room}", "--report", "{no_room}"),
              "writing it would replace the input"),
    ErrorCase("rducc-run: --report-json is the deployment's manifest", RUN,
              ("{deployment}", "--simulate", "--trace", "{s_good}", "--report-json", "{deployment}/manifest.json"),
              "is the deployment manifest"),
    ErrorCase("rducc-run: --report-json is the trace", RUN,
              ("{deployment}", "--simulate", "--trace", "{s_good}", "--report-json", "{s_good}"),
              "is --trace"),
    ErrorCase("rducc: --report-json is the --target file", RDUCC,
              ("{model}", "--target", "{no_room}", *OUT, "--report-json", "{no_room}"),
              "writing it would replace the input"),
    ErrorCase("rducc-run: --report a loop of symbolic links", RUN, ("{placed}", "--simulate", "--report", "{link_loop}"),
              "a loop of symbolic links"),
    ErrorCase("rducc deploy: -o a loop of symbolic links", DEPLOY, ("{model}", "-o", "{link_loop}"),
              "a loop of symbolic links"),
    ErrorCase("rducc-run: --plot under a file", RUN, ("{placed}", "--simulate", "--plot", "{x}/plots"),
              "is a file, not a directory"),
]

GENERATION: list[ErrorCase] = [  # issue 32: rducc generate
    ErrorCase("rducc generate: a missing checkpoint directory", GENERATE, ("no_such_checkpoint/", "--prompt-ids", "1,2"),
              "no_such_checkpoint/: no such checkpoint directory or config file"),
    ErrorCase("rducc generate: a directory without config.json", GENERATE, ("{directory}", "--prompt-ids", "1,2"),
              "not a transformers checkpoint (no config.json)"),
    ErrorCase("rducc generate: a config without a decoder", GENERATE, ("--config", "{g_encoder}", "--prompt-ids", "1,2"),
              "model type 't5' is not a decoder-only language model"),
    ErrorCase("rducc generate: a prompt longer than the cache", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2,3,4,5", "--max-cache-len", "4"),
              "the prompt (5 tokens) is longer than the cache (4 positions)"),
    ErrorCase("rducc generate: prompt and new tokens past the cache", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2,3", "--max-new-tokens", "8", "--max-cache-len", "6"),
              "a prompt of 3 tokens and 8 new tokens need a cache of 10 positions; the cache has 6"),
    ErrorCase("rducc generate: --max-new-tokens 0", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--max-new-tokens", "0"),
              "--max-new-tokens must be >= 1, got 0"),
    ErrorCase("rducc generate: a text prompt without a tokenizer", GENERATE,
              ("--config", "{g_config}", "--prompt", "hello"), "a text prompt needs a tokenizer"),
    ErrorCase("rducc generate: a token id past the vocabulary", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,64"), "not an integer in 0..63"),
    ErrorCase("rducc generate: an empty prompt", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--prompt-ids", ","),
              "the prompt is empty: give at least one token"),
    ErrorCase("rducc generate: a missing --prompts-file", GENERATE,
              ("--config", "{g_config}", "--prompts-file", "no_such_prompts.txt"),
              "--prompts-file no_such_prompts.txt: cannot read it (No such file or directory)"),
    ErrorCase("rducc generate: --num-beams 0", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--num-beams", "0"),
              "--num-beams must be an integer >= 1, got 0"),
    ErrorCase("rducc generate: --prompt-buckets not lengths", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--prompt-buckets", "8,big"),
              "--prompt-buckets 8,big: give prompt lengths as whole numbers, 8,32,128"),
    ErrorCase("rducc generate: --num-return-sequences with greedy search", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--num-return-sequences", "2"),
              "--num-return-sequences=2 needs sampling (--sample) or beam search (--num-beams >= it)"),
    ErrorCase("rducc generate: --num-return-sequences past --num-beams", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--num-beams", "2", "--num-return-sequences", "3"),
              "--num-return-sequences (3) must be at most --num-beams (2): beam search returns its best beams"),
    ErrorCase("rducc generate: --length-penalty without --num-beams", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--length-penalty", "2"),
              "--length-penalty needs --num-beams N (N > 1)"),
    ErrorCase("rducc generate: --top-k without --sample", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--top-k", "5"), "--top-k needs --sample"),
    ErrorCase("rducc generate: --tp on a one-socket target", GENERATE,
              ("--config", "{g_config}", "--prompt-ids", "1,2", "--tp", "2"), "tp=2 needs 2 sockets; target sn40l has 1"),
]

RANGES_AND_BOUNDS: list[ErrorCase] = [  # issue 31 items 8 and 9
    ErrorCase("rducc-run: a range end past the fabric", RUN, ("{placed}", "--simulate", "--ranges", "--target", "{range_pcus}"),
              "with pcus at its high (9007199254740992): the [fabric] grid needs an even number of columns and a site for every PCU and PMU"),
    ErrorCase("rducc-run: a range end below pmu_bytes", RUN, ("{placed}", "--simulate", "--ranges", "--target", "{range_sram}"),
              "with sram_bytes at its low (1): field 'pmu_bytes' exceeds 'sram_bytes'"),
    ErrorCase("rducc-run: a range end past the rate guard", RUN, ("{placed}", "--simulate", "--ranges", "--target", "{range_efficiency}"),
              "with hbm_efficiency at its low (1e-300): 'hbm_bandwidth' x 'hbm_efficiency' (1.6e-288 bytes/s) must be between 1 and 1e+24 a second"),
    ErrorCase("rducc-run: costed on less SRAM than the program's plan", RUN, ("{placed}", "--simulate", "--target", "{tiny_sram}"),
              "the program's SRAM plan needs 30464 bytes at its peak, more than target tiny_sram's sram_bytes (256)"),
    ErrorCase("rducc-run: trace arrival past 10^7 s", RUN, ("{deployment}", "--simulate", "--trace", "{s_late}"),
              "late.jsonl:1: 'arrival_s' must be a number of seconds from 0 to 1e+07, got 100000000.0"),
    ErrorCase("rducc-run: trace number too long to read", RUN, ("{deployment}", "--simulate", "--trace", "{s_long_number}"),
              "long_number.jsonl:1: not a JSON object (a number too long to read)"),
]

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
    ErrorCase("sample inputs pickled with protocol 4", RDUCC, ("{pickle_protocol_4}", *OUT),
              "a pickle inside it uses what torch's weights-only unpickler refuses (Unsupported operand 149)"),
    ErrorCase("wrong extension", RDUCC, ("{onnx}", *OUT), "an ONNX model (.onnx file), not a zip archive"),
    ErrorCase("weights file given as model", RDUCC, ("{safetensors}", *OUT), "a safetensors weights file (weights only, no program)"),
    ErrorCase("no input", RDUCC, OUT, "no input file given"),
    # --- the model
    ErrorCase("unsupported op", RDUCC, ("{unsupported}", *OUT), "operator rducc cannot import:\n  aten._local_scalar_dense.default (a tensor read back as a Python number and passed to aten.elu.default as a Scalar: that op has no Tensor overload, and torch's decomposition of it does not keep the number a value (it computes with it in Python or branches on it)): 2 uses, first at"),
    ErrorCase("op with no chip lowering, with --no-host-ops", RDUCC, ("{host_op}", "--no-host-ops", *OUT),
              "1 operator rducc cannot import:\n  aten.linalg_qr.default: 1 use, first at"),
    ErrorCase("dynamic shapes without --shapes", RDUCC, ("{dynamic}", *OUT),
              "the program was exported with dynamic dims: batch (x.0, 0..inf); rducc compiles static shapes, "
              "one program per size: give the sizes to compile with --shapes batch=1,4"),
    ErrorCase("--shapes naming no dynamic dim", RDUCC, ("{dynamic}", "--shapes", "batch=2", "seq=4", *OUT),
              "shapes: the program has no dynamic dim 'seq'; its dynamic dims are batch (x.0, 0..inf)"),
    ErrorCase("--shapes without a size", RDUCC, ("{dynamic}", "--shapes", "batch", *OUT),
              "--shapes batch: write NAME=SIZE[,SIZE...] (batch=1,4 seq=128,512)"),
    ErrorCase("--shapes of a model with static shapes", RDUCC, ("{model}", "--shapes", "batch=2", *OUT),
              "shapes: the program has static shapes (it was exported without dynamic_shapes); compile it without "
              "--shapes"),
    ErrorCase("--shapes --train with --pad-dims", RDUCC,
              ("{dynamic_loss}", "--train", "--shapes", "batch=2", "--pad-dims", "batch", *OUT),
              "--pad-dims with --train: a training step runs the bucket of each batch's exact shapes (padding a "
              "batch would change its loss and gradients); compile every size you train with in --shapes"),
    ErrorCase("training: a dynamic export without --shapes", RDUCC, ("{dynamic_loss}", "--train", *OUT),
              "the program was exported with dynamic dims: batch (x.0, y.0, 0..inf); rducc compiles static shapes, "
              "one program per size: give the sizes to compile with --shapes batch=1,4 "
              "(rducc.compile_training(..., shapes={'batch': [1,4]}))"),
    ErrorCase("rducc-run --train: a batch of a shape no bucket was compiled for", RUN,
              ("{loss_buckets}", "--train", "--data", "{batches_uncovered}", "--output", "out.npz"),
              "batch 1 ('x.1' [4, 8], 'y.1' [4]): no compiled shape takes inputs of shape [4, 8], [4]: the program "
              "was compiled for batch=2 (inputs [2, 8], [2]); compile the size you need with --shapes"),
    ErrorCase("rducc-run --train: batches numbered with a gap", RUN,
              ("{loss_buckets}", "--train", "--data", "{batches_gap}", "--output", "out.npz"),
              "every input needs one array a batch, numbered from 0 with no gap ('x.K' for K = 0, 2; 'y.K' for "
              "K = 0, 2)"),
    ErrorCase("rducc-run: inputs of a shape no bucket was compiled for", RUN,
              ("{buckets}", "--input", "{x_shape}", "--output", "out.npz"),
              "no compiled shape takes inputs of shape [2, 3]: the program was compiled for batch=2 (inputs [2, 8]); "
              "batch=4 (inputs [4, 8]); compile the size you need with --shapes"),
    ErrorCase("rducc-run: inputs larger than every bucket (padding only goes up)", RUN,
              ("{buckets}", "--input", "{x_wide}", "--output", "out.npz"),
              "no compiled shape takes inputs of shape [5, 8]: the program was compiled for batch=2 (inputs [2, 8]); "
              "batch=4 (inputs [4, 8]); compile the size you need with --shapes (a call may pad batch up to a "
              "larger bucket)"),
    ErrorCase("--pad-dims without --shapes", RDUCC, ("{dynamic}", "--pad-dims", "batch", *OUT),
              "--pad-dims pads an input up to a larger shape bucket: it needs --shapes"),
    ErrorCase("--pad-dims naming no dynamic dim", RDUCC,
              ("{dynamic}", "--shapes", "batch=2", "--pad-dims", "seq", *OUT),
              "--pad-dims: the program has no dynamic dim 'seq'; its dynamic dims are batch"),
    ErrorCase("--import-module of a missing module", RDUCC, ("{model}", "--import-module", "no_such_module_for_rducc", *OUT),
              "--import-module no_such_module_for_rducc: cannot import it (ModuleNotFoundError: No module named"),
    ErrorCase("resize to more elements", RDUCC, ("{resize_grow}", *OUT), "resize to 25 elements from 12 (the new ones would be uninitialized memory)"),
    ErrorCase("rducc-run: another data-dependent size than compiled for", RUN,
              ("{sized_program}", "--input", "{other_count}", "--output", "out.npz"),
              "'nonzero': the input has another number of nonzero elements than the 3 compiled for"),
    ErrorCase("rducc-run: a count over the capacity compiled for", RUN,
              ("{repeats_program}", "--input", "{seven_repeats}", "--input", "{repeats_rows}", "--output", "out.npz"),
              "'repeat_interleave': the repeats sum to more than the capacity of 6 compiled for (or one is negative)"),
    ErrorCase("rducc-run: another size computed from a float read", RUN,
              ("{float_size_program}", "--input", "{float_size_x}", "--input", "{float_size_y}", "--output", "out.npz"),
              "'slice': the size computed from max_1.item() is not 3"),
    ErrorCase("rducc-run: a window read with .item() past the input's end", RUN,
              ("{window_program}", "--input", "{window_past_end}", "--input", "{window_rows}", "--output", "out.npz"),
              "'slice': the start read with .item() puts the window of 2 outside the 5 elements along dim 0"),
    ErrorCase("rducc-run: a topk's k read with .item() past its row", RUN,
              ("{topk_program}", "--input", "{topk_seven}", "--input", "{topk_rows}", "--output", "out.npz"),
              "the condition k.item() <= 6 does not hold (torch.export recorded it on a data-dependent count"),
    ErrorCase("rducc-run: a torch._check condition on a padded count does not hold", RUN,
              ("{even_program}", "--input", "{even_three}", "--input", "{even_rows}", "--output", "out.npz"),
              "the condition n.item() % 2 == 0 does not hold (torch.export recorded it on a data-dependent count"),
    ErrorCase("--capacity below the least a torch._check allows", RDUCC, ("{at_least_two}", "--capacity", "1", *OUT),
              "the capacity of 1 is below the 2 rows torch.export requires of the data-dependent count"),
    ErrorCase("complex reduction by order", RDUCC, ("{complex}", *OUT),
              "aten.scatter_reduce.two (reduce='amax' on complex values, which have no order; torch refuses it too)"),
    ErrorCase("data-dependent shapes", RDUCC, ("{data_dependent}", "--import-module", "data_sized_op", *OUT),
              "data-dependent shape on 'positives' (its size depends on the tensor's values)"),
    ErrorCase("a sparse tensor read inside the program", RDUCC, ("{sparse_inside}", *OUT),
              "aten.to_sparse.default makes a sparse tensor, read by aten.to_dense.default inside the program; rducc "
              "holds tensors dense and signed inside a program and converts a sparse or uint64 result only where "
              "the program returns it"),
    ErrorCase("the bits of a float64 value under --f64 demote", RDUCC, ("{hash_f64}", "--f64", "demote", *OUT),
              "aten.view.dtype (reads the bits of a float64 value (view(dtype), hash_tensor), which --f64 demote "
              "computes in float32: they would be float32's bits; compile with --f64 emulate): 1 use, first at"),
    ErrorCase("attention backward with dropout", RDUCC, ("{attention_dropout}", *OUT), "attention with dropout_p=0.1 in training: its random mask is drawn inside torch's fused kernel and not saved for the backward"),
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
    ErrorCase("--capacity 0", RDUCC, ("{model}", "--capacity", "0", *OUT), "--capacity must be at least 1 row, not 0"),
    ErrorCase("--ep unlike --tp", RDUCC, ("{model}", "--target", "sn40l-8", "--tp", "2", "--ep", "4", *OUT), "--tp 2 --ep 4: the experts are split over the sockets of a tensor-parallel group: --ep must equal --tp"),
    ErrorCase("--ep on a model without routed experts", RDUCC, ("{model}", "--target", "sn40l-8", "--tp", "2", "--ep", "2", *OUT), "ep=2 finds no routed experts to split"),
    ErrorCase("--dp on a one-socket target", RDUCC, ("{model}", "--dp", "2", *OUT), "--dp 2 splits the model across sockets, but target sn40l has one"),
    ErrorCase("--zero with no such stage", RDUCC, ("{model}", "--target", "sn40l-8", "--train", "--dp", "2", "--zero", "4", *OUT), "--zero 4: the ZeRO stage is 1 (optimizer state sharded), 2 (and gradients) or 3 (and parameters)"),
    ErrorCase("--zero without --dp", RDUCC, ("{model}", "--target", "sn40l-8", "--train", "--zero", *OUT), "--zero shards the optimizer state over the data-parallel replicas: give --dp 2 or more"),
    ErrorCase("--sequence-parallel without --tp", RDUCC, ("{model}", "--target", "sn40l-8", "--dp", "2", "--sequence-parallel", *OUT), "--sequence-parallel splits the activations between the tensor-parallel regions: give --tp 2 or more"),
    ErrorCase("--dp with --ep", RDUCC, ("{model}", "--target", "sn40l-8", "--dp", "2", "--ep", "2", *OUT), "--dp 2 --ep 2: the experts are split over one tensor-parallel group's sockets, without data-parallel replicas"),
    ErrorCase("--dp that does not divide the batch", RDUCC, ("{model}", "--target", "sn40l-8", "--dp", "3", *OUT), "dp=3 does not divide the batch of 4 (input 'x', shape [4, 32])"),
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
    ErrorCase("--plot-kernel without --plot", RDUCC, ("{model}", "--plot-kernel", "k0", *OUT), "--plot-kernel needs --plot DIR"),
    ErrorCase("rducc-run: --plot without --simulate", RUN, ("{placed}", "--plot", "plots"), "--plot needs --simulate"),
    ErrorCase("rducc-run: --plot-kernel naming no kernel", RUN, ("{placed}", "--simulate", "--plot", "plots", "--plot-kernel", "k99"), "--plot-kernel k99: the program has no kernel of that name"),
    # --- where the output goes
    ErrorCase("output into a missing directory", RDUCC, ("{model}", "-o", "no/such/dir/out.mlir"), "directory no/such/dir does not exist"),
    ErrorCase("output onto a directory", RDUCC, ("{model}", "-o", "."), "cannot write .: it is a directory"),
    ErrorCase("output under a regular file", RDUCC, ("{model}", "-o", "out.mlir/x.mlir"), "out.mlir is not a directory"),
    ErrorCase("weights into a missing directory", RDUCC, ("{model}", "--weights", "gone/w.safetensors", *OUT), "directory gone does not exist"),
    # --- rducc-opt
    ErrorCase("rducc-opt: malformed MLIR", OPT, ("{syntax}", *OUT), "error: type expected", located=True),
    ErrorCase("rducc-opt: unknown op", OPT, ("{unknown_op}", *OUT), "Operation rdu.bogus is not registered", located=True),
    ErrorCase("rducc-opt: IR that does not verify", OPT, ("{verifier}", *OUT), "does not verify"),
    ErrorCase("rducc-opt: host call of a non-aten op", OPT, ("{host_call_prims}", *OUT),
              "'rdu.host_call' cannot call 'prims::sin.default': it is not an op of the aten namespace"),
    ErrorCase("rducc-opt: host call of a mutating op", OPT, ("{host_call_mutating}", *OUT),
              "'rdu.host_call' cannot call 'aten::sin_.default': it mutates or aliases its arguments (not functional)"),
    ErrorCase("rducc-opt: overlapping SRAM allocations", OPT, ("{overlap}", *OUT), "overlap"),
    ErrorCase("rducc-opt: SRAM offset past the capacity", OPT, ("{past_capacity}", *OUT), "capacity"),
    ErrorCase("rducc-opt: a kernel's value over a live buffer", OPT, ("{overlap_kernel}", *OUT),
              "overlaps the 'rdu.map' value at [0, 16) at model.py:7:1 in 'tier.compute' \"body_value.k0\" while it is live across the kernel"),
    ErrorCase("rducc-opt: a callee's buffer over a live buffer", OPT, ("{overlap_call}", *OUT),
              "overlaps [8, 24), which @layer places, while it is live across the call at model.py:9:2"),
    ErrorCase("rducc-opt: a buffer in a loop over a live buffer", OPT, ("{overlap_loop}", *OUT),
              "overlaps the buffer [0, 16) allocated inside 'scf.for' at model.py:11:3 while it is live around it"),
    ErrorCase("rducc-opt: a kernel op with no room on the fabric", OPT,
              ("-p", 'rdu-map-units{{target="{no_room}"}}', "{placed}", *OUT), "no room for 'rdu.matmul'"),
    ErrorCase("rducc-opt: a mapping with a unit used twice", OPT, ("{unit_twice}", *OUT),
              "PCU 1 is used twice in section 0", located=True),
    ErrorCase("rducc-opt: an rdu op on a dynamic tensor", OPT, ("{dynamic_rdu_op}", *OUT),
              "an rdu tensor must have a static shape, got tensor<?x8xf32>", located=True),
    ErrorCase("rducc-run: an rdu op on a dynamic tensor", RUN, ("{dynamic_rdu_op}", "--simulate"),
              "an rdu tensor must have a static shape, got tensor<?x8xf32>", located=True),
    ErrorCase("rducc-opt: a pointwise call of a non-aten op", OPT, ("{not_pointwise}", *OUT),
              "'rdu.pointwise_call' cannot call 'os::system.default': it is not an op of the aten namespace"),
    ErrorCase("rducc-run: a pointwise call of a non-aten op", RUN, ("{not_pointwise}", "--simulate"),
              "'rdu.pointwise_call' cannot call 'os::system.default': it is not an op of the aten namespace"),
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
    ErrorCase("rducc-run: host op result unlike its declared type", RUN, ("{host_mismatch}", "--input", "{x}", "--output", "out.npz"),
              "the host kernel's result #1 is int64[4], but the program declares int32[4]"),
    ErrorCase("rducc-run: custom op on the host without --import-module", RUN,
              ("{host_custom}", "--input", "{x}", "--output", "out.npz"),
              "the program calls the custom op mylib::softsign.default, which runs on the host: pass --import-module "
              "MODULE (Python: import_modules=[MODULE]) naming the module that registers it"),
    ErrorCase("rducc-run: --import-module of a missing module", RUN,
              ("{host_custom}", "--import-module", "no_such_module_for_rducc", "--input", "{x}", "--output", "out.npz"),
              "--import-module no_such_module_for_rducc: cannot import it (ModuleNotFoundError: No module named"),
    ErrorCase("rducc-run: integer floor division by zero", RUN,
              ("{int_floor_divide}", "--input", "{ints}", "--input", "{ints_zero}", "--output", "out.npz"),
              "integer floor division (//, floor_divide, div rounding_mode='floor') by zero (torch raises ZeroDivisionError)"),
    ErrorCase("rducc-run: integer fmod by zero", RUN,
              ("{int_fmod}", "--input", "{ints}", "--input", "{ints_zero}", "--output", "out.npz"),
              "integer remainder (%, remainder, fmod) by zero (torch raises ZeroDivisionError)"),
    ErrorCase("rducc-run: index past the end of a table", RUN, ("{gather}", "--input", "{ids_past_end}", "--output", "out.npz"),
              "'tier.gather' at model.py:3:8: rdu.gather: index 7 is out of bounds for dim 0 of size 4 (indices must be in [0, 4))"),
    ErrorCase("rducc-run: negative index into a table", RUN, ("{gather}", "--input", "{ids_negative}", "--output", "out.npz"),
              "rdu.gather: index -1 is out of bounds for dim 0 of size 4 (indices must be in [0, 4))"),
    ErrorCase("rducc-run: row written in place past the end of a buffer", RUN,
              ("{rows}", "--input", "{x}", "--input", "{ids_past_end}", "--output", "out.npz"),
              "'tier.scatter' at model.py:5:4: tier.scatter: a row index is out of range [0, 4) along dim 0"),
    ErrorCase("rducc-run: too few inputs", RUN, ("{placed}", "--output", "out.npz"), "@forward takes 1 input (x: float32[4, 32]), got 0"),
    ErrorCase("rducc-run: too many inputs", RUN, ("{placed}", "--input", "{x}", "--input", "{x}", "--output", "out.npz"), "takes 1 input (x: float32[4, 32]), got 2"),
    ErrorCase("rducc-run: wrong input shape", RUN, ("{placed}", "--input", "{x_shape}", "--output", "out.npz"), "input #0 ('x') has shape [2, 3], expected [4, 32]"),
    ErrorCase("rducc-run: wrong input dtype", RUN, ("{placed}", "--input", "{x_f64}", "--output", "out.npz"), "input #0 ('x') has dtype float64, expected float32"),
    ErrorCase("rducc-run: missing input file", RUN, ("{placed}", "--input", "no_such.npy", "--output", "out.npz"), "input no_such.npy: no such file"),
    ErrorCase("rducc-run: input that is not .npy", RUN, ("{placed}", "--input", "{x_text}", "--output", "out.npz"), "not a .npy array"),
    ErrorCase("rducc-run: pickled input", RUN, ("{placed}", "--input", "{x_object}", "--output", "out.npz"), "allow_pickle=False"),
    ErrorCase("rducc-run: missing weights file", RUN, ("{placed}", "--input", "{x}", "--weights", "no_such.safetensors", "--output", "out.npz"), "weights file no_such.safetensors: no such file"),
    ErrorCase("rducc-run: garbage weights file", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_garbage}", "--output", "out.npz"), "not a safetensors file"),
    ErrorCase("rducc-run: weight of the wrong shape", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_shape}", "--output", "out.npz"), "weight 'fc1.bias' has shape [3], expected [64]"),
    ErrorCase("rducc-run: weight missing from the file", RUN, ("{placed}", "--input", "{x}", "--weights", "{weights_partial}", "--output", "out.npz"), "missing weight: fc2.weight"),
    ErrorCase("rducc-run: output into a missing directory", RUN, ("{placed}", "--input", "{x}", "--output", "no/such/out.npz"), "directory no/such does not exist"),
    *HOSTILE_FILES,
    *HOSTILE_CALLS,
    *SERVING,
    *DEPLOYMENTS,
    *OUTPUTS_ARE_NOT_INPUTS,
    *RANGES_AND_BOUNDS,
    *GENERATION,
    # --- training (issue 27)
    ErrorCase("training: a loss that is not a scalar", RDUCC, ("{vector_loss}", "--train", *OUT),
              "the loss is a tensor of shape [3], not a floating-point scalar"),
    ErrorCase("training: an optimizer rducc does not support", RDUCC,
              ("{loss_model}", "--train", "--optimizer", "lamb", *OUT),
              "optimizer 'lamb' is not supported; rducc compiles adam, adamw, sgd"),
    ErrorCase("training: an option the optimizer does not have", RDUCC,
              ("{loss_model}", "--train", "--optimizer", "sgd", "--betas", "0.9,0.99", *OUT),
              "optimizer 'sgd' has no option betas"),
    ErrorCase("training: optimizer flags without --train", RDUCC, ("{loss_model}", "--lr", "0.1", *OUT),
              "--lr needs --train"),
    ErrorCase("training: no parameter requires grad", RDUCC, ("{frozen_model}", "--train", *OUT),
              "no parameter of the model requires grad: there is nothing to train"),
    ErrorCase("training: an embedding bag scaled by frequency (at the user's line)", RDUCC,
              ("{bag_by_frequency}", "--train", *OUT),
              "return self.bag(ids, offsets).square().mean(): nn.EmbeddingBag(scale_grad_by_freq=True) in "
              "training: torch's CPU kernel divides each index's gradient by the count of another index"),
    ErrorCase("training: a forward that writes a trained parameter in place", RDUCC,
              ("{parameter_write}", "--train", *OUT),
              "return self.embed(ids).square().mean(): aten.embedding_renorm_.default writes the trained parameter "
              "'embed.weight' in place in the forward (as nn.Embedding(max_norm=...) renormalizes the rows it reads)"),
    ErrorCase("training: an op torch has no derivative for (at the user's line)", RDUCC,
              ("{no_derivative}", "--train", *OUT),
              "return torch.special.zeta(self.fc(x).exp() + 1.5, 2.0).mean(): torch could not build the joint "
              "graph: the derivative for 'zeta' is not implemented"),
    ErrorCase("rducc-run: batches of the wrong shape", RUN,
              ("{step}", "--train", "--data", "{batches_shape}", "--output", "out.npz"),
              "array 'x' has shape [5, 3, 9]; input #0 ('x') is [3, 8], so the file needs shape [BATCHES, 3, 8]"),
    ErrorCase("rducc-run: batches without an input", RUN,
              ("{step}", "--train", "--data", "{batches_missing}", "--output", "out.npz"),
              "no array 'y' for input #1 ('y'); the file holds x"),
    ErrorCase("rducc-run: batches of unequal counts", RUN,
              ("{step}", "--train", "--data", "{batches_counts}", "--output", "out.npz"),
              "the arrays hold different numbers of batches ('x' 5, 'y' 4)"),
    ErrorCase("rducc-run: a negative learning rate", RUN,
              ("{step}", "--train", "--lr", "-0.1", "--data", "{batches_counts}", "--output", "out.npz"),
              "--lr -0.1: a learning rate is a finite number of at least 0 (as torch.optim takes it)"),
    ErrorCase("rducc-run: --lr without --train", RUN, ("{step}", "--lr", "0.1", "--output", "out.npz"),
              "--lr needs --train (it trains with a training step)"),
    ErrorCase("training: --microbatches without --train", RDUCC, ("{loss_model}", "--microbatches", "2", *OUT),
              "--microbatches needs --train"),
    ErrorCase("training: microbatches that do not divide the batch", RDUCC,
              ("{loss_model}", "--train", "--microbatches", "2", *OUT),
              "microbatches 2: input #0 has batch 3, which does not split into 2 equal microbatches"),
    ErrorCase("training: pipeline microbatches other than the step's own", RDUCC,
              ("{loss_model}", "--train", "--microbatches", "3", "--target", "sn40l-8", "--pass-pipeline",
               "rdu-canonicalize,rdu-partition{{pp=2 microbatches=4}}", *OUT),
              "rdu-partition: microbatches=4, but the step runs its batch in 3 microbatches itself"),
    ErrorCase("training: data-parallel replicas that do not divide a microbatch", RDUCC,
              ("{loss_model}", "--train", "--microbatches", "3", "--target", "sn40l-8", "--pass-pipeline",
               "rdu-canonicalize,rdu-partition{{pp=2 dp=3}}", *OUT),
              "rdu-partition: dp=3 does not divide a microbatch of 1"),
    ErrorCase("training: an unknown loss scale", RDUCC, ("{loss_model}", "--train", "--loss-scale", "often", *OUT),
              "--loss-scale often: give a positive number or 'dynamic'"),
    ErrorCase("training: --growth-interval without dynamic loss scaling", RDUCC,
              ("{loss_model}", "--train", "--growth-interval", "100", *OUT),
              "--growth-interval needs --loss-scale dynamic"),
    ErrorCase("training: dynamic loss scaling without an optimizer", RDUCC,
              ("{loss_model}", "--train", "--optimizer", "none", "--loss-scale", "dynamic", *OUT),
              "--loss-scale dynamic needs an optimizer (it skips the update on an overflow)"),
    ErrorCase("training: an unsupported mixed precision", RDUCC,
              ("{loss_model}", "--train", "--mixed-precision", "fp8", *OUT),
              "--mixed-precision fp8 is not supported; rducc compiles bf16"),
    ErrorCase("training: a max gradient norm that is not positive", RDUCC,
              ("{loss_model}", "--train", "--max-grad-norm", "0", *OUT),
              "max_grad_norm 0.0: give a positive finite number"),
    ErrorCase("training: gradient clipping without an optimizer", RDUCC,
              ("{loss_model}", "--train", "--optimizer", "none", "--max-grad-norm", "1", *OUT),
              "gradient clipping (max_grad_norm) needs an optimizer"),
    ErrorCase("training: gradient clipping with dynamic loss scaling", RDUCC,
              ("{loss_model}", "--train", "--loss-scale", "dynamic", "--max-grad-norm", "1", *OUT),
              "gradient clipping (max_grad_norm) with dynamic loss scaling is not supported; use a static loss_scale"),
    ErrorCase("rducc-run: --microbatches that do not split the step's batch", RUN,
              ("{step}", "--train", "--microbatches", "2", "--data", "{batches_shape}", "--output", "out.npz"),
              "--microbatches 2: input #0 ('x') has shape [3, 8], whose first dimension does not split into 2 "
              "microbatches"),
    ErrorCase("rducc-run: --train of an inference program", RUN,
              ("{placed}", "--train", "--data", "{batches_shape}", "--output", "out.npz"),
              "not a training step (its first result is not a loss)"),
]

OUTPUT_FILE = {RDUCC: "out.mlir", OPT: "out.mlir", RUN: "out.npz", DEPLOY: "out.mlir", GENERATE: "out.mlir"}
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
        "Outputs: two outputs naming one file, or an output naming any file the run",
        "reads (an input on the command line, the weights file a program names, a",
        "target file, a trace, a pass plugin, every file of a deployment; only",
        "`rducc-opt -o` may name its own input, an edit in place), by any",
        "name (a symbolic link, a hard link, `dir/../file`), are refused before",
        "anything is written; a tool writes all its outputs at the end, together,",
        "and makes a `--plot` directory only then. A symbolic link given as output",
        "is followed (its file, or for `rducc deploy -o` its directory, replaced;",
        "the link kept); a character device or FIFO is written directly; a block",
        "device or socket is refused. Inputs must be regular files. Ctrl-C prints",
        "`TOOL: interrupted` and exits with status 130.",
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

_GENERATE_CONFIGS = {
    "g_config": '{"model_type": "llama", "vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, '
                '"num_hidden_layers": 2, "num_attention_heads": 4, "max_position_embeddings": 32}\n',
    "g_encoder": '{"model_type": "t5", "vocab_size": 64, "d_model": 32, "d_ff": 64, "num_layers": 1, "num_heads": 2}\n',
}

_TARGETS = {
    "tiny_memory": 'inherits = "sn40l"\nname = "tiny_memory"\nhbm_bytes = 4000\nddr_bytes = 4000\n',
    "tiny_sram": 'inherits = "sn40l"\nname = "tiny_sram"\nsram_bytes = 256\npmu_bytes = 64\n',
    "unknown_key": 'inherits = "sn40l"\nname = "x"\nwarp_drive = 1\n',
    "negative": 'inherits = "sn40l"\nname = "x"\nhbm_bandwidth = -1.0\n',
    "missing_field": 'name = "x"\nsockets = 1\n',
    "not_a_number": 'inherits = "sn40l"\npcus = "many"\n',
    "bad_toml": "name = [\n",
    "no_room": 'inherits = "sn40l"\nname = "no_room"\npcus = 2\npmus = 2\n[fabric]\nrows = 2\ncols = 2\n',
    "range_pcus": 'inherits = "sn40l"\nname = "range_pcus"\n'
                  'pcus = { value = 1040, low = 1040, high = 9007199254740992, assumed = true, source = "s" }\n',
    "range_sram": 'inherits = "sn40l"\nname = "range_sram"\n'
                  'sram_bytes = { value = 520000000, low = 1, high = 520000000, assumed = true, source = "s" }\n',
    "range_efficiency": 'inherits = "sn40l"\nname = "range_efficiency"\n[fabric]\n'
                        'hbm_efficiency = { value = 0.9, low = 1e-300, high = 1, assumed = true, source = "s" }\n',
}

def _host_call(overload: str) -> str:
    return ("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
            f'  %y = rdu.host_call #rdu.aten<"{overload}">(%x) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>\n'
            "  func.return %y : tensor<4xf32>\n}\n")


HOST_MISMATCH_PROGRAM = """builtin.module attributes {rdu.level = #rdu<level placed>} {
  func.func @forward(%x: !tier.buffer<hbm, 4x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 4xi32>
      attributes {tier.sram_capacity = 256 : i64} {
    %v, %i = rdu.host_call #rdu.aten<"aten::mode.default", {dim = 1 : i64}>(%x) tensors ["self"] : (!tier.buffer<hbm, 4x32xf32>) -> (!tier.buffer<hbm, 4xf32>, !tier.buffer<hbm, 4xi32>) loc("model.py":3:8)
    func.return %i : !tier.buffer<hbm, 4xi32>
  }
}
"""


HOST_CUSTOM_PROGRAM = """builtin.module attributes {rdu.level = #rdu<level placed>} {
  func.func @forward(%x: !tier.buffer<hbm, 4x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 4x32xf32>
      attributes {tier.sram_capacity = 256 : i64} {
    %y = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x) -> Tensor">(%x) tensors ["x"] : (!tier.buffer<hbm, 4x32xf32>) -> !tier.buffer<hbm, 4x32xf32> loc("model.py":3:8)
    func.return %y : !tier.buffer<hbm, 4x32xf32>
  }
}
"""
"""A placed program calling a user's custom op on the host (its module never named)."""


GATHER_PROGRAM = """builtin.module attributes {rdu.level = #rdu<level placed>} {
  tier.global @table in hbm : tensor<4x2xf32> = dense<1.0> : tensor<4x2xf32> {kind = "constant"}
  func.func @forward(%ids: !tier.buffer<hbm, 3xi64> {rdu.input = "ids"}) -> !tier.buffer<hbm, 3x2xf32>
      attributes {tier.sram_capacity = 256 : i64} {
    %table = tier.get_global @table : !tier.buffer<hbm, 4x2xf32>
    %ids_sram = tier.alloc offset 0 : !tier.buffer<sram, 3xi64>
    %rows = tier.alloc offset 64 : !tier.buffer<sram, 3x2xf32>
    %y = tier.alloc : !tier.buffer<hbm, 3x2xf32>
    tier.dma %ids -> %ids_sram : !tier.buffer<hbm, 3xi64> -> !tier.buffer<sram, 3xi64>
    tier.gather %table[%ids_sram] -> %rows : !tier.buffer<hbm, 4x2xf32>, !tier.buffer<sram, 3xi64> -> !tier.buffer<sram, 3x2xf32> loc("model.py":3:8)
    tier.dma %rows -> %y : !tier.buffer<sram, 3x2xf32> -> !tier.buffer<hbm, 3x2xf32>
    func.return %y : !tier.buffer<hbm, 3x2xf32>
  }
}
"""
"""A placed program: the rows of a 4-row table at the indices it is given."""

ROWS_PROGRAM = """builtin.module attributes {rdu.level = #rdu<level placed>} {
  func.func @forward(%x: !tier.buffer<hbm, 4x32xf32> {rdu.input = "x"}, %ids: !tier.buffer<hbm, 3xi64> {rdu.input = "ids"})
      -> !tier.buffer<hbm, 4x32xf32> attributes {tier.sram_capacity = 1024 : i64} {
    %x_sram = tier.alloc offset 0 : !tier.buffer<sram, 4x32xf32>
    %ids_sram = tier.alloc offset 512 : !tier.buffer<sram, 3xi64>
    tier.dma %x -> %x_sram : !tier.buffer<hbm, 4x32xf32> -> !tier.buffer<sram, 4x32xf32>
    tier.dma %ids -> %ids_sram : !tier.buffer<hbm, 3xi64> -> !tier.buffer<sram, 3xi64>
    tier.scatter %x_sram -> %x[%ids_sram] dim 0 : !tier.buffer<sram, 4x32xf32>, !tier.buffer<sram, 3xi64> -> !tier.buffer<hbm, 4x32xf32> loc("model.py":5:4)
    func.return %x : !tier.buffer<hbm, 4x32xf32>
  }
}
"""
"""A placed program: rows of its input written back in place at the indices it is given."""

def _placed_host_call(callee: str, operands: str, tensors: str, result: str) -> str:
    """A placed program of one host call on its float32[4] input `x`."""
    types = ", ".join("!tier.buffer<hbm, 4xf32>" for _ in operands.split(", ") if operands)
    return ("builtin.module attributes {rdu.level = #rdu<level placed>} {\n"
            f'  func.func @forward(%x: !tier.buffer<hbm, 4xf32> {{rdu.input = "x"}}) -> !tier.buffer<hbm, {result}>'
            " attributes {tier.sram_capacity = 256 : i64} {\n"
            f"    %r = rdu.host_call #rdu.aten<{callee}>({operands}) tensors [{tensors}] : ({types}) -> "
            f'!tier.buffer<hbm, {result}> loc("model.py":3:8)\n'
            f"    func.return %r : !tier.buffer<hbm, {result}>\n  }}\n}}\n")


POINTWISE_PROGRAM = """builtin.module attributes {{rdu.level = #rdu<level placed>}} {{
  func.func @forward(%x: !tier.buffer<hbm, 4x{t}> {{rdu.input = "x"}}, %n: !tier.buffer<hbm, 4x{t}> {{rdu.input = "n"}}) -> !tier.buffer<hbm, 4x{t}> attributes {{tier.sram_capacity = 256 : i64}} {{
    %xs = tier.alloc offset 0 : !tier.buffer<sram, 4x{t}>
    %ns = tier.alloc offset 64 : !tier.buffer<sram, 4x{t}>
    %r = tier.alloc : !tier.buffer<hbm, 4x{t}>
    %rs = tier.alloc offset 128 : !tier.buffer<sram, 4x{t}>
    tier.dma %x -> %xs : !tier.buffer<hbm, 4x{t}> -> !tier.buffer<sram, 4x{t}>
    tier.dma %n -> %ns : !tier.buffer<hbm, 4x{t}> -> !tier.buffer<sram, 4x{t}>
    tier.compute "k0" ins(%xs, %ns : !tier.buffer<sram, 4x{t}>, !tier.buffer<sram, 4x{t}>) outs(%rs : !tier.buffer<sram, 4x{t}>) attributes {{tiles = 1 : i64}} {{
    ^bb0(%a: tensor<4x{t}>, %b: tensor<4x{t}>):
      %m = rdu.map %a, %b : (tensor<4x{t}>, tensor<4x{t}>) -> tensor<4x{t}> {{
      ^bb0(%0: {t}, %1: {t}):
        %2 = rdu.pointwise_call #rdu.aten<{callee}>(%0, %1) : ({t}, {t}) -> {t} loc("model.py":7:15)
        rdu.yield %2 : {t}
      }}
      rdu.yield %m : tensor<4x{t}>
    }}
    tier.dma %rs -> %r : !tier.buffer<sram, 4x{t}> -> !tier.buffer<hbm, 4x{t}>
    tier.dealloc %xs : !tier.buffer<sram, 4x{t}>
    tier.dealloc %ns : !tier.buffer<sram, 4x{t}>
    tier.dealloc %rs : !tier.buffer<sram, 4x{t}>
    func.return %r : !tier.buffer<hbm, 4x{t}>
  }}
}}
"""
"""A placed program of one pointwise call `{callee}` on two inputs of element type `{t}`."""


_MLIR = {
    "mlir_text": "func.func @forward() {\n  func.return\n}\n",
    "syntax": 'builtin.module {\n  %0 = "test.op"() : () -> \n}\n',
    "unknown_op": "func.func @f() {\n  %x = rdu.bogus\n}\n",
    "verifier": "func.func @f() -> i32 {\n  func.return\n}\n",
    "huge_splat": "func.func @f() -> tensor<999999999999xf32> {\n  %c = arith.constant dense<1.0> : tensor<999999999999xf32>\n  func.return %c : tensor<999999999999xf32>\n}\n",
    "open_string": 'builtin.module {\n  %0 = "test.op"() {note = "' + "an unclosed string " * 4 + '} : () -> ()\n}\n',
    # the three shapes of SRAM overlap of the verifier's lit test
    **dict(zip(("overlap_kernel", "overlap_call", "overlap_loop"),
               (ROOT / "test" / "dialects" / "tier-sram-live.mlir").read_text().split("// -----"))),
    "gather": GATHER_PROGRAM,
    "rows": ROWS_PROGRAM,
    "host_call_prims": _host_call("prims::sin.default"),
    "host_call_mutating": _host_call("aten::sin_.default"),
    "host_mismatch": HOST_MISMATCH_PROGRAM,
    "host_custom": HOST_CUSTOM_PROGRAM,
    "host_from_file": _placed_host_call('"aten::from_file.default", {filename = "created.bin", shared = true, size = 4 : i64}',
                                        "", "", "4xf32"),
    "host_new_empty": _placed_host_call('"aten::new_empty.default", {size = [4 : i64]}', "%x", '"self"', "4xf32"),
    "host_string": _placed_host_call('"aten::linalg_qr.default", {mode = "/etc/passwd"}', "%x", '"A"', "4xf32"),
    "host_huge": _placed_host_call('"aten::nonzero_static.default", {size = 1099511627776 : i64}', "%x", '"self"', "4x1xi64"),
    "pw_laguerre": POINTWISE_PROGRAM.format(t="f32", callee='"aten::special_laguerre_polynomial_l.default"'),
    "pw_divide": POINTWISE_PROGRAM.format(t="i32", callee='"aten::div.Tensor_mode", {rounding_mode = "trunc"}'),
    "f_int_range": '"test.op"() {a = 300 : i8} : () -> ()\n',
    "f_perm_range": ("func.func @f(%x: tensor<2x3xf32>) -> tensor<3x2xf32> {\n"
                     "  %y = rdu.transpose %x perm [18446744073709551617, 0] : tensor<2x3xf32> -> tensor<3x2xf32>\n"
                     "  func.return %y : tensor<3x2xf32>\n}\n"),
    "not_pointwise": ("func.func @f(%x: tensor<4xf32>) -> tensor<4xf32> {\n"
                      "  %y = rdu.map %x : (tensor<4xf32>) -> tensor<4xf32> {\n  ^bb0(%a: f32):\n"
                      '    %r = rdu.pointwise_call #rdu.aten<"os::system.default">(%a) : (f32) -> f32\n'
                      "    rdu.yield %r : f32\n  }\n  func.return %y : tensor<4xf32>\n}\n"),
    "dynamic_rdu_op": ("func.func @f(%x: tensor<?x8xf32>) -> tensor<2x8xf32> {\n"
                       "  %y = rdu.map %x : (tensor<?x8xf32>) -> tensor<2x8xf32> {\n  ^bb0(%a: f32):\n"
                       "    rdu.yield %a : f32\n  }\n  func.return %y : tensor<2x8xf32>\n}\n"),
    "unit_twice": '"test.op"() {m = #rdu.mapping<grid = [4, 8], sections = 1, stages = [[0, 0, 0, 2, 1], '
                  '[1, 0, 1, 3, 5]], buffers = [[0, 0, 0, 3]]>} : () -> ()\n',
}


def _export(module, example, path: Path, **kwargs) -> None:
    import torch

    with torch.no_grad():
        torch.export.save(torch.export.export(module.eval(), example, **kwargs), str(path))


def _model_files(paths: dict[str, Path]) -> None:
    import numpy as np
    import torch
    from torch import nn

    class UsesUnsupportedOps(nn.Module):
        def forward(self, x):
            slope, floor = x.abs().max().item(), x.min().item()
            elu = torch.ops.aten.elu.default
            return elu(x, 2.0, slope) - elu(x, 2.0, floor) + torch.sort(x).values

    class Doubles(nn.Module):
        def forward(self, x):
            return torch.relu(x) * 2.0

    class ComplexScale(nn.Module):
        def forward(self, z):
            return z.index_reduce(0, torch.tensor([0, 0, 1, 1]), z, "amax") * 2

    class Positives(nn.Module):
        def forward(self, x):
            return torch.ops.rducc_test.positives(x) * 2

    torch.manual_seed(0)
    _export(UsesUnsupportedOps(), (torch.randn(4, 8),), paths["unsupported"])
    _export(Doubles(), (torch.randn(4, 8),), paths["dynamic"],
            dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    import rducc  # noqa: PLC0415

    rducc.compile(str(paths["dynamic"]), shapes={"batch": [2, 4]}, opt_level=0).save(paths["buckets"])
    _export(ComplexScale(), (torch.randn(4, 4, dtype=torch.complex64),), paths["complex"])
    import data_sized_op  # noqa: F401, PLC0415 - registers rducc_test::positives (beside this file)

    _export(Positives(), (torch.randn(4, 8),), paths["data_dependent"])

    class SparseInside(nn.Module):
        def forward(self, x):
            return x.to_sparse().to_dense() + 1

    _export(SparseInside(), (torch.randn(3, 4),), paths["sparse_inside"])

    class HashF64(nn.Module):
        def forward(self, x):
            return torch.hash_tensor(x, 1)

    _export(HashF64(), (torch.randn(3, 4, dtype=torch.float64),), paths["hash_f64"])

    class ResizeGrow(nn.Module):
        def forward(self, x):
            return x.clone().resize_(5, 5)

    _export(ResizeGrow(), (torch.randn(3, 4),), paths["resize_grow"])

    class NonZero(nn.Module):
        def forward(self, x):
            return torch.nonzero(x)

    three, five = torch.zeros(4, 8), torch.zeros(4, 8)
    three.view(-1)[[1, 9, 30]] = 1.0
    five.view(-1)[[0, 2, 4, 6, 8]] = 1.0
    import rducc  # noqa: PLC0415

    rducc.compile(NonZero(), (three,), opt_level=2).save(paths["sized_program"])
    np.save(paths["other_count"], five.numpy())

    class Repeats(nn.Module):
        def forward(self, r, rows):
            repeated = rows.repeat_interleave(r, dim=0)
            torch._check(repeated.shape[0] <= 6)
            return repeated.sum(0)

    rducc.compile(Repeats(), (torch.tensor([1, 2, 1]), torch.randn(3, 4)), opt_level=0).save(paths["repeats_program"])
    np.save(paths["seven_repeats"], np.array([3, 2, 2]))
    np.save(paths["repeats_rows"], np.ones((3, 4), dtype=np.float32))

    class FloatSize(nn.Module):
        def forward(self, x, y):
            n = torch.sym_int(x.max().item() * 3)
            torch._check(n >= 1)
            torch._check(n <= 6)
            return y.narrow(0, 0, n).sum(0)

    rducc.compile(FloatSize(), (torch.tensor([0.5, 1.2]), torch.randn(6, 2)), opt_level=0).save(
        paths["float_size_program"])
    np.save(paths["float_size_x"], np.array([0.5, 0.4], dtype=np.float32))
    np.save(paths["float_size_y"], np.ones((6, 2), dtype=np.float32))

    class Window(nn.Module):
        def forward(self, i, y):
            return y.narrow(0, i.item(), 2) * 2

    rducc.compile(Window(), (torch.tensor(1), torch.randn(5, 2)), opt_level=0).save(paths["window_program"])
    np.save(paths["window_past_end"], np.array(4))
    np.save(paths["window_rows"], np.ones((5, 2), dtype=np.float32))

    class TopK(nn.Module):
        def forward(self, k, y):
            return torch.topk(y, k.item()).values.sum(-1)

    rducc.compile(TopK(), (torch.tensor(2), torch.randn(3, 6)), opt_level=0).save(paths["topk_program"])
    np.save(paths["topk_seven"], np.array(7))
    np.save(paths["topk_rows"], np.ones((3, 6), dtype=np.float32))

    class EvenPrefix(nn.Module):
        def forward(self, n, y):
            e = n.item()
            torch._check(e % 2 == 0)
            return y[:e].sum(0)

    rducc.compile(EvenPrefix(), (torch.tensor(2), torch.randn(6, 2)), opt_level=0).save(paths["even_program"])
    np.save(paths["even_three"], np.array(3))
    np.save(paths["even_rows"], np.ones((6, 2), dtype=np.float32))

    class AtLeastTwo(nn.Module):
        def forward(self, n, y):
            e = n.item()
            torch._check(e >= 2)
            torch._check(e <= y.shape[0])
            return y[:e].sum(0)

    _export(AtLeastTwo(), (torch.tensor(3), torch.randn(6, 2)), paths["at_least_two"])

    class Qr(nn.Module):
        def forward(self, x):
            return torch.linalg.qr(x * 2).R

    _export(Qr(), (torch.randn(4, 3),), paths["host_op"])
    torch.save(nn.Linear(4, 3).state_dict(), paths["checkpoint"])

    class AttentionDropoutBackward(nn.Module):
        def forward(self, q):
            out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, q, q, 0.0, False)
            return torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(q, q, q, q, out, lse, 0.1, False)

    _export(AttentionDropoutBackward(), (torch.randn(1, 2, 4, 8),), paths["attention_dropout"])
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
    _protocol_4_inputs(paths["pickle_protocol_4"])
    _example_plus(paths["opaque"], {"data/constants/opaque_obj_0": pickle.dumps({"not": "a tensor"})})
    _edited_json(paths["f_weight_shape"], "model_weights_config.json",
                 lambda config: config["config"]["fc2.bias"]["tensor_meta"].update(sizes=[{"as_int": 63}]))
    _edited_json(paths["f_weight_offset"], "model_weights_config.json",
                 lambda config: config["config"]["fc1.bias"]["tensor_meta"].update(storage_offset=[]))
    _edited_json(paths["f_graph_arg"], "models/model.json",  # fc2's linear reads fc1.weight
                 lambda model: model["graph_module"]["graph"]["nodes"][2]["inputs"][1]["arg"]["as_tensor"]
                 .update(name="p_fc1_weight"))


def _edited_json(path: Path, member: str, edit) -> None:
    """A copy of the example with `edit` applied to its JSON member `member`."""
    import json

    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(path, "w") as archive:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith(member):
                document = json.loads(data)
                edit(document)
                data = json.dumps(document).encode()
            archive.writestr(info, data)


def _protocol_4_inputs(path: Path) -> None:
    """The example with its sample inputs saved by torch.save(pickle_protocol=4)
    (torch warns "Detected pickle protocol 4" on loading it, then refuses it)."""
    import io

    import torch

    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(path, "w") as archive:
        [name] = [n for n in source.namelist() if n.endswith("sample_inputs/model.pt")]
        saved = io.BytesIO()
        torch.save(torch.load(io.BytesIO(source.read(name)), weights_only=True), saved, pickle_protocol=4)
        for info in source.infolist():
            archive.writestr(info, saved.getvalue() if info.filename == name else source.read(info))


def _example_plus(path: Path, members: dict[str, bytes], compression: int = zipfile.ZIP_STORED) -> None:
    """A copy of the example archive with `members` added below its root folder."""
    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(path, "w") as archive:
        for info in source.infolist():
            archive.writestr(info, source.read(info))
        root = source.namelist()[0].split("/")[0]
        for name, data in members.items():
            archive.writestr(f"{root}/{name}", data, compress_type=compression)


SPARSE_BYTES = 2 << 30
"""The size of the sparse files of item 10: 2 GiB a file that nothing may read."""


def _sparse_member(path: Path, suffix: str, size: int = SPARSE_BYTES) -> None:
    """The example archive with its (stored) member ending `suffix` moved last and
    grown to `size` bytes: a hole in a sparse file (its CRC left as it was)."""
    import struct

    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(path, "w") as archive:
        infos = source.infolist()
        [big] = [info for info in infos if info.filename.endswith(suffix)]
        for info in [info for info in infos if info is not big] + [big]:
            archive.writestr(info, source.read(info))
    data = path.read_bytes()
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo(big.filename)
    name_and_extra = sum(struct.unpack_from("<HH", data, info.header_offset + 26))
    start = info.header_offset + 30 + name_and_extra
    head, tail = bytearray(data[:start]), bytearray(data[start + info.compress_size:])
    struct.pack_into("<II", head, info.header_offset + 18, size, size)  # the local header's sizes
    struct.pack_into("<II", tail, tail.rfind(b"PK\x01\x02") + 20, size, size)  # its central entry's
    end = tail.rfind(b"PK\x05\x06") + 16  # the central directory's offset moves past the hole
    struct.pack_into("<I", tail, end, struct.unpack_from("<I", tail, end)[0] + size - info.compress_size)
    with path.open("wb") as stream:
        stream.write(head)
        stream.seek(start + size)
        stream.write(tail)


def _sparse_files(paths: dict[str, Path], directory: Path) -> None:
    """Files of 2 GiB whose headers say so, for what must be refused unread."""
    import json

    import numpy as np

    header = np.lib.format.header_data_from_array_1_0(np.zeros((1, 1), np.float32))
    header["shape"] = (32768, 16384)
    with paths["x_sparse"].open("wb") as stream:
        np.lib.format.write_array_header_1_0(stream, header)
        stream.truncate(stream.tell() + SPARSE_BYTES)
    good = (directory / "placed.safetensors").read_bytes()
    length = int.from_bytes(good[:8], "little")
    entries = json.loads(good[8:8 + length])
    body = good[8 + length:]
    start, end = entries.pop("fc1.bias")["data_offsets"]
    rest = body[:start] + body[end:]
    for entry in entries.values():  # the bytes after fc1.bias's move down
        if entry["data_offsets"][0] >= end:
            entry["data_offsets"] = [n - (end - start) for n in entry["data_offsets"]]
    entries["fc1.bias"] = _f32([len(rest), len(rest) + SPARSE_BYTES], (SPARSE_BYTES // 4,))
    text = json.dumps(entries).encode()
    with paths["w_sparse"].open("wb") as stream:
        stream.write(len(text).to_bytes(8, "little") + text + rest)
        stream.truncate(stream.tell() + SPARSE_BYTES)
    _sparse_member(paths["member_sparse"], "weights/weight_0")
    _sparse_member(paths["member_text"], "models/model.json")


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
    np.save(paths["x_wide"], np.zeros((5, 8), np.float32))
    np.save(paths["x_f64"], np.zeros((4, 32), np.float64))
    np.save(paths["x_object"], np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    paths["x_text"].write_text("4 32\n1.0 2.0\n")
    np.save(paths["x4"], np.full(4, 0.5, np.float32))
    np.save(paths["n_huge"], np.full(4, 1e12, np.float32))
    np.save(paths["i32_min"], np.full(4, np.iinfo(np.int32).min, np.int32))
    np.save(paths["i32_minus_one"], np.full(4, -1, np.int32))


def _training_files(paths: dict[str, Path]) -> None:
    """A model returning its loss, broken ones, its training step and batches for it."""
    import numpy as np
    import torch
    from torch import nn

    from rducc.tools import cli

    class LossOf(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 4)

        def forward(self, x, y):
            return nn.functional.cross_entropy(self.fc(x), y)

    class PerSample(LossOf):
        def forward(self, x, y):
            return nn.functional.cross_entropy(self.fc(x), y, reduction="none")

    torch.manual_seed(0)
    example = (torch.randn(3, 8), torch.tensor([0, 1, 2]))
    torch.export.save(torch.export.export(LossOf(), example), str(paths["loss_model"]))
    torch.export.save(torch.export.export(PerSample(), example), str(paths["vector_loss"]))
    torch.export.save(torch.export.export(LossOf().requires_grad_(False), example), str(paths["frozen_model"]))

    class BagLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bag = nn.EmbeddingBag(10, 4, scale_grad_by_freq=True)

        def forward(self, ids, offsets):
            return self.bag(ids, offsets).square().mean()

    bags = (torch.tensor([1, 2, 1, 3]), torch.tensor([0, 2]))
    torch.export.save(torch.export.export(BagLoss(), bags), str(paths["bag_by_frequency"]))

    class ZetaLoss(LossOf):
        def forward(self, x):
            return torch.special.zeta(self.fc(x).exp() + 1.5, 2.0).mean()

    torch.export.save(torch.export.export(ZetaLoss(), example[:1]), str(paths["no_derivative"]))

    class MaxNormLoss(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(10, 4, max_norm=1.0)

        def forward(self, ids):
            return self.embed(ids).square().mean()

    with torch.enable_grad():
        torch.export.save(torch.export.export(MaxNormLoss(), bags[:1]), str(paths["parameter_write"]))
    assert cli.main([str(paths["loss_model"]), "--train", "-q", "-o", str(paths["step"])]) == 0
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((5, 3, 8)).astype(np.float32), rng.integers(0, 4, (5, 3))
    np.savez(paths["batches_shape"], x=rng.standard_normal((5, 3, 9)).astype(np.float32), y=y)
    np.savez(paths["batches_missing"], x=x)
    np.savez(paths["batches_counts"], x=x, y=y[:4])
    batch = torch.export.Dim("batch")
    torch.export.save(torch.export.export(LossOf(), example, dynamic_shapes=({0: batch}, {0: batch})),
                      str(paths["dynamic_loss"]))
    assert cli.main([str(paths["dynamic_loss"]), "--train", "--shapes", "batch=2", "-O0", "-q",
                     "-o", str(paths["loss_buckets"])]) == 0
    np.savez(paths["batches_uncovered"], **{"x.0": x[0, :2], "y.0": y[0, :2], "x.1": x[:2, :2].reshape(4, 8),
                                            "y.1": y[:2, :2].reshape(4)})
    np.savez(paths["batches_gap"], **{"x.0": x[0, :2], "y.0": y[0, :2], "x.2": x[1, :2], "y.2": y[1, :2]})


def _index_files(paths: dict[str, Path]) -> None:
    import numpy as np

    np.save(paths["ids_past_end"], np.array([0, 7, 1], np.int64))
    np.save(paths["ids_negative"], np.array([0, -1, 1], np.int64))


def _division_files(paths: dict[str, Path]) -> None:
    """Integer division programs (compiled from torch) and a divisor holding a zero."""
    import numpy as np
    import rducc
    import torch

    class Divide(torch.nn.Module):
        def __init__(self, remainder: bool) -> None:
            super().__init__()
            self.remainder = remainder

        def forward(self, a, b):
            return torch.fmod(a, b) if self.remainder else a // b

    a, b = torch.tensor([7, -7, 5]), torch.tensor([2, 1, 3])
    for key, remainder in (("int_floor_divide", False), ("int_fmod", True)):
        rducc.compile(Divide(remainder), (a, b), opt_level=2).save(paths[key])
    np.save(paths["ints"], a.numpy())
    np.save(paths["ints_zero"], np.array([2, 0, 3], np.int64))


def _safetensors(path: Path, header: object, body: bytes = b"", raw: bytes | None = None) -> None:
    import json

    text = raw if raw is not None else json.dumps(header).encode()
    path.write_bytes(len(text).to_bytes(8, "little") + text + body)


def _f32(offsets: list, shape: object = (1,)) -> dict:
    return {"dtype": "F32", "shape": list(shape) if isinstance(shape, tuple) else shape, "data_offsets": offsets}


_BAD_HEADERS: dict[str, tuple[object, bytes]] = {
    "w_negative": ({"a": _f32([-4, 0])}, bytes(4)),
    "w_alias": ({"a": _f32([0, 8], (2,)), "b": _f32([0, 8], (2,))}, bytes(8)),
    "w_list": ([1, 2], b""),
    "w_entry": ({"a": 5}, b""),
    "w_no_offsets": ({"a": {"dtype": "F32", "shape": [1]}}, bytes(4)),
    "w_three_offsets": ({"a": _f32([0, 4, 8])}, bytes(8)),
    "w_string_offsets": ({"a": _f32(["0", "4"])}, bytes(4)),
    "w_string_shape": ({"a": _f32([0, 4], "4")}, bytes(4)),
    "w_huge_shape": ({"a": _f32([0, 4], (2**62, 2**62))}, bytes(4)),
    "w_gap": ({"a": _f32([0, 4]), "b": _f32([8, 12])}, bytes(12)),
    "w_dtype": ({"a": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 8]}}, bytes(8)),
    "w_metadata": ({"__metadata__": {"k": 1}, "a": _f32([0, 4])}, bytes(4)),
}
"""Malformed safetensors headers: key -> (header, body)."""

_HOSTILE_TARGETS = {
    "t_huge_int": 'inherits = "sn40l"\npcus = 1000000000000000000000000000000\n',
    "t_cycle": 'inherits = "./cycle.toml"\nname = "cycle"\n',
    "t_i64": '{"inherits": "sn40l", "sram_bytes": 9223372036854775808}',
    "t_inf": 'inherits = "sn40l"\nhbm_bandwidth = inf\n',
    "t_tiny": 'inherits = "sn40l"\nhbm_bandwidth = 1e-300\n',
    "t_nan_latency": 'inherits = "sn40l"\ndma_latency_s = nan\n',
    "t_bad_range": 'inherits = "sn40l"\nkernel_launch_s = { value = 5e-6, low = 6e-6, high = 9e-6, assumed = true, '
                   'source = "assumed" }\n',
}


def _hostile_programs(paths: dict[str, Path], placed: str) -> None:
    """Programs that verified before but crashed or hung the runtime."""
    alloc = next(line for line in placed.splitlines() if "%x_sram = tier.alloc offset " in line)
    offset = alloc.split("offset ")[1].split(" ")[0]
    buffer_type = alloc.split(" : ")[1].split(" loc(")[0]
    paths["p_use_after_free"].write_text(placed.replace(alloc, f"{alloc}\n    tier.dealloc %x_sram : {buffer_type}"))
    paths["p_hbm"].write_text(placed.replace(alloc, f"{alloc}\n    %big = tier.alloc : !tier.buffer<hbm, 1000000000000xf32>"))
    loop = ("    %lo = arith.constant 0 : index\n    %hi = arith.constant 4 : index\n"
            "    %st = arith.constant 0 : index\n    scf.for %i = %lo to %hi step %st {\n    }\n")
    ret = placed.index("    func.return")
    paths["p_step0"].write_text(placed[:ret] + loop + placed[ret:])
    capacity = placed.split("tier.sram_capacity = ")[1].split(" ")[0]
    paths["p_capacity"].write_text(placed.replace(f"tier.sram_capacity = {capacity}", "tier.sram_capacity = 1000000000000000")
                                   .replace(f"alloc offset {offset} ", "alloc offset 999999999999000 "))
    dma = next(line for line in placed.splitlines() if line.lstrip().startswith("tier.dma %x -> %x_sram"))
    paths["f_unwritten"].write_text(placed.replace(dma + "\n", ""))
    paths["p_digits"].write_text(placed.replace(f"alloc offset {offset} ", f"alloc offset {'9' * 6000} "))
    paths["p_deep_attr"].write_text('builtin.module {\n  "test.op"() {a = ' + "[" * 50_000 + "]" * 50_000 + "} : () -> ()\n}\n")
    paths["p_deep_type"].write_text('builtin.module {\n  "test.op"() : () -> ' + "tensor<" * 3000 + "f32" + ">" * 3000 + "\n}\n")
    paths["p_deep_region"].write_text("builtin.module {\n" + '"test.op"() ({\n' * 3000 + "}) : () -> ()\n" * 3000 + "}\n")


def _hostile_files(paths: dict[str, Path], directory: Path) -> None:
    """Issue 20, items 6-10: bad headers, FIFOs, programs naming devices, bad targets."""
    import os

    import numpy as np

    for key, (header, body) in _BAD_HEADERS.items():
        _safetensors(paths[key], header, body)
    _safetensors(paths["w_deep"], None, raw=b"[" * 100_000 + b"]" * 100_000)
    paths["w_header_size"].write_bytes((2**60).to_bytes(8, "little") + b"{}")
    _example_plus(paths["zip_bomb"], {"extra/bomb": bytes(64 << 20)}, zipfile.ZIP_DEFLATED)
    paths["model_copy"].write_bytes(EXAMPLE.read_bytes())
    with zipfile.ZipFile(EXAMPLE) as source, zipfile.ZipFile(paths["no_program"], "w") as archive:
        for info in source.infolist():
            if not info.filename.endswith("models/model.json"):
                archive.writestr(info, source.read(info))
    _edited_json(paths["bad_program_json"], "models/model.json",
                 lambda document: document["graph_module"]["graph"].update(tensor_values=3))
    paths["model_link"].symlink_to(paths["model_copy"])
    for key in ("fifo", "fifo_toml", "fifo_pt2", "fifo_mlir"):
        os.mkfifo(paths[key])
    placed = paths["placed"].read_text()
    weights = f'rdu.weights = "{paths["placed"].with_suffix(".safetensors").name}"'
    assert weights in placed
    paths["devzero_weights"].write_text(placed.replace(weights, 'rdu.weights = "/dev/zero"'))
    start = placed.index("rdu.target = #rdu.target<")
    end = placed.index('">', start) + 2
    paths["fifo_target"].write_text(placed[:start] + f'rdu.target = "{paths["fifo_toml"]}"' + placed[end:])
    np.savez(paths["x_npz"], x=np.load(paths["x"]))
    good = paths["x"].read_bytes()
    header = good[10:128].decode()
    claimed = header.replace("(4, 32)", "(1000000, 1000000)").rstrip()
    claimed += " " * (len(header) - 1 - len(claimed)) + "\n"
    assert len(claimed) == len(header)
    paths["x_huge"].write_bytes(good[:10] + claimed.encode() + good[128:])
    _hostile_programs(paths, placed)
    for key, text in _HOSTILE_TARGETS.items():
        paths[key].write_text(text)
    paths["t_not_utf8"].write_bytes(b'inherits = "sn40l"\nname = "\xff\xfe"\n')


def _deployment_files(paths: dict[str, Path], directory: Path) -> None:
    """Deployment directories of the placed example as models a and b, good and bad."""
    import json
    import shutil

    modeled = {"forward_s": 1e-6, "tokens_per_call": 1, "prefill_s_per_token": 1e-6, "decode_step_s": 1e-6}
    good = {
        "format": "rducc-deployment", "version": 1, "target": "sn40l", "sockets": 1, "ddr_bytes": 10**12,
        "hbm_bytes": 64 * 10**9, "hbm_reserve_bytes": 16 * 10**9, "hbm_weight_budget_bytes": 48 * 10**9,
        "eviction": "lru",
        "models": [{"name": name, "source": "mlp.pt2", "program": "placed.mlir", "weights": "placed.safetensors",
                    "weight_bytes": 27688, "resident": True, "shares_code_with": None, "router": False,
                    "modeled": modeled} for name in ("a", "b")],
    }
    edits = {
        "dep_two": lambda d: None,
        "dep_missing": lambda d: d.pop("sockets"),
        "dep_type": lambda d: d["models"][0].update(weight_bytes="4"),
        "dep_version": lambda d: d.update(version=2),
        "dep_twice": lambda d: d["models"][1].update(name="a"),
        "dep_no_file": lambda d: d["models"][1].update(program="gone.mlir"),
        "dep_huge": lambda d: d["models"][0].update(weight_bytes=2**60),
    }
    for key, edit in edits.items():
        paths[key].mkdir()
        for name in ("placed.mlir", "placed.safetensors"):
            shutil.copy(directory / name, paths[key] / name)
        manifest = json.loads(json.dumps(good))
        edit(manifest)
        (paths[key] / "manifest.json").write_text(json.dumps(manifest, indent=2))


def make_inputs(directory: Path) -> dict[str, str]:
    """Build every input file of the table in `directory`; placeholder -> path."""
    paths = {key: directory / name for key, (name, _) in INPUTS.items()}
    paths["model"] = EXAMPLE
    paths["empty"].write_bytes(b"")
    paths["directory"].mkdir()
    paths["pickle"].write_bytes(pickle.dumps({"weights": [1.0, 2.0], "name": "mlp"}))
    paths["random"].write_bytes(bytes((i * 197 + 89) % 256 for i in range(4096)))
    paths["onnx"].write_bytes(b"\x08\x07\x12\x07pytorch" + bytes(64))
    for key, text in {**_TARGETS, **_MLIR, **_GENERATE_CONFIGS}.items():
        paths[key].write_text(text)
    for key in ("plugin_syntax", "plugin_raises", "plugin_faulty", "plugin_exits"):
        paths[key].write_text((PLUGIN_INPUTS / INPUTS[key][0]).read_text())
    paths["silu_graph"].write_text((ROOT / "test" / "examples" / "fuse-silu.mlir").read_text())
    _index_files(paths)
    _division_files(paths)
    _archive_files(paths)
    _model_files(paths)
    _program_files(paths, directory)
    _training_files(paths)
    _hostile_files(paths, directory)
    _serving_files(paths)
    _deployment_files(paths, directory)
    _sparse_files(paths, directory)
    return {key: str(path) for key, path in paths.items()}


def _serving_files(paths: dict[str, Path]) -> None:
    """A deployment manifest (docs/serving.md) and bad traces for it."""
    import json

    paths["deployment"].mkdir()
    models = [{"name": name, "source": f"{name}.pt2", "program": f"{name}.mlir", "weights": f"{name}.safetensors",
               "weight_bytes": 10**9, "resident": True, "shares_code_with": None, "router": name == "r",
               "modeled": {"forward_s": 1e-3, "tokens_per_call": 10, "prefill_s_per_token": 1e-4,
                           "decode_step_s": 1e-3}} for name in ("r", "x")]
    manifest = {"format": "rducc-deployment", "version": 1, "target": "sn40l-8", "sockets": 8,
                "ddr_bytes": 12 * 10**12, "hbm_bytes": 512 * 10**9, "hbm_reserve_bytes": 128 * 10**9,
                "hbm_weight_budget_bytes": 384 * 10**9, "eviction": "lru", "models": models}
    (paths["deployment"] / "manifest.json").write_text(json.dumps(manifest))
    good = '{"model": "x", "prompt_tokens": 5, "output_tokens": 2, "arrival_s": 0}\n'
    paths["s_good"].write_text(good)
    paths["link_loop"].symlink_to(paths["link_loop"].name)
    paths["s_late"].write_text(good.replace('"arrival_s": 0', '"arrival_s": 1e8'))
    paths["s_long_number"].write_text(good.replace('"arrival_s": 0', '"arrival_s": ' + "1" * 5000))
    paths["s_not_jsonl"].write_text(good + "model=x prompt_tokens=5\n")
    paths["s_unknown_model"].write_text(good.replace('"x"', '"zz"'))
    paths["s_negative"].write_text(good.replace("5", "-5"))
    paths["s_not_router"].write_text(good.replace("}", ', "router": "x"}'))


# --------------------------------------------------------------------------
# How many bad inputs the suite tries (`error_cases.py --count`)
# --------------------------------------------------------------------------

HOSTILE_TESTS = (
    "test_errors.py", "test_hostile_files.py", "test_loader.py", "test_index_bounds.py", "test_tool_exits.py",
    "test_training_mode.py", "test_sram_live.py", "test_dynamo.py", "test_option_spelling.py",
    "test_plugin_routes.py", "test_doc_paths.py",
)
"""The test files about bad, hostile or surprising input (issue 20), besides the table."""


GOOD_INPUT = re.compile(r"::test_\w*(in_range|loads|reads_back|is_live|the_same_values|match_eager)")
"""Tests of those files that check a good input (the controls), not counted."""


def count_bad_inputs() -> dict[str, int]:
    """Bad inputs the suite tries: the table's rows, and each collected test (one
    parametrization each) of `HOSTILE_TESTS` beyond the table's own runs."""
    import subprocess

    files = [str(Path(__file__).parent / name) for name in HOSTILE_TESTS if (Path(__file__).parent / name).exists()]
    listed = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *files],
                            capture_output=True, text=True, cwd=ROOT, check=True).stdout
    counts = {"the error table (docs/errors.md)": len(CASES)}
    for line in listed.splitlines():
        if "::" not in line or "test_bad_input_is_one_clear_error[" in line or GOOD_INPUT.search(line):
            continue
        name = Path(line.split("::")[0]).name
        counts[name] = counts.get(name, 0) + 1
    return counts


if __name__ == "__main__":
    if sys.argv[1:] == ["--count"]:
        counts = count_bad_inputs()
        for where, n in counts.items():
            print(f"{n:5d}  {where}")
        print(f"{sum(counts.values()):5d}  bad inputs the tests try")
    else:
        DOC.write_text(render_doc())
        print(f"wrote {DOC.relative_to(ROOT)} ({len(CASES)} cases)", file=sys.stderr)
