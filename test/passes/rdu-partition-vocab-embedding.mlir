// Vocab-parallel embedding (rdu-partition's `_partition_vocab_lookup`): a table the
// output layer reads as its rows (an LM head tied to the embedding) is split by
// vocabulary rows; the lookup gathers the rows this rank owns (ids less its first
// row, row 0 elsewhere), zeroes the others and all-reduces: no rank reads the whole table.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 target=sn40l-8}' --split-input-file %s | filecheck %s

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @embed.weight : tensor<8x4xf32> {kind = "parameter"}
  tier.global @up.weight : tensor<6x4xf32> {kind = "parameter"}
  func.func @forward(%ids: tensor<2x3xi64> {rdu.input = "ids"}, %w: tensor<8x4xf32> {rdu.global = @embed.weight}, %up: tensor<6x4xf32> {rdu.global = @up.weight}) -> (tensor<2x3x8xf32>, tensor<2x3x6xf32>) {
    %emb = rdu.gather %w[%ids] dim 0 : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
    %mm = rdu.matmul %emb, %w transpose_rhs : tensor<2x3x4xf32>, tensor<8x4xf32> -> tensor<2x3x8xf32>
    %h = rdu.matmul %emb, %up transpose_rhs : tensor<2x3x4xf32>, tensor<6x4xf32> -> tensor<2x3x6xf32>
    func.return %mm, %h : tensor<2x3x8xf32>, tensor<2x3x6xf32>
  }
}

// CHECK:      tier.global @embed.weight : tensor<4x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %[[FIRST:.*]] = rdu.iota start 0 step 4 : tensor<2xi64>
// CHECK:      %[[MINE:.*]] = rdu.local_part %[[FIRST]] dim 0 group 2 : tensor<2xi64> -> tensor<1xi64>
// CHECK:      %[[LOCAL:.*]] = rdu.map %ids, %[[MINE]] : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<2x3xi64>
// CHECK:      arith.subi
// CHECK:      %[[INSIDE:.*]] = rdu.map %[[LOCAL]] : (tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK:      %[[SAFE:.*]] = rdu.map %[[INSIDE]], %[[LOCAL]]
// CHECK:      %[[MASK:.*]] = rdu.reshape %[[INSIDE]] : tensor<2x3xi1> -> tensor<2x3x1xi1>
// CHECK:      %[[ROWS:.*]] = rdu.gather %w[%[[SAFE]]] dim 0 : tensor<4x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK:      %[[OWN:.*]] = rdu.map %[[MASK]], %[[ROWS]] : (tensor<2x3x1xi1>, tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK:      %[[EMB:.*]] = rdu.all_reduce %[[OWN]] group 2 : tensor<2x3x4xf32> -> tensor<2x3x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      rdu.matmul %[[EMB]], %w transpose_rhs : tensor<2x3x4xf32>, tensor<4x4xf32> -> tensor<2x3x4xf32>

// -----

// Where the rule must not fire: an untied table (read by the lookup alone) and a tied
// table whose vocabulary does not divide the ranks stay whole, looked up as before.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @embed.weight : tensor<8x4xf32> {kind = "parameter"}
  tier.global @odd.weight : tensor<7x4xf32> {kind = "parameter"}
  tier.global @up.weight : tensor<6x4xf32> {kind = "parameter"}
  func.func @forward(%ids: tensor<3xi64> {rdu.input = "ids"}, %w: tensor<8x4xf32> {rdu.global = @embed.weight}, %odd: tensor<7x4xf32> {rdu.global = @odd.weight}, %up: tensor<6x4xf32> {rdu.global = @up.weight}) -> (tensor<3x6xf32>, tensor<3x7xf32>) {
    %emb = rdu.gather %w[%ids] dim 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
    %h = rdu.matmul %emb, %up transpose_rhs : tensor<3x4xf32>, tensor<6x4xf32> -> tensor<3x6xf32>
    %e2 = rdu.gather %odd[%ids] dim 0 : tensor<7x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
    %mm = rdu.matmul %e2, %odd transpose_rhs : tensor<3x4xf32>, tensor<7x4xf32> -> tensor<3x7xf32>
    func.return %h, %mm : tensor<3x6xf32>, tensor<3x7xf32>
  }
}

// CHECK:      tier.global @embed.weight : tensor<8x4xf32> {kind = "parameter", rdu.whole_reader = ["rdu.gather", ""]}
// CHECK-NEXT: tier.global @odd.weight : tensor<7x4xf32> {kind = "parameter", rdu.whole_reader = ["rdu.gather", ""]}
// CHECK-NEXT: tier.global @up.weight : tensor<3x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NOT:  rdu.all_reduce
// CHECK:      %emb = rdu.gather %w[%ids] dim 0 : tensor<8x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      %e2 = rdu.gather %odd[%ids] dim 0 : tensor<7x4xf32>, tensor<3xi64> -> tensor<3x4xf32>
// CHECK-NOT:  rdu.all_reduce
// CHECK:      func.return
