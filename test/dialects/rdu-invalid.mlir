// RUN: rducc-opt %s --split-input-file --verify-diagnostics --parsing-diagnostics | filecheck %s

// Every verifier error of the `rdu` dialect, one per chunk, in source order.
// A type constraint checked while an op is read (an unsupported element type) is a
// parse error located at the op (--parsing-diagnostics prints it).

// rdu.map

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32, %b : f32):
  rdu.yield %a : f32
}
// CHECK: Operation does not verify: 'rdu.map' body takes 2 arguments but the op has 1 inputs

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f16):
  rdu.yield %a : f16
}
// CHECK: Operation does not verify: 'rdu.map' body argument #0 is f16 but input #0 has element type f32

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32):
  %h = arith.truncf %a : f32 to f16
  %r = "rdu.remf"(%a, %h) : (f32, f16) -> f32
  rdu.yield %r : f32
}
// CHECK: Operation does not verify: operand 'rhs' at position 1 does not verify:
// CHECK-NEXT: attribute f32 expected from variable 'T', but got f16

// -----

%x, %y = "test.op"() : () -> (tensor<2x8xf32>, tensor<3x8xf32>)
%m = rdu.map %x, %y : (tensor<2x8xf32>, tensor<3x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32, %b : f32):
  rdu.yield %a : f32
}
// CHECK: Operation does not verify: 'rdu.map' input #1 of shape [3, 8] does not broadcast to the result shape [2, 8]

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32):
  rdu.yield %a, %a : f32, f32
}
// CHECK: Operation does not verify: 'rdu.map' body must end in 'rdu.yield' of one value

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xf32> {
^bb0(%a : f32):
  "test.termop"() : () -> ()
}
// CHECK: Operation does not verify: 'rdu.map' body must end in 'rdu.yield' of one value

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%m = rdu.map %x : (tensor<2x8xf32>) -> tensor<2x8xi1> {
^bb0(%a : f32):
  rdu.yield %a : f32
}
// CHECK: Operation does not verify: 'rdu.map' yields f32 but the result element type is i1

// -----
// rdu.kernel

%x = "test.op"() : () -> tensor<2x8xf32>
%k = rdu.kernel "k0" (%x) : (tensor<2x8xf32>) -> (tensor<2x8xf32>) {
^bb0(%kx : tensor<8x2xf32>):
  %r = rdu.transpose %kx perm [1, 0] : tensor<8x2xf32> -> tensor<2x8xf32>
  rdu.yield %r : tensor<2x8xf32>
}
// CHECK: Operation does not verify: 'rdu.kernel' body argument types must match its input types

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%k = rdu.kernel "k0" (%x) : (tensor<2x8xf32>) -> (tensor<2x8xf32>) {
^bb0(%kx : tensor<2x8xf32>):
  "test.termop"() : () -> ()
}
// CHECK: Operation does not verify: 'rdu.kernel' body must end in 'rdu.yield'

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%k1, %k2 = rdu.kernel "k0" (%x) : (tensor<2x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
^bb0(%kx : tensor<2x8xf32>):
  rdu.yield %kx : tensor<2x8xf32>
}
// CHECK: Operation does not verify: 'rdu.kernel' yielded types must match its result types

// -----
// rdu.matmul

%a, %b = "test.op"() : () -> (tensor<8xf32>, tensor<8x4xf32>)
%mm = rdu.matmul %a, %b : tensor<8xf32>, tensor<8x4xf32> -> tensor<4xf32>
// CHECK: Operation does not verify: 'rdu.matmul' operands must have rank >= 2

// -----

%a, %b = "test.op"() : () -> (tensor<2x8xf32>, tensor<7x4xf32>)
%mm = rdu.matmul %a, %b : tensor<2x8xf32>, tensor<7x4xf32> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.matmul' contraction sizes differ: lhs has K=8, rhs has K=7

// -----

%a, %b = "test.op"() : () -> (tensor<3x2x8xf32>, tensor<5x8x4xf32>)
%mm = rdu.matmul %a, %b : tensor<3x2x8xf32>, tensor<5x8x4xf32> -> tensor<3x2x4xf32>
// CHECK: Operation does not verify: 'rdu.matmul' batch dimensions do not broadcast

