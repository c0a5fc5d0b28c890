// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{dp=2 target=sn40l-8}' %s | filecheck %s
// RUN: not rducc-opt -p 'rdu-partition{dp=3 target=sn40l-8}' %s 2>&1 | filecheck %s --check-prefix=ERR

// A partial sum stays partial through a cast only where the cast does not add
// bytes. At dp=2 the bf16 gradient x^T dy is a partial sum over the batch: the
// optimizer's cast of it up to f32 reads it all-reduced (one bf16 all-reduce,
// before the cast, not an f32 one after it); a gradient made in f32 and
// rounded to bf16 (an embedding's scatter-add) is all-reduced after the
// rounding, in bf16, as a data-parallel replica's local gradient is. dp=3 does
// not divide the batch of 4.

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x8xbf16> {rdu.input = "x"}, %dy: tensor<4x2xbf16> {rdu.input = "dy"}, %df: tensor<4x2xf32> {rdu.input = "df"}) -> (tensor<8x2xf32>, tensor<8x2xbf16>) {
    %xt = rdu.transpose %x perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xbf16> -> tensor<8x4xbf16>
    %grad = rdu.matmul %xt, %dy {rdu.phase = #rdu<phase backward>} : tensor<8x4xbf16>, tensor<4x2xbf16> -> tensor<8x2xbf16>
    %wide = rdu.map %grad {rdu.phase = #rdu<phase optimizer>} : (tensor<8x2xbf16>) -> tensor<8x2xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %xf = rdu.map %x {rdu.phase = #rdu<phase backward>} : (tensor<4x8xbf16>) -> tensor<4x8xf32> {
    ^bb0(%0: bf16):
      %1 = arith.extf %0 : bf16 to f32
      rdu.yield %1 : f32
    }
    %xft = rdu.transpose %xf perm [1, 0] {rdu.phase = #rdu<phase backward>} : tensor<4x8xf32> -> tensor<8x4xf32>
    %gradf = rdu.matmul %xft, %df {rdu.phase = #rdu<phase backward>} : tensor<8x4xf32>, tensor<4x2xf32> -> tensor<8x2xf32>
    %narrow = rdu.map %gradf {rdu.phase = #rdu<phase backward>} : (tensor<8x2xf32>) -> tensor<8x2xbf16> {
    ^bb0(%0: f32):
      %1 = arith.truncf %0 : f32 to bf16
      rdu.yield %1 : bf16
    }
    func.return %wide, %narrow : tensor<8x2xf32>, tensor<8x2xbf16>
  }
}

// CHECK:      %grad = rdu.matmul {{.*}} -> tensor<8x2xbf16>
// CHECK-NEXT: %{{.*}} = rdu.all_reduce %grad {{.*}} : tensor<8x2xbf16>
// CHECK-NEXT: %wide = rdu.map
// CHECK-NOT:  rdu.all_reduce {{.*}} tensor<8x2xf32>
// CHECK:      %narrow = rdu.map %gradf
// CHECK:      %{{.*}} = rdu.all_reduce %narrow {{.*}} : tensor<8x2xbf16>
// CHECK-NEXT: func.return
// CHECK-NOT:  rdu.all_reduce

// ERR: dp=3 does not divide the batch of 4
