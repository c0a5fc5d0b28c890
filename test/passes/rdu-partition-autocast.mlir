// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{tp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Mixed precision (autocast): the float32 master weights are cast to bf16 by a
// map before each matmul reads them. tp still finds the weights behind the
// casts: fc1 splits by output columns (its cast and the matmul on each rank's
// half), fc2 by rows (a partial sum, all-reduced), as without the casts. tp=3
// does not divide fc1's 8 output columns, found behind its cast: named.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc1 : tensor<8x4xf32> {kind = "parameter"}
  tier.global @fc2 : tensor<4x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x4xbf16> {rdu.input = "x"}, %w1: tensor<8x4xf32> {rdu.global = @fc1}, %w2: tensor<4x8xf32> {rdu.global = @fc2}) -> tensor<2x4xf32> {
    %c1 = rdu.map %w1 : (tensor<8x4xf32>) -> tensor<8x4xbf16> {
    ^bb0(%0: f32):
      %1 = arith.truncf %0 : f32 to bf16
      rdu.yield %1 : bf16
    }
    %h = rdu.matmul %x, %c1 transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4xbf16>, tensor<8x4xbf16> -> tensor<2x8xbf16>
    %c2 = rdu.map %w2 : (tensor<4x8xf32>) -> tensor<4x8xbf16> {
    ^bb0(%0: f32):
      %1 = arith.truncf %0 : f32 to bf16
      rdu.yield %1 : bf16
    }
    %y = rdu.matmul %h, %c2 transpose_rhs : tensor<2x8xbf16>, tensor<4x8xbf16> -> tensor<2x4xf32>
    func.return %y : tensor<2x4xf32>
  }
}

// CHECK:      tier.global @fc1 : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @fc2 : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %c1 = rdu.map %w1 : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK:      %h = rdu.matmul %x, %c1 transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4xbf16>, tensor<4x4xbf16> -> tensor<2x4xbf16>
// CHECK:      %c2 = rdu.map %w2 : (tensor<4x4xf32>) -> tensor<4x4xbf16>
// CHECK:      %y = rdu.matmul %h, %c2 transpose_rhs : tensor<2x4xbf16>, tensor<4x4xbf16> -> tensor<2x4xf32>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %y
// CHECK-NOT:  rdu.all_gather

// ERR: tp=3 does not divide the 8 output columns of weight @fc1
