// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2 sequence_parallel=true target=sn40l-8}' %s | filecheck %s
// RUN: rducc-opt -p 'rdu-partition{tp=2 target=sn40l-8}' %s | filecheck %s --check-prefix=PLAIN
// RUN: not rducc-opt -p 'rdu-partition{dp=2 sequence_parallel=true target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Sequence parallelism (Megatron's) as rules of the general ops. A column-split
// matmul, then a row-split one whose result is a partial sum of activations
// (8 tokens x 16 features): without sequence parallelism the residual add reads
// it all-reduced and runs whole on every rank (PLAIN). With it the partial sum
// is reduce-scattered along the tokens, the residual's replicated operand is cut
// locally (nothing sent), the elementwise op after it runs on 4 tokens a rank,
// and the next matmul of a weight all-gathers its input first (its weight then
// splits by columns as under tp). Without tp >= 2 it is refused.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}, %w1: tensor<16x32xf32> {rdu.weight}, %w2: tensor<32x16xf32> {rdu.weight}, %w3: tensor<16x32xf32> {rdu.weight}) -> tensor<8x32xf32> {
    %h = rdu.matmul %x, %w1 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    %o = rdu.matmul %h, %w2 : tensor<8x32xf32>, tensor<32x16xf32> -> tensor<8x16xf32>
    %r = rdu.map %o, %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %s = rdu.map %r : (tensor<8x16xf32>) -> tensor<8x16xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %y = rdu.matmul %s, %w3 : tensor<8x16xf32>, tensor<16x32xf32> -> tensor<8x32xf32>
    func.return %y : tensor<8x32xf32>
  }
}

// CHECK:      %o = rdu.matmul %h, %w2 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %[[SCATTERED:.*]] = rdu.reduce_scatter %o dim 0 group 2 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK:      %[[MINE:.*]] = rdu.local_part %x dim 0 group 2 : tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT: %r = rdu.map %[[SCATTERED]], %[[MINE]] : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK:      %s = rdu.map %r : (tensor<4x16xf32>) -> tensor<4x16xf32>
// CHECK:      %[[WHOLE:.*]] = rdu.all_gather %s dim 0 group 2 : tensor<4x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT: %y = rdu.matmul %[[WHOLE]], %w3 : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
// CHECK-NOT:  rdu.all_reduce

// PLAIN:      %[[SUM:.*]] = rdu.all_reduce %o group 2 : tensor<8x16xf32> -> tensor<8x16xf32>
// PLAIN-NEXT: %r = rdu.map %[[SUM]], %x : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// PLAIN-NOT:  rdu.reduce_scatter

// ERR: sequence_parallel splits the activations between the tensor-parallel regions: it needs tp >= 2, got tp=0
