// A training step (the joint graph of two 64x64 linear layers, relu and tanh,
// no optimizer: loss, then gradients): rdu-place-saved names its phases and
// places what the backward needs from the forward.
// RUN: rducc-opt --check-roundtrip -p 'rdu-fuse{level=0},rdu-place-saved' %s | filecheck %s --check-prefix=FITS
// RUN: rducc-opt --check-roundtrip -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-hbm.toml"}' %s | filecheck %s --check-prefix=SPILL
// RUN: rducc-opt --check-roundtrip -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-slow-ddr.toml"}' %s | filecheck %s --check-prefix=RECOMPUTE
// rdu-insert-dma gives a spilled value a DDR buffer, written and read by DMA.
// RUN: rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved{target="%S/Inputs/train-hbm.toml"},rdu-tile,rdu-place-tiers,rdu-insert-dma' %s | filecheck %s --check-prefix=DMA
// An inference program (no loss first) is left alone.
// RUN: sed -e 's/-> (tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>) attributes {[^}]*}/-> (tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>)/' -e 's/func.return %%sum, /func.return %%tanh, /' -e 's/: tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>$/: tensor<64x64xf32>, tensor<64x64xf32>, tensor<64x64xf32>/' %s | rducc-opt -p 'rdu-fuse{level=0},rdu-place-saved' | filecheck %s --check-prefix=INFER
// Invalid: before fusion (level graph), and after lowering (level memory).
// RUN: not rducc-opt -p rdu-place-saved %s 2>&1 | filecheck %s --check-prefix=ERR-GRAPH
// RUN: not rducc-opt -p 'rdu-fuse{level=0},rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-place-saved' %s 2>&1 | filecheck %s --check-prefix=ERR-MEMORY

// Saved values: %mm (read by the backward's relu mask), %relu (the gradient
// of b.weight), %permute_1 (b's weight transposed, read again by the
// backward) and %tanh; 16 kB each. Gradients: the two returned, 16 kB each.
// On sn40l everything fits HBM.
// FITS:      builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.training_memory = {activations.sram = 0 : i64, activations.hbm = 65536 : i64, activations.ddr = 0 : i64, activations.recompute = 0 : i64, gradients.sram = 0 : i64, gradients.hbm = 32768 : i64, gradients.ddr = 0 : i64, gradients.recompute = 0 : i64}}
// FITS:      %mm = rdu.kernel "k1"(%x, %permute) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// FITS:      %relu = rdu.kernel "k2"(%mm) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// FITS:      %permute_1 = rdu.kernel "k3"(%p_b_weight) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// FITS:      %mm_1 = rdu.kernel "k4"(%relu, %permute_1) {rdu.phase = #rdu<phase forward>}
// FITS:      %tanh = rdu.kernel "k5"(%mm_1) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// FITS:      %sum = rdu.kernel "k6"(%tanh) {rdu.phase = #rdu<phase forward>}
// FITS:      %full_like = rdu.kernel "k7"() {rdu.phase = #rdu<phase backward>}
// FITS:      %permute_5 = rdu.kernel "k17"(%permute_3) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase backward>}
// FITS:      %permute_8 = rdu.kernel "k24"(%permute_7) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase backward>}
// FITS-NOT:  in ddr
// FITS-NOT:  "recompute"

// With 100 kB of HBM (32 kB of weights + a peak of live activations near
// 100 kB), the pass takes, while the demand exceeds HBM, the cheapest bytes
// per modeled second that are live at the peak, each priced by what it adds
// to the kernels that write and read it (their time with its bytes at DDR):
// the weights (each read once a step) and the saved %relu (its writer k2 and
// its readers are latency-bound: its DDR time hides under their launch more
// than %mm's does). The backward's broadcast %expand, spilled while the peak
// was higher, is not needed in DDR once the step fits and goes back to HBM.
// Values only the next kernel reads (kept on chip by rdu-insert-dma) and
// results of the step (the loss, the gradients) stay.
// SPILL:      activations.hbm = 49152 : i64, activations.ddr = 16384 : i64
// SPILL:      tier.global @a.weight in ddr
// SPILL-NEXT: tier.global @b.weight in ddr
// SPILL:      %mm = rdu.kernel "k1"(%x, %permute) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// SPILL:      %relu = rdu.kernel "k2"(%mm) {rdu.saved = ["ddr"], rdu.phase = #rdu<phase forward>}
// SPILL:      %sum = rdu.kernel "k6"(%tanh) {rdu.phase = #rdu<phase forward>}
// SPILL:      %expand = rdu.kernel "k8"(%full_like) {rdu.phase = #rdu<phase backward>}
// SPILL:      %mul = rdu.kernel "k9"(%tanh) {rdu.phase = #rdu<phase backward>}

