// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s --check-prefix=TP
// RUN: rducc-opt -p 'rdu-partition{tp=2 pp=2}' %s | filecheck %s --check-prefix=PP
// The split the cost model picks for this tiny model on sn40l-8: one socket
// (two all-reduces cost more than the matmuls they would split).
// RUN: rducc-opt -p rdu-partition %s | filecheck %s --check-prefix=AUTO
//
// Diagnostics: tp that does not divide the hidden size (the output columns of
// a layer's weight) or the heads (4 ranks, 2 heads: q splits only over a
// factor of 2 of the ranks, so o_proj's rows cannot), tp * pp above the
// target's sockets, a second partitioning, a fused module.
// RUN: not rducc-opt -p 'rdu-partition{tp=3}' %s 2>&1 | filecheck %s --check-prefix=ERR-HIDDEN
// RUN: not rducc-opt -p 'rdu-partition{tp=4}' %s 2>&1 | filecheck %s --check-prefix=ERR-HEADS
// RUN: not rducc-opt -p 'rdu-partition{tp=8 pp=2}' %s 2>&1 | filecheck %s --check-prefix=ERR-SOCKETS
// RUN: not rducc-opt -p 'rdu-partition{tp=2},rdu-partition{tp=2}' %s 2>&1 | filecheck %s --check-prefix=ERR-TWICE
// RUN: not rducc-opt -p 'rdu-fuse{level=0},rdu-partition{tp=2}' %s 2>&1 | filecheck %s --check-prefix=ERR-FUSED

// Two decoder layers: layer 0 an MLP (fc1 column split, fc2 row split and
// all-reduce), layer 1 a projection into 2 heads of 8 (q column split: the
// heads follow) with a per-head norm, then an output projection (row split).

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @fc1 : tensor<32x16xf32> {kind = "parameter"}
  tier.global @fc2 : tensor<16x32xf32> {kind = "parameter"}
  tier.global @q : tensor<16x16xf32> {kind = "parameter"}
  tier.global @o : tensor<16x16xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %w1: tensor<32x16xf32> {rdu.global = @fc1}, %w2: tensor<16x32xf32> {rdu.global = @fc2}, %wq: tensor<16x16xf32> {rdu.global = @q}, %wo: tensor<16x16xf32> {rdu.global = @o}) -> tensor<1x16xf32> {
    %h = rdu.matmul %x, %w1 transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<32x16xf32> -> tensor<1x32xf32>
    %r = rdu.map %h {rdu.layer = "layers.0"} : (tensor<1x32xf32>) -> tensor<1x32xf32> {
    ^bb0(%a: f32):
      %z = arith.constant 0.000000e+00 : f32
      %m = arith.maximumf %a, %z : f32
      rdu.yield %m : f32
    }
    %y = rdu.matmul %r, %w2 transpose_rhs {rdu.layer = "layers.0"} : tensor<1x32xf32>, tensor<16x32xf32> -> tensor<1x16xf32>
    %qh = rdu.matmul %y, %wq transpose_rhs {rdu.layer = "layers.1"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    %heads = rdu.reshape %qh {rdu.layer = "layers.1"} : tensor<1x16xf32> -> tensor<1x2x8xf32>
    %sum = rdu.reduce sum %heads dims [2] keepdim {rdu.layer = "layers.1"} : tensor<1x2x8xf32> -> tensor<1x2x1xf32>
    %centred = rdu.map %heads, %sum {rdu.layer = "layers.1"} : (tensor<1x2x8xf32>, tensor<1x2x1xf32>) -> tensor<1x2x8xf32> {
    ^bb0(%a: f32, %b: f32):
      %d = arith.subf %a, %b : f32
      rdu.yield %d : f32
    }
    %flat = rdu.reshape %centred {rdu.layer = "layers.1"} : tensor<1x2x8xf32> -> tensor<1x16xf32>
    %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.1"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
    func.return %out : tensor<1x16xf32>
  }
}