// -----

%a, %b = "test.op"() : () -> (tensor<3x2x8xf32>, tensor<8x4xf32>)
%mm = rdu.matmul %a, %b : tensor<3x2x8xf32>, tensor<8x4xf32> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.matmul' result shape [2, 4] should be [3, 2, 4]

// -----

%a, %b = "test.op"() : () -> (tensor<2x8xf32>, tensor<8x4xbf16>)
%mm = rdu.matmul %a, %b : tensor<2x8xf32>, tensor<8x4xbf16> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.matmul' operands: element types differ (f32 vs bf16)

// -----
// rdu.reduce

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce sum %x dims [1, 1] : tensor<2x8xf32> -> tensor<2xf32>
// CHECK: Operation does not verify: 'rdu.reduce' dims [1, 1] must be distinct and in [0, 2)

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce max %x dims [2] : tensor<2x8xf32> -> tensor<2xf32>
// CHECK: Operation does not verify: 'rdu.reduce' dims [2] must be distinct and in [0, 2)

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce sum %x dims [1] : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK: Operation does not verify: 'rdu.reduce' result shape [2, 1] should be [2]

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce argmax %x dims [1] : tensor<2x8xf32> -> tensor<2xf32>
// CHECK: Operation does not verify: 'rdu.reduce argmax' reduces one dim to i64

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce argmin %x dims [0, 1] : tensor<2x8xf32> -> tensor<i64>
// CHECK: Operation does not verify: 'rdu.reduce argmin' reduces one dim to i64

// -----

%x = "test.op"() : () -> tensor<2x8xi1>
%r = rdu.reduce any %x dims [1] : tensor<2x8xi1> -> tensor<2xi8>
// CHECK: Operation does not verify: 'rdu.reduce any' gives i1

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce all %x dims [0] keepdim : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK: Operation does not verify: 'rdu.reduce all' gives i1

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reduce prod %x dims [1] : tensor<2x8xf32> -> tensor<2xf64>
// CHECK: Operation does not verify: 'rdu.reduce' input and result: element types differ (f32 vs f64)

// -----
// rdu.scan

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.scan sum %x dim 2 : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK: Operation does not verify: 'rdu.scan' dims [2] must be distinct and in [0, 2)

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.scan prod %x dim 1 : tensor<2x8xf32> -> tensor<2x1xf32>
// CHECK: Operation does not verify: 'rdu.scan' result must have the input's shape

// -----
// rdu.conv

%img, %k = "test.op"() : () -> (tensor<3x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' input, weight and result need equal rank >= 3

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' stride has 1 entries, expected 2

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, -1] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' padding entries must be >= 0

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, 0] dilation [0, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' dilation entries must be >= 1

// -----

%img, %k = "test.op"() : () -> (tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x4x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' channels do not match: input has 4, weight expects 3 x 1 groups

// -----

%img, %k = "test.op"() : () -> (tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, 0] dilation [1, 1] groups 0 : tensor<1x6x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' channels do not match: input has 6, weight expects 3 x 0 groups

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>)
%c = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32> -> tensor<1x4x8x8xf32>
// CHECK: Operation does not verify: 'rdu.conv' result shape [1, 4, 8, 8] should be [1, 4, 4, 4]

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>)
%c = rdu.conv %img, %k stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16> -> tensor<1x4x6x6xf32>
// CHECK: Operation does not verify: 'rdu.conv' input and weight: element types differ (f32 vs f16)

// -----

%img, %k, %b = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<3xbf16>)
%c = rdu.conv %img, %k bias %b : tensor<3xbf16> stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x4x6x6xbf16>
// CHECK: Operation does not verify: 'rdu.conv' bias shape [3] should be [4] (the output channels)

// -----

