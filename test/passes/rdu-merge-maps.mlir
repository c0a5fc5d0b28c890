// RUN: rducc-opt -p rdu-merge-maps %s | filecheck %s
// RUN: rducc-opt -p rdu-merge-maps %s | rducc-opt -p rdu-merge-maps | filecheck %s
// RUN: rducc-opt -p 'rdu-merge-maps{on_graph=true}' %s | filecheck %s --check-prefix=GRAPH
// RUN: not rducc-opt -p 'rdu-merge-maps{colour=red}' %s 2>&1 | filecheck %s --check-prefix=ERR

// Inside a kernel, bias + relu (one shape, the bias map's only user) become one map;
// the producer's body runs first, then the consumer's.
// CHECK:      %k = rdu.kernel "k0"(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT: ^bb0(%kx: tensor<4x8xf32>, %kb: tensor<8xf32>):
// CHECK-NEXT:   %relu = rdu.map %kb, %kx : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:   ^bb0(%p: f32, %q: f32):
// CHECK-NEXT:     %s = arith.addf %q, %p : f32
// CHECK-NEXT:     %z = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:     %r = arith.maximumf %s, %z : f32
// CHECK-NEXT:     rdu.yield %r : f32
// CHECK-NEXT:   }
// CHECK-NEXT:   rdu.yield %relu : tensor<4x8xf32>
// CHECK-NEXT: }

// A map with two users (%twice) stays; a map whose user has a larger (broadcast)
// shape (%small) stays; %wide, of %plus's shape and used only there, merges into it.
// CHECK:      %k2, %k2_1 = rdu.kernel "k1"
// CHECK:        %twice = rdu.map %kx
// CHECK:        %small = rdu.map %kb
// CHECK-NOT:    %wide = rdu.map
// CHECK:        %plus = rdu.map %twice, %small, %twice : (tensor<4x8xf32>, tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
// CHECK-NEXT:   ^bb0(%e: f32, %e_1: f32, %f: f32):
// CHECK-NEXT:     %m = arith.mulf %e_1, %f : f32
// CHECK-NEXT:     %a = arith.addf %e, %m : f32
// CHECK:        rdu.yield %plus, %twice

// Outside kernels maps merge only with on_graph=true.
// CHECK:      %g1 = rdu.map %x
// CHECK:      %g2 = rdu.map %g1
// GRAPH:      %g2 = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
// GRAPH-NOT:  %g1 = rdu.map

// ERR:     rducc-opt: error:
// ERR-SAME: colour
// ERR-NOT: Traceback

%x, %b = "test.op"() : () -> (tensor<4x8xf32>, tensor<8xf32>)
%k = rdu.kernel "k0"(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
^bb0(%kx: tensor<4x8xf32>, %kb: tensor<8xf32>):
  %bias = rdu.map %kb, %kx : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%p: f32, %q: f32):
    %s = arith.addf %q, %p : f32
    rdu.yield %s : f32
  }
  %relu = rdu.map %bias : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%e: f32):
    %z = arith.constant 0.000000e+00 : f32
    %r = arith.maximumf %e, %z : f32
    rdu.yield %r : f32
  }
  rdu.yield %relu : tensor<4x8xf32>
}
%k2:2 = rdu.kernel "k1"(%x, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
^bb0(%kx: tensor<4x8xf32>, %kb: tensor<8xf32>):
  %twice = rdu.map %kx : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%e: f32):
    %t = arith.addf %e, %e : f32
    rdu.yield %t : f32
  }
  %small = rdu.map %kb : (tensor<8xf32>) -> tensor<8xf32> {
  ^bb0(%e: f32):
    %n = arith.negf %e : f32
    rdu.yield %n : f32
  }
  %wide = rdu.map %small, %twice : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%e: f32, %f: f32):
    %m = arith.mulf %e, %f : f32
    rdu.yield %m : f32
  }
  %plus = rdu.map %twice, %wide : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%e: f32, %f: f32):
    %a = arith.addf %e, %f : f32
    rdu.yield %a : f32
  }
  rdu.yield %plus, %twice : tensor<4x8xf32>, tensor<4x8xf32>
}
%g1 = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
^bb0(%e: f32):
  %n = arith.negf %e : f32
  rdu.yield %n : f32
}
%g2 = rdu.map %g1 : (tensor<4x8xf32>) -> tensor<4x8xf32> {
^bb0(%e: f32):
  %n = arith.negf %e : f32
  rdu.yield %n : f32
}
