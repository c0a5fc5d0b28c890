"""What rducc covers of Core ATen, and what it does not yet.

`python -m rducc.tools.coverage > docs/aten-coverage.md` writes the coverage
document from the code: the supported overloads come from the importer's
converter table, the missing ones from `MISSING_OPS` below (a test checks
that none of them is supported and that each gives the unsupported-operator
error).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from rducc.frontend.importer import supported_ops

MISSING_OPS: dict[str, str] = {
    # reductions and scans
    # data movement and indexing
    # convolution, pooling, resampling
    # creation
    # other
}
"""ATen overloads rducc does not import yet, with what is missing for each."""

PARTIAL_FORMS: dict[str, str] = {
    "aten._local_scalar_dense.default": (
        "a model's output (`tensor.item()` returned as a Python number), "
        "arithmetic on it, and a tensor op's Tensor (or Scalar with a Tensor "
        "twin) argument (a rank-0 tensor), a creation op's fill value (`torch.full`), a Scalar argument of an op "
        "with no Tensor twin (`F.leaky_relu(x, a)`, `F.elu(x, alpha=a)`: torch's decomposition of the op, the "
        "number its rank-0 tensor); refused when that decomposition computes with the number in Python "
        "(`aten.elu(x, 2.0, a)`: alpha times scale) or branches on it, naming the op, or it becomes a size"
    ),
    "aten.index.Tensor": (
        "a boolean mask selects as many elements as in the example inputs "
        "(checked at run time: another count is an error naming the op); a "
        "pointwise update through a mask (`y[mask] += 1`, `y[m] = f(x[m]) * w`, "
        "with or without accumulate, the mask written twice too) is a `where` "
        "over the whole tensor, right for every mask; refused without example "
        "inputs"
    ),
    "aten.nonzero.default": "as many nonzeros as in the example inputs (checked at run time); refused without"
    " example inputs",
    "aten.bincount.default": "the example's length (checked at run time); refused without example inputs",
    "aten.masked_select.default": "as many elements as in the example inputs (checked at run time); refused"
    " without example inputs",
    "aten.as_strided.default": "refused on a view of a storage no node of the graph holds (a model input with"
    " gaps between its elements); dense inputs and parameters in any layout (channels-last) read their storage",
    "aten._embedding_bag_forward_only.default": "1-D indices with offsets only; bag_size and max_indices refused"
    " with include_last_offset (torch's meta shapes for them differ from its CPU results)",
    "aten._embedding_bag.default": "1-D indices with offsets only",
    "aten.index_put.default": "a boolean mask with values of their own per masked element (or with other"
    " indices) selects as many elements as in the example inputs (checked at run time); one value, or one slice"
    " for every masked element, is a select for any count",
}
"""Supported overloads with forms that are refused, each with a clear reason."""

OTHER_GAPS: dict[str, str] = {
    "uint8": "supported (element type `ui8`): wrap-around arithmetic, torch's promotion and casts, reductions,"
    " indexing, quantize/dequantize per tensor and per channel",
    "uint16, uint32, uint64": "refused with a clear dtype error (torch itself has few ops for them), but for a"
    " uint64 result the program returns: `hash_tensor` (each element widened to 64 bits, xor-reduced by halves)"
    " and `view(torch.uint64)` of int64 are computed as int64 bits and read as uint64 at the program's edge"
    " (`rdu.output_edges`); such a value read inside the program is one error naming the op and source line",
    "sparse layouts": "a sparse result the program returns (`to_sparse` with sparse_dim, layout, blocksize or"
    " dense_dim, `to_sparse_csr`/`csc`/`bsr`/`bsc`) is computed dense and converted at the program's edge by"
    " torch's own `Tensor.to_sparse` (`rducc.Program` returns the sparse tensor, `rducc-run` writes its parts:"
    " `output_N.indices`, `.values`, ..., `.shape`); a sparse tensor read inside the program (`torch.sparse.mm`,"
    " `to_dense`) is one error naming the op and source line: tensors are dense on the chip",
    "float8": "float8_e4m3fn and float8_e5m2 supported (element types f8E4M3FN, f8E5M2; 1 byte each in memory,"
    " computed in f32): casts round to nearest even as torch does (e4m3fn saturating at +-448), `_scaled_mm`"
    " (per-tensor or row/column scales, bias, scale_result, out_dtype), layout ops, float8 weights in the"
    " sidecar (safetensors F8_E4M3/F8_E5M2); the fnuz and e8m0 variants are refused with a clear dtype error",
    "complex dtypes": "computed as pairs of reals (a trailing dim of 2, the view_as_real layout): view_as_real/complex,"
    " polar, torch.complex, complex mul/div/add/sub/abs/angle/conj/exp/exp2/expm1/log/log2/log10/log1p/"
    "sqrt/rsqrt/tanh/tan/sin/cos/sinh/cosh/asin/acos/atan/asinh/acosh/atanh/sigmoid/reciprocal/pow/where/eq/ne/"
    "isfinite/isnan/isinf, nan_to_num (each part), mm and"
    " bmm (einsum) as real matmuls, layout ops (pad and flip too; any view"
    " torch's schema marks as one, diagonal and unfold among them, and roll, tril/triu, gather, cumsum act on"
    " each part), sums, means, prod and cumprod, scatter_reduce/index_reduce prod (in polar form; sum and mean on"
    " each part), logcumsumexp (on torch's branch of the"
    " imaginary part) and var/std (the real parts'"
    " spread plus the imaginary parts'); the FFTs as exact DFT matrices; Cholesky (L L^H) and its solves; matrix_exp"
    " (the real block matrix [[A, -B], [B, A]] on the host, as a real one); complex parameters,"
    " buffers and constants are stored as their pairs; complex64/complex128 model inputs and outputs are pairs"
    " inside the program (`rducc.Program` and `rducc-run` take and give complex arrays), view_as_real/complex of an"
    " input or output, complex linalg_vector_norm (torch.norm decomposes to it), cat of complex with real or"
    " integer tensors (type promotion), rfft2/stft results returned, embedding rows of a complex table (each part);"
    " an op a host call may run (on the host allow-list, not pointwise: linalg_qr, _linalg_svd, _linalg_eigh,"
    " linalg_eig, pinv, lu, ...) runs torch's complex kernel on the host, its complex operands and results crossing"
    " as pairs (`rdu.host_call` pairs), as does linalg_eig of a real matrix (complex results); training through"
    " them (complex QR, singular values, eigh, eigenvalues) gets eager's gradients; refused: a training loss"
    " through a complex SVD's or eig's vectors (torch's backward checks their phases on the values),"
    " scatter_reduce/index_reduce amax/amin (no order; torch refuses them too) and any complex op with no pair"
    " form, naming the op",
    "custom ops": "a torch.library.custom_op is traced into ATen from its Python implementation; one that cannot"
    " be traced (it reads tensor values, calls numpy) runs on the host (`rdu.host_call` of `#rdu.custom`, its"
    " fake kernel's shapes), once the user names its module (`rducc-run --import-module`, `import_modules=`);"
    " without host ops it is refused naming it; transformers.grouped_mm_fallback is rducc's own op"
    " (`rdu.grouped_matmul`: each row by its own expert);"
    " an archive calling an op this process does not register is refused naming the op and its package",
    "ops with no converter": "run on the host CPU (`rdu.host_call`: torch's CPU kernel, operands and results over"
    " the host link, the round trip in the cost model) when on the host-call allow-list"
    " (dialects/rdu/aten_allowlist.txt: functional, deterministic, not pointwise, a pure function of its tensor"
    " operands) and of static result shapes: linalg factorizations (svd, eigh, qr, lu, pinv, ...), mode,"
    " masked_scatter, segment_reduce, ...; `rducc` prints one warning line naming them; `--no-host-ops`"
    " (`host_ops=False`) refuses them instead",
    "torch.linalg.lstsq": "the default driver (gelsy, CPU's): the minimum-norm solution (`pinv(A) @ B`) and the"
    " rank, its residuals and singular values empty as torch's; refused naming the driver: gels, gelsd, gelss"
    " (their residuals exist only when A has full rank, a size that depends on the values)",
    "training mode": "batch norm in training mode compiled (batch statistics; running mean, variance and"
    " num_batches_tracked written back as buffer or input updates); a random torch.nn layer (Dropout,"
    " AlphaDropout, RReLU) left in training mode is compiled on rducc's random ops (checked as distributions)"
    " with one warning naming each op: export the model in eval() mode for inference",
    "dynamic shapes": (
        "a program exported with `dynamic_shapes` (Dims with min/max, derived dims such as `2*seq`) is compiled "
        "once per combination of `--shapes` sizes (`rducc.compile(..., shapes=...)`) into one module sharing one "
        "weights file; each size is checked against the Dims' ranges and torch's recorded guards; `rducc-run` and "
        "`rducc.Program` run the bucket matching the inputs' shapes ([shapes.md](shapes.md)); with `--train` "
        "(`rducc.compile_training(..., shapes=...)`) one training step a bucket, all sharing one state (parameters, "
        "buffers, optimizer state), each batch running the bucket of exactly its shapes ([training.md](training.md), "
        "\"Several shapes\"); refused: a dynamic export without `--shapes` (the error lists its dims and an example "
        "`--shapes`), a size outside a Dim's range, inputs of a shape no bucket was compiled for, a training batch "
        "padded up to a larger bucket (it would change the loss and its gradients)"
    ),
    "data-dependent sizes": (
        "compiled for the example inputs' values and checked at run time "
        "(`rdu.check`: another value is one error naming the op and source line):"
        " bincount, nonzero, boolean masks, masked_select, sizes read with "
        "`.item()` (view, reshape, narrow with a length read from a tensor, "
        "new_zeros, split by per-expert counts; the error names the read, the "
        "value compiled for and the statement); numbers read with "
        "`.item()`/`.tolist()` that a tensor op takes (`x * a`, `x * (a.item() + "
        "b.item())`, `n > a`, `clamp(min=a)`) are values, not sizes: computed in "
        "the program as rank-0 tensors in the dtype torch computes the op in; "
        "`unique(sorted=True)` (with counts and inverse; `torch._unique` too), `unique(x, dim=d)` (its slices "
        "in lexicographic order), `unique_consecutive` (flat "
        "or along a dim), `repeat_interleave` by a tensor of repeats and `bincount` with "
        "weights, for the example's number of values; `tensor_split` by a tensor of indices for any split "
        "points where its pieces are padded (mixture-of-experts routing below), else the example's; a slice "
        "of fixed length at a start read with `.item()` (`x.narrow(0, i.item(), 2)`) is computed for every "
        "start; refused: other ops of data-dependent size, "
        "a program without example inputs; "
        "`unique(sorted=False)` compiles as sorted where the example's eager "
        "result is ascending (torch's CPU kernel sorts either way)"
    ),
    "mixture-of-experts routing": (
        "per-expert counts (`torch.where(choice == e)`/`nonzero` rows, `x[choice "
        "== e]` boolean masks (`h[attention_mask.bool()]` of more than one dim "
        "too), `split` by counts read with `.tolist()`) compiled padded to a "
        "capacity (torch.export's recorded bound, every token to one expert, or "
        "`--capacity ROWS`/`capacity=`): the pad masked where it reaches a result"
        " (scatters and index_add/index_put/index_copy through the rows, sum, "
        "mean, var/std, vector norms of order 0 or more, any and softmax over them, stack/cat beside the rows, "
        "amax and amin over them (the pad "
        "-inf/+inf; a count of 0 is a run-time error, as eager's empty "
        "reduction), matmuls contracting them as attention's keys and values do, "
        "cat of the pieces, with fixed tensors too: compacted to the example's "
        "total, another total one run-time error), a count above the capacity one run-time error naming"
        " the op and source line (a condition torch.export recorded on a count, a `torch._check`, too; a condition "
        "its recorded bound already is, not again); slices whose bounds are computed from `.item()` reads "
        "(`x[a:b]`, `narrow`, `tensor_split` by a tensor of indices), `split([n, 6 - n])` and topk's k so read are "
        "padded the same way; an `index_put` through several index columns of one count (`out[w[:, 0], "
        "w[:, 1]] = ...` of an argwhere) is padded too, and a size of a padded result used as a number (returned,"
        " Python arithmetic, a Scalar argument) is the count read at run time; a count used otherwise (an "
        "`index_put` through a mask of more than one dim, a size computed from it) keeps"
        " the example's value, checked at run time"
    ),
    "storage views": "`view(dtype)` of the same, a smaller or a larger element size (the bits, little endian);"
    " `as_strided` of a channels-last (any dense layout) input or parameter; the prims torch's decomposition keeps"
    " (prod, sum, amax, amin, var, where, rev, clone, div, xor_sum (by halves) and the elementwise prims with an ATen"
    " twin); the view prims (transpose, squeeze, broadcast_in_dim, split_dim, view_of) as the ATen views they are,"
    " replaced before torch's whole-program decomposition (its functionalization refuses their aliasing results)",
    "Python numbers among a model's outputs": "supported: `tensor.item()` reads and constant numbers come back"
    " as Python int, float or bool (as rank-0 results in the MLIR);"
    " tensors in tuples, named tuples and dicts keep their structure",
    "arithmetic on Python numbers": (
        "supported: operator add/sub/mul/truediv/floordiv/mod/pow/neg/abs, "
        "math.floor/ceil/trunc and sym_float/sym_int on numbers read with "
        "`.item()` are computed in the program as rank-0 int64/float64 tensors "
        "and returned as Python numbers; a number a tensor op takes is its rank-0"
        " tensor (`x * a`, `n > a`, `clamp(min=a)`), the value a creation op fills its result with "
        "(`torch.full`, `full_like`, `new_full`, `torch.tensor(a)`) its tensor cast and expanded, a Scalar of an op "
        "with no Tensor twin (`leaky_relu`, `elu`, `softplus`, `celu`, `threshold`, `hardshrink`) through torch's "
        "decomposition of the op; refused: a number such a decomposition computes with in Python or branches on "
        "(the error names the op), `int(tensor)` (torch.export refuses it), and a number passed to a function whose "
        "Python code tests it before any op runs (`F.hardtanh`'s min <= max, `F.softshrink`'s lambd >= 0, "
        "`F.rrelu`, `torch.nan_to_num`): torch.export refuses it before rducc sees a graph; rducc's error names "
        "the user's line and the tensor form that exports (`torch.clamp(x, low, high)` with tensor bounds, "
        "`torch.where`)"
    ),
}
"""Gaps that are not one missing overload."""


def _overload(name: str) -> torch._ops.OpOverload | None:
    namespace, op, overload = name.split(".")
    packet = getattr(getattr(torch.ops, namespace), op, None)
    return getattr(packet, overload, None) if packet is not None else None


def is_core_aten(name: str) -> bool:
    """Whether torch tags the overload as Core ATen (`torch.Tag.core`)."""
    overload = _overload(name)
    return overload is not None and torch.Tag.core in overload.tags


@lru_cache(maxsize=1)
def core_aten_supported() -> tuple[str, ...]:
    """The supported overloads that torch tags as Core ATen."""
    return tuple(name for name in supported_ops() if is_core_aten(name))


SWEEP_HEADING = "## OpInfo sweep"
"""The section bench/op_sweep.py writes at the end of docs/aten-coverage.md (kept as it is)."""
COVERAGE_DOC = Path(__file__).resolve().parents[2] / "docs" / "aten-coverage.md"


def sweep_section(doc: Path = COVERAGE_DOC) -> str:
    """The OpInfo sweep's section of the coverage document, if there is one."""
    if not doc.is_file():
        return ""
    text = doc.read_text()
    at = text.find(SWEEP_HEADING)
    return "" if at < 0 else "\n" + text[at:]


