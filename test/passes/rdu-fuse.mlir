// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=0}' %s | filecheck %s --check-prefix=O0
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2}' %s | filecheck %s --check-prefix=O2
// Level 2 is the default.
// RUN: rducc-opt --split-input-file -p rdu-fuse %s | filecheck %s --check-prefix=O2
// Level 2 merges only what fits: with an 11,000-byte SRAM the MLP stays two kernels.
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/sram-11k.toml"}' %s | filecheck %s --check-prefix=SMALL
// The result re-parses and verifies.
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-fuse{level=1}' %s | filecheck %s --check-prefix=O1
//
// Diagnostics: a bad level, an unknown target, a target file with an unknown key.
// RUN: not rducc-opt -p 'rdu-fuse{level=7}' %s 2>&1 | filecheck %s --check-prefix=ERR-LEVEL
// RUN: not rducc-opt -p 'rdu-fuse{target="sn99"}' %s 2>&1 | filecheck %s --check-prefix=ERR-NAME
// RUN: not rducc-opt -p 'rdu-fuse{target="%S/Inputs/bad-unknown-key.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR-KEY
// A program already lowered to tier buffers is refused, not crashed on.
// RUN: not rducc-opt -p rdu-fuse %S/../dialects/tier-roundtrip.mlir 2>&1 | filecheck %s --check-prefix=ERR-LOWERED
// ERR-LOWERED: rducc-opt: error: rdu-fuse works on tensor programs (levels graph, kernels); @small already uses tier buffers

// ERR-LEVEL-NOT: Traceback
// ERR-LEVEL:     rducc-opt: error: rdu-fuse: level must be 0, 1 or 2, got 7
// ERR-LEVEL-NOT: Traceback
// ERR-NAME-NOT:  Traceback
// ERR-NAME:      rducc-opt: error: unknown target 'sn99': use one of sn40l, sn40l-8, sn40l-16 or a .toml/.json target file
// ERR-NAME-NOT:  Traceback
// ERR-KEY-NOT:   Traceback
// ERR-KEY:       rducc-opt: error: target file {{.*}}Inputs/bad-unknown-key.toml: unknown key 'simd_width' (known: {{.*}}ddr_bandwidth, ddr_bytes,
// ERR-KEY-NOT:   Traceback

// A two-layer MLP, as the importer and rdu-canonicalize leave it.

// Level 0: every op is its own kernel, numbered in program order; each
// kernel's inputs are the values it reads and its result replaces the op's.
// O0-LABEL: tier.global @fc1.weight
// O0:       func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}, %p_fc1_weight: tensor<64x32xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<64xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<16x64xf32> {rdu.global = @fc2.weight}) -> tensor<4x16xf32> {
// O0-NEXT:    %mm = rdu.kernel "k0"(%x, %p_fc1_weight) : (tensor<4x32xf32>, tensor<64x32xf32>) -> tensor<4x64xf32> {
// O0-NEXT:    ^bb0(%[[X:.*]]: tensor<4x32xf32>, %[[W:.*]]: tensor<64x32xf32>):
// O0-NEXT:      %[[MM:.*]] = rdu.matmul %[[X]], %[[W]] transpose_rhs : tensor<4x32xf32>, tensor<64x32xf32> -> tensor<4x64xf32>
// O0-NEXT:      rdu.yield %[[MM]] : tensor<4x64xf32>
// O0-NEXT:    }
// O0-NEXT:    %bias = rdu.kernel "k1"(%p_fc1_bias, %mm) : (tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
// O0:           arith.addf
// O0:         %relu = rdu.kernel "k2"(%bias) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
// O0:           arith.maximumf
// O0:         %mm2 = rdu.kernel "k3"(%relu, %p_fc2_weight) : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32> {
// O0-NEXT:    ^bb0(%[[R:.*]]: tensor<4x64xf32>, %[[W2:.*]]: tensor<16x64xf32>):
// O0-NEXT:      %[[MM2:.*]] = rdu.matmul %[[R]], %[[W2]] transpose_rhs
// O0-NEXT:      rdu.yield %[[MM2]] : tensor<4x16xf32>
// O0-NEXT:    }
// O0-NEXT:    func.return %mm2 : tensor<4x16xf32>
// O0-NOT:     rdu.kernel

