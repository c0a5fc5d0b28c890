// Expert parallelism (passes/rdu_partition/experts.py): a mixture-of-experts
// block as transformers' batched_mm experts import it, 3 tokens x top-2 = 6
// token-expert pairs over 8 experts, ep=tp=4. Each rank holds 2 of the 8
// experts of each table (#rdu.split<(0, 4, 1)>), gathers every pair's row of
// its own part (id mod 2), runs the pairs' matmuls, and the rows are combined
// before the sum over each token's pairs: padded to 8 rows, one all-to-all of
// 4 chunks, each rank picking its chunk's rows by owner (id div 2), one
// all-gather of the chunks. Each expert gather records that a rank's experts
// serve at most 2 of its 6 pairs (rdu.owned_rows, the pairs spread evenly):
// the cost model reads only those rows of the table.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4 ep=4}' %s | filecheck %s
//
// Diagnostics: ep unlike tp; an ep that the expert count does not divide.
// RUN: not rducc-opt -p 'rdu-partition{tp=2 ep=4}' %s 2>&1 | filecheck %s --check-prefix=ERR-TP
// RUN: not rducc-opt -p 'rdu-partition{ep=16}' %s 2>&1 | filecheck %s --check-prefix=ERR-COUNT

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-16"} {
  tier.global @up : tensor<8x4x16xf32> {kind = "parameter"}
  tier.global @down : tensor<8x16x4xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<3x16xf32> {rdu.input = "x"}, %ids: tensor<3x2xi64> {rdu.input = "ids"}, %weights: tensor<3x2xf32> {rdu.input = "weights"}, %wu: tensor<8x4x16xf32> {rdu.global = @up}, %wd: tensor<8x16x4xf32> {rdu.global = @down}) -> tensor<3x16xf32> {
    %flat = rdu.reshape %ids {rdu.layer = "layers.0"} : tensor<3x2xi64> -> tensor<6xi64>
    %rows = rdu.reshape %x {rdu.layer = "layers.0"} : tensor<3x16xf32> -> tensor<3x1x16xf32>
    %pairs = rdu.broadcast %rows {rdu.layer = "layers.0"} : tensor<3x1x16xf32> -> tensor<3x2x16xf32>
    %cols = rdu.reshape %pairs {rdu.layer = "layers.0"} : tensor<3x2x16xf32> -> tensor<6x16x1xf32>
    %up = rdu.gather %wu[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<8x4x16xf32>, tensor<6xi64> -> tensor<6x4x16xf32>
    %h = rdu.matmul %up, %cols {rdu.layer = "layers.0"} : tensor<6x4x16xf32>, tensor<6x16x1xf32> -> tensor<6x4x1xf32>
    %down = rdu.gather %wd[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<8x16x4xf32>, tensor<6xi64> -> tensor<6x16x4xf32>
    %y = rdu.matmul %down, %h {rdu.layer = "layers.0"} : tensor<6x16x4xf32>, tensor<6x4x1xf32> -> tensor<6x16x1xf32>
    %yf = rdu.reshape %y {rdu.layer = "layers.0"} : tensor<6x16x1xf32> -> tensor<6x16xf32>
    %w = rdu.reshape %weights {rdu.layer = "layers.0"} : tensor<3x2xf32> -> tensor<6x1xf32>
    %scaled = rdu.map %yf, %w {rdu.layer = "layers.0"} : (tensor<6x16xf32>, tensor<6x1xf32>) -> tensor<6x16xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %per_token = rdu.reshape %scaled {rdu.layer = "layers.0"} : tensor<6x16xf32> -> tensor<3x2x16xf32>
    %out = rdu.reduce sum %per_token dims [1] {rdu.layer = "layers.0"} : tensor<3x2x16xf32> -> tensor<3x16xf32>
    func.return %out : tensor<3x16xf32>
  }
}

// CHECK:      builtin.module attributes {{{.*}}rdu.expert_parallel = 4 : i64
// CHECK:      tier.global @up : tensor<2x4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK-NEXT: tier.global @down : tensor<2x16x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// CHECK:      %[[LOCAL:.*]] = rdu.map %flat
// CHECK:        arith.remsi
// CHECK:      %[[OWNER:.*]] = rdu.map %flat
// CHECK:        arith.divsi
// CHECK:      %up = rdu.gather %wu[%[[LOCAL]]] dim 0 wraps {{{.*}}rdu.owned_rows = [2 : i64, 6 : i64]} : tensor<2x4x16xf32>, tensor<6xi64> -> tensor<6x4x16xf32>
// CHECK:      %down = rdu.gather %wd[%[[LOCAL]]] dim 0 wraps {{{.*}}rdu.owned_rows = [2 : i64, 6 : i64]} : tensor<2x16x4xf32>, tensor<6xi64> -> tensor<6x16x4xf32>
// CHECK:      %scaled = rdu.map %yf, %w
// CHECK:      rdu.concat %scaled, %{{.*}} dim 0 {{.*}} -> tensor<8x16xf32>
// CHECK:      rdu.all_to_all %{{.*}} split_dim 0 concat_dim 0 group 4 {{.*}} : tensor<4x2x16xf32> -> tensor<4x2x16xf32>
// CHECK:      rdu.local_part %{{.*}} dim 0 group 4 {{.*}} : tensor<4x2xi64> -> tensor<1x2xi64>
// CHECK:      rdu.gather %{{.*}}[%{{.*}}, %{{.*}}] dim 0 {{.*}} : tensor<4x2x16xf32>, tensor<2xi64>, tensor<2xi64> -> tensor<2x16xf32>
// CHECK:      rdu.all_gather %{{.*}} dim 0 group 4 {{.*}} : tensor<2x16xf32> -> tensor<8x16xf32>
// CHECK:      %[[JOINED:.*]] = rdu.slice %{{.*}} offsets [0, 0] strides [1, 1] {{.*}} : tensor<8x16xf32> -> tensor<6x16xf32>
// CHECK:      %per_token = rdu.reshape %[[JOINED]]
// CHECK:      %out = rdu.reduce sum %per_token dims [1]

// ERR-TP: rdu-partition: ep=4 must equal tp=2
// ERR-COUNT: rdu-partition: ep=16 does not partition this model
