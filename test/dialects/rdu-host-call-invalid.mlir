// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier error of `rdu.host_call`, one per chunk.

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"prims::sin.default">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'prims::sin.default': it is not an op of the aten namespace

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::no_such_op.default">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::no_such_op.default': there is no such ATen op overload

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::sin_.default">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::sin_.default': it mutates or aliases its arguments (not functional)

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::bernoulli.default">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::bernoulli.default': it is random (random ops have their own lowering)

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: Operation does not verify: 'rdu.host_call' has 1 results; aten.linalg_qr.default returns 2

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a, %a) tensors ["A"] : (tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' has 2 operands but binds 1 tensor arguments

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%h, %i = rdu.host_call #rdu.aten<"aten::mode.default", {dim = 0 : i64, mode = 1 : i64}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<3xf32>, tensor<3xi64>)
// CHECK: Operation does not verify: 'aten::mode.default' has no argument 'mode'

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r, %s = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] : (tensor<4xf32>) -> (!tier.buffer<sram, 4xf32>, tensor<4xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' operands and results must be all tensors or all buffers

// -----

%a = "test.op"() : () -> !tier.buffer<sram, 4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] : (!tier.buffer<sram, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 3x3xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' operand #0 is in sram: host calls read and write off-chip memory

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = 3 : i64}>(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'aten::linalg_qr.default' argument 'mode' (str) cannot be 3 : i64

// -----
// Hostile programs (issue 31): a host call may only run a pure function of its
// tensor operands on the allow-list; files, devices and fresh memory are refused.

%r = rdu.host_call #rdu.aten<"aten::from_file.default", {filename = "/etc/passwd", shared = true, size = 4 : i64}>() tensors [] : () -> tensor<4xi8>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::from_file.default': it is not on the list of ATen ops a host call may run

// -----

%r = rdu.host_call #rdu.aten<"aten::empty.memory_format", {size = [4 : i64]}>() tensors [] : () -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::empty.memory_format': it is not on the list

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::new_empty.default", {size = [1024 : i64]}>(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<1024xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::new_empty.default': it is not on the list

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::resize.default", {size = [1024 : i64]}>(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<1024xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::resize.default': it is not on the list

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::empty_like.default">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::empty_like.default': it is not on the list

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = "/tmp/x"}>(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'aten::linalg_qr.default' argument 'mode' cannot be "/tmp/x" (it may be complete, r, reduced)

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%u, %s, %v = rdu.host_call #rdu.aten<"aten::_linalg_svd.default", {driver = "gesvd"}>(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'aten::_linalg_svd.default' argument 'driver' cannot be "gesvd" (it may be none)

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%h, %i = rdu.host_call #rdu.aten<"aten::mode.default", {dim = "channels_last"}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<4xi64>)
// CHECK: Operation does not verify: 'aten::mode.default' argument 'dim' cannot be a string

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%l = "test.op"() : () -> tensor<2xi64>
%z = rdu.host_call #rdu.aten<"aten::segment_reduce.default", {reduce = "sum", unsafe = true}>(%a, %l) tensors ["data", "lengths"] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK: Operation does not verify: 'aten::segment_reduce.default' argument 'unsafe' must be false (it skips torch's index checks)

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%y = rdu.host_call #rdu.aten<"aten::sin.default">(%a) tensors ["self"] : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::sin.default': it is not on the list of ATen ops a host call may run

// -----

%a = "test.op"() : () -> tensor<1x2x12xf32>
%b = "test.op"() : () -> tensor<12xf32>
%q, %k, %v = rdu.host_call #rdu.aten<"aten::_transform_bias_rescale_qkv.default", {num_heads = 0 : i64}>(%a, %b) tensors ["qkv", "qkv_bias"] : (tensor<1x2x12xf32>, tensor<12xf32>) -> (tensor<1x0x2x4xf32>, tensor<1x0x2x4xf32>, tensor<1x0x2x4xf32>)
// CHECK: Operation does not verify: 'aten::_transform_bias_rescale_qkv.default' argument 'num_heads' must be at least 1 (torch divides by it), got 0

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.aten<"aten::_reshape_alias_copy.default", {size = [64 : i64], stride = [1 : i64]}>(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<64xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::_reshape_alias_copy.default': it is not on the list

// -----

%g = "test.op"() : () -> tensor<1x1x2x2xf32>
%x = "test.op"() : () -> tensor<1x1x4x4xf32>
%i = "test.op"() : () -> tensor<1x1x2x2xi64>
%r = rdu.host_call #rdu.aten<"aten::adaptive_max_pool2d_backward.default">(%g, %x, %i) tensors ["grad_output", "self", "indices"] : (tensor<1x1x2x2xf32>, tensor<1x1x4x4xf32>, tensor<1x1x2x2xi64>) -> tensor<1x1x4x4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::adaptive_max_pool2d_backward.default': it is not on the list

// -----

// A custom op's schema must be functional: one that writes its argument is refused.
%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"mylib::fill.default", "mylib::fill(Tensor(a!) x) -> Tensor(a!)">(%a) tensors ["x"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'mylib::fill.default': it mutates or aliases its arguments (not functional)

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"aten::sin.default", "aten::sin(Tensor self) -> Tensor">(%a) tensors ["self"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'aten::sin.default' as a custom op: torch's own ops are named with #rdu.aten

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x, float scale) -> Tensor">(%a) tensors ["x"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'mylib::softsign.default' needs its argument(s) scale

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x, float scale) -> Tensor", {scale = "big"}>(%a) tensors ["x"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'mylib::softsign.default' argument 'scale' (float) cannot be "big"

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::other(Tensor x) -> Tensor">(%a) tensors ["x"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'mylib::softsign.default' has the schema of 'mylib::other.'

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r, %s = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x) -> Tensor">(%a) tensors ["x"] : (tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' has 2 results; mylib.softsign.default returns 1

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call #rdu.custom<"mylib::softsign.default", "not a schema">(%a) tensors ["x"] : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.host_call' cannot call 'mylib::softsign.default': its schema does not parse

// -----

%a = "test.op"() : () -> tensor<4x3x2xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] pairs ["self"] -> [0, 1] : (tensor<4x3x2xf32>) -> (tensor<4x3x2xf32>, tensor<3x3x2xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' pairs names 'self', which is not one of its tensors ['A']

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] pairs ["A"] -> [0, 1] : (tensor<4x3xf32>) -> (tensor<4x3x2xf32>, tensor<3x3x2xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' operand 'A' is a complex pair, so it must be f32 or f64 with a trailing dim of 2 (real, imaginary), got tensor<4x3xf32>

// -----

%a = "test.op"() : () -> tensor<4x3x2xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] pairs ["A"] -> [0, 2] : (tensor<4x3x2xf32>) -> (tensor<4x3x2xf32>, tensor<3x3x2xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' pairs names result #2; it has 2

// -----

%a = "test.op"() : () -> tensor<4x3x2xi64>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%a) tensors ["A"] pairs [] -> [1] : (tensor<4x3x2xi64>) -> (tensor<4x3x2xf32>, tensor<3x3x2xbf16>)
// CHECK: Operation does not verify: 'rdu.host_call' result #1 is a complex pair, so it must be f32 or f64 with a trailing dim of 2 (real, imaginary), got tensor<3x3x2xbf16>