// Level 1: the matmul with its epilogue (bias, relu) is one kernel; the next
// matmul reads it but is no sibling, so it starts a new kernel.
// O1-LABEL: tier.global @fc1.weight
// O1:         %relu = rdu.kernel "k0"(%x, %p_fc1_weight, %p_fc1_bias) : (tensor<4x32xf32>, tensor<64x32xf32>, tensor<64xf32>) -> tensor<4x64xf32> {
// O1-NEXT:    ^bb0(%[[X:.*]]: tensor<4x32xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<64xf32>):
// O1-NEXT:      %mm = rdu.matmul %[[X]], %[[W]] transpose_rhs
// O1-NEXT:      %bias = rdu.map %[[B]], %mm
// O1:           %[[RELU:.*]] = rdu.map %bias
// O1:           rdu.yield %[[RELU]] : tensor<4x64xf32>
// O1-NEXT:    }
// O1-NEXT:    %mm2 = rdu.kernel "k1"(%relu, %p_fc2_weight) : (tensor<4x64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32> {
// O1-NEXT:    ^bb0(%[[R:.*]]: tensor<4x64xf32>, %[[W2:.*]]: tensor<16x64xf32>):
// O1-NEXT:      %[[MM2:.*]] = rdu.matmul %[[R]], %[[W2]] transpose_rhs
// O1-NEXT:      rdu.yield %[[MM2]] : tensor<4x16xf32>
// O1-NEXT:    }
// O1-NEXT:    func.return %mm2 : tensor<4x16xf32>

// Level 2: both kernels fit together, so they merge; the relu stays inside.
// O2-LABEL: tier.global @fc1.weight
// O2:         %mm2 = rdu.kernel "k0"(%x, %p_fc1_weight, %p_fc1_bias, %p_fc2_weight) : (tensor<4x32xf32>, tensor<64x32xf32>, tensor<64xf32>, tensor<16x64xf32>) -> tensor<4x16xf32> {
// O2:           %mm = rdu.matmul
// O2:           %bias = rdu.map
// O2:           %relu = rdu.map
// O2:           %[[MM2:.*]] = rdu.matmul %relu, %{{.*}} transpose_rhs
// O2:           rdu.yield %[[MM2]] : tensor<4x16xf32>
// O2-NEXT:    }
// O2-NEXT:    func.return %mm2 : tensor<4x16xf32>

// SMALL-LABEL: tier.global @fc1.weight
// SMALL:         %relu = rdu.kernel "k0"(%x, %p_fc1_weight, %p_fc1_bias) :
// SMALL:         %mm2 = rdu.kernel "k1"(%relu, %p_fc2_weight) :
// SMALL-NOT:     rdu.kernel "k2"
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fc1.weight : tensor<64x32xf32> {kind = "parameter"}
  tier.global @fc1.bias : tensor<64xf32> {kind = "parameter"}
  tier.global @fc2.weight : tensor<16x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}, %p_fc1_weight: tensor<64x32xf32> {rdu.global = @fc1.weight}, %p_fc1_bias: tensor<64xf32> {rdu.global = @fc1.bias}, %p_fc2_weight: tensor<16x64xf32> {rdu.global = @fc2.weight}) -> tensor<4x16xf32> {
    %mm = rdu.matmul %x, %p_fc1_weight transpose_rhs : tensor<4x32xf32>, tensor<64x32xf32> -> tensor<4x64xf32>
    %bias = rdu.map %p_fc1_bias, %mm : (tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %1, %0 : f32
      rdu.yield %2 : f32
    }
    %relu = rdu.map %bias : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 0.000000e+00 : f32
      %2 = arith.maximumf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %mm2 = rdu.matmul %relu, %p_fc2_weight transpose_rhs : tensor<4x64xf32>, tensor<16x64xf32> -> tensor<4x16xf32>
    func.return %mm2 : tensor<4x16xf32>
  }
}

// -----

// Attention: q, k and v are sibling matmuls of one input; then QK^T, scale,
// softmax (max, sub, exp, sum, div) and the product with V.

// O0-LABEL: tier.global @attn.wq
// O0-COUNT-11: rdu.kernel "k{{[0-9]+}}"
// O0-NOT:      rdu.kernel
// O0:          func.return %o

