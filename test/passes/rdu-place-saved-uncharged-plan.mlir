// rdu-place-saved charges a spill the saving it takes from the recomputes it closes
// (`_closing_charge`), an estimate made as the spill comes up; when it made one,
// `cheaper_plan` weighs the plan made without it (and recomputing first) too and keeps
// the one `plan_price` (the cost model's kernel times) finds cheaper. On Llama 3.1 70B's
// widths at tp=8 pp=2 with sequence parallelism (Inputs/train-llama70b-sp-16-layers.mlir,
// 16 layers) at 12 GB a socket, the charge kept the layers' slot values out of DDR and
// recomputed 110 values (priced 21.1 ms); a second round then put the MLP weights of
// every layer in DDR (14.9 ms). Uncharged, the first round spills three slots of
// @layer_forward (1.4 GB) and recomputes 60 values (17.0 ms), the second recomputes
// (8.2 ms), and every weight but the embedding table stays in HBM: modeled 249.0 ms
// against 259.8 ms a step (the 80-layer step on sn40l-16: 1,121.0 against 1,131.9 ms).
// With tile loops priced as the cost model times them (tplan24): 1.48 GB of slots in DDR,
// 16.3 + 8.2 ms priced, 24.43 ms modeled (248.3 ms a step). Since the first round counts
// each layer call's own peak (the callee's activations while it runs, as rdu-place-tiers
// counts them) the step fits in one round: 268 MB of slots in DDR, the same 9.1 GB
// recomputed, 24.82 ms priced, 24.78 ms modeled (248.6 ms a step), no second round.
// RUN: rducc-opt -p 'rdu-place-saved{target="%S/Inputs/train-llama70b-16-hbm.toml"}' %S/Inputs/train-llama70b-sp-16-layers.mlir | filecheck %s
// (No invalid case of its own: a step HBM cannot hold is rdu-place-saved-closing-charge.mlir's.)

// CHECK:     activations.ddr = 268435456 : i64, activations.recompute = 9084862464 : i64
// CHECK:     tier.global @model.model.embed_tokens.weight in ddr
// CHECK-NOT: .mlp.{{.*}} in ddr
// CHECK:     func.func private @layer_forward(
// CHECK-NOT: .mlp.{{.*}} in ddr