%img, %k, %b = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16>, tensor<4xf32>)
%c = rdu.conv %img, %k bias %b : tensor<4xf32> stride [1, 1] padding [0, 0] dilation [1, 1] groups 1 : tensor<1x3x8x8xbf16>, tensor<4x3x3x3xbf16> -> tensor<1x4x6x6xbf16>
// CHECK: Operation does not verify: 'rdu.conv' input and bias: element types differ (bf16 vs f32)

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16>)
%c = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 transposed : tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x15x15xbf16>
// CHECK: Operation does not verify: 'rdu.conv' output_padding goes with transposed, and transposed needs it

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16>)
%c = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [2, 0] groups 1 transposed : tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x17x15xbf16>
// CHECK: Operation does not verify: 'rdu.conv' output_padding must be smaller than stride or dilation

// -----

%img, %k = "test.op"() : () -> (tensor<1x4x8x8xbf16>, tensor<3x2x3x3xbf16>)
%c = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [1, 1] groups 1 transposed : tensor<1x4x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x16x16xbf16>
// CHECK: Operation does not verify: 'rdu.conv' channels do not match: input has 4, weight expects 3 x 1 groups

// -----

%img, %k = "test.op"() : () -> (tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16>)
%c = rdu.conv %img, %k stride [2, 2] padding [1, 1] dilation [1, 1] output_padding [1, 1] groups 1 transposed : tensor<1x3x8x8xbf16>, tensor<3x2x3x3xbf16> -> tensor<1x2x15x15xbf16>
// CHECK: Operation does not verify: 'rdu.conv' result shape [1, 2, 15, 15] should be [1, 2, 16, 16]

// -----
// rdu.pool

%img = "test.op"() : () -> tensor<8x8xf32>
%p = rdu.pool max %img window [2, 2] stride [2, 2] padding [0, 0] dilation [1, 1] : tensor<8x8xf32> -> tensor<4x4xf32>
// CHECK: Operation does not verify: 'rdu.pool' input and result need equal rank, above the window's

// -----

%img = "test.op"() : () -> tensor<1x3x8x8xf32>
%p = rdu.pool max %img window [2, 2] stride [2, 2, 2] padding [0, 0] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
// CHECK: Operation does not verify: 'rdu.pool' stride has 3 entries, expected 2

// -----

%img = "test.op"() : () -> tensor<1x3x8x8xf32>
%p = rdu.pool avg %img window [0, 2] stride [2, 2] padding [0, 0] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf32>
// CHECK: Operation does not verify: 'rdu.pool' window entries must be >= 1

// -----

%img = "test.op"() : () -> tensor<1x3x8x8xf32>
%p = rdu.pool avg %img window [3, 3] stride [2, 2] padding [1, 1] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x5x5xf32>
// CHECK: Operation does not verify: 'rdu.pool' result shape [1, 3, 5, 5] should be [1, 3, 4, 4]

// -----

%img = "test.op"() : () -> tensor<1x3x8x8xf32>
%p = rdu.pool max %img window [2, 2] stride [2, 2] padding [0, 0] dilation [1, 1] : tensor<1x3x8x8xf32> -> tensor<1x3x4x4xf16>
// CHECK: Operation does not verify: 'rdu.pool' input and result: element types differ (f32 vs f16)

// -----
// layout ops

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reshape %x : tensor<2x8xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.reshape' cannot reshape 16 elements into [3, 5] (15 elements)

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%r = rdu.reshape %x : tensor<2x8xf32> -> tensor<16xi32>
// CHECK: Operation does not verify: 'rdu.reshape' input and result: element types differ (f32 vs i32)

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%t = rdu.transpose %x perm [1, 1] : tensor<2x8xf32> -> tensor<8x8xf32>
// CHECK: Operation does not verify: 'rdu.transpose' perm [1, 1] is not a permutation of rank 2

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%t = rdu.transpose %x perm [1, 0] : tensor<2x8xf32> -> tensor<2x8xf32>
// CHECK: Operation does not verify: 'rdu.transpose' result shape [2, 8] should be [8, 2]

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%b = rdu.broadcast %x : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.broadcast' cannot broadcast [2, 8] to [2, 4]

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.slice %x offsets [0] strides [1, 1] : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.slice' offsets, strides and shapes need equal rank

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.slice %x offsets [0, 0] strides [1, 0] : tensor<2x8xf32> -> tensor<2x4xf32>
// CHECK: Operation does not verify: 'rdu.slice' stride of dim 1 must be >= 1

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.slice %x offsets [0, 1] strides [1, 2] : tensor<2x8xf32> -> tensor<2x5xf32>
// CHECK: Operation does not verify: 'rdu.slice' dim 1: offset 1, size 5, stride 2 reads past its size 8

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%s = rdu.slice %x offsets [-1, 0] strides [1, 1] : tensor<2x8xf32> -> tensor<1x8xf32>
// CHECK: Operation does not verify: 'rdu.slice' dim 0: offset -1, size 1, stride 1 reads past its size 2

