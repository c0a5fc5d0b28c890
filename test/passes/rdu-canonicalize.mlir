// RUN: rducc-opt --split-input-file -p rdu-canonicalize %s | filecheck %s
// A second run changes nothing: the patterns reach a fixed point.
// RUN: rducc-opt --split-input-file -p rdu-canonicalize %s | rducc-opt --split-input-file -p rdu-canonicalize | filecheck %s
// The stock `canonicalize` sees the same patterns: they are attached to the ops.
// RUN: rducc-opt --split-input-file -p canonicalize %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-canonicalize{level=1}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Layout ops that do nothing disappear: a reshape or broadcast to the same
// type and an identity transpose are their input.

// CHECK-LABEL: func.func @forward(%ident: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
// CHECK-NEXT:    func.return %ident : tensor<4x8xf32>
// CHECK-NEXT:  }
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%ident: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
    %r = rdu.reshape %ident : tensor<4x8xf32> -> tensor<4x8xf32>
    %t = rdu.transpose %r perm [0, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
    %b = rdu.broadcast %t : tensor<4x8xf32> -> tensor<4x8xf32>
    func.return %b : tensor<4x8xf32>
  }
}

// -----

// A chain of reshapes is one reshape of the first input; a chain that comes
// back to the input's type is nothing at all. Dead ops are dropped.

// CHECK-LABEL: func.func @forward(%chain: tensor<4x8xf32> {rdu.input = "x"})
// CHECK-NEXT:    %r3 = rdu.reshape %chain : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    func.return %r3, %chain : tensor<8x4xf32>, tensor<4x8xf32>
// CHECK-NEXT:  }
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%chain: tensor<4x8xf32> {rdu.input = "x"}) -> (tensor<8x4xf32>, tensor<4x8xf32>) {
    %r1 = rdu.reshape %chain : tensor<4x8xf32> -> tensor<32xf32>
    %r2 = rdu.reshape %r1 : tensor<32xf32> -> tensor<2x2x8xf32>
    %r3 = rdu.reshape %r2 : tensor<2x2x8xf32> -> tensor<8x4xf32>
    %back1 = rdu.reshape %chain : tensor<4x8xf32> -> tensor<2x16xf32>
    %back2 = rdu.reshape %back1 : tensor<2x16xf32> -> tensor<4x8xf32>
    %dead = rdu.transpose %chain perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    func.return %r3, %back2 : tensor<8x4xf32>, tensor<4x8xf32>
  }
}

// -----

// transpose(transpose(x, p), q) is transpose(x, p[q]); when p[q] is the
// identity nothing is left.

// CHECK-LABEL: func.func @forward(%perm: tensor<2x3x4xf32> {rdu.input = "x"})
// CHECK-NEXT:    %composed = rdu.transpose %perm perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
// CHECK-NEXT:    func.return %composed, %perm : tensor<3x4x2xf32>, tensor<2x3x4xf32>
// CHECK-NEXT:  }
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%perm: tensor<2x3x4xf32> {rdu.input = "x"}) -> (tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
    %a = rdu.transpose %perm perm [1, 0, 2] : tensor<2x3x4xf32> -> tensor<3x2x4xf32>
    %composed = rdu.transpose %a perm [0, 2, 1] : tensor<3x2x4xf32> -> tensor<3x4x2xf32>
    %b = rdu.transpose %perm perm [1, 2, 0] : tensor<2x3x4xf32> -> tensor<3x4x2xf32>
    %inverse = rdu.transpose %b perm [2, 0, 1] : tensor<3x4x2xf32> -> tensor<2x3x4xf32>
    func.return %composed, %inverse : tensor<3x4x2xf32>, tensor<2x3x4xf32>
  }
}

// -----

// A transpose of a matmul's rhs that swaps its last two dims folds into the
// matmul as transpose_rhs (a linear layer's weight is read as stored); on a
// matmul that already has transpose_rhs the two cancel. Transposes of the
// lhs, or that permute other dims, stay; so does a folded transpose that has
// another user.

