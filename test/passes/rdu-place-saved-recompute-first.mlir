// rdu-place-saved weighs the plan that takes every recompute before any spill when the
// mixed plan (cheapest per byte first) put a value in DDR that closed a recompute and
// then kept spilling: on Llama 3.1 70B's widths at tp=8 pp=2 with sequence parallelism
// (Inputs/train-llama70b-sp-2-layers.mlir, 2 layers), cheap spills of values a layer
// call's recompute gives or reads close it, and the mixed plan goes on to spill 2.5 GB of
// gradients and every weight (priced 22.6 ms); recomputing the layer calls first costs
// 4.2 ms. Without that plan weighed, the step kept the mixed one (the 80-layer row:
// 17 GB of weights in DDR, 1,325.1 ms modeled, against 1,137.7 ms).
// RUN: rducc-opt -p 'rdu-place-saved{target="%S/Inputs/train-llama70b-hbm.toml"}' %S/Inputs/train-llama70b-sp-2-layers.mlir | filecheck %s
// Invalid: a socket whose HBM cannot hold stage 0's activations however they are placed.
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 500_000_000/' %S/Inputs/train-llama70b-hbm.toml > %t-small.toml
// RUN: not rducc-opt -p 'rdu-place-saved{target="%t-small.toml"},rdu-tile,rdu-place-tiers{target="%t-small.toml"}' %S/Inputs/train-llama70b-sp-2-layers.mlir 2>&1 | filecheck %s --check-prefix=ERR

// The layer calls' saved results recomputed (1.65 GB), 386 MB of gradients in DDR (the
// mixed plan: 2.52 GB), the attention projections kept in HBM (the mixed plan spilled them).
// CHECK:     activations.recompute = 1654657024 : i64
// CHECK-SAME: gradients.ddr = 385875968 : i64
// CHECK-NOT: self_attn.{{.*}} in ddr
// CHECK:     func.call @layer_forward{{.*}}rdu.recomputes = "layer_forward"
// CHECK-NOT: self_attn.{{.*}} in ddr

// ERR: error: the model does not fit train-llama70b-hbm: {{[0-9]+}} bytes of weights and {{[0-9]+}} bytes of activations (pipeline stage 0's sockets), against 500000000 bytes of HBM
