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
%h = rdu.host_call #rdu.aten<"aten::histc.default", {bins = 5 : i64, mode = 1 : i64}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> tensor<5xf32>
// CHECK: Operation does not verify: 'aten::histc.default' has no argument 'mode'

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
