// Where rdu-fuse{level=2} closes a kernel that its next group does not fit, and
// what a kernel recomputes rather than reads (passes/rdu_fuse.py, `closing_tail`,
// `recompute_in_readers`). Two post-norm layers of one period (one `rdu.layer`),
// each `h = mm / sum(mm) + h_prev` after its matmul, where -O1 starts the next
// group with that norm (a reduction after a matmul). On 7 PCUs a layer fits
// one kernel, not a layer and the next one's first matmul.
// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-fuse{level=2 target="%S/Inputs/fuse-few-pcus.toml"}' %s | filecheck %s
// RUN: sed -e 's/pcus = 7/pcus = 5/' %S/Inputs/fuse-few-pcus.toml > %t.toml
// RUN: rducc-opt --split-input-file -p 'rdu-fuse{level=2 target="%t.toml"}' %s | filecheck %s --check-prefix=FIVE
//
// Each kernel closes where the fewest bytes cross, after its own layer's norm and
// residual add (one value, h0) rather than before it (mm0 and h), and the table
// `t` made from the input `pos` by a map, which CSE left layer 0 to make for
// both, is made again by the kernel of layer 1 from `pos`: the two kernels hold
// the same ops. Before, three kernels: [t h a0 mm0] [norm0 a1 mm1] [norm1].
// CHECK-LABEL: func.func @post_norm
// CHECK:         %h0 = rdu.kernel "k0"(%x, %pos, %w0)
// CHECK:           %t = rdu.map %pos_1
// CHECK:           rdu.matmul
// CHECK:           rdu.reduce sum
// CHECK:           rdu.yield %h0_1 : tensor<4x8xf32>
// CHECK:         %h1 = rdu.kernel "k1"(%pos, %h0, %w1)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %t = rdu.map %pos_1
// CHECK:           rdu.matmul
// CHECK:           rdu.reduce sum
// CHECK:           rdu.yield %h1_1 : tensor<4x8xf32>
// CHECK-NOT:     rdu.kernel "k2"
//
// On 5 PCUs layer 0's norm does not fit its kernel: the cut stays where -O1's
// groups leave it, and the table is read from k0 (recomputed it would not fit).
// FIVE-LABEL: func.func @post_norm
// FIVE:         %t, %h, %mm0 = rdu.kernel "k0"
// FIVE:         %h0, %mm1 = rdu.kernel "k1"(%mm0, %h, %t, %w1)
// FIVE-NEXT:    ^bb0
// FIVE-NEXT:      rdu.reduce sum
// FIVE:         %h1 = rdu.kernel "k2"(%mm1, %h0)

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @post_norm(%x: tensor<4x8xf32> {rdu.input = "x"}, %pos: tensor<4x8xf32> {rdu.input = "pos"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}) -> tensor<4x8xf32> {
    %t = rdu.map %pos {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %n = arith.negf %a : f32
      rdu.yield %n : f32
    }
    %h = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 2.0 : f32
      %m = arith.mulf %a, %c : f32
      rdu.yield %m : f32
    }
    %a0 = rdu.map %h, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm0 = rdu.matmul %a0, %w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s0 = rdu.reduce sum %mm0 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r0 = rdu.reshape %s0 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b0 = rdu.broadcast %r0 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %mm0, %b0, %h {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    %a1 = rdu.map %h0, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm1 = rdu.matmul %a1, %w1 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s1 = rdu.reduce sum %mm1 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r1 = rdu.reshape %s1 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b1 = rdu.broadcast %r1 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %mm1, %b1, %h0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    func.return %h1 : tensor<4x8xf32>
  }
}

// -----

