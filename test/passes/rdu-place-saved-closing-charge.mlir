// rdu-place-saved charges a spill of a value the saving it takes from the recomputes it
// closes or narrows (`_closing_charge`), so that the mixed plan (cheapest per byte first)
// itself recomputes where that is cheaper: on Llama 3.1 70B's widths at tp=8 pp=2 with
// sequence parallelism (Inputs/train-llama70b-sp-2-layers.mlir, 2 layers) at 2.86 GB a
// socket, slot values a layer call's recompute gives were priced at nothing (their
// kernels hide the DDR bytes) and narrowed both calls' recomputes; the plan then spilled
// a 2.1 GB gradient and the kernels' DDR headroom went to the slot values (priced 24.3 ms).
// Charged, the slot spills cost what the recompute does per byte and come after it: the
// mixed plan recomputes the layer call and keeps its gradients and attention weights in
// HBM (priced 5.9 ms, as the plan that takes every recompute first).
// RUN: rducc-opt -p 'rdu-place-saved{target="%S/Inputs/train-llama70b-hbm.toml"}' %S/Inputs/train-llama70b-sp-2-layers.mlir | filecheck %s
// Invalid: a socket whose HBM cannot hold stage 0's activations however they are placed.
// RUN: sed 's/^hbm_bytes = .*/hbm_bytes = 500_000_000/' %S/Inputs/train-llama70b-hbm.toml > %t-small.toml
// RUN: not rducc-opt -p 'rdu-place-saved{target="%t-small.toml"},rdu-tile,rdu-place-tiers{target="%t-small.toml"}' %S/Inputs/train-llama70b-sp-2-layers.mlir 2>&1 | filecheck %s --check-prefix=ERR

// The layer call's saved results recomputed but two 1 MB slots it gives (`unsqueeze`,
// spilled at a negative price), 193 MB of activations and 419 MB of gradients in DDR
// (uncharged: 1.07 GB of activations in DDR and 1.11 GB recomputed), the query, key and
// value projections kept in HBM. Since the first round counts each layer call's own peak
// it fits in one round (7.56 ms priced, 7.55 ms modeled) where a second round put 1.60 ms
// of spills on the charged plan's 5.92 ms (7.52 ms modeled): the one-round plan puts the
// output projections in DDR with the MLP's up and down weights.
// CHECK:     activations.ddr = 192937984 : i64, activations.recompute = 1556088832 : i64
// CHECK-SAME: gradients.ddr = 419430400 : i64
// CHECK-NOT: self_attn.{{[qkv]}}_proj.{{.*}} in ddr
// CHECK:     func.call @layer_forward{{.*}}rdu.recomputes = "layer_forward"
// CHECK-NOT: self_attn.{{[qkv]}}_proj.{{.*}} in ddr

// ERR: error: the model does not fit train-llama70b-hbm: {{[0-9]+}} bytes of weights and {{[0-9]+}} bytes of activations (pipeline stage 0's sockets), against 500000000 bytes of HBM