// Level 1: the siblings are one kernel with three results, the whole
// attention chain (both matmuls and the softmax between them) another.
// O1-LABEL: tier.global @attn.wq
// O1:         %q, %k, %v = rdu.kernel "k0"(%x, %p_wq, %p_wk, %p_wv) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) {
// O1-NEXT:    ^bb0(%[[X:.*]]: tensor<8x16xf32>, %[[WQ:.*]]: tensor<16x16xf32>, %[[WK:.*]]: tensor<16x16xf32>, %[[WV:.*]]: tensor<16x16xf32>):
// O1-NEXT:      %[[Q:.*]] = rdu.matmul %[[X]], %[[WQ]] transpose_rhs
// O1-NEXT:      %[[K:.*]] = rdu.matmul %[[X]], %[[WK]] transpose_rhs
// O1-NEXT:      %[[V:.*]] = rdu.matmul %[[X]], %[[WV]] transpose_rhs
// O1-NEXT:      rdu.yield %[[Q]], %[[K]], %[[V]] : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>
// O1-NEXT:    }
// O1-NEXT:    %o = rdu.kernel "k1"(%q, %k, %v) : (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x16xf32> {
// O1:           %s = rdu.matmul
// O1:           %scaled = rdu.map %s
// O1:           %max = rdu.reduce max %scaled dims [1] keepdim
// O1:           %sub = rdu.map %scaled, %max
// O1:           %exp = rdu.map %sub
// O1:           %sum = rdu.reduce sum %exp dims [1] keepdim
// O1:           %p = rdu.map %exp, %sum
// O1:           %[[O:.*]] = rdu.matmul %p, %{{.*}} : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
// O1-NEXT:      rdu.yield %[[O]] : tensor<8x16xf32>
// O1-NEXT:    }
// O1-NEXT:    func.return %o : tensor<8x16xf32>

// O2-LABEL: tier.global @attn.wq
// O2:         %o = rdu.kernel "k0"(%x, %p_wq, %p_wk, %p_wv) : (tensor<8x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>, tensor<16x16xf32>) -> tensor<8x16xf32> {
// O2-NOT:     rdu.kernel
// O2:         func.return %o : tensor<8x16xf32>
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @attn.wq : tensor<16x16xf32> {kind = "parameter"}
  tier.global @attn.wk : tensor<16x16xf32> {kind = "parameter"}
  tier.global @attn.wv : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}, %p_wq: tensor<16x16xf32> {rdu.global = @attn.wq}, %p_wk: tensor<16x16xf32> {rdu.global = @attn.wk}, %p_wv: tensor<16x16xf32> {rdu.global = @attn.wv}) -> tensor<8x16xf32> {
    %q = rdu.matmul %x, %p_wq transpose_rhs : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %k = rdu.matmul %x, %p_wk transpose_rhs : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %v = rdu.matmul %x, %p_wv transpose_rhs : tensor<8x16xf32>, tensor<16x16xf32> -> tensor<8x16xf32>
    %s = rdu.matmul %q, %k transpose_rhs : tensor<8x16xf32>, tensor<8x16xf32> -> tensor<8x8xf32>
    %scaled = rdu.map %s : (tensor<8x8xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 2.500000e-01 : f32
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %max = rdu.reduce max %scaled dims [1] keepdim : tensor<8x8xf32> -> tensor<8x1xf32>
    %sub = rdu.map %scaled, %max : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %exp = rdu.map %sub : (tensor<8x8xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32):
      %1 = math.exp %0 : f32
      rdu.yield %1 : f32
    }
    %sum = rdu.reduce sum %exp dims [1] keepdim : tensor<8x8xf32> -> tensor<8x1xf32>
    %p = rdu.map %exp, %sum : (tensor<8x8xf32>, tensor<8x1xf32>) -> tensor<8x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.divf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %o = rdu.matmul %p, %v : tensor<8x8xf32>, tensor<8x16xf32> -> tensor<8x16xf32>
    func.return %o : tensor<8x16xf32>
  }
}

// -----

// Two layers (rdu.layer as the importer sets it): a matmul with a residual
// add, then an RMS norm feeding the next matmul. The weight transposes at the
// top depend on no user input: level 1 sinks each to its matmul. The square
// that starts the norm is pulled back from the first kernel into the second,
// as the prologue of its matmul. Level 2 does not merge across layers, and
// each kernel records its layer.

