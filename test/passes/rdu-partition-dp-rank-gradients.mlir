// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{dp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A gradients-only mixed-precision step (`optimizer=None`) at dp=2: no
// parameter is written back, the step returns the float32 master weight's
// gradient (`rdu.result_roles`; the parameters whose gradients are returned
// count as trained, so the step is mixed precision). The weight gradient
// under autocast, a bf16 matmul over the batch only cast up to f32, is each
// replica's own bf16 gradient, as each DDP rank's kernel rounds its local
// gradient: it stays bf16, and the all-reduce takes it after the cast, in f32,
// as DistributedDataParallel all-reduces each rank's float32 `.grad`
// (`training.ddp_gradient`). A 16-bit partial sum read otherwise (%colsum,
// squared) is kept in f32 through its all-reduce and rounded once after it
// (`_widen_partial`). dp=3 does not divide the batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc.weight : tensor<2x3xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x3xbf16> {rdu.input = "x"}, %dy: tensor<4x2xbf16> {rdu.input = "dy"}, %w: tensor<2x3xf32> {rdu.global = @fc.weight}) -> (tensor<f32>, tensor<2x3xf32>, tensor<3xbf16>) attributes {rdu.result_roles = ["loss", "gradient:parameter:fc.weight", ""]} {
    %dyt = rdu.transpose %dy perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x2xbf16> -> tensor<2x4xbf16>
    %grad = rdu.matmul %dyt, %x {rdu.phase = #rdu<phase backward>} : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
    %wide = rdu.map %grad {rdu.phase = #rdu<phase backward>} : (tensor<2x3xbf16>) -> tensor<2x3xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %colsum = rdu.reduce sum %x dims [0] : tensor<4x3xbf16> -> tensor<3xbf16>
    %squared = rdu.map %colsum : (tensor<3xbf16>) -> tensor<3xbf16> {
    ^bb0(%0: bf16):
      %1 = arith.mulf %0, %0 : bf16
      rdu.yield %1 : bf16
    }
    %loss = rdu.reduce sum %w dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    func.return %loss, %wide, %squared : tensor<f32>, tensor<2x3xf32>, tensor<3xbf16>
  }
}

// CHECK:      %grad = rdu.matmul %dyt, %x {{.*}} : tensor<2x2xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT: %wide = rdu.map %grad {{.*}} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
// CHECK:      arith.extf
// CHECK:      %[[SUM:.*]] = rdu.all_reduce %wide group 2 {{.*}} : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:      %colsum = rdu.reduce sum {{.*}} -> tensor<3xf32>
// CHECK-NEXT: %[[COLS:.*]] = rdu.all_reduce %colsum group 2 : tensor<3xf32> -> tensor<3xf32>
// CHECK-NEXT: %[[ROUNDED:.*]] = rdu.map %[[COLS]] {{.*}} -> tensor<3xbf16>
// CHECK:      arith.truncf {{.*}} : f32 to bf16
// CHECK:      %squared = rdu.map %[[ROUNDED]]
// CHECK:      func.return %loss, %[[SUM]], %squared
// CHECK-NOT:  rdu.all_reduce {{.*}}xbf16>

// ERR: dp=3 does not divide the batch of 4
