// rdu-partition on an outlined layer (the multi-socket -O pipelines run
// rdu-outline-layers first): @layer is partitioned once, its weight arguments
// split (up by columns, down by rows, an all-reduce after down), and each call
// shards its own weights as @layer takes them; the results stay whole.
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=3 divides no width of @layer (16 and 32): nothing would split.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @layers.0.up : tensor<32x16xf32> {kind = "parameter"}
  tier.global @layers.0.down : tensor<16x32xf32> {kind = "parameter"}
  tier.global @layers.1.up : tensor<32x16xf32> {kind = "parameter"}
  tier.global @layers.1.down : tensor<16x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %u0: tensor<32x16xf32> {rdu.global = @layers.0.up}, %d0: tensor<16x32xf32> {rdu.global = @layers.0.down}, %u1: tensor<32x16xf32> {rdu.global = @layers.1.up}, %d1: tensor<16x32xf32> {rdu.global = @layers.1.down}) -> tensor<1x16xf32> {
    %h0 = func.call @layer(%x, %u0, %d0) {rdu.layer = "layers.0"} : (tensor<1x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    %h1 = func.call @layer(%h0, %u1, %d1) {rdu.layer = "layers.1"} : (tensor<1x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    func.return %h1 : tensor<1x16xf32>
  }
  func.func private @layer(%in: tensor<1x16xf32> {rdu.input = "x"}, %up: tensor<32x16xf32> {rdu.weight}, %down: tensor<16x32xf32> {rdu.weight}) -> tensor<1x16xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
    %a = rdu.matmul %in, %up transpose_rhs : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %r = rdu.map %a : (tensor<1x32xf32>) -> tensor<1x32xf32> {
    ^bb0(%v: f32):
      %zero = arith.constant 0.000000e+00 : f32
      %m = arith.maximumf %v, %zero : f32
      rdu.yield %m : f32
    }
    %b = rdu.matmul %r, %down transpose_rhs : tensor<1x32xf32>, tensor<16x32xf32> -> tensor<1x16xf32>
    %y = rdu.map %in, %b : (tensor<1x16xf32>, tensor<1x16xf32>) -> tensor<1x16xf32> {
    ^bb0(%p: f32, %q: f32):
      %s = arith.addf %p, %q : f32
      rdu.yield %s : f32
    }
    func.return %y : tensor<1x16xf32>
  }
}

// CHECK:      builtin.module attributes {{.*}}rdu.partition = {tp = 2 : i64, pp = 1 : i64}
// CHECK-NEXT: tier.global @layers.0.up : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @layers.0.down : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK-NEXT: tier.global @layers.1.up : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK-NEXT: tier.global @layers.1.down : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %h0 = func.call @layer(%x, %u0, %d0) {{.*}}: (tensor<1x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
// CHECK-NEXT: %h1 = func.call @layer(%h0, %u1, %d1) {{.*}}: (tensor<1x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
// CHECK:      func.func private @layer({{.*}}%up: tensor<16x16xf32> {rdu.weight, rdu.shard = #rdu.split<(0, 2, 1)>}, %down: tensor<16x16xf32> {rdu.weight, rdu.shard = #rdu.split<(1, 2, 1)>})
// CHECK-NOT:  rdu.all_gather
// CHECK:      %b = rdu.matmul %r, %down transpose_rhs : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
// CHECK-NEXT: rdu.all_reduce %b group 2
// CHECK-NOT:  rdu.all_reduce

// ERR: rdu-partition: tp=3 splits nothing in this model
