// The result re-parses and verifies, and the whole pipeline lowers it.
// RUN: rducc-opt --check-roundtrip --split-input-file -p rdu-outline-layers %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers,rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=LOWERED
// The weights one @layer parameter receives share a tier: with 600 bytes of
// HBM both layers' weights spill to DDR (keeping 2 of their 8 rows in HBM,
// `tier.hbm_rows`), and so does the parameter.
// RUN: rducc-opt --split-input-file -p 'rdu-canonicalize,rdu-outline-layers,cse,rdu-fuse{level=2},rdu-merge-maps,rdu-tile,rdu-place-tiers{target="%S/Inputs/outline-spill.toml"},rdu-insert-dma,rdu-sram-alloc' %s | filecheck %s --check-prefix=SPILL
// SPILL:      tier.global @layers.0.w in ddr {{.*}}tier.hbm_rows = 2
// SPILL-NEXT: tier.global @layers.1.w in ddr {{.*}}tier.hbm_rows = 2
// SPILL-NEXT: tier.global @s in hbm
// SPILL:      %l0 = func.call @layer(%x, %p_w0, %scale) {rdu.layer = "layers.0"} : (!tier.buffer<hbm, 4x8xf32>, !tier.buffer<ddr, 8x8xf32>, !tier.buffer<hbm, 8xf32>)
// SPILL:      func.func private @layer({{.*}}%p_w0: !tier.buffer<ddr, 8x8xf32> {rdu.weight, tier.tier = #tier<tier ddr>, tier.hbm_rows = 2 : i64}
//
// Layers outlined already (by the importer, or an earlier run) are left as they are.
// RUN: rducc-opt --split-input-file -p rdu-outline-layers,rdu-outline-layers %s | filecheck %s
//
// Diagnostics: a program already lowered to tier buffers is refused; so is a
// module that has a @layer of its own (not an outlined layer).
// RUN: not rducc-opt -p rdu-outline-layers %S/../dialects/tier-roundtrip.mlir 2>&1 | filecheck %s --check-prefix=ERR-LOWERED
// RUN: not rducc-opt -p rdu-outline-layers %S/Inputs/outline-name-taken.mlir 2>&1 | filecheck %s --check-prefix=ERR-TAKEN
// ERR-LOWERED-NOT: Traceback
// ERR-LOWERED:     rducc-opt: error: rdu-outline-layers works on tensor programs (levels graph, kernels); @small already uses tier buffers
// ERR-TAKEN-NOT:   Traceback
// ERR-TAKEN:       rducc-opt: error: rdu-outline-layers: the module already has a function @layer that is not an outlined layer (no rdu.calls); rename it

// Two layers that differ only in their weights become one @layer and two
// calls, each with its own layer's weights; the shared value %scale (not a
// weight, not from the input) is passed to both.
// CHECK-LABEL: func.func @forward
// CHECK:         %scale = rdu.map %p_s
// CHECK:         %l0 = func.call @layer(%x, %p_w0, %scale) {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %l1 = func.call @layer(%l0, %p_w1, %scale) {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %out = rdu.map %l1
// CHECK:         func.return %out
// CHECK:       func.func private @layer(%x: tensor<4x8xf32> {rdu.input = "x"}, %p_w0: tensor<8x8xf32> {rdu.weight}, %scale: tensor<8xf32> {rdu.value}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
// CHECK-NEXT:    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"}
// CHECK-NEXT:    %l0 = rdu.map %mm0, %scale
// CHECK:         func.return %l0 : tensor<4x8xf32>
// CHECK-NEXT:  }
// CHECK-NOT:   func.func

