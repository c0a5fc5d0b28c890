// rdu-partition through slices and scatters (issue 17, items 1, 3, 4), one
// case per piece of the input (--split-input-file), each followed by one that
// the rule refuses (the split value gathered instead: correct, slower).
// RUN: rducc-opt --split-input-file -p 'rdu-partition{tp=2}' %s | filecheck %s
// RUN: rducc-opt --split-input-file -p 'rdu-partition{tp=2}' %s | rducc-opt --split-input-file | filecheck %s

// A stacked KV cache [layers, kv_heads, positions, head_dim], read per layer
// by a slice that keeps the heads whole: split by kv_heads (each rank DMAs its
// heads' window of each layer), nothing gathered.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %kc: tensor<2x2x6x4xf32> {rdu.input = "k_cache"}, %wq: tensor<8x8xf32> {rdu.global = @q}) -> (tensor<2x1x6xf32>, tensor<2x1x6xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %k0 = rdu.slice %kc offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x2x6x4xf32> -> tensor<1x2x6x4xf32>
    %k0r = rdu.reshape %k0 {rdu.layer = "layers.0"} : tensor<1x2x6x4xf32> -> tensor<2x6x4xf32>
    %s0 = rdu.matmul %qh, %k0r transpose_rhs {rdu.layer = "layers.0"} : tensor<2x1x4xf32>, tensor<2x6x4xf32> -> tensor<2x1x6xf32>
    %k1 = rdu.slice %kc offsets [1, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.1"} : tensor<2x2x6x4xf32> -> tensor<1x2x6x4xf32>
    %k1r = rdu.reshape %k1 {rdu.layer = "layers.1"} : tensor<1x2x6x4xf32> -> tensor<2x6x4xf32>
    %s1 = rdu.matmul %qh, %k1r transpose_rhs {rdu.layer = "layers.1"} : tensor<2x1x4xf32>, tensor<2x6x4xf32> -> tensor<2x1x6xf32>
    func.return %s0, %s1 : tensor<2x1x6xf32>, tensor<2x1x6xf32>
  }
}

// CHECK:      %kc: tensor<2x1x6x4xf32> {rdu.input = "k_cache", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %k0 = rdu.slice %kc offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x1x6x4xf32> -> tensor<1x1x6x4xf32>
// CHECK:      %k1 = rdu.slice %kc offsets [1, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.1"} : tensor<2x1x6x4xf32> -> tensor<1x1x6x4xf32>
// CHECK-NOT:  rdu.all_gather

// -----

// Refused: another slice takes one head of every layer, so the cache stays
// whole and q is gathered for the scores.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @q : tensor<8x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %kc: tensor<2x2x6x4xf32> {rdu.input = "k_cache"}, %wq: tensor<8x8xf32> {rdu.global = @q}) -> (tensor<2x1x6xf32>, tensor<2x1x6xf32>, tensor<2x1x6x4xf32>) {
    %q = rdu.matmul %x, %wq transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %k0 = rdu.slice %kc offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.0"} : tensor<2x2x6x4xf32> -> tensor<1x2x6x4xf32>
    %k0r = rdu.reshape %k0 {rdu.layer = "layers.0"} : tensor<1x2x6x4xf32> -> tensor<2x6x4xf32>
    %s0 = rdu.matmul %qh, %k0r transpose_rhs {rdu.layer = "layers.0"} : tensor<2x1x4xf32>, tensor<2x6x4xf32> -> tensor<2x1x6xf32>
    %k1 = rdu.slice %kc offsets [1, 0, 0, 0] strides [1, 1, 1, 1] {rdu.layer = "layers.1"} : tensor<2x2x6x4xf32> -> tensor<1x2x6x4xf32>
    %k1r = rdu.reshape %k1 {rdu.layer = "layers.1"} : tensor<1x2x6x4xf32> -> tensor<2x6x4xf32>
    %s1 = rdu.matmul %qh, %k1r transpose_rhs {rdu.layer = "layers.1"} : tensor<2x1x4xf32>, tensor<2x6x4xf32> -> tensor<2x1x6xf32>
    %h0 = rdu.slice %kc offsets [0, 0, 0, 0] strides [1, 1, 1, 1] : tensor<2x2x6x4xf32> -> tensor<2x1x6x4xf32>
    func.return %s0, %s1, %h0 : tensor<2x1x6xf32>, tensor<2x1x6xf32>, tensor<2x1x6x4xf32>
  }
}

// CHECK:      %kc: tensor<2x2x6x4xf32> {rdu.input = "k_cache"}
// CHECK:      rdu.all_gather %qh dim 0 group 2

// -----

// A fused q/k/v projection sliced into equal blocks: its columns split with a
// period (each block split across the ranks); each slice's offset moves to its
// block's part in the rank's columns; nothing gathered.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<24x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %w: tensor<24x8xf32> {rdu.global = @qkv}) -> tensor<2x1x4xf32> {
    %y = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<24x8xf32> -> tensor<1x24xf32>
    %q = rdu.slice %y offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x8xf32>
    %k = rdu.slice %y offsets [0, 8] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x8xf32>
    %v = rdu.slice %y offsets [0, 16] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x8xf32>
    %qh = rdu.reshape %q {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %vh = rdu.reshape %v {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %s = rdu.matmul %qh, %kh transpose_rhs {rdu.layer = "layers.0"} : tensor<2x1x4xf32>, tensor<2x1x4xf32> -> tensor<2x1x1xf32>
    %o = rdu.matmul %s, %vh {rdu.layer = "layers.0"} : tensor<2x1x1xf32>, tensor<2x1x4xf32> -> tensor<2x1x4xf32>
    func.return %o : tensor<2x1x4xf32>
  }
}

