// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s

// A trained matrix read as both operands of one product, its Gram matrix
// @w @w^T (a learned covariance: held-out round 11's `cholesky_whitening`). The
// product's plan wants its rhs split by output columns and its lhs whole: @w is
// not split in place for the rhs (`_read_otherwise`: the same op reads it whole
// too), so the product runs whole on every rank and each rank cuts its columns
// of the Gram matrix (computed from weights alone: `rdu.local_part`). Before,
// @w was split in place for the rhs, which split the lhs read with it: the
// product's result type stayed [8, 4] over [4, 6] x [4, 6] operands and the IR
// did not verify. @v, read by one linear layer, is still split in place.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @w : tensor<8x6xf32> {kind = "parameter"}
  tier.global @v : tensor<16x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %w: tensor<8x6xf32> {rdu.global = @w}, %v: tensor<16x8xf32> {rdu.global = @v}) -> (tensor<4x16xf32>, tensor<8x6xf32>) {
    %gram = rdu.matmul %w, %w transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<8x6xf32>, tensor<8x6xf32> -> tensor<8x8xf32>
    %y = rdu.matmul %x, %gram {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %z = rdu.matmul %y, %v transpose_rhs {rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    %new = rdu.map %w {rdu.phase = #rdu<phase optimizer>} : (tensor<8x6xf32>) -> tensor<8x6xf32> {
    ^bb0(%0: f32):
      %1 = arith.addf %0, %0 : f32
      rdu.yield %1 : f32
    }
    func.return %z, %new : tensor<4x16xf32>, tensor<8x6xf32>
  }
}

// CHECK:      tier.global @w : tensor<8x6xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @v : tensor<16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %gram = rdu.matmul %w, %w transpose_rhs {{.*}} : tensor<8x6xf32>, tensor<8x6xf32> -> tensor<8x8xf32>
// CHECK-NEXT: %[[MINE:.*]] = rdu.local_part %gram dim 1 group 2 {{.*}} : tensor<8x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT: %y = rdu.matmul %x, %[[MINE]] {{.*}} : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT: %z = rdu.matmul %y, %v transpose_rhs {{.*}} : tensor<4x4xf32>, tensor<16x4xf32> -> tensor<4x16xf32>
// CHECK-NEXT: rdu.all_reduce %z group 2
// CHECK:      %new = rdu.map %w {{.*}} -> tensor<8x6xf32>