// Lowered: the callee is one kernel, lowered once; its weight parameter is in
// the tier of the weights the calls pass (HBM here); each call passes buffers.
// LOWERED-LABEL: func.func @forward
// LOWERED:         %[[W0:.*]] = tier.get_global @layers.0.w : !tier.buffer<hbm, 8x8xf32>
// LOWERED:         %[[W1:.*]] = tier.get_global @layers.1.w : !tier.buffer<hbm, 8x8xf32>
// LOWERED:         %l0 = func.call @layer(%x, %[[W0]], %{{.*}}) {rdu.layer = "layers.0"} : (!tier.buffer<hbm, 4x8xf32>, !tier.buffer<hbm, 8x8xf32>, !tier.buffer<hbm, 8xf32>) -> !tier.buffer<hbm, 4x8xf32>
// LOWERED:         %l1 = func.call @layer(%l0, %[[W1]], %{{.*}}) {rdu.layer = "layers.1"}
// LOWERED:       func.func private @layer(%x: !tier.buffer<hbm, 4x8xf32> {rdu.input = "x"}, %p_w0: !tier.buffer<hbm, 8x8xf32> {rdu.weight, tier.tier = #tier<tier hbm>}, %scale: !tier.buffer<hbm, 8xf32> {rdu.value})
// LOWERED-SAME:    attributes {{{.*}}rdu.calls = 2{{.*}}tier.sram_peak
// LOWERED:         tier.compute "k0"
// LOWERED-NOT:     tier.compute
// LOWERED:       builtin.module

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @s : tensor<8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %p_w0: tensor<8x8xf32> {rdu.global = @layers.0.w}, %p_w1: tensor<8x8xf32> {rdu.global = @layers.1.w}, %p_s: tensor<8xf32> {rdu.global = @s}) -> tensor<4x8xf32> {
    %scale = rdu.map %p_s : (tensor<8xf32>) -> tensor<8xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l0 = rdu.map %mm0, %scale {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm1 = rdu.matmul %l0, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l1 = rdu.map %mm1, %scale {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %out = rdu.map %l1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    func.return %out : tensor<4x8xf32>
  }
}

// -----

// Layers that differ are left inline: the second adds where the first
// multiplies (a region differs), the third has another shape.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     func.call
// CHECK:         %l1 = rdu.map %mm1, %scale {rdu.layer = "layers.1"}
// CHECK:           arith.addf
// CHECK:         func.return
// CHECK-NOT:   func.func private @layer

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.2.w : tensor<4x8xf32> {kind = "parameter"}
  tier.global @s : tensor<8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %p_w0: tensor<8x8xf32> {rdu.global = @layers.0.w}, %p_w1: tensor<8x8xf32> {rdu.global = @layers.1.w}, %p_w2: tensor<4x8xf32> {rdu.global = @layers.2.w}, %scale: tensor<8xf32> {rdu.global = @s}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l0 = rdu.map %mm0, %scale {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm1 = rdu.matmul %l0, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l1 = rdu.map %mm1, %scale {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm2 = rdu.matmul %l1, %p_w2 transpose_rhs {rdu.layer = "layers.2"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
    func.return %l1 : tensor<4x8xf32>
  }
}

// -----

// Ops with no rdu.layer between two ops of one layer (an exporter that gave a
// free function no module stack: transformers' rotate_half) are that layer's:
// both layers are outlined, each reading %x's negation inside @layer. An
// unmarked op between two layers (%between) stays outside.
// CHECK-LABEL: func.func @forward
// CHECK:         %l0 = func.call @layer(%x, %p_w0) {rdu.layer = "layers.0"}
// CHECK-NEXT:    %between = rdu.map %l0
// CHECK:         %l1 = func.call @layer(%between, %p_w1) {rdu.layer = "layers.1"}
// CHECK:       func.func private @layer
// CHECK:         rdu.map {{.*}} {rdu.layer = "layers.0"}
// CHECK:           arith.negf

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}, %p_w0: tensor<8x8xf32> {rdu.global = @layers.0.w}, %p_w1: tensor<8x8xf32> {rdu.global = @layers.1.w}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n0 = rdu.map %mm0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    %l0 = rdu.map %mm0, %n0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %between = rdu.map %l0 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %mm1 = rdu.matmul %between, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %n1 = rdu.map %mm1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.negf %0 : f32
      rdu.yield %1 : f32
    }
    %l1 = rdu.map %mm1, %n1 {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %l1 : tensor<4x8xf32>
  }
}

// -----

// Layers whose ops, attributes and result types agree but whose inputs differ
// in type are different layers (a stack whose widths change: Linear(16, 8),
// Linear(8, 8)): one @layer taking a 4x16 input cannot be called with a 4x8
// one, so nothing is outlined.
// CHECK-LABEL: func.func @forward
// CHECK-NOT:     func.call
// CHECK:         %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
// CHECK:         %mm1 = rdu.matmul %l0, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// CHECK:         func.return
// CHECK-NOT:   func.func private @layer

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<8x16xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %p_w0: tensor<8x16xf32> {rdu.global = @layers.0.w}, %p_w1: tensor<8x8xf32> {rdu.global = @layers.1.w}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %l0 = rdu.map %mm0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %mm1 = rdu.matmul %l0, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l1 = rdu.map %mm1 {rdu.layer = "layers.1"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    func.return %l1 : tensor<4x8xf32>
  }
}

// -----

// The group outlined is the one the most layers match: the first layer
// (4x16 in) differs, the two after it are alike (4x8 in) and become the calls.
// CHECK-LABEL: func.func @forward
// CHECK:         %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"}
// CHECK:         %l1 = func.call @layer(%l0, %p_w1) {rdu.layer = "layers.1"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT:    %l2 = func.call @layer(%l1, %p_w2) {rdu.layer = "layers.2"} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK:       func.func private @layer(%l0: tensor<4x8xf32> {rdu.input = "l0"}, %p_w1: tensor<8x8xf32> {rdu.weight}) -> tensor<4x8xf32> attributes {rdu.outlined_from = "layers.1", rdu.calls = 2 : i64}

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<8x16xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.2.w : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x16xf32> {rdu.input = "x"}, %p_w0: tensor<8x16xf32> {rdu.global = @layers.0.w}, %p_w1: tensor<8x8xf32> {rdu.global = @layers.1.w}, %p_w2: tensor<8x8xf32> {rdu.global = @layers.2.w}) -> tensor<4x8xf32> {
    %mm0 = rdu.matmul %x, %p_w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x16xf32>, tensor<8x16xf32> -> tensor<4x8xf32>
    %l0 = rdu.map %mm0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %mm1 = rdu.matmul %l0, %p_w1 transpose_rhs {rdu.layer = "layers.1"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l1 = rdu.map %mm1 {rdu.layer = "layers.1"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    %mm2 = rdu.matmul %l1, %p_w2 transpose_rhs {rdu.layer = "layers.2"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %l2 = rdu.map %mm2 {rdu.layer = "layers.2"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%0: f32):
      %1 = math.tanh %0 : f32
      rdu.yield %1 : f32
    }
    func.return %l2 : tensor<4x8xf32>
  }
}