// CHECK-LABEL: tier.global @fold.w : tensor<16x8xf32> {kind = "parameter"}
// CHECK:       func.func @forward(%fold: tensor<4x8xf32> {rdu.input = "x"}, %qk: tensor<2x4x8xf32> {rdu.input = "qk"}, %kv: tensor<8x16xf32> {rdu.input = "kv"}, %m: tensor<8x2x4xf32> {rdu.input = "m"}, %p_w: tensor<16x8xf32> {rdu.global = @fold.w})
// CHECK-NEXT:    %linear = rdu.matmul %fold, %p_w transpose_rhs : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
// CHECK-NEXT:    %scores = rdu.matmul %qk, %qk transpose_rhs : tensor<2x4x8xf32>, tensor<2x4x8xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT:    %cancel = rdu.matmul %fold, %kv : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
// CHECK-NEXT:    %lhs_t = rdu.transpose %p_w perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
// CHECK-NEXT:    %on_lhs = rdu.matmul %lhs_t, %p_w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %batch_t = rdu.transpose %m perm [1, 0, 2] : tensor<8x2x4xf32> -> tensor<2x8x4xf32>
// CHECK-NEXT:    %batch = rdu.matmul %qk, %batch_t : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
// CHECK-NEXT:    %shared = rdu.transpose %fold perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %gram = rdu.matmul %fold, %fold transpose_rhs : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    func.return %linear, %scores, %cancel, %on_lhs, %batch, %shared, %gram :
builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @fold.w : tensor<16x8xf32> {kind = "parameter"}
  func.func @forward(%fold: tensor<4x8xf32> {rdu.input = "x"}, %qk: tensor<2x4x8xf32> {rdu.input = "qk"}, %kv: tensor<8x16xf32> {rdu.input = "kv"}, %m: tensor<8x2x4xf32> {rdu.input = "m"}, %p_w: tensor<16x8xf32> {rdu.global = @fold.w}) -> (tensor<4x16xf32>, tensor<2x4x4xf32>, tensor<4x16xf32>, tensor<8x8xf32>, tensor<2x4x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>) {
    %wt = rdu.transpose %p_w perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %linear = rdu.matmul %fold, %wt : tensor<4x8xf32>, tensor<8x16xf32> -> tensor<4x16xf32>
    %kt = rdu.transpose %qk perm [0, 2, 1] : tensor<2x4x8xf32> -> tensor<2x8x4xf32>
    %scores = rdu.matmul %qk, %kt : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %kvt = rdu.transpose %kv perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
    %cancel = rdu.matmul %fold, %kvt transpose_rhs : tensor<4x8xf32>, tensor<16x8xf32> -> tensor<4x16xf32>
    %lhs_t = rdu.transpose %p_w perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %on_lhs = rdu.matmul %lhs_t, %p_w : tensor<8x16xf32>, tensor<16x8xf32> -> tensor<8x8xf32>
    %batch_t = rdu.transpose %m perm [1, 0, 2] : tensor<8x2x4xf32> -> tensor<2x8x4xf32>
    %batch = rdu.matmul %qk, %batch_t : tensor<2x4x8xf32>, tensor<2x8x4xf32> -> tensor<2x4x4xf32>
    %shared = rdu.transpose %fold perm [1, 0] : tensor<4x8xf32> -> tensor<8x4xf32>
    %gram = rdu.matmul %fold, %shared : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    func.return %linear, %scores, %cancel, %on_lhs, %batch, %shared, %gram : tensor<4x16xf32>, tensor<2x4x4xf32>, tensor<4x16xf32>, tensor<8x8xf32>, tensor<2x4x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>
  }
}

// -----

// A fill (an input-less map yielding a constant) read by a map becomes a
// constant in that map's body, whatever its shape; a layout op of a fill is a
// fill of the new shape. Fills read by anything else stay, and so do
// input-less maps that compute more than a constant.

