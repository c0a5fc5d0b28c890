// rdu-partition on an outlined layer whose calls pass windows of a stacked
// argument (`gate_up[i, 0]` and `gate_up[i, 1]` of a weight stacked over the
// layers, as rdu-outline-layers leaves them: a slice and a reshape before each
// call, two windows of one argument for one call, as k and v of a stacked KV
// cache): the walk leaves each window to its call, which splits it as @layer
// takes the argument, and the stacked global under it once for every window
// (no rdu.local_part of a whole copy, no all-gather).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=3 divides no width of @layer (16 and 32): nothing would split.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @gate_up : tensor<2x2x32x16xf32> {kind = "parameter"}
  tier.global @layers.0.down : tensor<16x32xf32> {kind = "parameter"}
  tier.global @layers.1.down : tensor<16x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %gu: tensor<2x2x32x16xf32> {rdu.global = @gate_up}, %d0: tensor<16x32xf32> {rdu.global = @layers.0.down}, %d1: tensor<16x32xf32> {rdu.global = @layers.1.down}) -> tensor<1x16xf32> {
    %s0 = rdu.slice %gu offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x32x16xf32> -> tensor<1x1x32x16xf32>
    %g0 = rdu.reshape %s0 : tensor<1x1x32x16xf32> -> tensor<32x16xf32>
    %t0 = rdu.slice %gu offsets [0, 1, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x32x16xf32> -> tensor<1x1x32x16xf32>
    %u0 = rdu.reshape %t0 : tensor<1x1x32x16xf32> -> tensor<32x16xf32>
    %h0 = func.call @layer(%x, %g0, %u0, %d0) {rdu.layer = "layers.0"} : (tensor<1x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    %s1 = rdu.slice %gu offsets [1, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x32x16xf32> -> tensor<1x1x32x16xf32>
    %g1 = rdu.reshape %s1 : tensor<1x1x32x16xf32> -> tensor<32x16xf32>
    %t1 = rdu.slice %gu offsets [1, 1, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x32x16xf32> -> tensor<1x1x32x16xf32>
    %u1 = rdu.reshape %t1 : tensor<1x1x32x16xf32> -> tensor<32x16xf32>
    %h1 = func.call @layer(%h0, %g1, %u1, %d1) {rdu.layer = "layers.1"} : (tensor<1x16xf32>, tensor<32x16xf32>, tensor<32x16xf32>, tensor<16x32xf32>) -> tensor<1x16xf32>
    func.return %h1 : tensor<1x16xf32>
  }
  func.func private @layer(%in: tensor<1x16xf32> {rdu.input = "x"}, %gate: tensor<32x16xf32> {rdu.weight}, %up: tensor<32x16xf32> {rdu.weight}, %down: tensor<16x32xf32> {rdu.weight}) -> tensor<1x16xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
    %a = rdu.matmul %in, %gate transpose_rhs : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %c = rdu.matmul %in, %up transpose_rhs : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %m = rdu.map %a, %c : (tensor<1x32xf32>, tensor<1x32xf32>) -> tensor<1x32xf32> {
    ^bb0(%p: f32, %q: f32):
      %s = arith.mulf %p, %q : f32
      rdu.yield %s : f32
    }
    %b = rdu.matmul %m, %down transpose_rhs : tensor<1x32xf32>, tensor<16x32xf32> -> tensor<1x16xf32>
    func.return %b : tensor<1x16xf32>
  }
}

// CHECK:      builtin.module attributes {{.*}}rdu.partition = {tp = 2 : i64, pp = 1 : i64}
// CHECK-NEXT: tier.global @gate_up : tensor<2x2x16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(2, 2, 1)>}
// CHECK-NOT:  rdu.local_part
// CHECK-NOT:  rdu.all_gather
// CHECK:      %s0 = rdu.slice %gu offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x16x16xf32> -> tensor<1x1x16x16xf32>
// CHECK-NEXT: %g0 = rdu.reshape %s0 : tensor<1x1x16x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %t0 = rdu.slice %gu offsets [0, 1, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x16x16xf32> -> tensor<1x1x16x16xf32>
// CHECK-NEXT: %u0 = rdu.reshape %t0 : tensor<1x1x16x16xf32> -> tensor<16x16xf32>
// CHECK-NEXT: %h0 = func.call @layer(%x, %g0, %u0, %d0) {{.*}}: (tensor<1x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
// CHECK:      %t1 = rdu.slice %gu offsets [1, 1, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x16x16xf32> -> tensor<1x1x16x16xf32>
// CHECK:      %h1 = func.call @layer(%h0, %g1, %u1, %d1) {{.*}}: (tensor<1x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<1x16xf32>
// CHECK:      func.func private @layer
// CHECK:      rdu.all_reduce %b group 2

// ERR: rdu-partition: tp=3 splits nothing in this model
