// Fusion consults the mapper (passes/rdu_fuse.py, docs/cost-model.md "Fusion and
// the mapper"): a group that maps badly is split, one that maps well stays fused.
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=1 target="%S/Inputs/fuse-slow-pcus.toml"}' %s | filecheck %s
// On sn40l (1,040 PCUs, a 5 us launch) both groups map well and stay fused.
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=1}' %s | filecheck %s --check-prefix=SN40L
// No diagnostic of its own: an op the mapper has no room for even alone is
// rdu-map-units' error (test/passes/rdu-map-units.mlir); rdu-fuse's are in rdu-fuse.mlir.
//
// Starved: a 32x32x32 f32 matmul (65,536 FLOPs) with six elementwise maps as its
// epilogue, on 8 PCUs of 1e9 / 8 FLOP/s. Fused, each map holds the one PCU it
// needs at least and the matmul the 2 left: 65,536 / (2 x 1.25e8) = 262 us +
// a 20 us launch. Split where the stages' work reaches half (after the
// matmul), the matmul has all 8 PCUs (66 us) and the six maps (1,024 FLOPs at
// half rate, 16.4 us on one PCU) share 8, so 16.4 us: 66 + 16 + 2 x 20 = 122 us
// against 282, the group is split there. The six maps stay one kernel (split
// 3 | 3, each half is 8.2 us + a launch: 56 us against 36).
// CHECK-LABEL: func.func @starved
// CHECK:         rdu.kernel "k0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.matmul
// CHECK-NEXT:      rdu.yield
// CHECK:         rdu.kernel "k1"
// CHECK-COUNT-6:   rdu.map
// CHECK-NOT:     rdu.kernel "k2"
// SN40L-LABEL: func.func @starved
// SN40L:         rdu.kernel "k0"
// SN40L-NOT:     rdu.kernel "k1"

func.func @starved(%x: tensor<32x32xf32> {rdu.input = "x"}, %w: tensor<32x32xf32> {rdu.input = "w"}) -> tensor<32x32xf32> {
    %e0 = rdu.matmul %x, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %e1 = rdu.map %e0 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %e2 = rdu.map %e1 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %e3 = rdu.map %e2 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %e4 = rdu.map %e3 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %e5 = rdu.map %e4 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %e6 = rdu.map %e5 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    func.return %e6 : tensor<32x32xf32>
}

// -----

// Maps well: the same matmul with one map. Fused, the matmul holds 7 PCUs
// (65,536 / (7 x 1.25e8) = 75 us) + 20 us; split, 66 us + the map on 6 PCUs
// (2.7 us) + two launches = 108 us: it stays fused.
// CHECK-LABEL: func.func @fed
// CHECK:         rdu.kernel "k0"
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.matmul
// CHECK-NEXT:      rdu.map
// CHECK-NOT:     rdu.kernel "k1"
// SN40L-LABEL: func.func @fed
// SN40L:         rdu.kernel "k0"
// SN40L-NOT:     rdu.kernel "k1"

func.func @fed(%x: tensor<32x32xf32> {rdu.input = "x"}, %w: tensor<32x32xf32> {rdu.input = "w"}) -> tensor<32x32xf32> {
    %e0 = rdu.matmul %x, %w : tensor<32x32xf32>, tensor<32x32xf32> -> tensor<32x32xf32>
    %e1 = rdu.map %e0 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    func.return %e1 : tensor<32x32xf32>
}