// -----
// rdu.concat

%c = "rdu.concat"() <{dim = 0 : i64}> : () -> tensor<2xf32>
// CHECK: Operation does not verify: 'rdu.concat' needs at least one input

// -----

%s = "test.op"() : () -> tensor<f32>
%c = rdu.concat %s, %s dim 0 : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: Operation does not verify: 'rdu.concat' cannot concatenate rank-0 tensors

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%c = rdu.concat %x, %x dim 2 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.concat' dims [2] must be distinct and in [0, 2)

// -----

%x, %y = "test.op"() : () -> (tensor<2x8xf32>, tensor<2x7xf32>)
%c = rdu.concat %x, %y dim 0 : (tensor<2x8xf32>, tensor<2x7xf32>) -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.concat' input #1 shape [2, 7] does not match the result [4, 8] outside dim 0

// -----

%x = "test.op"() : () -> tensor<2x8xf32>
%c = rdu.concat %x, %x dim 0 : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<5x8xf32>
// CHECK: Operation does not verify: 'rdu.concat' inputs add up to 4 along dim 0, result has 5

// -----

%x, %y = "test.op"() : () -> (tensor<2x8xf32>, tensor<2x8xf16>)
%c = rdu.concat %x, %y dim 0 : (tensor<2x8xf32>, tensor<2x8xf16>) -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.concat' input #1 and result: element types differ (f16 vs f32)

// -----
// rdu.gather

%w, %i = "test.op"() : () -> (tensor<8x4xf32>, tensor<3xi64>)
%g = rdu.gather %w[%i] dim 2 : tensor<8x4xf32>, tensor<3xi64> -> tensor<8x4x3xf32>
// CHECK: Operation does not verify: 'rdu.gather' indexes dims [2, 3) of a rank-2 source

// -----

%w = "test.op"() : () -> tensor<8x4xf32>
%g = "rdu.gather"(%w) <{dim = 0 : i64}> : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK: Operation does not verify: 'rdu.gather' indexes dims [0, 0) of a rank-2 source

// -----

%w, %i = "test.op"() : () -> (tensor<8x4xf32>, tensor<3xf32>)
%g = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<3xf32> -> tensor<3x4xf32>
// CHECK: Operation does not verify: 'rdu.gather' index #0 must be an integer tensor

// -----

%w, %i = "test.op"() : () -> (tensor<8x4xf32>, tensor<3xi1>)
%g = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<3xi1> -> tensor<3x4xf32>
// CHECK: Operation does not verify: 'rdu.gather' index #0 must be an integer tensor

// -----

%w, %i, %j = "test.op"() : () -> (tensor<8x4xf32>, tensor<3xi64>, tensor<2xi64>)
%g = rdu.gather %w[%i, %j] dim 0 : tensor<8x4xf32>, tensor<3xi64>, tensor<2xi64> -> tensor<3xf32>
// CHECK: Operation does not verify: 'rdu.gather' index shapes do not broadcast

// -----

%w, %i = "test.op"() : () -> (tensor<8x4xf32>, tensor<2x3xi64>)
%g = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<2x3xi64> -> tensor<6x4xf32>
// CHECK: Operation does not verify: 'rdu.gather' result shape [6, 4] should be [2, 3, 4]