// TP:      builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8", rdu.partition = {tp = 2 : i64, pp = 1 : i64}} {
// TP-NEXT:   tier.global @fc1 : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP-NEXT:   tier.global @fc2 : tensor<16x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// TP-NEXT:   tier.global @q : tensor<8x16xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// TP-NEXT:   tier.global @o : tensor<16x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(1, 2, 1)>}
// TP-NEXT:   func.func @forward(%x: tensor<1x16xf32> {rdu.input = "x"}, %w1: tensor<16x16xf32> {rdu.global = @fc1, rdu.shard = #rdu.split<(0, 2, 1)>}, %w2: tensor<16x16xf32> {rdu.global = @fc2, rdu.shard = #rdu.split<(1, 2, 1)>}, %wq: tensor<8x16xf32> {rdu.global = @q, rdu.shard = #rdu.split<(0, 2, 1)>}, %wo: tensor<16x8xf32> {rdu.global = @o, rdu.shard = #rdu.split<(1, 2, 1)>}) -> tensor<1x16xf32> attributes {rdu.result_shards = [#rdu.split<>]} {
// TP-NEXT:     %h = rdu.matmul %x, %w1 transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
// TP-NEXT:     %r = rdu.map %h {rdu.layer = "layers.0"} : (tensor<1x16xf32>) -> tensor<1x16xf32> {
// TP:          %y = rdu.matmul %r, %w2 transpose_rhs {rdu.layer = "layers.0"} : tensor<1x16xf32>, tensor<16x16xf32> -> tensor<1x16xf32>
// TP-NEXT:     %0 = rdu.all_reduce %y group 2 {rdu.layer = "layers.0"} : tensor<1x16xf32> -> tensor<1x16xf32>
// TP-NEXT:     %qh = rdu.matmul %0, %wq transpose_rhs {rdu.layer = "layers.1"} : tensor<1x16xf32>, tensor<8x16xf32> -> tensor<1x8xf32>
// TP-NEXT:     %heads = rdu.reshape %qh {rdu.layer = "layers.1"} : tensor<1x8xf32> -> tensor<1x1x8xf32>
// TP-NEXT:     %sum = rdu.reduce sum %heads dims [2] keepdim {rdu.layer = "layers.1"} : tensor<1x1x8xf32> -> tensor<1x1x1xf32>
// TP-NEXT:     %centred = rdu.map %heads, %sum {rdu.layer = "layers.1"} : (tensor<1x1x8xf32>, tensor<1x1x1xf32>) -> tensor<1x1x8xf32> {
// TP:          %flat = rdu.reshape %centred {rdu.layer = "layers.1"} : tensor<1x1x8xf32> -> tensor<1x8xf32>
// TP-NEXT:     %out = rdu.matmul %flat, %wo transpose_rhs {rdu.layer = "layers.1"} : tensor<1x8xf32>, tensor<16x8xf32> -> tensor<1x16xf32>
// TP-NEXT:     %1 = rdu.all_reduce %out group 2 {rdu.layer = "layers.1"} : tensor<1x16xf32> -> tensor<1x16xf32>
// TP-NEXT:     func.return %1 : tensor<1x16xf32>

// Pipeline: layer 0 on stage 0, layer 1 on stage 1; the all-reduced value
// crosses once.
// PP:      rdu.partition = {tp = 2 : i64, pp = 2 : i64}
// PP:      %0 = rdu.all_reduce %y group 2 {rdu.layer = "layers.0", rdu.stage = 0 : i64}
// PP-NEXT: %1 = rdu.send_recv %0 from 0 to 1 {rdu.stage = 1 : i64} : tensor<1x16xf32> -> tensor<1x16xf32>
// PP-NEXT: %qh = rdu.matmul %1, %wq transpose_rhs {rdu.layer = "layers.1", rdu.stage = 1 : i64}
// PP-NOT:  rdu.send_recv

// AUTO: rdu.partition = {tp = 1 : i64, pp = 1 : i64}
// AUTO-NOT: rdu.all_reduce

// ERR-HIDDEN: error: tp=3 does not divide the 32 output columns of weight @fc1 (heads or hidden size)
// ERR-HEADS: error: tp=4 does not divide the heads: the 16 input rows of weight @o arrive with dim 1 split 2 ways (rank / 2), not split 4 ways
// ERR-SOCKETS: rducc-opt: error: rdu-partition: tp=8 x pp=2 needs 16 sockets; target sn40l-8 has 8
// ERR-TWICE: rducc-opt: error: rdu-partition: the module is partitioned already
// ERR-FUSED: rducc-opt: error: rdu-partition works on the imported graph: run it before rdu-fuse