// Invalid to recompute: the table is a reduction of the input, which a kernel
// reads from the one that made it (RECOMPUTED: maps, reshapes, broadcasts,
// iotas and constants only). The cut still follows each layer's norm.
// CHECK-LABEL: func.func @reduced_table
// CHECK:         %t, %h0 = rdu.kernel "k0"(%pos, %x, %w0)
// CHECK:         %h1 = rdu.kernel "k1"(%h0, %t, %w1)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      rdu.map %h0_1, %t_1
// CHECK-NOT:       rdu.reduce sum %pos
// CHECK:         func.return
// FIVE-LABEL: func.func @reduced_table

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @reduced_table(%x: tensor<4x8xf32> {rdu.input = "x"}, %pos: tensor<4x8x2xf32> {rdu.input = "pos"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}) -> tensor<4x8xf32> {
    %t = rdu.reduce sum %pos dims [2] {rdu.layer = "layers.0"} : tensor<4x8x2xf32> -> tensor<4x8xf32>
    %h = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 2.0 : f32
      %m = arith.mulf %a, %c : f32
      rdu.yield %m : f32
    }
    %a0 = rdu.map %h, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm0 = rdu.matmul %a0, %w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s0 = rdu.reduce sum %mm0 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r0 = rdu.reshape %s0 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b0 = rdu.broadcast %r0 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %mm0, %b0, %h {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    %a1 = rdu.map %h0, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm1 = rdu.matmul %a1, %w1 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s1 = rdu.reduce sum %mm1 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r1 = rdu.reshape %s1 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b1 = rdu.broadcast %r1 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %mm1, %b1, %h0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    func.return %h1 : tensor<4x8xf32>
  }
}

// -----

// Not recomputed: the table is also a result of the function (as an optimizer's
// step count is a global's update), so k0 writes it anyway; k1 reads it from k0
// (a clone would not save the write, and would take the update's in-place write
// over its global from rdu-insert-dma).
// CHECK-LABEL: func.func @returned_table
// CHECK:         %t, %h0 = rdu.kernel "k0"(%pos, %x, %w0)
// CHECK:         %h1 = rdu.kernel "k1"(%h0, %t, %w1)
// CHECK-NEXT:    ^bb0
// CHECK-NOT:       rdu.map %pos
// CHECK:         func.return %h1, %t
// FIVE-LABEL: func.func @returned_table

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @returned_table(%x: tensor<4x8xf32> {rdu.input = "x"}, %pos: tensor<4x8xf32> {rdu.input = "pos"}, %w0: tensor<8x8xf32> {rdu.input = "w0"}, %w1: tensor<8x8xf32> {rdu.input = "w1"}) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
    %t = rdu.map %pos {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %n = arith.negf %a : f32
      rdu.yield %n : f32
    }
    %h = rdu.map %x {rdu.layer = "layers.0"} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32):
      %c = arith.constant 2.0 : f32
      %m = arith.mulf %a, %c : f32
      rdu.yield %m : f32
    }
    %a0 = rdu.map %h, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm0 = rdu.matmul %a0, %w0 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s0 = rdu.reduce sum %mm0 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r0 = rdu.reshape %s0 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b0 = rdu.broadcast %r0 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h0 = rdu.map %mm0, %b0, %h {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    %a1 = rdu.map %h0, %t {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    %mm1 = rdu.matmul %a1, %w1 transpose_rhs {rdu.layer = "layers.0"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
    %s1 = rdu.reduce sum %mm1 dims [1] {rdu.layer = "layers.0"} : tensor<4x8xf32> -> tensor<4xf32>
    %r1 = rdu.reshape %s1 {rdu.layer = "layers.0"} : tensor<4xf32> -> tensor<4x1xf32>
    %b1 = rdu.broadcast %r1 {rdu.layer = "layers.0"} : tensor<4x1xf32> -> tensor<4x8xf32>
    %h1 = rdu.map %mm1, %b1, %h0 {rdu.layer = "layers.0"} : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %c: f32):
      %d = arith.divf %a, %b : f32
      %s = arith.addf %d, %c : f32
      rdu.yield %s : f32
    }
    func.return %h1, %t : tensor<4x8xf32>, tensor<4x8xf32>
  }
}