// CHECK-LABEL: func.func @forward(%fills: tensor<4x8xf32> {rdu.input = "x"})
// CHECK-NEXT:    %scaled = rdu.map %fills : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:    ^bb0(%[[A:.*]]: f32):
// CHECK-NEXT:      %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      %[[BIAS:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-NEXT:      %[[M:.*]] = arith.mulf %[[A]], %[[TWO]] : f32
// CHECK-NEXT:      %[[S:.*]] = arith.addf %[[M]], %[[BIAS]] : f32
// CHECK-NEXT:      rdu.yield %[[S]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %ones = rdu.map : () -> tensor<8x4xf32> {
// CHECK-NEXT:      %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      rdu.yield %[[ONE]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %mm = rdu.matmul %fills, %ones : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
// CHECK-NEXT:    %grid = rdu.map : () -> tensor<2x4x8xf32> {
// CHECK-NEXT:      %[[TWO2:.*]] = arith.constant 2.000000e+00 : f32
// CHECK-NEXT:      rdu.yield %[[TWO2]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %e = rdu.map : () -> tensor<4x8xf32> {
// CHECK-NEXT:      %[[C:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-NEXT:      %[[X:.*]] = math.exp %[[C]] : f32
// CHECK-NEXT:      rdu.yield %[[X]] : f32
// CHECK-NEXT:    }
// CHECK-NEXT:    %plus_e = rdu.map %fills, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK:         func.return %scaled, %mm, %grid, %plus_e
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%fills: tensor<4x8xf32> {rdu.input = "x"}) -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>) {
    %two = rdu.map : () -> tensor<4x8xf32> {
      %c = arith.constant 2.000000e+00 : f32
      rdu.yield %c : f32
    }
    %half = rdu.map : () -> tensor<8xf32> {
      %c = arith.constant 5.000000e-01 : f32
      rdu.yield %c : f32
    }
    %scaled = rdu.map %fills, %two, %half : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32, %h: f32):
      %m = arith.mulf %a, %b : f32
      %s = arith.addf %m, %h : f32
      rdu.yield %s : f32
    }
    %ones = rdu.map : () -> tensor<8x4xf32> {
      %c = arith.constant 1.000000e+00 : f32
      rdu.yield %c : f32
    }
    %mm = rdu.matmul %fills, %ones : tensor<4x8xf32>, tensor<8x4xf32> -> tensor<4x4xf32>
    %grid = rdu.broadcast %two : tensor<4x8xf32> -> tensor<2x4x8xf32>
    %e = rdu.map : () -> tensor<4x8xf32> {
      %c = arith.constant 1.000000e+00 : f32
      %x = math.exp %c : f32
      rdu.yield %x : f32
    }
    %plus_e = rdu.map %fills, %e : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      rdu.yield %s : f32
    }
    func.return %scaled, %mm, %grid, %plus_e : tensor<4x8xf32>, tensor<4x4xf32>, tensor<2x4x8xf32>, tensor<4x8xf32>
  }
}

// -----

// slice(slice(x)) is one slice of x: offsets o1 + o2 * s1, strides s1 * s2
// (rows 2 to 5 of every other column from 1, then every other of those rows).
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}) -> tensor<2x4xf32> {
    %rows = rdu.slice %x offsets [2, 1] strides [1, 2] : tensor<8x16xf32> -> tensor<4x8xf32>
    %picked = rdu.slice %rows offsets [0, 2] strides [2, 1] : tensor<4x8xf32> -> tensor<2x4xf32>
    func.return %picked : tensor<2x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}) -> tensor<2x4xf32> {
// CHECK-NEXT:    %picked = rdu.slice %x offsets [2, 5] strides [2, 2] : tensor<8x16xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    func.return %picked : tensor<2x4xf32>

// -----

// A concat drops operands with no elements (the empty pass-through half of a
// full-width rotary embedding); left with one operand, it is that operand.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<2x8xf32> {rdu.input = "x"}, %y: tensor<2x4xf32> {rdu.input = "y"}) -> (tensor<2x8xf32>, tensor<2x12xf32>) {
    %empty = rdu.map : () -> tensor<2x0xf32> {
      %z = arith.constant 0.0 : f32
      rdu.yield %z : f32
    }
    %same = rdu.concat %x, %empty dim 1 : (tensor<2x8xf32>, tensor<2x0xf32>) -> tensor<2x8xf32>
    %both = rdu.concat %x, %empty, %y dim 1 : (tensor<2x8xf32>, tensor<2x0xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
    func.return %same, %both : tensor<2x8xf32>, tensor<2x12xf32>
  }
}
// CHECK-LABEL: func.func @forward(%x: tensor<2x8xf32> {rdu.input = "x"}, %y: tensor<2x4xf32> {rdu.input = "y"}) -> (tensor<2x8xf32>, tensor<2x12xf32>) {
// CHECK-NEXT:    %both = rdu.concat %x, %y dim 1 : (tensor<2x8xf32>, tensor<2x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    func.return %x, %both : tensor<2x8xf32>, tensor<2x12xf32>