// -----

%w, %i = "test.op"() : () -> (tensor<8x4xf32>, tensor<3xi32>)
%g = rdu.gather %w[%i] dim 0 : tensor<8x4xf32>, tensor<3xi32> -> tensor<3x4xbf16>
// CHECK: Operation does not verify: 'rdu.gather' source and result: element types differ (f32 vs bf16)

// -----
// rdu.iota

%io = rdu.iota start 0 step 1 : tensor<2x4xi64>
// CHECK: Operation does not verify: 'rdu.iota' result must be rank 1

// -----
// rdu.random

%rnd = rdu.random uniform seed 0 : tensor<4xi32>
// CHECK: Operation does not verify: 'rdu.random' result must have a float element type

// -----
// rdu.argsort

%x = "test.op"() : () -> tensor<2x3xf32>
%ord = rdu.argsort %x dim 1 : tensor<2x3xf32> -> tensor<2x3xi32>
// CHECK: Operation does not verify: 'rdu.argsort' result must be i64 of the input's shape

// -----
// element types

%io = rdu.iota start 0.0 step 1.0 : tensor<4xf8E4M3FNUZ>
// CHECK: tensor<4xf8E4M3FNUZ> has unsupported element type f8E4M3FNUZ; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

%x = "test.op"() : () -> tensor<4xi4>
%m = rdu.map %x : (tensor<4xi4>) -> tensor<4xi4> {
^bb0(%a : i4):
  rdu.yield %a : i4
}
// CHECK: tensor<4xi4> has unsupported element type i4; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

%x = "test.op"() : () -> tensor<4xf32>
%s = rdu.scan sum %x dim 0 : tensor<4xf32> -> tensor<4xindex>
// CHECK: tensor<4xindex> has unsupported element type index; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----

%x = "test.op"() : () -> tensor<4xui16>
%r = rdu.reshape %x : tensor<4xui16> -> tensor<2x2xui16>
// CHECK: tensor<4xui16> has unsupported element type ui16; supported: f64, f32, f16, bf16, f8E4M3FN, f8E5M2, i64, i32, i16, i8, ui8, i1

// -----
// rdu.scatter

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xf32>, tensor<2x4xf32>)
%r = rdu.scatter %x[%i] = %s dim 1 : tensor<3x5xf32>, tensor<2x4xf32>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' index must have an integer element type

// -----

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x3xf32>)
%r = rdu.scatter %x[%i] = %s dim 1 : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x3xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' source shape [2, 3] differs from the index shape [2, 4]

// -----

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<4x2xi64>, tensor<4x2xf32>)
%r = rdu.scatter %x[%i] = %s dim 1 : tensor<3x5xf32>, tensor<4x2xi64>, tensor<4x2xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' index shape [4, 2] must have the input's rank and fit its shape [3, 5] outside dim 1

// -----

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32>)
%r = rdu.scatter %x[%i] = %s dim 2 : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' dims [2] must be distinct and in [0, 2)

// -----

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf16>)
%r = rdu.scatter %x[%i] = %s dim 1 : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf16> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' input and source: element types differ (f32 vs f16)

// -----

%x, %i, %s = "test.op"() : () -> (tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32>)
%r = rdu.scatter %x[%i] = %s dim 1 reduce argmax : tensor<3x5xf32>, tensor<2x4xi64>, tensor<2x4xf32> -> tensor<3x5xf32>
// CHECK: Operation does not verify: 'rdu.scatter' reduce must be one of sum, prod, max, min, not argmax

// -----
// rdu.grouped_matmul

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x7x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x7x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' contraction sizes differ: lhs has K=8, rhs has K=7

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<3xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<3xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' has 3 offsets for 4 experts: one per expert

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xf32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xf32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' offsets must have an integer element type

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' contraction sizes differ: lhs has K=8, rhs has K=5

// -----

%x, %w, %offs = "test.op"() : () -> (tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32>)
%y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x8xf32>
// CHECK: Operation does not verify: 'rdu.grouped_matmul' result shape [6, 8] should be [6, 5]