// With a slow DDR (1 GB/s) and cheap launches, recomputing costs less: the
// backward runs k2 (relu of the kept %mm) and k3 (b's weight transposed)
// again just before their first backward reader, which reads the clone.
// RECOMPUTE:      activations.hbm = 32768 : i64, activations.ddr = 0 : i64, activations.recompute = 32768 : i64
// RECOMPUTE:      %mm = rdu.kernel "k1"(%x, %permute) {rdu.saved = ["hbm"], rdu.phase = #rdu<phase forward>}
// RECOMPUTE:      %relu = rdu.kernel "k2"(%mm) {rdu.saved = ["recompute"], rdu.phase = #rdu<phase forward>}
// RECOMPUTE:      %permute_1 = rdu.kernel "k3"(%p_b_weight) {rdu.saved = ["recompute"], rdu.phase = #rdu<phase forward>}
// RECOMPUTE:      %permute_2 = rdu.kernel "k12"
// RECOMPUTE:      %relu_1 = rdu.kernel "k2r"(%mm) {rdu.phase = #rdu<phase backward>, rdu.recomputes = "k2"}
// RECOMPUTE:      %mm_2 = rdu.kernel "k13"(%permute_2, %relu_1)
// RECOMPUTE:      %permute_4 = rdu.kernel "k3r"(%p_b_weight) {rdu.phase = #rdu<phase backward>, rdu.recomputes = "k3"}
// RECOMPUTE:      %permute_5 = rdu.kernel "k15"(%permute_4)

// DMA:      func.func @forward(%x: !tier.buffer<hbm, 64x64xf32> {rdu.input = "x"}) -> (!tier.buffer<hbm, f32>, !tier.buffer<hbm, 64x64xf32>, !tier.buffer<hbm, 64x64xf32>)
// DMA:      %relu = tier.alloc : !tier.buffer<ddr, 64x64xf32>
// DMA:      tier.compute "k2" {{.*}} attributes {rdu.phase = #rdu<phase forward>, tiles = 1 : i64}
// DMA:      tier.dma %relu_sram -> %relu : !tier.buffer<sram, 64x64xf32> -> !tier.buffer<ddr, 64x64xf32>
// DMA:      tier.dma %relu -> %relu_sram_1 : !tier.buffer<ddr, 64x64xf32> -> !tier.buffer<sram, 64x64xf32>
// DMA:      tier.dealloc %relu : !tier.buffer<ddr, 64x64xf32>

// INFER-NOT: rdu.saved
// INFER-NOT: rdu.phase
// INFER-NOT: rdu.training_memory
// INFER:     func.return %tanh

// ERR-GRAPH:  rducc-opt: error: rdu-place-saved takes IR at level kernels; this module is at level graph
// ERR-MEMORY: rducc-opt: error: rdu-place-saved works on tensor programs (levels graph, kernels); this one is at level memory

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @a.weight : tensor<64x64xf32> {kind = "parameter"}
  tier.global @b.weight : tensor<64x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<64x64xf32> {rdu.input = "x"}, %p_a_weight: tensor<64x64xf32> {rdu.global = @a.weight}, %p_b_weight: tensor<64x64xf32> {rdu.global = @b.weight}) -> (tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>) attributes {rdu.result_roles = ["loss", "gradient:parameter:a.weight", "gradient:parameter:b.weight"]} {
    %permute = rdu.transpose %p_a_weight perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %mm = rdu.matmul %x, %permute : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %relu = rdu.map %mm : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_1 = rdu.transpose %p_b_weight perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %mm_1 = rdu.matmul %relu, %permute_1 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %tanh = rdu.map %mm_1 : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %sum = rdu.reduce sum %tanh dims [0, 1] : tensor<64x64xf32> -> tensor<f32>
    %full_like = rdu.map : () -> tensor<f32> {
      %0 = arith.constant 1.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %expand = rdu.broadcast %full_like : tensor<f32> -> tensor<64x64xf32>
    %mul = rdu.map %tanh, %tanh : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sub = rdu.map %mul : (tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.subf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %mul_1 = rdu.map %expand, %sub : (tensor<64x64xf32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %permute_2 = rdu.transpose %mul_1 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %mm_2 = rdu.matmul %permute_2, %relu : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %permute_3 = rdu.transpose %mm_2 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %permute_4 = rdu.transpose %permute_1 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %mm_3 = rdu.matmul %mul_1, %permute_4 : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %permute_5 = rdu.transpose %permute_3 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %le = rdu.map %mm : (tensor<64x64xf32>) -> tensor<64x64xi1> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.cmpf ole, %0, %1 : f32
      rdu.yield %2 : i1
    }
    %scalar_tensor = rdu.map : () -> tensor<f32> {
      %0 = arith.constant 0.000000e+00 : f32
      rdu.yield %0 : f32
    }
    %where = rdu.map %le, %scalar_tensor, %mm_3 : (tensor<64x64xi1>, tensor<f32>, tensor<64x64xf32>) -> tensor<64x64xf32> {
    ^bb0(%0: i1, %1: f32, %2: f32):
      %3 = arith.select %0, %1, %2 : f32
      rdu.yield %3 : f32
    }
    %permute_6 = rdu.transpose %where perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %mm_4 = rdu.matmul %permute_6, %x : tensor<64x64xf32>, tensor<64x64xf32> -> tensor<64x64xf32>
    %permute_7 = rdu.transpose %mm_4 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    %permute_8 = rdu.transpose %permute_7 perm [1, 0] : tensor<64x64xf32> -> tensor<64x64xf32>
    func.return %sum, %permute_8, %permute_5 : tensor<f32>, tensor<64x64xf32>, tensor<64x64xf32>
  }
}

