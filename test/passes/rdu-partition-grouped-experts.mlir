// Tensor parallelism of a mixture of experts' grouped products (transformers'
// default experts: `rdu.grouped_matmul` over rows sorted by expert, with one
// [E, N, K] table per projection). At tp=2 each rank holds a slice of every
// expert's ffn dim: the fused gate/up table split by its output columns per
// block (gate and up each halved, #rdu.split<(1, 2, 1, 8)>), the down table by
// its input columns (#rdu.split<(2, 2, 1)>). The rows, the routing weights and
// the offsets stay whole on every rank; the down product is a partial sum,
// all-reduced where the routing weights scale it. Nothing is gathered.
// A router stays whole when its split would cost more than it saves (below).
// RUN: rducc-opt --split-input-file -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Diagnostic: tp=4 does not divide the 6 ffn columns of a table in a layer.
// RUN: not rducc-opt --split-input-file -p 'rdu-partition{tp=4}' %s 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @gate_up : tensor<4x16x8xf32> {kind = "parameter"}
  tier.global @down : tensor<4x8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<6x8xf32> {rdu.input = "rows"}, %offs: tensor<4xi32> {rdu.input = "offsets"}, %r: tensor<6x1xf32> {rdu.input = "routing"}, %wgu: tensor<4x16x8xf32> {rdu.global = @gate_up}, %wd: tensor<4x8x8xf32> {rdu.global = @down}) -> tensor<6x8xf32> {
    %gu = rdu.grouped_matmul %x, %wgu offsets %offs transpose_rhs {rdu.layer = "layers.0"} : tensor<6x8xf32>, tensor<4x16x8xf32>, tensor<4xi32> -> tensor<6x16xf32>
    %g = rdu.slice %gu offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<6x16xf32> -> tensor<6x8xf32>
    %u = rdu.slice %gu offsets [0, 8] strides [1, 1] {rdu.layer = "layers.0"} : tensor<6x16xf32> -> tensor<6x8xf32>
    %h = rdu.map %g, %u {rdu.layer = "layers.0"} : (tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<6x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    %y = rdu.grouped_matmul %h, %wd offsets %offs transpose_rhs {rdu.layer = "layers.0"} : tensor<6x8xf32>, tensor<4x8x8xf32>, tensor<4xi32> -> tensor<6x8xf32>
    %out = rdu.map %y, %r {rdu.layer = "layers.0"} : (tensor<6x8xf32>, tensor<6x1xf32>) -> tensor<6x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %m = arith.mulf %a, %b : f32
      rdu.yield %m : f32
    }
    func.return %out : tensor<6x8xf32>
  }
}

// CHECK:      tier.global @gate_up : tensor<4x8x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1, 8)>}
// CHECK-NEXT: tier.global @down : tensor<4x8x4xf32> {kind = "parameter", rdu.shard = #rdu.split<(2, 2, 1)>}
// CHECK:      %x: tensor<6x8xf32> {rdu.input = "rows"}, %offs: tensor<4xi32> {rdu.input = "offsets"}
// CHECK:      %gu = rdu.grouped_matmul %x, %wgu offsets %offs transpose_rhs {{.*}} : tensor<6x8xf32>, tensor<4x8x8xf32>, tensor<4xi32> -> tensor<6x8xf32>
// CHECK:      %g = rdu.slice %gu offsets [0, 0] {{.*}} -> tensor<6x4xf32>
// CHECK:      %u = rdu.slice %gu offsets [0, 4] {{.*}} -> tensor<6x4xf32>
// CHECK:      %y = rdu.grouped_matmul %h, %wd offsets %offs transpose_rhs {{.*}} : tensor<6x4xf32>, tensor<4x8x4xf32>, tensor<4xi32> -> tensor<6x8xf32>
// CHECK-NEXT: %[[SUM:.*]] = rdu.all_reduce %y group 2
// CHECK:      %out = rdu.map %[[SUM]], %r
// CHECK-NOT:  rdu.all_gather

