// RUN: rducc-opt --split-input-file -p rdu-canonicalize %s | filecheck %s
// A second run changes nothing: the patterns reach a fixed point.
// RUN: rducc-opt --split-input-file -p rdu-canonicalize %s | rducc-opt --split-input-file -p rdu-canonicalize | filecheck %s
// RUN: not rducc-opt -p 'rdu-canonicalize{level=1}' %s 2>&1 | filecheck %s --check-prefix=ERR

// torch.einsum's `bsh,oh->bso` views the weight's transpose [1, K, N] for a
// bmm: the unit batch dim goes (`DropUnitBatchOfRhs`), and the transpose
// folds in, so the product reads the weight itself as a linear layer does.

// CHECK-LABEL: func.func @forward(%x: tensor<1x1x8xf32> {rdu.input = "x"}, %w: tensor<16x8xf32> {rdu.input = "w"}) -> tensor<1x1x16xf32> {
// CHECK-NEXT:    %{{.*}} = rdu.matmul %x, %w transpose_rhs : tensor<1x1x8xf32>, tensor<16x8xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:    func.return
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<1x1x8xf32> {rdu.input = "x"}, %w: tensor<16x8xf32> {rdu.input = "w"}) -> tensor<1x1x16xf32> {
    %t = rdu.transpose %w perm [1, 0] : tensor<16x8xf32> -> tensor<8x16xf32>
    %v = rdu.reshape %t : tensor<8x16xf32> -> tensor<1x8x16xf32>
    %y = rdu.matmul %x, %v : tensor<1x1x8xf32>, tensor<1x8x16xf32> -> tensor<1x1x16xf32>
    func.return %y : tensor<1x1x16xf32>
  }
}

// -----

// Not when the rhs's unit batch dim is what gives the result its batch (a 2-d
// lhs), nor when the reshape regroups the rhs's elements.

// CHECK-LABEL: func.func @forward(%x2: tensor<1x8xf32> {rdu.input = "x"}, %w2: tensor<8x16xf32> {rdu.input = "w"}, %x3: tensor<1x1x4xf32> {rdu.input = "x3"}, %flat: tensor<64xf32> {rdu.input = "flat"})
// CHECK-NEXT:    %v2 = rdu.reshape %w2 : tensor<8x16xf32> -> tensor<1x8x16xf32>
// CHECK-NEXT:    %y2 = rdu.matmul %x2, %v2 : tensor<1x8xf32>, tensor<1x8x16xf32> -> tensor<1x1x16xf32>
// CHECK-NEXT:    %v3 = rdu.reshape %flat : tensor<64xf32> -> tensor<1x4x16xf32>
// CHECK-NEXT:    %y3 = rdu.matmul %x3, %v3 : tensor<1x1x4xf32>, tensor<1x4x16xf32> -> tensor<1x1x16xf32>
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x2: tensor<1x8xf32> {rdu.input = "x"}, %w2: tensor<8x16xf32> {rdu.input = "w"}, %x3: tensor<1x1x4xf32> {rdu.input = "x3"}, %flat: tensor<64xf32> {rdu.input = "flat"}) -> (tensor<1x1x16xf32>, tensor<1x1x16xf32>) {
    %v2 = rdu.reshape %w2 : tensor<8x16xf32> -> tensor<1x8x16xf32>
    %y2 = rdu.matmul %x2, %v2 : tensor<1x8xf32>, tensor<1x8x16xf32> -> tensor<1x1x16xf32>
    %v3 = rdu.reshape %flat : tensor<64xf32> -> tensor<1x4x16xf32>
    %y3 = rdu.matmul %x3, %v3 : tensor<1x1x4xf32>, tensor<1x4x16xf32> -> tensor<1x1x16xf32>
    func.return %y2, %y3 : tensor<1x1x16xf32>, tensor<1x1x16xf32>
  }
}

// -----

// `cache[:, pos] = k` on a cache [1, positions, heads, dim] imports as a
// scatter along dim 0 of the cache viewed [positions, 1, heads, dim]: it
// scatters the cache itself along dim 1 (`ScatterBeforeUnitReshape`), and the
// reshapes around it cancel, so the update is one of the cache in place.

