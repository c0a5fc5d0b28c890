// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

%x, %w, %i, %img, %k = "test.op"() : () -> (tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x3xi64>, tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)

// CHECK: %mapped = rdu.map %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT: ^bb0(%a: f32, %b: f32):
// CHECK-NEXT:   %s = arith.addf %a, %b : f32
// CHECK-NEXT:   rdu.yield %s : f32
// CHECK-NEXT: }
%mapped = rdu.map %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a: f32, %b: f32):
  %s = arith.addf %a, %b : f32
  rdu.yield %s : f32
}
// CHECK: %bcast = rdu.map %x : (tensor<2x8xf32>) -> tensor<3x2x8xf32> {
%bcast = rdu.map %x : (tensor<2x8xf32>) -> tensor<3x2x8xf32> {
^bb0(%a : f32):
  rdu.yield %a : f32
}
// CHECK: %rem = rdu.map %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
// CHECK-NEXT: ^bb0(%a: f32, %b: f32):
// CHECK-NEXT:   %r = rdu.remf %a, %b : f32
// CHECK-NEXT:   rdu.yield %r : f32
// CHECK-NEXT: }
%rem = rdu.map %x, %x : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32, %b : f32):
  %r = rdu.remf %a, %b : f32
  rdu.yield %r : f32
}
// CHECK: %mm = rdu.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
%mm = rdu.matmul %x, %w : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK: %red = rdu.reduce sum %x dims [1] keepdim : tensor<2x8xf32> -> tensor<2x1xf32>
%red = rdu.reduce sum %x dims [1] keepdim : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK: %amax = rdu.reduce argmax %x dims [1] : tensor<2x8xf32> -> tensor<2xi64>
%amax = rdu.reduce argmax %x dims [1] : tensor<2x8xf32> -> tensor<2xi64>
// CHECK: %cum = rdu.scan sum %x dim 1 : tensor<2x8xf32> -> tensor<2x8xf32>
%cum = rdu.scan sum %x dim 1 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK: %conv = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
%conv = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x4x4xf32>
// A convolution with its bias, an operand (a 16-bit one rounds once, as ATen's kernel).
%himg, %hk, %hb = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<4xbf16>)
// CHECK: %biased = rdu.conv %himg, %hk bias %hb : tensor<4xbf16> stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x4x4x4xbf16>
%biased = rdu.conv %himg, %hk bias %hb : tensor<4xbf16> stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x4x4x4xbf16>
// A transposed convolution (ATen's conv_transpose): weight [in, out / groups, kernel].
%upk, %upb = "test.op"() : () -> (tensor<3x2x3x3xbf16>, tensor<2xbf16>)
// CHECK: %upsampled = rdu.conv %himg, %upk bias %upb : tensor<2xbf16> stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [1, 1] groups 1 transposed : tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x16x16xbf16>
%upsampled = rdu.conv %himg, %upk bias %upb : tensor<2xbf16> stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [1, 1] groups 1 transposed : tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x16x16xbf16>
// CHECK: %pool = rdu.pool max %img window [2, 2] stride [2, 2] padding [0, 0] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
%pool = rdu.pool max %img window [2, 2] stride [2, 2] padding [0, 0] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
// CHECK: %avg = rdu.pool avg %img window [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] ceil_mode : tensor<1x3x8x8xf32> -> tensor<1x3x5x5xf32>
%avg = rdu.pool avg %img window [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] ceil_mode : tensor<1x3x8x8xf32> -> tensor<1x3x5x5xf32>
// CHECK: %r = rdu.reshape %x : tensor<2x8xf32> -> tensor<4x4xf32>
%r = rdu.reshape %x : tensor<2x8xf32> -> tensor<4x4xf32>
// CHECK: %t = rdu.transpose %x perm [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
%t = rdu.transpose %x perm [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
// CHECK: %b = rdu.broadcast %x : tensor<2x8xf32> -> tensor<5x2x8xf32>
%b = rdu.broadcast %x : tensor<2x8xf32> -> tensor<5x2x8xf32>
// CHECK: %sl = rdu.slice %x offsets [0, 1] strides [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
%sl = rdu.slice %x offsets [0, 1] strides [1, 2] : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: %cat = rdu.concat %x, %x dim 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
%cat = rdu.concat %x, %x dim 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: %emb = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
%emb = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK: %wrapping = rdu.gather %w[%i] dim 0 wraps : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
%wrapping = rdu.gather %w[%i] dim 0 wraps : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<2x3x4xf32>
// CHECK: %io = rdu.iota start 0 step 1 : tensor<8xi64>
%io = rdu.iota start 0 step 1 : tensor<8xi64>
// CHECK: %iof = rdu.iota start 0.5 step 0.25 : tensor<4xf32>
%iof = rdu.iota start 0.5 step 0.25 : tensor<4xf32>
// CHECK: %rnd = rdu.random uniform seed 0 : tensor<2x3xf32>
%rnd = rdu.random uniform seed 0 : tensor<2x3xf32>
// CHECK: %rndn = rdu.random normal seed 1 : tensor<4xbf16>
%rndn = rdu.random normal seed 1 : tensor<4xbf16>
// CHECK: %ord = rdu.argsort %rnd dim 1 descending : tensor<2x3xf32> -> tensor<2x3xi64>
%ord = rdu.argsort %rnd dim 1 descending : tensor<2x3xf32> -> tensor<2x3xi64>
// CHECK: %ord0 = rdu.argsort %rnd dim 0 : tensor<2x3xf32> -> tensor<2x3xi64>
%ord0 = rdu.argsort %rnd dim 0 : tensor<2x3xf32> -> tensor<2x3xi64>
// CHECK: %k1, %k2 = rdu.kernel "k0"(%x, %w) : (tensor<2x8xf32>, tensor<8x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
// CHECK: rdu.yield %p, %q : tensor<2x4xf32>, tensor<2x4xf32>
%k1, %k2 = rdu.kernel "k0" (%x, %w) : (tensor<2x8xf32>, tensor<8x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
^bb0(%kx : tensor<2x8xf32>, %kw : tensor<8x4xf32>):
  %p = rdu.matmul %kx, %kw : tensor<2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
  %q = rdu.map %p : (tensor<2x4xf32>) -> tensor<2x4xf32> {
  ^bb0(%e : f32):
    %z = arith.constant 0.000000e+00 : f32
    %m = arith.maximumf %e, %z : f32
    rdu.yield %m : f32
  }
  rdu.yield %p, %q : tensor<2x4xf32>, tensor<2x4xf32>
}

// uint8 (ui8): a map widens to i32 with extui, computes, wraps back with trunci.
// CHECK: %u8sum = rdu.map %u8, %u8 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8> {
// CHECK-NEXT: ^bb0(%up: ui8, %uq: ui8):
// CHECK-NEXT:   %uw1 = arith.extui %up : ui8 to i32
// CHECK-NEXT:   %uw2 = arith.extui %uq : ui8 to i32
// CHECK-NEXT:   %us = arith.addi %uw1, %uw2 : i32
// CHECK-NEXT:   %ur = arith.trunci %us : i32 to ui8
// CHECK-NEXT:   rdu.yield %ur : ui8
// CHECK: %u8max = rdu.reduce max %u8 dims [0] : tensor<4xui8> -> tensor<ui8>
%u8 = "test.op"() : () -> tensor<4xui8>
%u8sum = rdu.map %u8, %u8 : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8> {
^bb0(%up : ui8, %uq : ui8):
  %uw1 = arith.extui %up : ui8 to i32
  %uw2 = arith.extui %uq : ui8 to i32
  %us = arith.addi %uw1, %uw2 : i32
  %ur = arith.trunci %us : i32 to ui8
  rdu.yield %ur : ui8
}
%u8max = rdu.reduce max %u8 dims [0] : tensor<4xui8> -> tensor<ui8>

// CHECK: %sc = rdu.scatter %scx[%sci] = %scs dim 1 : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: %sca = rdu.scatter %scx[%sci] = %scs dim 1 reduce sum : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: %scp = rdu.scatter %scx[%sci] = %scs dim 1 reduce prod : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: %scm = rdu.scatter %scx[%sci] = %scs dim 0 reduce max : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
%scx, %sci, %scs = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32>)
%sc = rdu.scatter %scx[%sci] = %scs dim 1 : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
%sca = rdu.scatter %scx[%sci] = %scs dim 1 reduce sum : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
%scp = rdu.scatter %scx[%sci] = %scs dim 1 reduce prod : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
%scm = rdu.scatter %scx[%sci] = %scs dim 0 reduce max : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// rdu.grouped_matmul: a mixture of experts' rows (sorted by expert) times each row's own expert
%gx, %gw, %gwt, %goffs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4x5x8xf32>, tensor<4xi32>)
// CHECK: %gy = rdu.grouped_matmul %gx, %gw offsets %goffs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
%gy = rdu.grouped_matmul %gx, %gw offsets %goffs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: %gyt = rdu.grouped_matmul %gx, %gwt offsets %goffs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
%gyt = rdu.grouped_matmul %gx, %gwt offsets %goffs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
