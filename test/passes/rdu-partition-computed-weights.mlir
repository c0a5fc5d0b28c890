// rdu-partition (tp) of weights computed from parameters (weight_norm's `g * v / |v|`,
// the norm over each output row) in a training step at tp=2: the computation is
// partitioned when its matmul wants the weight, with the parameters split as that
// matmul takes it. `up` (replicated input) splits its weight by output rows: v and g by
// rows, each rank's norms its own rows'. `down` (input split along the contraction)
// splits its weight by columns: v by columns, the norm over them a partial sum, one
// all-reduce of a [16, 1] vector. No rdu.all_gather and no rdu.local_part (before: each
// weight computed whole on every rank and cut, and in the backward each computed
// weight's split gradient all-gathered).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=3 divides no weight of it.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: tier.global @v : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @g : tensor<4x1xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @v2 : tensor<16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NEXT: tier.global @g2 : tensor<16x1xf32> {kind = "parameter", rdu.whole_reader = ["rdu.map", ""]}
// CHECK-NOT: rdu.all_gather
// CHECK-NOT: rdu.local_part
// CHECK: %ss = rdu.reduce sum %sq dims [1] keepdim {{.*}} : tensor<4x16xf32> -> tensor<4x1xf32>
// CHECK: %h = rdu.matmul %x, %w transpose_rhs {{.*}} : tensor<4x16xf32>, tensor<4x16xf32> -> tensor<4x4xf32>
// CHECK: %ss2 = rdu.reduce sum %sq2 dims [1] keepdim {{.*}} : tensor<16x4xf32> -> tensor<16x1xf32>
// CHECK-NEXT: rdu.all_reduce %ss2 group 2 {{.*}} : tensor<16x1xf32> -> tensor<16x1xf32>
// CHECK-NOT: rdu.all_gather
// CHECK-NOT: rdu.local_part
// CHECK: %o = rdu.matmul %h, %w2 transpose_rhs {{.*}} : tensor<4x4xf32>, tensor<16x4xf32> -> tensor<4x16xf32>
// CHECK-NEXT: rdu.all_reduce %o group 2
// CHECK-NOT: rdu.all_gather

// ERR: rdu-partition: tp=3 splits nothing in this model

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @v : tensor<8x16xf32> {kind = "parameter"}
  tier.global @g : tensor<8x1xf32> {kind = "parameter"}
  tier.global @v2 : tensor<16x8xf32> {kind = "parameter"}
  tier.global @g2 : tensor<16x1xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %v: tensor<8x16xf32> {rdu.global = @v}, %g: tensor<8x1xf32> {rdu.global = @g}, %v2: tensor<16x8xf32> {rdu.global = @v2}, %g2: tensor<16x1xf32> {rdu.global = @g2}) -> tensor<4x16xf32> {
    %sq = rdu.map %v {rdu.phase = #rdu<phase forward>} : (tensor<8x16xf32>) -> tensor<8x16xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %ss = rdu.reduce sum %sq dims [1] keepdim {rdu.phase = #rdu<phase forward>} : tensor<8x16xf32> -> tensor<8x1xf32>
    %w = rdu.map %g, %v, %ss {rdu.phase = #rdu<phase forward>} : (tensor<8x1xf32>, tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<8x16xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %n = math.sqrt %c : f32
      %m = arith.mulf %a, %b : f32
      %d = arith.divf %m, %n : f32
      rdu.yield %d : f32
    }
    %h = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %sq2 = rdu.map %v2 {rdu.phase = #rdu<phase forward>} : (tensor<16x8xf32>) -> tensor<16x8xf32> {
    ^bb0(%a: f32):
      %m = arith.mulf %a, %a : f32
      rdu.yield %m : f32
    }
    %ss2 = rdu.reduce sum %sq2 dims [1] keepdim {rdu.phase = #rdu<phase forward>} : tensor<16x8xf32> -> tensor<16x1xf32>
    %w2 = rdu.map %g2, %v2, %ss2 {rdu.phase = #rdu<phase forward>} : (tensor<16x1xf32>, tensor<16x8xf32>, tensor<16x1xf32>) -> tensor<16x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %n = math.sqrt %c : f32
      %m = arith.mulf %a, %b : f32
      %d = arith.divf %m, %n : f32
      rdu.yield %d : f32
    }
    %o = rdu.matmul %h, %w2 transpose_rhs {rdu.layer = "layers.0", rdu.phase = #rdu<phase forward>} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    func.return %o : tensor<4x16xf32>
  }
}
