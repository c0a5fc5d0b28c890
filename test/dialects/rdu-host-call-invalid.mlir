// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier error of `rdu.host_call`, one per chunk.

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call "prims.sin.default"(%a) tensors ["self"] args {} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'prims.sin.default' is not an aten overload: rdu.host_call runs aten ops only

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call "aten.no_such_op.default"(%a) tensors ["self"] args {} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'aten.no_such_op.default' is no ATen overload of this torch

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call "aten.sin_.default"(%a) tensors ["self"] args {} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'aten.sin_.default' mutates or aliases its operands: a host call must be functional

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r = rdu.host_call "aten.bernoulli.default"(%a) tensors ["self"] args {} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: Operation does not verify: 'aten.bernoulli.default' is random: random ops have their own lowering

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q = rdu.host_call "aten.linalg_qr.default"(%a) tensors ["A"] args {} : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: Operation does not verify: 'rdu.host_call' has 1 results; aten.linalg_qr.default returns 2

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call "aten.linalg_qr.default"(%a, %a) tensors ["A"] args {} : (tensor<4x3xf32>, tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' has 2 operands but binds 1 tensor arguments

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%h = rdu.host_call "aten.histc.default"(%a) tensors ["self"] args {bins = 5 : i64, mode = 1 : i64} : (tensor<4x3xf32>) -> tensor<5xf32>
// CHECK: Operation does not verify: 'rdu.host_call' arg 'mode' is not a non-tensor argument of aten.histc.default

// -----

%a = "test.op"() : () -> tensor<4xf32>
%r, %s = rdu.host_call "aten.linalg_qr.default"(%a) tensors ["A"] args {} : (tensor<4xf32>) -> (!tier.buffer<sram, 4xf32>, tensor<4xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' operands and results must be all tensors or all buffers

// -----

%a = "test.op"() : () -> !tier.buffer<sram, 4x3xf32>
%q, %r = rdu.host_call "aten.linalg_qr.default"(%a) tensors ["A"] args {} : (!tier.buffer<sram, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 3x3xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' operand #0 is in sram: host calls read and write off-chip memory

// -----

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call "aten.linalg_qr.default"(%a) tensors ["A"] args {mode = 3 : i64} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: Operation does not verify: 'rdu.host_call' arg 'mode' of aten.linalg_qr.default is str, not 3 : i64