// O1-LABEL: tier.global @layers.0.w
// O1:         %h = rdu.kernel "k0"(%p_w1, %x) {rdu.layer = "layers.0"} : (tensor<32x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
// O1-NEXT:    ^bb0(%[[W1:.*]]: tensor<32x32xf32>, %[[X:.*]]: tensor<4x32xf32>):
// O1-NEXT:      %t1 = rdu.transpose %[[W1]] perm [1, 0]
// O1-NEXT:      %mm1 = rdu.matmul %[[X]], %t1
// O1-NEXT:      %[[H:.*]] = rdu.map %[[X]], %mm1
// O1:           rdu.yield %[[H]] : tensor<4x32xf32>
// O1-NEXT:    }
// O1-NEXT:    %mm2 = rdu.kernel "k1"(%h, %p_w2) {rdu.layer = "layers.1"} : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32> {
// O1-NEXT:    ^bb0(%[[HA:.*]]: tensor<4x32xf32>, %[[W2:.*]]: tensor<32x32xf32>):
// O1-NEXT:      %sq = rdu.map %[[HA]]
// O1:           %ss = rdu.reduce sum %sq dims [1] keepdim
// O1-NEXT:      %n = rdu.map %[[HA]], %ss
// O1:           %t2 = rdu.transpose %[[W2]] perm [1, 0]
// O1-NEXT:      %[[MM2:.*]] = rdu.matmul %n, %t2
// O1-NEXT:      rdu.yield %[[MM2]] : tensor<4x32xf32>
// O1-NEXT:    }
// O1-NEXT:    func.return %mm2 : tensor<4x32xf32>

// O2-LABEL: tier.global @layers.0.w
// O2:         %h = rdu.kernel "k0"(%p_w1, %x) {rdu.layer = "layers.0"} : (tensor<32x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
// O2:         %mm2 = rdu.kernel "k1"(%h, %p_w2) {rdu.layer = "layers.1"} : (tensor<4x32xf32>, tensor<32x32xf32>) -> tensor<4x32xf32> {
// O2-NOT:     rdu.kernel
// O2:         func.return %mm2 : tensor<4x32xf32>
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @layers.0.w : tensor<32x32xf32> {kind = "parameter"}
  tier.global @layers.1.w : tensor<32x32xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}, %p_w1: tensor<32x32xf32> {rdu.global = @layers.0.w}, %p_w2: tensor<32x32xf32> {rdu.global = @layers.1.w}) -> tensor<4x32xf32> {
    %t1 = rdu.transpose %p_w1 perm [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
    %t2 = rdu.transpose %p_w2 perm [1, 0] : tensor<32x32xf32> -> tensor<32x32xf32>
    %mm1 = rdu.matmul %x, %t1 {rdu.layer = "layers.0"} : tensor<4x32xf32>, tensor<32x32xf32> -> tensor<4x32xf32>
    %h = rdu.map %x, %mm1 {rdu.layer = "layers.0"} : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    %sq = rdu.map %h {rdu.layer = "layers.1"} : (tensor<4x32xf32>) -> tensor<4x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.mulf %0, %0 : f32
      rdu.yield %1 : f32
    }
    %ss = rdu.reduce sum %sq dims [1] keepdim {rdu.layer = "layers.1"} : tensor<4x32xf32> -> tensor<4x1xf32>
    %n = rdu.map %h, %ss {rdu.layer = "layers.1"} : (tensor<4x32xf32>, tensor<4x1xf32>) -> tensor<4x32xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = math.rsqrt %1 : f32
      %3 = arith.mulf %0, %2 : f32
      rdu.yield %3 : f32
    }
    %mm2 = rdu.matmul %n, %t2 {rdu.layer = "layers.1"} : tensor<4x32xf32>, tensor<32x32xf32> -> tensor<4x32xf32>
    func.return %mm2 : tensor<4x32xf32>
  }
}

// -----