// -----

// A concat of copies of one value is a broadcast of it between reshapes (KV heads
// tiled by `cat([k] * g, 1)`, as `k.repeat(1, g, 1)` writes them; a `stack` of copies
// along a new unit dim); a concat of different values stays.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%k: tensor<2x3x4xf32> {rdu.input = "k"}, %y: tensor<2x3x4xf32> {rdu.input = "y"}) -> (tensor<2x6x4xf32>, tensor<2x6x4xf32>) {
    %tiled = rdu.concat %k, %k dim 1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
    %mixed = rdu.concat %k, %y dim 1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
    func.return %tiled, %mixed : tensor<2x6x4xf32>, tensor<2x6x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(%k: tensor<2x3x4xf32> {rdu.input = "k"}, %y: tensor<2x3x4xf32> {rdu.input = "y"}) -> (tensor<2x6x4xf32>, tensor<2x6x4xf32>) {
// CHECK-NEXT:    %tiled = rdu.reshape %k : tensor<2x3x4xf32> -> tensor<2x1x3x4xf32>
// CHECK-NEXT:    %tiled_1 = rdu.broadcast %tiled : tensor<2x1x3x4xf32> -> tensor<2x2x3x4xf32>
// CHECK-NEXT:    %tiled_2 = rdu.reshape %tiled_1 : tensor<2x2x3x4xf32> -> tensor<2x6x4xf32>
// CHECK-NEXT:    %mixed = rdu.concat %k, %y dim 1 : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<2x6x4xf32>
// CHECK-NEXT:    func.return %tiled_2, %mixed : tensor<2x6x4xf32>, tensor<2x6x4xf32>

// -----

// A sum of the consecutive equal slices that tile a dim (autograd's gradient of
// `cat([k] * 3, 1)`: each copy's slice of the joined gradient, added up; across
// chained maps too) is a sum over a new dim of the copies: a reshape and an
// `rdu.reduce`; so are selects of every index (a `stack`'s gradient: slices of one,
// each reshaped alike). Slices that do not tile the dim (one taken twice) stay.
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%g: tensor<2x6x4xf32> {rdu.input = "g"}, %h: tensor<2x3x4xf32> {rdu.input = "h"}) -> (tensor<2x2x4xf32>, tensor<2x4xf32>, tensor<2x2x4xf32>) {
    %a = rdu.slice %g offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x6x4xf32> -> tensor<2x2x4xf32>
    %b = rdu.slice %g offsets [0, 2, 0] strides [1, 1, 1] : tensor<2x6x4xf32> -> tensor<2x2x4xf32>
    %c = rdu.slice %g offsets [0, 4, 0] strides [1, 1, 1] : tensor<2x6x4xf32> -> tensor<2x2x4xf32>
    %ab = rdu.map %a, %b : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      rdu.yield %s : f32
    }
    %copies = rdu.map %c, %ab : (tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
    ^bb0(%x: f32, %y: f32):
      %s = arith.addf %x, %y : f32
      rdu.yield %s : f32
    }
    %h0 = rdu.slice %h offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
    %h1 = rdu.slice %h offsets [0, 1, 0] strides [1, 1, 1] : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
    %h2 = rdu.slice %h offsets [0, 2, 0] strides [1, 1, 1] : tensor<2x3x4xf32> -> tensor<2x1x4xf32>
    %s0 = rdu.reshape %h0 : tensor<2x1x4xf32> -> tensor<2x4xf32>
    %s1 = rdu.reshape %h1 : tensor<2x1x4xf32> -> tensor<2x4xf32>
    %s2 = rdu.reshape %h2 : tensor<2x1x4xf32> -> tensor<2x4xf32>
    %selects = rdu.map %s0, %s2, %s1 : (tensor<2x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32> {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      %t = arith.addf %z, %s : f32
      rdu.yield %t : f32
    }
    %overlap = rdu.map %a, %b, %a : (tensor<2x2x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>) -> tensor<2x2x4xf32> {
    ^bb0(%x: f32, %y: f32, %z: f32):
      %s = arith.addf %x, %y : f32
      %t = arith.addf %s, %z : f32
      rdu.yield %t : f32
    }
    func.return %copies, %selects, %overlap : tensor<2x2x4xf32>, tensor<2x4xf32>, tensor<2x2x4xf32>
  }
}
// CHECK-LABEL: func.func @forward(%g: tensor<2x6x4xf32> {rdu.input = "g"}, %h: tensor<2x3x4xf32> {rdu.input = "h"})
// CHECK-NEXT:    %a = rdu.slice %g offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x6x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:    %b = rdu.slice %g offsets [0, 2, 0] strides [1, 1, 1] : tensor<2x6x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:    %copies = rdu.reshape %g : tensor<2x6x4xf32> -> tensor<2x3x2x4xf32>
// CHECK-NEXT:    %copies_1 = rdu.reduce sum %copies dims [1] : tensor<2x3x2x4xf32> -> tensor<2x2x4xf32>
// CHECK-NEXT:    %selects = rdu.reshape %h : tensor<2x3x4xf32> -> tensor<2x3x1x4xf32>
// CHECK-NEXT:    %selects_1 = rdu.reduce sum %selects dims [1] : tensor<2x3x1x4xf32> -> tensor<2x1x4xf32>
// CHECK-NEXT:    %selects_2 = rdu.reshape %selects_1 : tensor<2x1x4xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %overlap = rdu.map %a, %b, %a
// CHECK:         func.return %copies_1, %selects_2, %overlap