// CHECK:      tier.global @qkv : tensor<12x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, 8)>}
// CHECK:      %k = rdu.slice %y offsets [0, 4] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x12xf32> -> tensor<1x4xf32>
// CHECK-NEXT: %v = rdu.slice %y offsets [0, 8] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x12xf32> -> tensor<1x4xf32>
// CHECK-NOT:  rdu.all_gather

// -----

// Unequal blocks (grouped-query q, then k and v): each block split across the
// ranks (`[16, 8]`), each slice takes its block's part, at that part's offset
// in the rank's columns (16 -> 8); nothing gathered.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<24x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %w: tensor<24x8xf32> {rdu.global = @qkv}) -> (tensor<1x16xf32>, tensor<1x8xf32>) {
    %y = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<24x8xf32> -> tensor<1x24xf32>
    %q = rdu.slice %y offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x16xf32>
    %kv = rdu.slice %y offsets [0, 16] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x8xf32>
    func.return %q, %kv : tensor<1x16xf32>, tensor<1x8xf32>
  }
}

// CHECK:      tier.global @qkv : tensor<12x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1, [16, 8])>}
// CHECK:      func.func @forward({{.*}}rdu.result_shards = [#rdu.split<(1, 2, 1)>, #rdu.split<(1, 2, 1)>]
// CHECK:      %q = rdu.slice %y offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x12xf32> -> tensor<1x8xf32>
// CHECK-NEXT: %kv = rdu.slice %y offsets [0, 8] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x12xf32> -> tensor<1x4xf32>
// CHECK-NOT:  rdu.all_gather
// CHECK:      func.return %q, %kv

// -----

// Refused: slices that overlap (no consecutive blocks): the columns split in
// one piece and the slices, which cut it, take the gathered projection.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @qkv : tensor<24x8xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %w: tensor<24x8xf32> {rdu.global = @qkv}) -> (tensor<1x16xf32>, tensor<1x8xf32>) {
    %y = rdu.matmul %x, %w transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<24x8xf32> -> tensor<1x24xf32>
    %q = rdu.slice %y offsets [0, 0] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x16xf32>
    %kv = rdu.slice %y offsets [0, 12] strides [1, 1] {rdu.layer = "layers.0"} : tensor<1x24xf32> -> tensor<1x8xf32>
    func.return %q, %kv : tensor<1x16xf32>, tensor<1x8xf32>
  }
}

// CHECK:      tier.global @qkv : tensor<12x8xf32> {kind = "parameter", rdu.shard = #rdu.split<(0, 2, 1)>}
// CHECK:      rdu.all_gather %y dim 1 group 2

// -----

// A cache buffer written at a position (a static KV cache): split by heads with
// the written value; the position index, broadcast over the heads, is
// broadcast to each rank's part.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @k : tensor<8x8xf32> {kind = "parameter"}
  tier.global @cache : tensor<4x2x4xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %pos: tensor<1xi64> {rdu.input = "position"}, %wk: tensor<8x8xf32> {rdu.global = @k}, %c: tensor<4x2x4xf32> {rdu.global = @cache}) -> tensor<4x2x4xf32> {
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<1x2x4xf32>
    %i = rdu.reshape %pos {rdu.layer = "layers.0"} : tensor<1xi64> -> tensor<1x1x1xi64>
    %ib = rdu.broadcast %i {rdu.layer = "layers.0"} : tensor<1x1x1xi64> -> tensor<1x2x4xi64>
    %new = rdu.scatter %c[%ib] = %kh dim 0 {rdu.layer = "layers.0"} : tensor<4x2x4xf32>, tensor<1x2x4xi64>, tensor<1x2x4xf32> -> tensor<4x2x4xf32>
    func.return %new : tensor<4x2x4xf32>
  }
}

// CHECK:      tier.global @cache : tensor<4x1x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(1, 2, 1)>}
// CHECK:      %ib = rdu.broadcast %i {rdu.layer = "layers.0"} : tensor<1x1x1xi64> -> tensor<1x1x4xi64>
// CHECK-NEXT: %new = rdu.scatter %c[%ib] = %kh dim 0 {rdu.layer = "layers.0"} : tensor<4x1x4xf32>, tensor<1x1x4xi64>, tensor<1x1x4xf32> -> tensor<4x1x4xf32>
// CHECK-NOT:  rdu.all_gather

// -----

// Refused: scattered along the heads (the index's values point along the
// split dim): the cache stays whole and the written value is gathered.
builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @k : tensor<8x8xf32> {kind = "parameter"}
  tier.global @cache : tensor<4x2x4xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %pos: tensor<1xi64> {rdu.input = "position"}, %wk: tensor<8x8xf32> {rdu.global = @k}, %c: tensor<4x2x4xf32> {rdu.global = @cache}) -> tensor<4x2x4xf32> {
    %k = rdu.matmul %x, %wk transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %kh = rdu.reshape %k {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<1x2x4xf32>
    %i = rdu.reshape %pos {rdu.layer = "layers.0"} : tensor<1xi64> -> tensor<1x1x1xi64>
    %ib = rdu.broadcast %i {rdu.layer = "layers.0"} : tensor<1x1x1xi64> -> tensor<1x2x4xi64>
    %new = rdu.scatter %c[%ib] = %kh dim 1 {rdu.layer = "layers.0"} : tensor<4x2x4xf32>, tensor<1x2x4xi64>, tensor<1x2x4xf32> -> tensor<4x2x4xf32>
    func.return %new : tensor<4x2x4xf32>
  }
}

// CHECK:      tier.global @cache : tensor<4x2x4xf32> {kind = "buffer"}
// CHECK:      rdu.all_gather %kh dim 1 group 2
