// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// `rdu.pointwise_call`: an ATen pointwise op on scalars inside a map body,
// with its constant arguments and the result it takes (rducc.dialects.rdu.pointwise).

%x, %n = "test.op"() : () -> (tensor<2x8xf32>, tensor<8xbf16>)

// CHECK:      %y = rdu.map %x, %n : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32> {
// CHECK-NEXT: ^bb0(%a: f32, %b: bf16):
// CHECK-NEXT:   %l = rdu.pointwise_call #rdu.aten<"aten::lgamma.default">(%a) : (f32) -> f32
// CHECK-NEXT:   %p = rdu.pointwise_call #rdu.aten<"aten::polygamma.default", {n = 2 : i64}>(%l) : (f32) -> f32
// CHECK-NEXT:   %z = rdu.pointwise_call #rdu.aten<"aten::special_zeta.other_scalar", {other = 2.500000e+00 : f64}>(%p) : (f32) -> f32
// CHECK-NEXT:   %d = rdu.pointwise_call #rdu.aten<"aten::div.Tensor_mode", {rounding_mode = "floor"}>(%z, %b) : (f32, bf16) -> f32
// CHECK-NEXT:   %c = rdu.pointwise_call #rdu.aten<"aten::clamp.default", {min = none, max = 1.000000e+00 : f64}>(%d) : (f32) -> f32
// CHECK-NEXT:   rdu.yield %c : f32
// CHECK-NEXT: }
%y = rdu.map %x, %n : (tensor<2x8xf32>, tensor<8xbf16>) -> tensor<2x8xf32> {
^bb0(%a: f32, %b: bf16):
  %l = rdu.pointwise_call #rdu.aten<"aten::lgamma.default"> (%a) : (f32) -> f32
  %p = rdu.pointwise_call #rdu.aten<"aten::polygamma.default", {n = 2 : i64}> (%l) : (f32) -> f32
  %z = rdu.pointwise_call #rdu.aten<"aten::special_zeta.other_scalar", {other = 2.5 : f64}> (%p) : (f32) -> f32
  %d = rdu.pointwise_call #rdu.aten<"aten::div.Tensor_mode", {rounding_mode = "floor"}> (%z, %b) : (f32, bf16) -> f32
  %c = rdu.pointwise_call #rdu.aten<"aten::clamp.default", {min = none, max = 1.0 : f64}> (%d) : (f32) -> f32
  rdu.yield %c : f32
}

// A multi-result op: `result = 1` takes frexp's exponent.
// CHECK:      %e = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xi32> {
// CHECK-NEXT: ^bb0(%v: f32):
// CHECK-NEXT:   %r = rdu.pointwise_call #rdu.aten<"aten::frexp.Tensor", result = 1>(%v) : (f32) -> i32
%e = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xi32> {
^bb0(%v: f32):
  %r = rdu.pointwise_call #rdu.aten<"aten::frexp.Tensor", result = 1> (%v) : (f32) -> i32
  rdu.yield %r : i32
}