// rdu-canonicalize takes no options.
// ERR-NOT: Traceback
// ERR:      rducc-opt: error: bad options for pass 'rdu-canonicalize': Provided arguments ["level"] not found in expected arguments ["target"]
// ERR-NOT: Traceback

// -----

// `kv[1, 0]` of a stacked cache: a select (a slice and a reshape that drops the
// unit dim) of a select becomes one slice of `kv` and one reshape. A slice of a
// reshape that regroups elements (8 -> 2x4) stays as it is.
// CHECK-LABEL: func.func @select_of_select
// CHECK-NEXT:    %{{.*}} = rdu.slice %kv offsets [1, 0, 0, 0] strides [1, 1, 1, 1] : tensor<3x2x4x8xf32> -> tensor<1x1x4x8xf32>
// CHECK-NEXT:    %{{.*}} = rdu.reshape %{{.*}} : tensor<1x1x4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %{{.*}} = rdu.reshape %x : tensor<8xf32> -> tensor<2x4xf32>
// CHECK-NEXT:    %{{.*}} = rdu.slice %{{.*}} offsets [1, 0] strides [1, 1] : tensor<2x4xf32> -> tensor<1x4xf32>
func.func @select_of_select(%kv: tensor<3x2x4x8xf32>, %x: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<1x4xf32>) {
  %a = rdu.slice %kv offsets [1, 0, 0, 0] strides [1, 1, 1, 1] : tensor<3x2x4x8xf32> -> tensor<1x2x4x8xf32>
  %b = rdu.reshape %a : tensor<1x2x4x8xf32> -> tensor<2x4x8xf32>
  %c = rdu.slice %b offsets [0, 0, 0] strides [1, 1, 1] : tensor<2x4x8xf32> -> tensor<1x4x8xf32>
  %d = rdu.reshape %c : tensor<1x4x8xf32> -> tensor<4x8xf32>
  %e = rdu.reshape %x : tensor<8xf32> -> tensor<2x4xf32>
  %f = rdu.slice %e offsets [1, 0] strides [1, 1] : tensor<2x4xf32> -> tensor<1x4xf32>
  func.return %d, %f : tensor<4x8xf32>, tensor<1x4xf32>
}