// -----

// A layer's router: a linear layer whose few output columns meet at once (the
// softmax's max over the experts). Split, they would cost a collective where
// they meet; read whole on every rank its 2 KB cost less HBM time than one
// all-reduce on the target, so it stays whole (the layer's up projection,
// whose columns do not meet, still splits).
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @router : tensor<8x64xf32> {kind = "parameter"}
  tier.global @proj : tensor<16x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<3x64xf32> {rdu.input = "x"}, %wr: tensor<8x64xf32> {rdu.global = @router}, %wp: tensor<16x64xf32> {rdu.global = @proj}) -> (tensor<3x8xf32>, tensor<3x16xf32>) {
    %logits = rdu.matmul %x, %wr transpose_rhs {rdu.layer = "layers.0"} : tensor<3x64xf32>, tensor<8x64xf32> -> tensor<3x8xf32>
    %max = rdu.reduce max %logits dims [1] keepdim {rdu.layer = "layers.0"} : tensor<3x8xf32> -> tensor<3x1xf32>
    %shifted = rdu.map %logits, %max {rdu.layer = "layers.0"} : (tensor<3x8xf32>, tensor<3x1xf32>) -> tensor<3x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %d = arith.subf %a, %b : f32
      rdu.yield %d : f32
    }
    %p = rdu.matmul %x, %wp transpose_rhs {rdu.layer = "layers.0"} : tensor<3x64xf32>, tensor<16x64xf32> -> tensor<3x16xf32>
    func.return %shifted, %p : tensor<3x8xf32>, tensor<3x16xf32>
  }
}

// CHECK:      tier.global @router : tensor<8x64xf32> {kind = "parameter", rdu.whole_reader = ["rdu.matmul", ""]}
// CHECK-NEXT: tier.global @proj : tensor<8x64xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      %logits = rdu.matmul %x, %wr transpose_rhs {{.*}} -> tensor<3x8xf32>
// CHECK-NOT:  rdu.all_
// CHECK:      func.return

// -----

// The same router reading 32 MB (an input of 2M features): split, each rank
// reads half, which saves more time than the collectives cost.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @router : tensor<8x2097152xf16> {kind = "parameter"}
  func.func @forward(%x: tensor<3x2097152xf16> {rdu.input = "x"}, %wr: tensor<8x2097152xf16> {rdu.global = @router}) -> tensor<3x8xf16> {
    %logits = rdu.matmul %x, %wr transpose_rhs {rdu.layer = "layers.0"} : tensor<3x2097152xf16>, tensor<8x2097152xf16> -> tensor<3x8xf16>
    %max = rdu.reduce max %logits dims [1] keepdim {rdu.layer = "layers.0"} : tensor<3x8xf16> -> tensor<3x1xf16>
    %shifted = rdu.map %logits, %max {rdu.layer = "layers.0"} : (tensor<3x8xf16>, tensor<3x1xf16>) -> tensor<3x8xf16> {
    ^bb0(%a: f16, %b: f16):
      %d = arith.subf %a, %b : f16
      rdu.yield %d : f16
    }
    func.return %shifted : tensor<3x8xf16>
  }
}

// CHECK:      tier.global @router : tensor<4x2097152xf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}

// -----

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @up : tensor<4x6x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<6x8xf32> {rdu.input = "rows"}, %offs: tensor<4xi32> {rdu.input = "offsets"}, %wu: tensor<4x6x8xf32> {rdu.global = @up}) -> tensor<6x6xf32> {
    %h = rdu.grouped_matmul %x, %wu offsets %offs transpose_rhs {rdu.layer = "layers.0"} : tensor<6x8xf32>, tensor<4x6x8xf32>, tensor<4xi32> -> tensor<6x6xf32>
    func.return %h : tensor<6x6xf32>
  }
}

// ERR: tp=4 does not divide the 6 output columns of weight @up (heads or hidden size)
