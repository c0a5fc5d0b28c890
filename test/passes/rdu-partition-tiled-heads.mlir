// rdu-partition (tp) of grouped-query heads tiled, not interleaved: 2 KV heads
// repeated for 4 query heads by `k.repeat(1, 2, 1)` (reshape, broadcast, reshape:
// query head h reads KV head h % 2; `cat([k, k])` is rdu-partition-tiled-concat.mlir). Split by rows, the k weight gives each rank
// one KV head, which the tiled repeat spreads over the heads with period 2; the
// q weight's rows take that period (`#rdu.split<(0, 2, 1, 8)>`: rank r holds the
// query heads h % 2 == r, the ones its KV head serves), and so do the o weight's
// columns (row-parallel: a partial sum, all-reduced). Nothing is all-gathered
// (before: q was split in consecutive heads, and q and the tiled k gathered).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// tp=4, more ranks than the 2 KV heads: the k weight's rows split over the minor
// factor of the ranks (`(0, 2, 1)`: rank r holds KV head r % 2, not r // 2), which the
// broadcast before the KV heads widens over the major factor (the tiled copies), so
// query head r, on rank r, meets its KV head r % 2; nothing is all-gathered (before:
// k split (0, 2, 2), q and the tiled k gathered).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4}' %s | filecheck %s --check-prefix=TP4
//
// Diagnostic: tp=3 divides neither the heads nor the hidden size.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

// CHECK: tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, 8)>}
// CHECK-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1, 8)>}
// CHECK-NOT: rdu.all_gather
// CHECK: %s = rdu.matmul %qt, %kT {{.*}} : tensor<2x4x4xf32>, tensor<2x4x4xf32> -> tensor<2x4x4xf32>
// CHECK-NOT: rdu.all_gather
// CHECK: %out = rdu.matmul %yf, %wo transpose_rhs {{.*}} : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT: rdu.all_reduce %out group 2
// CHECK-NOT: rdu.all_gather

// TP4: tier.global @q : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 4, 1)>}
// TP4-NEXT: tier.global @k : tensor<4x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP4-NOT: rdu.all_gather
// TP4: %kb = rdu.broadcast %k1 {{.*}} : tensor<1x1x4x4xf32> -> tensor<1x1x4x4xf32>
// TP4-NOT: rdu.all_gather
// TP4: %s = rdu.matmul %qt, %kT {{.*}} : tensor<1x4x4xf32>, tensor<1x4x4xf32> -> tensor<1x4x4xf32>
// TP4-NOT: rdu.all_gather
// TP4: rdu.all_reduce %out group 4
// TP4-NOT: rdu.all_gather

// ERR: tp=3 does not divide the 16 output columns of weight @q (heads or hidden size)

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<4x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<4x16xf32> -> tensor<4x4x4xf32>
    %qt = rdu.transpose %qh perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<4x4x4xf32> -> tensor<4x4x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4x2x4xf32>
    %kt = rdu.transpose %kh perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<4x2x4xf32> -> tensor<2x4x4xf32>
    %k1 = rdu.reshape %kt {rdu.layer = "layers.0"} : tensor<2x4x4xf32> -> tensor<1x2x4x4xf32>
    %kb = rdu.broadcast %k1 {rdu.layer = "layers.0"} : tensor<1x2x4x4xf32> -> tensor<2x2x4x4xf32>
    %kr = rdu.reshape %kb {rdu.layer = "layers.0"} : tensor<2x2x4x4xf32> -> tensor<4x4x4xf32>
    %kT = rdu.transpose %kr perm [0, 2, 1] {rdu.layer = "layers.0"} : tensor<4x4x4xf32> -> tensor<4x4x4xf32>
    %s = rdu.matmul %qt, %kT {rdu.layer = "layers.0"} : tensor<4x4x4xf32>, tensor<4x4x4xf32> -> tensor<4x4x4xf32>
    %y = rdu.matmul %s, %kr {rdu.layer = "layers.0"} : tensor<4x4x4xf32>, tensor<4x4x4xf32> -> tensor<4x4x4xf32>
    %yt = rdu.transpose %y perm [1, 0, 2] {rdu.layer = "layers.0"} : tensor<4x4x4xf32> -> tensor<4x4x4xf32>
    %yf = rdu.reshape %yt {rdu.layer = "layers.0"} : tensor<4x4x4xf32> -> tensor<4x16xf32>
    %out = rdu.matmul %yf, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<16x16xf32> -> tensor<4x16xf32>
    func.return %out : tensor<4x16xf32>
  }
}