// -----

// A transpose swapping the last two dims of a grouped matmul's expert table
// folds into it as transpose_rhs (a table stored [E, N, K]); on one that
// already has transpose_rhs the two cancel; a transpose of other dims stays.

// CHECK-LABEL: func.func @fold
// CHECK-NEXT:    %folded = rdu.grouped_matmul %x, %wt offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK-NEXT:    %cancel = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK-NEXT:    %experts_moved = rdu.transpose %v perm [1, 0, 2]
// CHECK-NEXT:    %kept = rdu.grouped_matmul %x, %experts_moved offsets %offs :
func.func @fold(%x: tensor<6x8xf32>, %w: tensor<4x8x5xf32>, %wt: tensor<4x5x8xf32>, %offs: tensor<4xi32>, %v: tensor<8x4x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) {
  %t = rdu.transpose %wt perm [0, 2, 1] : tensor<4x5x8xf32> -> tensor<4x8x5xf32>
  %folded = rdu.grouped_matmul %x, %t offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
  %t2 = rdu.transpose %w perm [0, 2, 1] : tensor<4x8x5xf32> -> tensor<4x5x8xf32>
  %cancel = rdu.grouped_matmul %x, %t2 offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
  %experts_moved = rdu.transpose %v perm [1, 0, 2] : tensor<8x4x5xf32> -> tensor<4x8x5xf32>
  %kept = rdu.grouped_matmul %x, %experts_moved offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
  func.return %folded, %cancel, %kept : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>
}

// -----

// A transpose of a value with dims of size 1 moves only its other dims, between
// reshapes: torch.einsum("bkgd,bkpd->bkgp")'s chain of unsqueezes, permutes and a
// view before the product becomes one reshape of the keys and a swap of their last
// two dims, folded into the product as `transpose_rhs` (no copy of the keys).
// A permute that moves only unit dims is a reshape.

// CHECK-LABEL: func.func @forward(%q: tensor<2x2x16xf32> {rdu.input = "q"}, %keys: tensor<1x2x17x16xf32> {rdu.input = "keys"}, %u: tensor<1x4x1x8xf32> {rdu.input = "u"})
// CHECK-NEXT:    %{{.*}} = rdu.reshape %keys : tensor<1x2x17x16xf32> -> tensor<2x17x16xf32>
// CHECK-NEXT:    %bmm = rdu.matmul %q, %{{.*}} transpose_rhs : tensor<2x2x16xf32>, tensor<2x17x16xf32> -> tensor<2x2x17xf32>
// CHECK-NEXT:    %units = rdu.reshape %u : tensor<1x4x1x8xf32> -> tensor<4x8x1x1xf32>
// CHECK-NEXT:    func.return %bmm, %units
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%q: tensor<2x2x16xf32> {rdu.input = "q"}, %keys: tensor<1x2x17x16xf32> {rdu.input = "keys"}, %u: tensor<1x4x1x8xf32> {rdu.input = "u"}) -> (tensor<2x2x17xf32>, tensor<4x8x1x1xf32>) {
    %unsqueeze = rdu.reshape %keys : tensor<1x2x17x16xf32> -> tensor<1x2x17x16x1xf32>
    %permute_4 = rdu.transpose %unsqueeze perm [0, 1, 4, 2, 3] : tensor<1x2x17x16x1xf32> -> tensor<1x2x1x17x16xf32>
    %permute_6 = rdu.transpose %permute_4 perm [1, 4, 0, 3, 2] : tensor<1x2x1x17x16xf32> -> tensor<2x16x1x17x1xf32>
    %view = rdu.reshape %permute_6 : tensor<2x16x1x17x1xf32> -> tensor<2x16x17xf32>
    %bmm = rdu.matmul %q, %view : tensor<2x2x16xf32>, tensor<2x16x17xf32> -> tensor<2x2x17xf32>
    %units = rdu.transpose %u perm [1, 3, 0, 2] : tensor<1x4x1x8xf32> -> tensor<4x8x1x1xf32>
    func.return %bmm, %units : tensor<2x2x17xf32>, tensor<4x8x1x1xf32>
  }
}

