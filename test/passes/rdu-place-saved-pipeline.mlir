// A pipelined training step (rdu-partition pp=2 of two 64x64 linear layers,
// relu and tanh, SGD: `rducc --train --optimizer sgd --pp 2 --target sn40l-8
// --emit kernels -O0`): layer a and its backward and update run on stage 0,
// layer b and the loss on stage 1, each stage on its own socket with its own
// HBM. rdu-place-saved counts each stage's demand (the globals it first reads
// plus the peak of the activations its ops make, the user inputs it reads)
// against its own socket's HBM, as rdu-place-tiers does.
// RUN: rducc-opt --check-roundtrip -p 'rdu-place-saved{target="%S/Inputs/train-pp.toml"},rdu-tile,rdu-place-tiers{target="%S/Inputs/train-pp.toml"}' %s | filecheck %s --check-prefix=FITS
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 80_000/' %S/Inputs/train-pp.toml > %t-80k.toml
// RUN: rducc-opt -p 'rdu-place-saved{target="%t-80k.toml"}' %s | filecheck %s --check-prefix=STAGE0
// Invalid: a socket too small for stage 0's activations alone.
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 40_000/' %S/Inputs/train-pp.toml > %t-40k.toml
// RUN: not rducc-opt -p 'rdu-place-saved{target="%t-40k.toml"},rdu-tile,rdu-place-tiers{target="%t-40k.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR

// 90 kB a socket: the whole step's demand (32.8 kB of weights and a peak of
// 81.9 kB of activations) exceeds it, each stage's (86.0 and 49.2 kB) does
// not: nothing goes to DDR (counted as a whole, a.weight and %mul_1 did).
// FITS:     activations.hbm = 32768 : i64, activations.ddr = 0 : i64, activations.recompute = 0 : i64, gradients.sram = 0 : i64, gradients.hbm = 32768 : i64, gradients.ddr = 0 : i64
// FITS-SAME: tier.hbm_weight_bytes_by_stage = array<i64: 16392, 16384>
// FITS:     tier.global @a.weight in hbm
// FITS-NEXT: tier.global @b.weight in hbm
// FITS-NOT: "ddr"

// 80 kB a socket: stage 0 (86.0 kB) must free bytes, stage 1 (49.2 kB) need
// not; the spill is a value of stage 0 (b's gradient, made there and sent to
// stage 1 for its update).
// STAGE0:      gradients.hbm = 16384 : i64, gradients.ddr = 16384 : i64
// STAGE0:      %relu = rdu.kernel "k1"(%mm) {rdu.saved = ["hbm"]
// STAGE0:      %tanh = rdu.kernel "k4"(%mm_1) {rdu.saved = ["hbm"]
// STAGE0:      %mm_2 = rdu.kernel "k11"(%2, %relu) {rdu.saved = ["ddr"]
// STAGE0:      rdu.matmul %3, %relu_1 {{.*}}rdu.stage = 0
// STAGE0-NOT:  "ddr"

// ERR: error: the model does not fit train-pp: 32776 bytes of weights and 49152 bytes of activations (pipeline stage 0's sockets), against 40000 bytes of HBM

builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.partition = {tp = 1 : i64, pp = 2 : i64, microbatches = 8 : i64}} {
  tier.global @a.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @b.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @optimizer.lr.0 : tensor<f64> {kind = "buffer", rdu.memory_class = "optimizer state"}
  func.func @forward(%x: tensor<64x64xf32> {rdu.input = "x"}, %p_a_weight: tensor<64x64xf32> {rdu.global = @a.weight}, %p_b_weight: tensor<64x64xf32> {rdu.global = @b.weight}, %0: tensor<f64> {rdu.global = @optimizer.lr.0}) -> (tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>) attributes {rdu.result_roles = ["loss", "", ""], rdu.result_updates = ["", "buffer:a.weight", "buffer:b.weight"]} {
    %mm = rdu.kernel "k0"(%x, %p_a_weight) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%x_1: tensor<64x64xf32>, %p_a_weight_1: tensor<64x64xf32>):
      %mm_1 = rdu.matmul %x_1, %p_a_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_1 : tensor<64x64xf32>
    }
    %relu = rdu.kernel "k1"(%mm) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mm_1: tensor<64x64xf32>):
      %relu_1 = rdu.map %mm_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%1: f32):
        %2 = arith.constant 0.000000e+00 : f32
        %3 = arith.maximumf %1, %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %relu_1 : tensor<64x64xf32>
    }
    %1 = rdu.kernel "k2"(%relu) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%relu_1: tensor<64x64xf32>):
      %2 = rdu.send_recv %relu_1 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %2 : tensor<64x64xf32>
    }
    %mm_1 = rdu.kernel "k3"(%1, %p_b_weight) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%2: tensor<64x64xf32>, %p_b_weight_1: tensor<64x64xf32>):
      %mm_2 = rdu.matmul %2, %p_b_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_2 : tensor<64x64xf32>
    }
    %tanh = rdu.kernel "k4"(%mm_1) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mm_2: tensor<64x64xf32>):
      %tanh_1 = rdu.map %mm_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%2: f32):
        %3 = math.tanh %2 : f32
        rdu.yield %3 : f32
      }
      rdu.yield %tanh_1 : tensor<64x64xf32>
    }
    %sum = rdu.kernel "k5"(%tanh) : (tensor<64x64xf32>) -> tensor<f32> {
    ^bb0(%tanh_1: tensor<64x64xf32>):
      %sum_1 = rdu.reduce sum %tanh_1 dims [0, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<f32>
      rdu.yield %sum_1 : tensor<f32>
    }
    %mul = rdu.kernel "k6"(%tanh) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%tanh_1: tensor<64x64xf32>):
      %mul_1 = rdu.map %tanh_1, %tanh_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%2: f32, %3: f32):
        %4 = arith.mulf %2, %3 : f32
        rdu.yield %4 : f32
      }
      rdu.yield %mul_1 : tensor<64x64xf32>
    }
    %sub = rdu.kernel "k7"(%mul) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_1: tensor<64x64xf32>):
      %sub_1 = rdu.map %mul_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%2: f32):
        %3 = arith.constant 1.000000e+00 : f32
        %4 = arith.subf %3, %2 : f32
        rdu.yield %4 : f32
      }
      rdu.yield %sub_1 : tensor<64x64xf32>
    }
    %mul_1 = rdu.kernel "k8"(%sub) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%sub_1: tensor<64x64xf32>):
      %mul_2 = rdu.map %sub_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%2: f32):
        %3 = arith.constant 1.000000e+00 : f32
        %4 = arith.mulf %3, %2 : f32
        rdu.yield %4 : f32
      }
      rdu.yield %mul_2 : tensor<64x64xf32>
    }
    %permute = rdu.kernel "k9"(%mul_1) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_2: tensor<64x64xf32>):
      %permute_1 = rdu.transpose %mul_2 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %permute_1 : tensor<64x64xf32>
    }
    %2 = rdu.kernel "k10"(%permute) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%permute_1: tensor<64x64xf32>):
      %3 = rdu.send_recv %permute_1 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %3 : tensor<64x64xf32>
    }
    %mm_2 = rdu.kernel "k11"(%2, %relu) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%3: tensor<64x64xf32>, %relu_1: tensor<64x64xf32>):
      %mm_3 = rdu.matmul %3, %relu_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_3 : tensor<64x64xf32>
    }
    %mm_3 = rdu.kernel "k12"(%mul_1, %p_b_weight) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mul_2: tensor<64x64xf32>, %p_b_weight_1: tensor<64x64xf32>):
      %mm_4 = rdu.matmul %mul_2, %p_b_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_4 : tensor<64x64xf32>
    }
    %le = rdu.kernel "k13"(%relu) : (tensor<64x64xf32>) -> tensor<64x64xi1> {
    ^bb0(%relu_1: tensor<64x64xf32>):
      %le_1 = rdu.map %relu_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xf32>) -> tensor<64x64xi1> {
      ^bb0(%3: f32):
        %4 = arith.constant 0.000000e+00 : f32
        %5 = arith.cmpf ole, %3, %4 : f32
        rdu.yield %5 : i1
      }
      rdu.yield %le_1 : tensor<64x64xi1>
    }
    %3 = rdu.kernel "k14"(%mm_3) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mm_4: tensor<64x64xf32>):
      %4 = rdu.send_recv %mm_4 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %4 : tensor<64x64xf32>
    }
    %where = rdu.kernel "k15"(%le, %3) : (tensor<64x64xi1>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%le_1: tensor<64x64xi1>, %4: tensor<64x64xf32>):
      %where_1 = rdu.map %le_1, %4 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<64x64xi1>, tensor<64x64xf32>) -> tensor<64x64xf32> {
      ^bb0(%5: i1, %6: f32):
        %7 = arith.constant 0.000000e+00 : f32
        %8 = arith.select %5, %7, %6 : f32
        rdu.yield %8 : f32
      }
      rdu.yield %where_1 : tensor<64x64xf32>
    }
    %permute_1 = rdu.kernel "k16"(%where) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%where_1: tensor<64x64xf32>):
      %permute_2 = rdu.transpose %where_1 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %permute_2 : tensor<64x64xf32>
    }
    %mm_4 = rdu.kernel "k17"(%permute_1, %x) : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%permute_2: tensor<64x64xf32>, %x_1: tensor<64x64xf32>):
      %mm_5 = rdu.matmul %permute_2, %x_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %mm_5 : tensor<64x64xf32>
    }
    %_to_copy = rdu.kernel "k18"(%0) : (tensor<f64>) -> tensor<f32> {
    ^bb0(%4: tensor<f64>):
      %_to_copy_1 = rdu.map %4 {rdu.phase = #rdu<phase optimizer>, rdu.stage = 0 : i64} : (tensor<f64>) -> tensor<f32> {
      ^bb0(%5: f64):
        %6 = arith.truncf %5 : f64 to f32
        rdu.yield %6 : f32
      }
      rdu.yield %_to_copy_1 : tensor<f32>
    }
    %addcmul = rdu.kernel "k19"(%p_a_weight, %mm_4, %_to_copy) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> {
    ^bb0(%p_a_weight_1: tensor<64x64xf32>, %mm_5: tensor<64x64xf32>, %_to_copy_1: tensor<f32>):
      %addcmul_1 = rdu.map %p_a_weight_1, %mm_5, %_to_copy_1 {rdu.phase = #rdu<phase optimizer>, rdu.stage = 0 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> {
      ^bb0(%4: f32, %5: f32, %6: f32):
        %7 = arith.constant -1.000000e+00 : f32
        %8 = arith.mulf %7, %5 : f32
        %9 = math.fma %8, %6, %4 : f32
        rdu.yield %9 : f32
      }
      rdu.yield %addcmul_1 : tensor<64x64xf32>
    }
    %_to_copy_1 = rdu.kernel "k20"(%0) : (tensor<f64>) -> tensor<f32> {
    ^bb0(%4: tensor<f64>):
      %_to_copy_2 = rdu.map %4 {rdu.phase = #rdu<phase optimizer>, rdu.stage = 1 : i64} : (tensor<f64>) -> tensor<f32> {
      ^bb0(%5: f64):
        %6 = arith.truncf %5 : f64 to f32
        rdu.yield %6 : f32
      }
      rdu.yield %_to_copy_2 : tensor<f32>
    }
    %4 = rdu.kernel "k21"(%mm_2) : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%mm_5: tensor<64x64xf32>):
      %5 = rdu.send_recv %mm_5 from 0 to 1 {rdu.phase = #rdu<phase optimizer>, rdu.stage = 1 : i64} : tensor<64x64xf32> -> tensor<64x64xf32>
      rdu.yield %5 : tensor<64x64xf32>
    }
    %addcmul_1 = rdu.kernel "k22"(%p_b_weight, %4, %_to_copy_1) : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> {
    ^bb0(%p_b_weight_1: tensor<64x64xf32>, %5: tensor<64x64xf32>, %_to_copy_2: tensor<f32>):
      %addcmul_2 = rdu.map %p_b_weight_1, %5, %_to_copy_2 {rdu.phase = #rdu<phase optimizer>, rdu.stage = 1 : i64} : (tensor<64x64xf32>, tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32> {
      ^bb0(%6: f32, %7: f32, %8: f32):
        %9 = arith.constant -1.000000e+00 : f32
        %10 = arith.mulf %9, %7 : f32
        %11 = math.fma %10, %8, %6 : f32
        rdu.yield %11 : f32
      }
      rdu.yield %addcmul_2 : tensor<64x64xf32>
    }
    func.return %sum, %addcmul, %addcmul_1 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>
  }
}
