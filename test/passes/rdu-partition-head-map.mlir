// Grouped-query KV heads repeated by a gather with a known head map
// (`k[head_map]`, head h reads KV head h // 2: 4 query heads over 2 KV heads).
// The map sends each rank's query heads into the KV head that rank holds, so
// each rank gathers from its own part of the keys and values with its part of
// the map less its part's first KV head: no all-gather of the cache.
// tp=2: one KV head a rank; tp=4: the ranks are 2 x 2, rank r holds KV head r / 2.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=4}' %s | filecheck %s --check-prefix=TP4
//
// A map that crosses rank blocks (head h reads KV head h % 2: rank 0's heads
// read both KV heads) or whose values are not known (a buffer without an
// inline value, as on the meta device) is not split: the keys are gathered whole.
// RUN: sed -e 's/dense<\[0, 0, 1, 1\]>/dense<[0, 1, 0, 1]>/' %s | rducc-opt -p 'rdu-partition{tp=2}' | filecheck %s --check-prefix=CROSS
// RUN: sed -e 's/ = dense<\[0, 0, 1, 1\]> : tensor<4xi64>//' %s | rducc-opt -p 'rdu-partition{tp=2}' | filecheck %s --check-prefix=CROSS

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  tier.global @head_map : tensor<4xi64> = dense<[0, 0, 1, 1]> : tensor<4xi64> {kind = "buffer"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wo: tensor<16x16xf32> {rdu.global = @o}, %map: tensor<4xi64> {rdu.global = @head_map}) -> tensor<1x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<4x1x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %keys = rdu.concat %kc, %kh dim 1 {rdu.layer = "layers.0"} : (tensor<2x6x4xf32>, tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
    %kr = rdu.gather %keys[%map] dim 0 wraps {rdu.layer = "layers.0"} : tensor<2x7x4xf32>, tensor<4xi64> -> tensor<4x7x4xf32>
    %scores = rdu.matmul %qh, %kr transpose_rhs {rdu.layer = "layers.0"} : tensor<4x1x4xf32>, tensor<4x7x4xf32> -> tensor<4x1x7xf32>
    %attended = rdu.matmul %scores, %kr {rdu.layer = "layers.0"} : tensor<4x1x7xf32>, tensor<4x7x4xf32> -> tensor<4x1x4xf32>
    %flat = rdu.reshape %attended {rdu.layer = "layers.0"} : tensor<4x1x4xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    func.return %out : tensor<1x16xf32>
  }
}

// CHECK:      tier.global @head_map : tensor<4xi64> = dense<[0, 0, 1, 1]> : tensor<4xi64> {kind = "buffer"}
// CHECK:      %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %keys = rdu.concat %kc, %kh dim 1 {{.*}} -> tensor<1x7x4xf32>
// CHECK-NEXT: %[[MINE:.*]] = rdu.local_part %map dim 0 group 2 {{.*}} : tensor<4xi64> -> tensor<2xi64>
// CHECK-NEXT: %[[STARTS:.*]] = rdu.iota start 0 step 1 {{.*}} : tensor<2xi64>
// CHECK-NEXT: %[[START:.*]] = rdu.local_part %[[STARTS]] dim 0 group 2 {{.*}} : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT: %[[LOCAL:.*]] = rdu.map %[[MINE]], %[[START]]
// CHECK:      arith.subi
// CHECK:      %kr = rdu.gather %keys[%[[LOCAL]]] dim 0 wraps {{.*}} : tensor<1x7x4xf32>, tensor<2xi64> -> tensor<2x7x4xf32>
// CHECK-NEXT: %scores = rdu.matmul %qh, %kr transpose_rhs {{.*}} : tensor<2x1x4xf32>, tensor<2x7x4xf32> -> tensor<2x1x7xf32>
// CHECK:      %out = rdu.matmul %flat, %wo transpose_rhs {{.*}} : tensor<1x8xf32>, tensor<16x8xf32> -> tensor<1x16xf32>
// CHECK-NEXT: rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// TP4:      %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 2)>}
// TP4:      %[[MINE:.*]] = rdu.local_part %map dim 0 group 4 {{.*}} : tensor<4xi64> -> tensor<1xi64>
// TP4-NEXT: %[[STARTS:.*]] = rdu.iota start 0 step 1 {{.*}} : tensor<2xi64>
// TP4-NEXT: %[[START:.*]] = rdu.local_part %[[STARTS]] dim 0 group 2 stride 2 {{.*}} : tensor<2xi64> -> tensor<1xi64>
// TP4:      %kr = rdu.gather %keys[{{.*}}] dim 0 wraps {{.*}} : tensor<1x7x4xf32>, tensor<1xi64> -> tensor<1x7x4xf32>
// TP4:      rdu.all_reduce %out group 4
// TP4-NOT:  rdu.all_gather

// CROSS:      %[[WHOLE:.*]] = rdu.all_gather %keys dim 0 group 2 {{.*}} : tensor<1x7x4xf32> -> tensor<2x7x4xf32>
// CROSS-NEXT: %kr = rdu.gather %[[WHOLE]][%map] dim 0 wraps {{.*}} : tensor<2x7x4xf32>, tensor<4xi64> -> tensor<4x7x4xf32>