// -----

// A batched matmul of a weight broadcast over the batch (torch's `x @ w.T` on a
// 3-d x it does not fold: transpose, expand, bmm) is one matmul of the batch's
// rows by the weight, between reshapes: the transpose folds in as
// `transpose_rhs` and no batch of weight copies is made. A broadcast that
// expands the weight's own rows (not only the batch) stays.

// CHECK-LABEL: func.func @forward(%x: tensor<1x2x16xf32> {rdu.input = "x"}, %y: tensor<3x2x16xf32> {rdu.input = "y"}, %w: tensor<8x16xf32> {rdu.input = "w"}, %r: tensor<1x16x8xf32> {rdu.input = "r"}, %c: tensor<1x8xf32> {rdu.input = "c"})
// CHECK-NEXT:    %[[ROWS:.*]] = rdu.reshape %x : tensor<1x2x16xf32> -> tensor<2x16xf32>
// CHECK-NEXT:    %[[MM:.*]] = rdu.matmul %[[ROWS]], %w transpose_rhs : tensor<2x16xf32>, tensor<8x16xf32> -> tensor<2x8xf32>
// CHECK-NEXT:    %[[BMM:.*]] = rdu.reshape %[[MM]] : tensor<2x8xf32> -> tensor<1x2x8xf32>
// CHECK-NEXT:    %[[ROWS3:.*]] = rdu.reshape %y : tensor<3x2x16xf32> -> tensor<6x16xf32>
// CHECK-NEXT:    %[[R2:.*]] = rdu.reshape %r : tensor<1x16x8xf32> -> tensor<16x8xf32>
// CHECK-NEXT:    %[[MM3:.*]] = rdu.matmul %[[ROWS3]], %[[R2]] : tensor<6x16xf32>, tensor<16x8xf32> -> tensor<6x8xf32>
// CHECK-NEXT:    %[[BATCH:.*]] = rdu.reshape %[[MM3]] : tensor<6x8xf32> -> tensor<3x2x8xf32>
// CHECK-NEXT:    %rows = rdu.broadcast %c : tensor<1x8xf32> -> tensor<3x16x8xf32>
// CHECK-NEXT:    %kept = rdu.matmul %y, %rows : tensor<3x2x16xf32>, tensor<3x16x8xf32> -> tensor<3x2x8xf32>
// CHECK-NEXT:    func.return %[[BMM]], %[[BATCH]], %kept
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<1x2x16xf32> {rdu.input = "x"}, %y: tensor<3x2x16xf32> {rdu.input = "y"}, %w: tensor<8x16xf32> {rdu.input = "w"}, %r: tensor<1x16x8xf32> {rdu.input = "r"}, %c: tensor<1x8xf32> {rdu.input = "c"}) -> (tensor<1x2x8xf32>, tensor<3x2x8xf32>, tensor<3x2x8xf32>) {
    %wt = rdu.transpose %w perm [1, 0] : tensor<8x16xf32> -> tensor<16x8xf32>
    %expand = rdu.broadcast %wt : tensor<16x8xf32> -> tensor<1x16x8xf32>
    %bmm = rdu.matmul %x, %expand : tensor<1x2x16xf32>, tensor<1x16x8xf32> -> tensor<1x2x8xf32>
    %expand3 = rdu.broadcast %r : tensor<1x16x8xf32> -> tensor<3x16x8xf32>
    %batch = rdu.matmul %y, %expand3 : tensor<3x2x16xf32>, tensor<3x16x8xf32> -> tensor<3x2x8xf32>
    %rows = rdu.broadcast %c : tensor<1x8xf32> -> tensor<3x16x8xf32>
    %kept = rdu.matmul %y, %rows : tensor<3x2x16xf32>, tensor<3x16x8xf32> -> tensor<3x2x8xf32>
    func.return %bmm, %batch, %kept : tensor<1x2x8xf32>, tensor<3x2x8xf32>, tensor<3x2x8xf32>
  }
}
