// RUN: rducc-opt %s --split-input-file --parsing-diagnostics | filecheck %s

// An rdu op's operand or result types must be static (`STATIC_TENSOR`). xDSL
// checks that while reading the op's assembly format, so the error is a parse
// error located at the op's first line (rducc's LocatedParser), not a bare
// verifier message that names no place in the text.

%x = "test.op"() : () -> tensor<?x8xf32>
%m = rdu.map %x : (tensor<?x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32):
  rdu.yield %a : f32
}
// CHECK: rdu-static-shape.mlir:9:1
// CHECK-NEXT: %m = rdu.map %x
// CHECK-NEXT: ^^^^
// CHECK-NEXT: an rdu tensor must have a static shape, got tensor<?x8xf32>

// -----

// The element-type constraint, read the same way.
%x = "test.op"() : () -> tensor<4xcomplex<f32>>
%r = rdu.reshape %x : tensor<4xcomplex<f32>> -> tensor<2x2xcomplex<f32>>
// CHECK: rdu-static-shape.mlir:22:1
// CHECK-NEXT: %r = rdu.reshape
// CHECK: tensor<4xcomplex<f32>> has unsupported element type complex<f32>; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

// A static program parses and prints.
%y = "test.op"() : () -> tensor<2x8xf32>
%n = rdu.map %y : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%b : f32):
  rdu.yield %b : f32
}
// CHECK: rdu.map %{{.*}} : (tensor<2x8xf32>) -> tensor<2x8xf32>