def coverage_markdown() -> str:
    """docs/aten-coverage.md, generated from the converter table and MISSING_OPS
    (and the OpInfo sweep's section, which bench/op_sweep.py writes, kept)."""
    supported = supported_ops()
    core = set(core_aten_supported())
    lines = [
        "# Core ATen coverage",
        "",
        "Generated by `python -m rducc.tools.coverage > docs/aten-coverage.md`; a test",
        "(`test/python/test_aten_coverage.py`) fails when this file and the code disagree.",
        "",
        f"rducc imports **{len(supported)}** distinct overloads. **{len(core)}** of them",
        "carry torch's `core` tag; most of the others are ops that torch's default",
        "decomposition (`ExportedProgram.run_decompositions()`, which rducc runs) keeps",
        "as they are, such as `aten.signbit.default`, `aten.var_mean.correction` or",
        "`aten.linalg_vector_norm.default`, and a few are aliases (`aten.reshape.default`)",
        "that programs decomposed elsewhere may hold; four are PT2E's `quantized_decomposed`",
        "quantize/dequantize ops. Those that torch's decomposition keeps but rducc has no",
        "converter for (`aten.histc.default`, `aten._trilinear.default`, random ops with a",
        "generator, `prims.collapse.default`, ...) rducc decomposes itself, exactly, into ops it",
        "converts (`compiler/frontend/aten_rewrites.py`). `rducc --list-ops` prints the same list;",
        "`test/python/test_aten_coverage.py` runs each family through the whole pipeline",
        "at -O0 and -O2 against eager.",
        "",
        "Beyond this list, every ATen op that torch tags `pointwise` (`torch.Tag.pointwise`)",
        "with a functional schema, tensor inputs and constant other arguments is accepted",
        "generically, without a converter of its own: the special functions (`lgamma`,",
        "`digamma`, `polygamma`, `mvlgamma`, `i0`/`i1`, the Bessel functions and orthogonal",
        "polynomials, `zeta`, `igamma`, `erfcx`, `ndtri`, ...), `nextafter`, `frexp` (one map",
        "a result) and any such op a later torch adds. Each becomes an `rdu.map` whose body",
        "calls the op (`rdu.pointwise_call`, `compiler/frontend/aten_pointwise.py`), fused",
        "with its neighbours like any elementwise op; the runtime runs torch's own CPU",
        "kernel on whole arrays, and the cost model counts it as an assumed",
        "`ASSUMED_ALU_OPS` arithmetic ops an element (`dialects/rdu/pointwise.py`).",
        "`rducc --list-ops` lists the ops with converters only.",
        "",
        "## Not supported yet",
        "",
        "Each of these gives the unsupported-operator error",
        "(`rducc: error: the model uses N operators rducc cannot import: ...`), naming",
        "the op, its use count and the source line of its first use.",
        "",
        "| overload | what is missing |",
        "| --- | --- |",
        *(f"| `{name}` | {reason} |" for name, reason in sorted(MISSING_OPS.items())),
        "",
        "## Supported with refused forms",
        "",
        "| overload | refused forms |",
        "| --- | --- |",
        *(f"| `{name}` | {reason} |" for name, reason in sorted(PARTIAL_FORMS.items())),
        "",
        "## Other gaps",
        "",
        "| what | status |",
        "| --- | --- |",
        *(f"| {name} | {reason} |" for name, reason in OTHER_GAPS.items()),
        "",
        "## Supported",
        "",
        "| overload | Core ATen tag |",
        "| --- | --- |",
        *(f"| `{name}` | {'core' if name in core else ''} |" for name in supported),
        "",
    ]
    return "\n".join(lines) + sweep_section()


if __name__ == "__main__":
    print(coverage_markdown(), end="")
