// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// `rdu.pointwise_call` names only functional pointwise ops of the aten
// namespace, with arguments that fit their schema: a model file never runs
// other code.

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::sort.default"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' cannot call 'aten::sort.default': it is not tagged pointwise

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"os::system.default"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' cannot call 'os::system.default': it is not an op of the aten namespace

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::lgamma.no_such_overload"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' cannot call 'aten::lgamma.no_such_overload': there is no such ATen op overload

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::lgamma_.default"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' cannot call 'aten::lgamma_.default': it mutates or aliases its arguments (not functional)

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::igamma.default"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'aten::igamma.default' takes 2 tensor operand(s) (self, other) but the call has 1

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::polygamma.default"> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'aten::polygamma.default' needs its argument(s) n

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::polygamma.default", {n = 1.5 : f64}> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'aten::polygamma.default' argument 'n' (int) cannot be 1.5

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::lgamma.default", {bogus = 1 : i64}> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'aten::lgamma.default' has no argument 'bogus'

// -----

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::lgamma.default", result = 1> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'aten::lgamma.default' has 1 result(s); result = 1 is out of range

// -----

%x = "test.op"() : () -> tensor<4xf32>
%r = rdu.pointwise_call #rdu.aten<"aten::lgamma.default"> (%x) : (tensor<4xf32>) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' value #0 is tensor<4xf32>, not a scalar

// -----
// Only ops on the pointwise allow-list (dialects/rdu/aten_allowlist.txt), and a
// string argument only one of the values it names (issue 31).

%x = "test.op"() : () -> f32
%r = rdu.pointwise_call #rdu.aten<"aten::clone.default", {memory_format = "channels_last"}> (%x) : (f32) -> f32
// CHECK: Operation does not verify: 'rdu.pointwise_call' cannot call 'aten::clone.default': it is not on the list of ATen ops a pointwise call may run

// -----

%x = "test.op"() : () -> i64
%r = rdu.pointwise_call #rdu.aten<"aten::div.Tensor_mode", {rounding_mode = "ceil"}> (%x, %x) : (i64, i64) -> i64
// CHECK: Operation does not verify: 'aten::div.Tensor_mode' argument 'rounding_mode' cannot be "ceil" (it may be floor, trunc)
