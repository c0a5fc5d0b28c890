// Where a long run of ops stops fitting one kernel. rdu-fuse grows each kernel
// op by op with a bound on its working set kept as it grows (kernel_model's
// `GrowingGroup`), asking the full fit only where the bound leaves it open: the
// same kernels as asking it of every longer run, at the cost of the run's length.
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=1 target="%S/Inputs/fuse-long-run.toml"}' %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/fuse-long-run.toml"}' %s | filecheck %s
//
// A target with no PCUs is refused, named, before any op is weighed.
// RUN: not rducc-opt -p 'rdu-fuse{target="%S/Inputs/fuse-no-pcus.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
// ERR-NOT: Traceback
// ERR:     rducc-opt: error: target file {{.*}}fuse-no-pcus.toml: field 'pcus' must be > 0
// ERR-NOT: Traceback
//
// The target has 12 PCUs and 8 PMUs of 4 KiB; each 4x16 f32 value takes one PMU.
// Each map reads one more input: with x and a0..a4 (6 inputs), the last map's
// result (1) and the values in between (1), m0..m4 take all 8 PMUs; m5 would
// need 9, so the second kernel starts there.
// CHECK-LABEL: func.func @inputs_grow
// CHECK:         %m4 = rdu.kernel "k0"(%x, %a0, %a1, %a2, %a3, %a4)
// CHECK:         %m9 = rdu.kernel "k1"(%m4, %a5, %a6, %a7, %a8, %a9)
// CHECK-NOT:     rdu.kernel
// CHECK:         func.return %m9

// Each map is a PCU stage: 12 fit, the 13th starts a kernel (the stage count
// alone decides it: no tile plan needs fewer stages).
// CHECK-LABEL: func.func @stages_grow
// CHECK:         %n11 = rdu.kernel "k0"(%x)
// CHECK:         %n19 = rdu.kernel "k1"(%n11)
// CHECK-NOT:     rdu.kernel

// The table (64 KiB, 16 PMUs) is read by an indexed DMA: only its gathered
// rows come on chip (one PMU). The bound counts the whole table, so it settles
// nothing here, and the full fit keeps the gather and its maps one kernel.
// CHECK-LABEL: func.func @gathered
// CHECK:         %g3 = rdu.kernel "k0"(%table, %ids, %a0)
// CHECK-NOT:     rdu.kernel

func.func @inputs_grow(%x: tensor<4x16xf32> {rdu.input = "x"}, %a0: tensor<4x16xf32> {rdu.input = "a0"}, %a1: tensor<4x16xf32> {rdu.input = "a1"}, %a2: tensor<4x16xf32> {rdu.input = "a2"}, %a3: tensor<4x16xf32> {rdu.input = "a3"}, %a4: tensor<4x16xf32> {rdu.input = "a4"}, %a5: tensor<4x16xf32> {rdu.input = "a5"}, %a6: tensor<4x16xf32> {rdu.input = "a6"}, %a7: tensor<4x16xf32> {rdu.input = "a7"}, %a8: tensor<4x16xf32> {rdu.input = "a8"}, %a9: tensor<4x16xf32> {rdu.input = "a9"}) -> tensor<4x16xf32> {
    %m0 = rdu.map %x, %a0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m1 = rdu.map %m0, %a1 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m2 = rdu.map %m1, %a2 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m3 = rdu.map %m2, %a3 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m4 = rdu.map %m3, %a4 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m5 = rdu.map %m4, %a5 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m6 = rdu.map %m5, %a6 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m7 = rdu.map %m6, %a7 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m8 = rdu.map %m7, %a8 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %m9 = rdu.map %m8, %a9 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    func.return %m9 : tensor<4x16xf32>
}

// -----

func.func @stages_grow(%x: tensor<4x16xf32> {rdu.input = "x"}) -> tensor<4x16xf32> {
    %n0 = rdu.map %x : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n1 = rdu.map %n0 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n2 = rdu.map %n1 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n3 = rdu.map %n2 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n4 = rdu.map %n3 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n5 = rdu.map %n4 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n6 = rdu.map %n5 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n7 = rdu.map %n6 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n8 = rdu.map %n7 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n9 = rdu.map %n8 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n10 = rdu.map %n9 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n11 = rdu.map %n10 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n12 = rdu.map %n11 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n13 = rdu.map %n12 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n14 = rdu.map %n13 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n15 = rdu.map %n14 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n16 = rdu.map %n15 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n17 = rdu.map %n16 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n18 = rdu.map %n17 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    %n19 = rdu.map %n18 : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32):
      %s = arith.mulf %u, %u : f32
      rdu.yield %s : f32
    }
    func.return %n19 : tensor<4x16xf32>
}

// -----

func.func @gathered(%table: tensor<1024x16xf32> {rdu.input = "table"}, %ids: tensor<4xi64> {rdu.input = "ids"}, %a0: tensor<4x16xf32> {rdu.input = "a0"}) -> tensor<4x16xf32> {
    %rows = rdu.gather %table[%ids] dim 0 : tensor<1024x16xf32>, tensor<4xi64> -> tensor<4x16xf32>
    %g0 = rdu.map %rows, %a0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %g1 = rdu.map %g0, %a0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %g2 = rdu.map %g1, %a0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    %g3 = rdu.map %g2, %a0 : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%u: f32, %v: f32):
      %s = arith.addf %u, %v : f32
      rdu.yield %s : f32
    }
    func.return %g3 : tensor<4x16xf32>
}
