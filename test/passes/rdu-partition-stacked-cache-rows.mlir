// rdu-partition on a KV cache stacked over the layers in one buffer [layers, 2, kv, positions,
// dim], as compiler/frontend/stacked_writes.py leaves it: each layer's windows `cache[i][0]`
// and `cache[i][1]` (slices before its call) read by the outlined layer, and every layer's new
// rows written into the stack by one `rdu.scatter` after the last layer (along the positions).
// The scatter takes the stack's split: the stack splits by KV heads (dim 2) as the layer takes
// its windows, the scatter writes each rank's heads' rows into its part (no rdu.local_part of a
// whole window, no all-gather of the rows).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=2}' %s | filecheck %s
//
// Left alone: a scatter that adds into the stack (`reduce sum`) is not a row write the split
// can take: the stack stays whole, each window cut to its part, the rows gathered.
// RUN: sed 's/= %view_default_4 dim 3 :/= %view_default_4 dim 3 reduce sum :/' %s \
// RUN:   | rducc-opt -p 'rdu-partition{tp=2}' | filecheck %s --check-prefix=ADDS

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-8"} {
  tier.global @layers.0.q.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.0.k.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.0.v.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.0.o.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.q.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.k.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.v.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @layers.1.o.weight : tensor<8x8xf32> {kind = "parameter"}
  tier.global @cache : tensor<2x2x2x6x4xf32> {kind = "buffer"}
  func.func @forward(%x: tensor<1x8xf32> {rdu.input = "x"}, %pos: tensor<1xi64> {rdu.input = "pos"}, %p_layers_0_q_weight: tensor<8x8xf32> {rdu.global = @layers.0.q.weight}, %p_layers_0_k_weight: tensor<8x8xf32> {rdu.global = @layers.0.k.weight}, %p_layers_0_v_weight: tensor<8x8xf32> {rdu.global = @layers.0.v.weight}, %p_layers_0_o_weight: tensor<8x8xf32> {rdu.global = @layers.0.o.weight}, %p_layers_1_q_weight: tensor<8x8xf32> {rdu.global = @layers.1.q.weight}, %p_layers_1_k_weight: tensor<8x8xf32> {rdu.global = @layers.1.k.weight}, %p_layers_1_v_weight: tensor<8x8xf32> {rdu.global = @layers.1.v.weight}, %p_layers_1_o_weight: tensor<8x8xf32> {rdu.global = @layers.1.o.weight}, %b_cache: tensor<2x2x2x6x4xf32> {rdu.global = @cache}) -> (tensor<1x8xf32>, tensor<2x2x2x6x4xf32>) attributes {rdu.result_updates = ["", "buffer:cache"]} {
    %select_int = rdu.slice %b_cache offsets [0, 0, 0, 0, 0] strides [1, 1, 1, 1, 1] : tensor<2x2x2x6x4xf32> -> tensor<1x1x2x6x4xf32>
    %select_int_1 = rdu.slice %b_cache offsets [0, 1, 0, 0, 0] strides [1, 1, 1, 1, 1] : tensor<2x2x2x6x4xf32> -> tensor<1x1x2x6x4xf32>
    %mm, %mm_1, %add = func.call @layer(%x, %p_layers_0_k_weight, %pos, %select_int, %p_layers_0_v_weight, %select_int_1, %p_layers_0_q_weight, %p_layers_0_o_weight) {rdu.layer = "layers.0"} : (tensor<1x8xf32>, tensor<8x8xf32>, tensor<1xi64>, tensor<1x1x2x6x4xf32>, tensor<8x8xf32>, tensor<1x1x2x6x4xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %select_int_2 = rdu.slice %b_cache offsets [1, 0, 0, 0, 0] strides [1, 1, 1, 1, 1] : tensor<2x2x2x6x4xf32> -> tensor<1x1x2x6x4xf32>
    %select_int_3 = rdu.slice %b_cache offsets [1, 1, 0, 0, 0] strides [1, 1, 1, 1, 1] : tensor<2x2x2x6x4xf32> -> tensor<1x1x2x6x4xf32>
    %mm_2, %mm_3, %add_1 = func.call @layer(%add, %p_layers_1_k_weight, %pos, %select_int_2, %p_layers_1_v_weight, %select_int_3, %p_layers_1_q_weight, %p_layers_1_o_weight) {rdu.layer = "layers.1"} : (tensor<1x8xf32>, tensor<8x8xf32>, tensor<1xi64>, tensor<1x1x2x6x4xf32>, tensor<8x8xf32>, tensor<1x1x2x6x4xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>)
    %view_default = rdu.reshape %mm : tensor<1x8xf32> -> tensor<1x2x1x4xf32>
    %view_default_1 = rdu.reshape %mm_1 : tensor<1x8xf32> -> tensor<1x2x1x4xf32>
    %view_default_2 = rdu.reshape %mm_2 : tensor<1x8xf32> -> tensor<1x2x1x4xf32>
    %view_default_3 = rdu.reshape %mm_3 : tensor<1x8xf32> -> tensor<1x2x1x4xf32>
    %cat_default = rdu.concat %view_default, %view_default_1, %view_default_2, %view_default_3 dim 0 : (tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>, tensor<1x2x1x4xf32>) -> tensor<4x2x1x4xf32>
    %view_default_4 = rdu.reshape %cat_default : tensor<4x2x1x4xf32> -> tensor<2x2x2x1x4xf32>
    %view_default_5 = rdu.reshape %pos : tensor<1xi64> -> tensor<1x1x1x1x1xi64>
    %expand_default = rdu.broadcast %view_default_5 : tensor<1x1x1x1x1xi64> -> tensor<2x2x2x1x4xi64>
    %scatter_src = rdu.scatter %b_cache[%expand_default] = %view_default_4 dim 3 : tensor<2x2x2x6x4xf32>, tensor<2x2x2x1x4xi64>, tensor<2x2x2x1x4xf32> -> tensor<2x2x2x6x4xf32>
    func.return %add_1, %scatter_src : tensor<1x8xf32>, tensor<2x2x2x6x4xf32>
  }
  func.func private @layer(%x: tensor<1x8xf32> {rdu.input = "x"}, %p_layers_0_k_weight: tensor<8x8xf32> {rdu.weight}, %pos: tensor<1xi64> {rdu.input = "pos"}, %select_int: tensor<1x1x2x6x4xf32> {rdu.weight}, %p_layers_0_v_weight: tensor<8x8xf32> {rdu.weight}, %select_int_1: tensor<1x1x2x6x4xf32> {rdu.weight}, %p_layers_0_q_weight: tensor<8x8xf32> {rdu.weight}, %p_layers_0_o_weight: tensor<8x8xf32> {rdu.weight}) -> (tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>) attributes {rdu.outlined_from = "layers.0", rdu.calls = 2 : i64} {
    %mm = rdu.matmul %x, %p_layers_0_k_weight transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %view = rdu.reshape %pos {rdu.layer = "layers.0"} : tensor<1xi64> -> tensor<1x1x1xi64>
    %expand = rdu.broadcast %view {rdu.layer = "layers.0"} : tensor<1x1x1xi64> -> tensor<2x1x4xi64>
    %scatter = rdu.reshape %expand {rdu.layer = "layers.0"} : tensor<2x1x4xi64> -> tensor<1x1x2x1x4xi64>
    %scatter_1 = rdu.reshape %mm {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<1x1x2x1x4xf32>
    %scatter_2 = rdu.scatter %select_int[%scatter] = %scatter_1 dim 3 {rdu.layer = "layers.0"} : tensor<1x1x2x6x4xf32>, tensor<1x1x2x1x4xi64>, tensor<1x1x2x1x4xf32> -> tensor<1x1x2x6x4xf32>
    %scatter_3 = rdu.reshape %scatter_2 {rdu.layer = "layers.0"} : tensor<1x1x2x6x4xf32> -> tensor<2x6x4xf32>
    %mm_1 = rdu.matmul %x, %p_layers_0_v_weight transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %view_1 = rdu.reshape %pos {rdu.layer = "layers.0"} : tensor<1xi64> -> tensor<1x1x1xi64>
    %expand_1 = rdu.broadcast %view_1 {rdu.layer = "layers.0"} : tensor<1x1x1xi64> -> tensor<2x1x4xi64>
    %scatter_4 = rdu.reshape %expand_1 {rdu.layer = "layers.0"} : tensor<2x1x4xi64> -> tensor<1x1x2x1x4xi64>
    %scatter_5 = rdu.reshape %mm_1 {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<1x1x2x1x4xf32>
    %scatter_6 = rdu.scatter %select_int_1[%scatter_4] = %scatter_5 dim 3 {rdu.layer = "layers.0"} : tensor<1x1x2x6x4xf32>, tensor<1x1x2x1x4xi64>, tensor<1x1x2x1x4xf32> -> tensor<1x1x2x6x4xf32>
    %scatter_7 = rdu.reshape %scatter_6 {rdu.layer = "layers.0"} : tensor<1x1x2x6x4xf32> -> tensor<2x6x4xf32>
    %mm_2 = rdu.matmul %x, %p_layers_0_q_weight transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %view_2 = rdu.reshape %mm_2 {rdu.layer = "layers.0"} : tensor<1x8xf32> -> tensor<2x1x4xf32>
    %bmm = rdu.matmul %view_2, %scatter_3 transpose_rhs {rdu.layer = "layers.0"} : tensor<2x1x4xf32>, tensor<2x6x4xf32> -> tensor<2x1x6xf32>
    %_softmax = rdu.reduce max %bmm dims [2] keepdim {rdu.layer = "layers.0"} : tensor<2x1x6xf32> -> tensor<2x1x1xf32>
    %_softmax_1 = rdu.map %bmm, %_softmax {rdu.layer = "layers.0"} : (tensor<2x1x6xf32>, tensor<2x1x1xf32>) -> tensor<2x1x6xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.subf %0, %1 : f32
      %3 = math.exp %2 : f32
      rdu.yield %3 : f32
    }
    %_softmax_2 = rdu.reduce sum %_softmax_1 dims [2] keepdim {rdu.layer = "layers.0"} : tensor<2x1x6xf32> -> tensor<2x1x1xf32>
    %_softmax_3 = rdu.map %bmm, %_softmax, %_softmax_2 {rdu.layer = "layers.0"} : (tensor<2x1x6xf32>, tensor<2x1x1xf32>, tensor<2x1x1xf32>) -> tensor<2x1x6xf32> {
    ^bb0(%0: f32, %1: f32, %2: f32):
      %3 = arith.subf %0, %1 : f32
      %4 = math.exp %3 : f32
      %5 = arith.divf %4, %2 : f32
      rdu.yield %5 : f32
    }
    %bmm_1 = rdu.matmul %_softmax_3, %scatter_7 {rdu.layer = "layers.0"} : tensor<2x1x6xf32>, tensor<2x6x4xf32> -> tensor<2x1x4xf32>
    %view_3 = rdu.reshape %bmm_1 {rdu.layer = "layers.0"} : tensor<2x1x4xf32> -> tensor<1x8xf32>
    %mm_3 = rdu.matmul %view_3, %p_layers_0_o_weight transpose_rhs {rdu.layer = "layers.0"} : tensor<1x8xf32>, tensor<8x8xf32> -> tensor<1x8xf32>
    %add = rdu.map %x, %mm_3 {rdu.layer = "layers.0"} : (tensor<1x8xf32>, tensor<1x8xf32>) -> tensor<1x8xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.addf %0, %1 : f32
      rdu.yield %2 : f32
    }
    func.return %mm, %mm_1, %add : tensor<1x8xf32>, tensor<1x8xf32>, tensor<1x8xf32>
  }
}


// CHECK:      tier.global @cache : tensor<2x2x1x6x4xf32> {kind = "buffer", rdu.shard = #rdu.split<(2, 2, 1)>}
// CHECK-NOT:  rdu.local_part
// CHECK-NOT:  rdu.all_gather
// CHECK:      func.call @layer({{.*}}) {{.*}}: (tensor<1x8xf32>, tensor<4x8xf32>, tensor<1xi64>, tensor<1x1x1x6x4xf32>,
// CHECK:      %scatter_src = rdu.scatter %b_cache[%expand_default] = %view_default_4 dim 3 : tensor<2x2x1x6x4xf32>, tensor<2x2x1x1x4xi64>, tensor<2x2x1x1x4xf32> -> tensor<2x2x1x6x4xf32>
// CHECK-NEXT: func.return

// ADDS:       tier.global @cache : tensor<2x2x2x6x4xf32> {kind = "buffer"}
// ADDS:       rdu.local_part %select_int dim 2 group 2
// ADDS:       rdu.all_gather %view_default_4 dim 2 group 2
// ADDS:       rdu.scatter %b_cache{{.*}} reduce sum : tensor<2x2x2x6x4xf32>
