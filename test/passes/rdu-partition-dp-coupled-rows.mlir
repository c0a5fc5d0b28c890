// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{dp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A mixed-precision step at dp=2 whose forward couples the rows: a sum over
// the batch (batch norm's statistics) is all-reduced and subtracted from the
// replica's rows, and the backward reads the result (as SyncBatchNorm). Its
// bf16 weight gradient is still each replica's own, rounded by its kernel,
// cast up and all-reduced in f32, as DDP with SyncBatchNorm rounds each
// rank's (rdu-partition-dp-rank-gradients.mlir): not kept in f32 and rounded
// once after the all-reduce (the whole batch's matmul rounding, which a bf16
// convolution backward adding images one by one has no parallel form of).
// dp=3 does not divide the batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc.weight : tensor<2x3xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x3xf32> {rdu.input = "x"}, %dy: tensor<4x2xbf16> {rdu.input = "dy"}, %w: tensor<2x3xf32> {rdu.global = @fc.weight}) -> (tensor<f32>, tensor<2x3xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:fc.weight"]} {
    %stat = rdu.reduce sum %x dims [0] {rdu.phase = #rdu<phase forward>} : tensor<4x3xf32> -> tensor<3xf32>
    %row = rdu.reshape %stat {rdu.phase = #rdu<phase forward>} : tensor<3xf32> -> tensor<1x3xf32>
    %stats = rdu.broadcast %row {rdu.phase = #rdu<phase forward>} : tensor<1x3xf32> -> tensor<4x3xf32>
    %centred = rdu.map %x, %stats {rdu.phase = #rdu<phase forward>} : (tensor<4x3xf32>, tensor<4x3xf32>) -> tensor<4x3xbf16> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      %3 = arith.truncf %2 : f32 to bf16
      rdu.yield %3 : bf16
    }
    %dyt = rdu.transpose %dy perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x2xbf16> -> tensor<2x4xbf16>
    %grad = rdu.matmul %dyt, %centred {rdu.phase = #rdu<phase backward>} : tensor<2x4xbf16>, tensor<4x3xbf16> -> tensor<2x3xbf16>
    %wide = rdu.map %grad {rdu.phase = #rdu<phase backward>} : (tensor<2x3xbf16>) -> tensor<2x3xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %loss = rdu.reduce sum %w dims [0, 1] : tensor<2x3xf32> -> tensor<f32>
    func.return %loss, %wide : tensor<f32>, tensor<2x3xf32>
  }
}

// CHECK:      %stat = rdu.reduce sum {{.*}} -> tensor<3xf32>
// CHECK:      rdu.all_reduce %stat group 2 {{.*}} : tensor<3xf32>
// CHECK:      %grad = rdu.matmul %dyt, %centred {{.*}} : tensor<2x2xbf16>, tensor<2x3xbf16> -> tensor<2x3xbf16>
// CHECK-NEXT: %wide = rdu.map %grad {{.*}} : (tensor<2x3xbf16>) -> tensor<2x3xf32>
// CHECK:      %[[SUM:.*]] = rdu.all_reduce %wide group 2 {{.*}} : tensor<2x3xf32> -> tensor<2x3xf32>
// CHECK:      func.return %loss, %[[SUM]]
// CHECK-NOT:  rdu.all_reduce {{.*}}xbf16>

// ERR: dp=3 does not divide the batch of 4
