// A grouped-query head map computed in the program (`torch.arange(heads) // group`
// in forward: an `rdu.iota` and a map dividing it) has values known at compile
// time: rdu-partition evaluates the ramp and the map (index_map.py's `_computed`)
// and, the map being rank-local, each rank gathers from its own KV head with its
// part of the map rebased: no all-gather of the cache, as for an inlined buffer
// (rdu-partition-head-map.mlir).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// A map computed the same way but crossing rank blocks (h % 2: rank 0's heads
// read both KV heads), or computed from a value the compiler does not know (an
// input added to the ramp), is not split: the keys are gathered whole.
// RUN: sed -e 's/arith.floordivsi/arith.remsi/' %s | rducc-opt -p 'rdu-partition{tp=2}' | filecheck %s --check-prefix=WHOLE
// RUN: sed -e 's/%div = rdu.map %arange :/%div = rdu.map %arange, %offset :/' -e 's/(tensor<4xi64>) -> tensor<4xi64> {/(tensor<4xi64>, tensor<1xi64>) -> tensor<4xi64> {/' -e 's/\^bb0(%0: i64):/^bb0(%0: i64, %add: i64):/' %s | rducc-opt -p 'rdu-partition{tp=2}' | filecheck %s --check-prefix=WHOLE

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @k : tensor<8x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %kc: tensor<2x6x4xf32> {rdu.input = "k_cache"}, %offset: tensor<1xi64> {rdu.input = "offset"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wk: tensor<8x16xf32> {rdu.global = @k}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<1x16xf32> {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<4x1x4xf32>
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %keys = rdu.concat %kc, %kh dim 1 {rdu.layer = "layers.0"} : (tensor<2x6x4xf32>, tensor<2x1x4xf32>) -> tensor<2x7x4xf32>
    %arange = rdu.iota start 0 step 1 {rdu.layer = "layers.0"} : tensor<4xi64>
    %div = rdu.map %arange : (tensor<4xi64>) -> tensor<4xi64> {
    ^bb0(%0: i64):
      %1 = arith.constant 2 : i64
      %2 = arith.floordivsi %0, %1 : i64
      rdu.yield %2 : i64
    }
    %kr = rdu.gather %keys[%div] dim 0 wraps {rdu.layer = "layers.0"} : tensor<2x7x4xf32>, tensor<4xi64> -> tensor<4x7x4xf32>
    %scores = rdu.matmul %qh, %kr transpose_rhs {rdu.layer = "layers.0"} : tensor<4x1x4xf32>, tensor<4x7x4xf32> -> tensor<4x1x7xf32>
    %attended = rdu.matmul %scores, %kr {rdu.layer = "layers.0"} : tensor<4x1x7xf32>, tensor<4x7x4xf32> -> tensor<4x1x4xf32>
    %flat = rdu.reshape %attended {rdu.layer = "layers.0"} : tensor<4x1x4xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    func.return %out : tensor<1x16xf32>
  }
}

// CHECK:      %kc: tensor<1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %[[MINE:.*]] = rdu.local_part %div dim 0 group 2 {{.*}} : tensor<4xi64> -> tensor<2xi64>
// CHECK-NEXT: %[[STARTS:.*]] = rdu.iota start 0 step 1 {{.*}} : tensor<2xi64>
// CHECK-NEXT: %[[START:.*]] = rdu.local_part %[[STARTS]] dim 0 group 2 {{.*}} : tensor<2xi64> -> tensor<1xi64>
// CHECK-NEXT: %[[LOCAL:.*]] = rdu.map %[[MINE]], %[[START]]
// CHECK:      arith.subi
// CHECK:      %kr = rdu.gather %keys[%[[LOCAL]]] dim 0 wraps {{.*}} : tensor<1x7x4xf32>, tensor<2xi64> -> tensor<2x7x4xf32>
// CHECK:      rdu.all_reduce %out group 2
// CHECK-NOT:  rdu.all_gather

// WHOLE:      %[[WHOLE:.*]] = rdu.all_gather %keys dim 0 group 2 {{.*}} : tensor<1x7x4xf32> -> tensor<2x7x4xf32>
// WHOLE:      %kr = rdu.gather %[[WHOLE]][%div] dim 0 wraps {{.*}} : tensor<2x7x4xf32>, tensor<4xi64> -> tensor<4x7x4xf32>