// CHECK-LABEL: func.func @forward(%cache: tensor<1x6x2x4xf32> {rdu.input = "cache"}, %idx: tensor<1x1x2x4xi64> {rdu.input = "i"}, %src: tensor<1x1x2x4xf32> {rdu.input = "s"}) -> tensor<1x6x2x4xf32> {
// CHECK-NEXT:    %[[S:.*]] = rdu.scatter %cache[%idx] = %src dim 1 : tensor<1x6x2x4xf32>, tensor<1x1x2x4xi64>, tensor<1x1x2x4xf32> -> tensor<1x6x2x4xf32>
// CHECK-NEXT:    func.return %[[S]] : tensor<1x6x2x4xf32>
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%cache: tensor<1x6x2x4xf32> {rdu.input = "cache"}, %idx: tensor<1x1x2x4xi64> {rdu.input = "i"}, %src: tensor<1x1x2x4xf32> {rdu.input = "s"}) -> tensor<1x6x2x4xf32> {
    %r = rdu.reshape %cache : tensor<1x6x2x4xf32> -> tensor<6x1x2x4xf32>
    %s = rdu.scatter %r[%idx] = %src dim 0 : tensor<6x1x2x4xf32>, tensor<1x1x2x4xi64>, tensor<1x1x2x4xf32> -> tensor<6x1x2x4xf32>
    %b = rdu.reshape %s : tensor<6x1x2x4xf32> -> tensor<1x6x2x4xf32>
    func.return %b : tensor<1x6x2x4xf32>
  }
}

// -----

// Not along a dim of size 1, nor through a reshape that regroups elements.

// CHECK-LABEL: func.func @forward(%c1: tensor<1x6x2x4xf32> {rdu.input = "c1"}, %i1: tensor<1x1x2x4xi64> {rdu.input = "i1"}, %s1: tensor<1x1x2x4xf32> {rdu.input = "s1"}, %c2: tensor<6x8xf32> {rdu.input = "c2"}, %i2: tensor<1x2x4xi64> {rdu.input = "i2"}, %s2: tensor<1x2x4xf32> {rdu.input = "s2"})
// CHECK-NEXT:    %r1 = rdu.reshape %c1 : tensor<1x6x2x4xf32> -> tensor<6x1x2x4xf32>
// CHECK-NEXT:    %x1 = rdu.scatter %r1[%i1] = %s1 dim 1 : tensor<6x1x2x4xf32>
// CHECK-NEXT:    %r2 = rdu.reshape %c2 : tensor<6x8xf32> -> tensor<6x2x4xf32>
// CHECK-NEXT:    %x2 = rdu.scatter %r2[%i2] = %s2 dim 0 : tensor<6x2x4xf32>
builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%c1: tensor<1x6x2x4xf32> {rdu.input = "c1"}, %i1: tensor<1x1x2x4xi64> {rdu.input = "i1"}, %s1: tensor<1x1x2x4xf32> {rdu.input = "s1"}, %c2: tensor<6x8xf32> {rdu.input = "c2"}, %i2: tensor<1x2x4xi64> {rdu.input = "i2"}, %s2: tensor<1x2x4xf32> {rdu.input = "s2"}) -> (tensor<6x1x2x4xf32>, tensor<6x2x4xf32>) {
    %r1 = rdu.reshape %c1 : tensor<1x6x2x4xf32> -> tensor<6x1x2x4xf32>
    %x1 = rdu.scatter %r1[%i1] = %s1 dim 1 : tensor<6x1x2x4xf32>, tensor<1x1x2x4xi64>, tensor<1x1x2x4xf32> -> tensor<6x1x2x4xf32>
    %r2 = rdu.reshape %c2 : tensor<6x8xf32> -> tensor<6x2x4xf32>
    %x2 = rdu.scatter %r2[%i2] = %s2 dim 0 : tensor<6x2x4xf32>, tensor<1x2x4xi64>, tensor<1x2x4xf32> -> tensor<6x2x4xf32>
    func.return %x1, %x2 : tensor<6x1x2x4xf32>, tensor<6x2x4xf32>
  }
}

// ERR-NOT: Traceback
// ERR:      rducc-opt: error: bad options for pass 'rdu-canonicalize': Provided arguments ["level"] not found in expected arguments ["target"]