// A contiguous window of an argument that a kernel would only pass on (layer
// 1's part of a stacked cache, for a later call) is a kernel of its own, which
// rdu-insert-dma makes a tier.view; the window the same segment computes on
// (%first, read by the map) stays in its kernel, which DMAs just that window.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%cache: tensor<4x8xf32> {rdu.input = "cache"}, %x: tensor<1x8xf32> {rdu.input = "x"}) -> (tensor<1x8xf32>, tensor<8xf32>) {
    %first = rdu.slice %cache offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<1x8xf32>
    %scaled = rdu.map %first, %x : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %second = rdu.slice %cache offsets [1, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<1x8xf32>
    %flat = rdu.reshape %second : tensor<1x8xf32> -> tensor<8xf32>
    func.return %scaled, %flat : tensor<1x8xf32>, tensor<8xf32>
  }
}
// O2-LABEL: func.func @forward(%cache: tensor<4x8xf32> {rdu.input = "cache"}, %x: tensor<1x8xf32> {rdu.input = "x"})
// O2-NEXT:    %scaled = rdu.kernel "k1"(%cache, %x)
// O2-NEXT:    ^bb0(%cache_1: tensor<4x8xf32>, %x_1: tensor<1x8xf32>):
// O2-NEXT:      %first = rdu.slice %cache_1 offsets [0, 0]
// O2:         %flat = rdu.kernel "k0"(%cache) : (tensor<4x8xf32>) -> tensor<8xf32> {
// O2-NEXT:    ^bb0(%cache_1: tensor<4x8xf32>):
// O2-NEXT:      %second = rdu.slice %cache_1 offsets [1, 0]
// O2-NEXT:      %flat_1 = rdu.reshape %second
// O2-NEXT:      rdu.yield %flat_1 : tensor<8xf32>
// O2-NEXT:    }
// O2-NEXT:    func.return %scaled, %flat

// -----

// Level 0 and a 16-bit linear layer (issue 27): the bf16 product widened to f32
// and its bias add rounded once (`truncf(product + extf(bias))`, one ATen
// `addmm` imported as two ops) are one kernel, which the runtime runs as
// eager's 16-bit `addmm`. Not one kernel: a product rounded to bf16 before a
// bf16 add (two roundings, two ATen ops), and f32 layers (the first section).
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @linear_bf16(%x: tensor<4x16xbf16> {rdu.input = "x"}, %w: tensor<8x16xbf16> {rdu.input = "w"}, %b: tensor<8xbf16> {rdu.input = "b"}) -> (tensor<4x8xbf16>, tensor<4x8xbf16>) {
    %p = rdu.matmul %x, %w transpose_rhs : tensor<4x16xbf16>, tensor<8x16xbf16> -> tensor<4x8xf32>
    %fc = rdu.map %b, %p : (tensor<8xbf16>, tensor<4x8xf32>) -> tensor<4x8xbf16> {
    ^bb0(%0: bf16, %1: f32):
      %2 = arith.extf %0 : bf16 to f32
      %3 = arith.addf %1, %2 : f32
      %4 = arith.truncf %3 : f32 to bf16
      rdu.yield %4 : bf16
    }
    %q = rdu.matmul %x, %w transpose_rhs : tensor<4x16xbf16>, tensor<8x16xbf16> -> tensor<4x8xbf16>
    %rounded_first = rdu.map %b, %q : (tensor<8xbf16>, tensor<4x8xbf16>) -> tensor<4x8xbf16> {
    ^bb0(%0: bf16, %1: bf16):
      %2 = arith.addf %1, %0 : bf16
      rdu.yield %2 : bf16
    }
    func.return %fc, %rounded_first : tensor<4x8xbf16>, tensor<4x8xbf16>
  }
}
// O0-LABEL: func.func @linear_bf16
// O0-NEXT:    %fc = rdu.kernel "k0"(%x, %w, %b) : (tensor<4x16xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) -> tensor<4x8xbf16> {
// O0-NEXT:    ^bb0(%{{.*}}: tensor<4x16xbf16>, %{{.*}}: tensor<8x16xbf16>, %{{.*}}: tensor<8xbf16>):
// O0-NEXT:      %p = rdu.matmul
// O0-NEXT:      %fc_1 = rdu.map
// O0:           rdu.yield %fc_1 : tensor<4x8xbf16>
// O0-NEXT:    }
// O0-NEXT:    %q = rdu.kernel "k1"(%x, %w) : (tensor<4x16xbf16>, tensor<8x16xbf16>) -> tensor<4x8xbf16> {
// O0:         %rounded_first = rdu.kernel "k2"(%b, %q)
// O0:         func.return %fc, %rounded_first
