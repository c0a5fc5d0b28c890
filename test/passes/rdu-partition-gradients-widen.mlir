// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{dp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A gradients-only mixed-precision step (`optimizer=None`) at dp=2: no
// parameter is written back, the step returns the float32 master weight's
// gradient (`rdu.result_roles`). The weight gradient under autocast, a bf16
// matmul over the batch, is a partial sum of each replica's half: it is kept
// in f32 through the all-reduce and rounded to bf16 once after it, as with
// an optimizer (before, the step counted as trained in 16 bits, since no
// parameter was updated, and each replica rounded its half to bf16 first).
// dp=3 does not divide the batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc.weight : tensor<2x3xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x3xbf16> {rdu.input = "x"}, %dy: tensor<4x2xbf16> {rdu.input = "dy"}, %w: tensor<2x3xf32> {rdu.global = @fc.weight}) -> (tensor<f32>, tensor<2x3xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:fc.weight"]} {
    %dyt = rdu.transpose %dy perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x2xbf16> -> tensor<2x4xbf16>
    %grad = rdu.matmul %dyt, %x {rdu.phase = #rdu<phase backward>} : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
    %wide = rdu.map %grad {rdu.phase = #rdu<phase backward>} : (tensor<2x3xbf16>) -> tensor<2x3xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %loss = rdu.reduce sum %w dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    func.return %loss, %wide : tensor<f32>, tensor<2x3xf32>
  }
}

// CHECK:      %grad = rdu.matmul %dyt, %x {{.*}} : tensor<2x2xbf16>, tensor<2x3xbf16> -> tensor<2x3xf32>
// CHECK-NEXT: %[[SUM:.*]] = rdu.all_reduce %grad group 2 {{.*}} : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK-NEXT: %[[ROUNDED:.*]] = rdu.map %[[SUM]] {{.*}} -> tensor<2x3xbf16>
// CHECK:      arith.truncf {{.*}} : f32 to bf16
// CHECK:      %wide = rdu.map %[[ROUNDED]]
// CHECK-NOT:  rdu.all_reduce {{.*}}xbf16>

// ERR: dp=3 does not divide the batch of 4
