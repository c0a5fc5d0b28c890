// RUN: rducc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every verifier error of rdu.grouped_matmul, one per chunk.

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<8x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' takes a rank-2 lhs, a rank-3 rhs and rank-1 offsets

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x7x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x7x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' contraction sizes differ: lhs has K=8, rhs has K=7

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<3xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<3xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' has 3 offsets for 4 experts: one per expert

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xf32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xf32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' offsets must have an integer element type

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' contraction sizes differ: lhs has K=8, rhs has K=5

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x8xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' result shape [6, 8] should be [6, 5]
