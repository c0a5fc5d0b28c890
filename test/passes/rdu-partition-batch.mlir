// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP
// RUN: not rducc-opt -p 'rdu-partition{tp=4}' %s 2>&1 | filecheck %s --check-prefix=ERR-HEADS

// Attention at batch 2: q (2 heads of 8) is split by heads; the reshape that
// merges batch x heads ([2, 2, 4, 8] -> [4, 4, 8]) keeps the heads of each
// batch row split, dim 0 split 2 ways in every 2 (a period); the split comes
// back to the heads when the reshape undoes the merge, and o_proj (exported as
// a batched matmul of its weight broadcast over the batch) splits by rows.
// The merged value is also returned, left split: the caller joins it. A
// one-column gate has fewer output columns than ranks: it is replicated.
// At tp=4 the 2 heads split only 2 ways, so o's rows cannot split 4 ways.

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  tier.global @gate : tensor<1x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<2x4x16xf32> {rdu.input = "x"}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wo: tensor<16x16xf32> {rdu.global = @o}, %wg: tensor<1x16xf32> {rdu.global = @gate}) -> (tensor<2x4x16xf32>, tensor<4x4x8xf32>, tensor<2x4x1xf32>) {
    %qh = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4x16xf32>, tensor<16x16xf32> -> tensor<2x4x16xf32>
    %heads = rdu.reshape %qh {rdu.layer = "layers.0"} : tensor<2x4x16xf32> -> tensor<2x4x2x8xf32>
    %bhsd = rdu.transpose %heads perm [0, 2, 1, 3] {rdu.layer = "layers.0"} : tensor<2x4x2x8xf32> -> tensor<2x2x4x8xf32>
    %merged = rdu.reshape %bhsd {rdu.layer = "layers.0"} : tensor<2x2x4x8xf32> -> tensor<4x4x8xf32>
    %act = rdu.map %merged {rdu.layer = "layers.0"} : (tensor<4x4x8xf32>) -> tensor<4x4x8xf32> {
    ^bb0(%a: f32):
      %e = math.exp %a : f32
      rdu.yield %e : f32
    }
    %split = rdu.reshape %act {rdu.layer = "layers.0"} : tensor<4x4x8xf32> -> tensor<2x2x4x8xf32>
    %bshd = rdu.transpose %split perm [0, 2, 1, 3] {rdu.layer = "layers.0"} : tensor<2x2x4x8xf32> -> tensor<2x4x2x8xf32>
    %flat = rdu.reshape %bshd {rdu.layer = "layers.0"} : tensor<2x4x2x8xf32> -> tensor<2x4x16xf32>
    %wot = rdu.transpose %wo perm [1, 0] {rdu.layer = "layers.0"} : tensor<16x16xf32> -> tensor<16x16xf32>
    %wob = rdu.broadcast %wot {rdu.layer = "layers.0"} : tensor<16x16xf32> -> tensor<2x16x16xf32>
    %out = rdu.matmul %flat, %wob {rdu.layer = "layers.0"} : tensor<2x4x16xf32>, tensor<2x16x16xf32> -> tensor<2x4x16xf32>
    %g = rdu.matmul %x, %wg transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4x16xf32>, tensor<1x16xf32> -> tensor<2x4x1xf32>
    func.return %out, %act, %g : tensor<2x4x16xf32>, tensor<4x4x8xf32>, tensor<2x4x1xf32>
  }
}

// TP:      tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP-NEXT: tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// TP-NEXT: tier.global @gate : tensor<1x16xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// TP:      attributes {rdu.result_shards = [#rdu.split<>, #rdu.split<(0, 2, 1, 2)>, #rdu.split<>]}
// TP:      %merged = rdu.reshape %bhsd {rdu.layer = "layers.0"} : tensor<2x1x4x8xf32> -> tensor<2x4x8xf32>
// TP:      %split = rdu.reshape %act {rdu.layer = "layers.0"} : tensor<2x4x8xf32> -> tensor<2x1x4x8xf32>
// TP:      %flat = rdu.reshape %bshd {rdu.layer = "layers.0"} : tensor<2x4x1x8xf32> -> tensor<2x4x8xf32>
// TP-NEXT: %wot = rdu.transpose %wo perm [1, 0] {rdu.layer = "layers.0"} : tensor<16x8xf32> -> tensor<8x16xf32>
// TP-NEXT: %wob = rdu.broadcast %wot {rdu.layer = "layers.0"} : tensor<8x16xf32> -> tensor<2x8x16xf32>
// TP-NEXT: %out = rdu.matmul %flat, %wob {rdu.layer = "layers.0"} : tensor<2x4x8xf32>, tensor<2x8x16xf32> -> tensor<2x4x16xf32>
// TP-NEXT: %0 = rdu.all_reduce %out group 2
// TP-NEXT: %g = rdu.matmul %x, %wg transpose_rhs {rdu.layer = "layers.0"} : tensor<2x4x16xf32>, tensor<1x16xf32> -> tensor<2x4x1xf32>
// TP-NOT:  rdu.all_gather

// ERR-HEADS: error: tp=4 does not divide the heads: the 16 input rows of weight
