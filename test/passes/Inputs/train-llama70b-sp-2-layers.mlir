// A training step at rdu-place-saved's input (kernels level): Llama 3.1 70B's widths with 2
// decoder layers (bench/train_llama.py's joint step, no optimizer, meta device, sequence
// 4,096), outlined (@layer_forward, @layer_backward), partitioned tp=8 pp=2 with sequence
// parallelism for sn40l-16, as the 80-layer row's split chooser picks:
//   pipeline_text(2, "kernels", 16, (8, 2)) with rdu-partition{tp=8 pp=2 sequence_parallel=true}
// (site-packages paths cut to the package's own).
builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.target = #rdu.target<{name = "sn40l-16", sockets = 16, pcus = 1040, pmus = 1040, lanes = 32, peak_flops_bf16 = 638000000000000.0, peak_flops_f32 = 159500000000000.0, peak_flops_int = 159500000000000.0, sram_bytes = 520000000, pmu_bytes = 500000, sram_bandwidth = 426000000000000.0, hbm_bytes = 64000000000, hbm_bandwidth = 1600000000000.0, ddr_bytes = 1500000000000, ddr_bandwidth = 100000000000.0, dma_latency_s = 2.0e-07, kernel_launch_s = 1.0e-06, link_bandwidth = 100000000000.0, link_latency_s = 3.0e-07, module_sockets = 2, cross_module_hops = 2, models_in_host_memory = false, kernel_looping = true, fabric_rows = 40, fabric_cols = 52, pcu_stages = 6, stage_latency_s = 6.25e-09, hop_latency_s = 6.25e-10, reconfigure_s = 1.0e-06, hbm_efficiency = 0.95, ddr_efficiency = 1.0, compute_efficiency = 0.85, pcu_feed_bandwidth = 204800000000.0, host_link_bandwidth = 32000000000.0, host_latency_s = 5.0e-05, host_bandwidth = 5000000000.0, source = "sn40l-16"}, hash = "06b30315cfb8a00c">, rdu.partition = {tp = 8 : i64, pp = 2 : i64}} {
  tier.global @model.model.embed_tokens.weight : tensor<128256x8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.gather", "transformers/models/llama/modeling_llama.py:372:13"]}
  tier.global @model.model.layers.0.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.0.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.0.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.0.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.0.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.0.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.0.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.0.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.0.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.1.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.1.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.1.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.1.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.1.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.1.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.1.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.1.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.1.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.norm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.lm_head.weight : tensor<16032x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.rotary_emb.inv_freq : tensor<64xbf16> {kind = "buffer"}
  tier.global @model.model.rotary_emb.original_inv_freq : tensor<64xbf16> {kind = "buffer"}
  func.func @forward(%ids: tensor<1x4096xi64> {rdu.input = "ids"}, %labels: tensor<1x4096xi64> {rdu.input = "labels"}, %p_model_model_embed_tokens_weight: tensor<128256x8192xbf16> {rdu.global = @model.model.embed_tokens.weight}, %p_model_model_layers_0_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.0.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.0.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.0.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.0.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.0.input_layernorm.weight}, %p_model_model_layers_0_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.0.post_attention_layernorm.weight}, %p_model_model_layers_1_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.1.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.1.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.1.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.1.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.1.input_layernorm.weight}, %p_model_model_layers_1_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.1.post_attention_layernorm.weight}, %p_model_model_norm_weight: tensor<8192xbf16> {rdu.global = @model.model.norm.weight}, %p_model_lm_head_weight: tensor<16032x8192xbf16> {rdu.global = @model.lm_head.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %b_model_model_rotary_emb_inv_freq: tensor<64xbf16> {rdu.global = @model.model.rotary_emb.inv_freq}, %b_model_model_rotary_emb_original_inv_freq: tensor<64xbf16> {rdu.global = @model.model.rotary_emb.original_inv_freq}) -> (tensor<f32>, tensor<128256x8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<16032x8192xbf16>) attributes {rdu.result_roles = ["loss", "gradient:parameter:model.model.embed_tokens.weight", "gradient:parameter:model.model.layers.0.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.0.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.0.mlp.up_proj.weight", "gradient:parameter:model.model.layers.0.mlp.down_proj.weight", "gradient:parameter:model.model.layers.0.input_layernorm.weight", "gradient:parameter:model.model.layers.0.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.1.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.1.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.1.mlp.up_proj.weight", "gradient:parameter:model.model.layers.1.mlp.down_proj.weight", "gradient:parameter:model.model.layers.1.input_layernorm.weight", "gradient:parameter:model.model.layers.1.post_attention_layernorm.weight", "gradient:parameter:model.model.norm.weight", "gradient:parameter:model.lm_head.weight"], rdu.result_shards = [#rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>]} {
    %0, %bitwise_and, %_to_copy, %_to_copy_1 = rdu.kernel "k0"(%p_model_model_embed_tokens_weight, %labels, %b_model_model_rotary_emb_inv_freq) : (tensor<128256x8192xbf16>, tensor<1x4096xi64>, tensor<64xbf16>) -> (tensor<1x512x8192xbf16>, tensor<1x1x4096x4096xi1>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>) {
    ^bb0(%p_model_model_embed_tokens_weight_1: tensor<128256x8192xbf16>, %labels_1: tensor<1x4096xi64>, %b_model_model_rotary_emb_inv_freq_1: tensor<64xbf16>):
      %embedding = rdu.gather %p_model_model_embed_tokens_weight_1[%labels_1] dim 0 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<128256x8192xbf16>, tensor<1x4096xi64> -> tensor<1x4096x8192xbf16>
      %1 = rdu.local_part %embedding dim 1 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %arange = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64>
      %add = rdu.map %arange {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<4096xi64>) -> tensor<4096xi64> {
      ^bb0(%2: i64):
        %3 = arith.constant 0 : i64
        %4 = arith.addi %2, %3 : i64
        rdu.yield %4 : i64
      }
      %unsqueeze = rdu.reshape %add {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x1x1x4096xi64>
      %arange_1 = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1xi64>
      %unsqueeze_1 = rdu.reshape %arange_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1xi64> -> tensor<1x1x1x1xi64>
      %slice = rdu.slice %add offsets [0] strides [1] {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1xi64>
      %slice_1 = rdu.reshape %slice {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1xi64> -> tensor<1x1xi64>
      %sub = rdu.map %slice_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x1xi64>) -> tensor<1x1xi64> {
      ^bb0(%2: i64):
        %3 = arith.constant 1 : i64
        %4 = arith.subi %2, %3 : i64
        rdu.yield %4 : i64
      }
      %unsqueeze_2 = rdu.reshape %add {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x4096xi64>
      %cat = rdu.concat %sub, %unsqueeze_2 dim 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x1xi64>, tensor<1x4096xi64>) -> tensor<1x4097xi64>
      %slice_2 = rdu.slice %cat offsets [0, 1] strides [1, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4097xi64> -> tensor<1x4096xi64>
      %slice_3 = rdu.slice %cat offsets [0, 0] strides [1, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4097xi64> -> tensor<1x4096xi64>
      %cumsum = rdu.map %slice_2, %slice_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096xi64>, tensor<1x4096xi64>) -> tensor<1x4096xi64> {
      ^bb0(%2: i64, %3: i64):
        %4 = arith.subi %2, %3 : i64
        %5 = arith.constant 1 : i64
        %6 = arith.cmpi ne, %4, %5 : i64
        %7 = arith.extui %6 : i1 to i64
        rdu.yield %7 : i64
      }
      %cumsum_1 = rdu.scan sum %cumsum dim 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096xi64> -> tensor<1x4096xi64>
      %index = rdu.gather %cumsum_1[%unsqueeze_1, %unsqueeze] dim 0 wraps {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x4096xi64> -> tensor<1x1x1x4096xi64>
      %unsqueeze_3 = rdu.reshape %add {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x1x4096x1xi64>
      %index_1 = rdu.gather %cumsum_1[%unsqueeze_1, %unsqueeze_3] dim 0 wraps {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096xi64>, tensor<1x1x1x1xi64>, tensor<1x1x4096x1xi64> -> tensor<1x1x4096x1xi64>
      %index_2 = rdu.gather %unsqueeze_2[%unsqueeze_1, %unsqueeze] dim 0 wraps {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096xi64>, tensor<1x1x1x1xi64>, tensor<1x1x1x4096xi64> -> tensor<1x1x1x4096xi64>
      %index_3 = rdu.gather %unsqueeze_2[%unsqueeze_1, %unsqueeze_3] dim 0 wraps {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096xi64>, tensor<1x1x1x1xi64>, tensor<1x1x4096x1xi64> -> tensor<1x1x4096x1xi64>
      %bitwise_and_1 = rdu.map %index_1, %index, %index_2, %index_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x1x4096x1xi64>, tensor<1x1x1x4096xi64>, tensor<1x1x1x4096xi64>, tensor<1x1x4096x1xi64>) -> tensor<1x1x4096x4096xi1> {
      ^bb0(%2: i64, %3: i64, %4: i64, %5: i64):
        %6 = arith.cmpi sle, %4, %5 : i64
        %7 = arith.constant true
        %8 = arith.andi %7, %6 : i1
        %9 = arith.cmpi eq, %2, %3 : i64
        %10 = arith.andi %8, %9 : i1
        rdu.yield %10 : i1
      }
      %_to_copy_2 = rdu.map %b_model_model_rotary_emb_inv_freq_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<64xbf16>) -> tensor<64xf32> {
      ^bb0(%2: bf16):
        %3 = arith.extf %2 : bf16 to f32
        rdu.yield %3 : f32
      }
      %unsqueeze_4 = rdu.reshape %add {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x4096x1xi64>
      %_to_copy_3 = rdu.map %unsqueeze_4 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xi64>) -> tensor<1x4096x1xf32> {
      ^bb0(%2: i64):
        %3 = arith.sitofp %2 : i64 to f32
        rdu.yield %3 : f32
      }
      %mul = rdu.map %_to_copy_3, %_to_copy_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xf32>, tensor<64xf32>) -> tensor<1x4096x64xf32> {
      ^bb0(%2: f32, %3: f32):
        %4 = arith.mulf %2, %3 : f32
        rdu.yield %4 : f32
      }
      %cat_1 = rdu.reshape %mul {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x64xf32> -> tensor<1x4096x1x64xf32>
      %cat_2 = rdu.broadcast %cat_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x1x64xf32> -> tensor<1x4096x2x64xf32>
      %cat_3 = rdu.reshape %cat_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x2x64xf32> -> tensor<1x4096x128xf32>
      %_to_copy_4 = rdu.map %cat_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x128xf32>) -> tensor<1x4096x128xbf16> {
      ^bb0(%2: f32):
        %3 = math.cos %2 : f32
        %4 = arith.constant 1.000000e+00 : f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %_to_copy_5 = rdu.map %cat_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x128xf32>) -> tensor<1x4096x128xbf16> {
      ^bb0(%2: f32):
        %3 = math.sin %2 : f32
        %4 = arith.constant 1.000000e+00 : f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      rdu.yield %1, %bitwise_and_1, %_to_copy_4, %_to_copy_5 : tensor<1x512x8192xbf16>, tensor<1x1x4096x4096xi1>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>
    }
    %_to_copy_2, %rsqrt, %_to_copy_3, %view, %view_1, %view_2, %unsqueeze, %unsqueeze_1, %permute, %view_3, %logical_not, %_softmax, %view_4, %view_5, %view_6, %_to_copy_4, %rsqrt_1, %_to_copy_5, %view_7, %view_8, %_to_copy_6, %view_9, %view_10, %view_11, %add = func.call @layer_forward(%0, %p_model_model_layers_0_input_layernorm_weight, %p_model_model_layers_0_self_attn_q_proj_weight, %p_model_model_layers_0_self_attn_k_proj_weight, %p_model_model_layers_0_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_0_self_attn_o_proj_weight, %p_model_model_layers_0_post_attention_layernorm_weight, %p_model_model_layers_0_mlp_gate_proj_weight, %p_model_model_layers_0_mlp_up_proj_weight, %p_model_model_layers_0_mlp_down_proj_weight) {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_7, %rsqrt_2, %_to_copy_8, %view_12, %view_13, %view_14, %unsqueeze_2, %unsqueeze_3, %permute_1, %view_15, %logical_not_1, %_softmax_1, %view_16, %view_17, %view_18, %_to_copy_9, %rsqrt_3, %_to_copy_10, %view_19, %view_20, %_to_copy_11, %view_21, %view_22, %view_23, %add_1 = func.call @layer_forward(%add, %p_model_model_layers_1_input_layernorm_weight, %p_model_model_layers_1_self_attn_q_proj_weight, %p_model_model_layers_1_self_attn_k_proj_weight, %p_model_model_layers_1_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_1_self_attn_o_proj_weight, %p_model_model_layers_1_post_attention_layernorm_weight, %p_model_model_layers_1_mlp_gate_proj_weight, %p_model_model_layers_1_mlp_up_proj_weight, %p_model_model_layers_1_mlp_down_proj_weight) {rdu.layer = "forward.layers.1", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_12, %rsqrt_4, %_to_copy_13, %view_24 = rdu.kernel "k1"(%add_1, %p_model_model_norm_weight) : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>) {
    ^bb0(%add_2: tensor<1x512x8192xbf16>, %p_model_model_norm_weight_1: tensor<8192xbf16>):
      %1 = rdu.send_recv %add_2 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x512x8192xbf16>
      %_to_copy_14 = rdu.map %1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%2: bf16):
        %3 = arith.extf %2 : bf16 to f32
        rdu.yield %3 : f32
      }
      %pow = rdu.map %_to_copy_14 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%2: f32):
        %3 = arith.constant 1.000000e+00 : f32
        %4 = arith.mulf %3, %2 : f32
        %5 = arith.mulf %4, %2 : f32
        rdu.yield %5 : f32
      }
      %mean = rdu.reduce sum %pow dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %rsqrt_5 = rdu.map %mean {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%2: f32):
        %3 = arith.constant 8.192000e+03 : f32
        %4 = arith.divf %2, %3 : f32
        %5 = arith.constant 1.000000e-05 : f32
        %6 = arith.addf %4, %5 : f32
        %7 = math.rsqrt %6 : f32
        rdu.yield %7 : f32
      }
      %_to_copy_15 = rdu.map %_to_copy_14, %rsqrt_5 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%2: f32, %3: f32):
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %mul = rdu.map %p_model_model_norm_weight_1, %_to_copy_15 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%2: bf16, %3: bf16):
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.extf %3 : bf16 to f32
        %6 = arith.mulf %4, %5 : f32
        %7 = arith.truncf %6 : f32 to bf16
        rdu.yield %7 : bf16
      }
      %2 = rdu.all_gather %mul dim 1 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_25 = rdu.reshape %2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      rdu.yield %_to_copy_14, %rsqrt_5, %_to_copy_15, %view_25 : tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>
    }
    %_to_copy_14 = rdu.kernel "k2"(%view_24, %p_model_lm_head_weight) : (tensor<4096x8192xbf16>, tensor<16032x8192xbf16>) -> tensor<1x4096x16032xf32> {
    ^bb0(%view_25: tensor<4096x8192xbf16>, %p_model_lm_head_weight_1: tensor<16032x8192xbf16>):
      %mm = rdu.matmul %view_25, %p_model_lm_head_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x8192xbf16>, tensor<16032x8192xbf16> -> tensor<4096x16032xbf16>
      %view_26 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16> -> tensor<1x4096x16032xbf16>
      %_to_copy_15 = rdu.map %view_26 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x4096x16032xbf16>) -> tensor<1x4096x16032xf32> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        rdu.yield %2 : f32
      }
      rdu.yield %_to_copy_15 : tensor<1x4096x16032xf32>
    }
    %slice = rdu.kernel "k3"(%labels) : (tensor<1x4096xi64>) -> tensor<1x4096xi64> {
    ^bb0(%labels_1: tensor<1x4096xi64>):
      %constant_pad_nd = rdu.map {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : () -> tensor<1x1xi64> {
        %1 = arith.constant -100 : i64
        rdu.yield %1 : i64
      }
      %constant_pad_nd_1 = rdu.concat %labels_1, %constant_pad_nd dim 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x4096xi64>, tensor<1x1xi64>) -> tensor<1x4097xi64>
      %slice_1 = rdu.slice %constant_pad_nd_1 offsets [0, 1] strides [1, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4097xi64> -> tensor<1x4096xi64>
      rdu.yield %slice_1 : tensor<1x4096xi64>
    }
    %view_25 = rdu.kernel "k4"(%_to_copy_14) : (tensor<1x4096x16032xf32>) -> tensor<4096x16032xf32> {
    ^bb0(%_to_copy_15: tensor<1x4096x16032xf32>):
      %view_26 = rdu.reshape %_to_copy_15 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x16032xf32> -> tensor<4096x16032xf32>
      rdu.yield %view_26 : tensor<4096x16032xf32>
    }
    %view_26, %_log_softmax = rdu.kernel "k5"(%slice, %view_25) : (tensor<1x4096xi64>, tensor<4096x16032xf32>) -> (tensor<4096xi64>, tensor<4096x1xf32>) {
    ^bb0(%slice_1: tensor<1x4096xi64>, %view_27: tensor<4096x16032xf32>):
      %view_28 = rdu.reshape %slice_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096xi64> -> tensor<4096xi64>
      %1 = rdu.reduce max %view_27 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      %2 = rdu.all_gather %1 dim 1 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x8xf32>
      %_log_softmax_1 = rdu.reduce max %2 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x8xf32> -> tensor<4096x1xf32>
      rdu.yield %view_28, %_log_softmax_1 : tensor<4096xi64>, tensor<4096x1xf32>
    }
    %_log_softmax_1 = rdu.kernel "k6"(%view_25, %_log_softmax) : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
    ^bb0(%view_27: tensor<4096x16032xf32>, %_log_softmax_2: tensor<4096x1xf32>):
      %_log_softmax_3 = rdu.map %view_27, %_log_softmax_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.subf %1, %2 : f32
        %4 = math.exp %3 : f32
        rdu.yield %4 : f32
      }
      %_log_softmax_4 = rdu.reduce sum %_log_softmax_3 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      %1 = rdu.all_reduce %_log_softmax_4 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x1xf32>
      %_log_softmax_5 = rdu.map %view_27, %_log_softmax_2, %1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%2: f32, %3: f32, %4: f32):
        %5 = arith.subf %2, %3 : f32
        %6 = math.log %4 : f32
        %7 = arith.subf %5, %6 : f32
        rdu.yield %7 : f32
      }
      rdu.yield %_log_softmax_5 : tensor<4096x16032xf32>
    }
    %ne, %1, %2, %gather = rdu.kernel "k7"(%view_26) : (tensor<4096xi64>) -> (tensor<4096xi1>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xi64>) {
    ^bb0(%view_27: tensor<4096xi64>):
      %ne_1 = rdu.map %view_27 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi64>) -> tensor<4096xi1> {
      ^bb0(%3: i64):
        %4 = arith.constant -100 : i64
        %5 = arith.cmpi ne, %3, %4 : i64
        rdu.yield %5 : i1
      }
      %where = rdu.map %ne_1, %view_27 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>, tensor<4096xi64>) -> tensor<4096xi64> {
      ^bb0(%3: i1, %4: i64):
        %5 = arith.constant 0 : i64
        %6 = arith.select %3, %4, %5 : i64
        rdu.yield %6 : i64
      }
      %unsqueeze_4 = rdu.reshape %where {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<4096x1xi64>
      %3 = rdu.iota start 0 step 16032 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<8xi64>
      %4 = rdu.local_part %3 dim 0 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<8xi64> -> tensor<1xi64>
      %5 = rdu.map %unsqueeze_4, %4 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>, tensor<1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%6: i64, %7: i64):
        %8 = arith.subi %6, %7 : i64
        rdu.yield %8 : i64
      }
      %6 = rdu.map %5 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%7: i64):
        %8 = arith.constant 0 : i64
        %9 = arith.constant 16032 : i64
        %10 = arith.cmpi sge, %7, %8 : i64
        %11 = arith.cmpi slt, %7, %9 : i64
        %12 = arith.andi %10, %11 : i1
        rdu.yield %12 : i1
      }
      %7 = rdu.map %6, %5 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%8: i1, %9: i64):
        %10 = arith.constant 0 : i64
        %11 = arith.select %8, %9, %10 : i64
        rdu.yield %11 : i64
      }
      %gather_1 = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64>
      %gather_2 = rdu.reshape %gather_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<4096x1xi64>
      rdu.yield %ne_1, %6, %7, %gather_2 : tensor<4096xi1>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xi64>
    }
    %div, %div_1, %ne_1, %3, %4 = rdu.kernel "k8"(%_log_softmax_1, %gather, %2, %1, %ne, %slice) : (tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xi64>, tensor<4096x1xi1>, tensor<4096xi1>, tensor<1x4096xi64>) -> (tensor<f32>, tensor<f32>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xf32>) {
    ^bb0(%_log_softmax_2: tensor<4096x16032xf32>, %gather_1: tensor<4096x1xi64>, %5: tensor<4096x1xi64>, %6: tensor<4096x1xi1>, %ne_2: tensor<4096xi1>, %slice_1: tensor<1x4096xi64>):
      %gather_2 = rdu.gather %_log_softmax_2[%gather_1, %5] dim 0 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xi64> -> tensor<4096x1xf32>
      %gather_3 = rdu.map %6, %gather_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xf32>) -> tensor<4096x1xf32> {
      ^bb0(%7: i1, %8: f32):
        %9 = arith.constant 0.000000e+00 : f32
        %10 = arith.select %7, %8, %9 : f32
        rdu.yield %10 : f32
      }
      %squeeze = rdu.reshape %gather_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096xf32>
      %neg = rdu.map %squeeze {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xf32>) -> tensor<4096xf32> {
      ^bb0(%7: f32):
        %8 = arith.negf %7 : f32
        rdu.yield %8 : f32
      }
      %7 = rdu.all_reduce %neg group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xf32> -> tensor<4096xf32>
      %where = rdu.map %ne_2, %7 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>, tensor<4096xf32>) -> tensor<4096xf32> {
      ^bb0(%8: i1, %9: f32):
        %10 = arith.constant 0.000000e+00 : f32
        %11 = arith.select %8, %9, %10 : f32
        rdu.yield %11 : f32
      }
      %sum = rdu.map %ne_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>) -> tensor<4096xi64> {
      ^bb0(%8: i1):
        %9 = arith.extui %8 : i1 to i64
        rdu.yield %9 : i64
      }
      %sum_1 = rdu.reduce sum %sum dims [0] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<i64>
      %_to_copy_15 = rdu.map %sum_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<i64>) -> tensor<f32> {
      ^bb0(%8: i64):
        %9 = arith.sitofp %8 : i64 to f32
        rdu.yield %9 : f32
      }
      %sum_2 = rdu.reduce sum %where dims [0] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xf32> -> tensor<f32>
      %div_2 = rdu.map %sum_2, %_to_copy_15 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
      ^bb0(%8: f32, %9: f32):
        %10 = arith.divf %8, %9 : f32
        rdu.yield %10 : f32
      }
      %div_3 = rdu.map %_to_copy_15 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<f32>) -> tensor<f32> {
      ^bb0(%8: f32):
        %9 = arith.constant 1.000000e+00 : f32
        %10 = arith.divf %9, %8 : f32
        rdu.yield %10 : f32
      }
      %unsqueeze_4 = rdu.reshape %slice_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096xi64> -> tensor<4096x1xi64>
      %ne_3 = rdu.map %unsqueeze_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%8: i64):
        %9 = arith.constant -100 : i64
        %10 = arith.cmpi ne, %8, %9 : i64
        rdu.yield %10 : i1
      }
      %8 = rdu.iota start 0 step 16032 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<8xi64>
      %9 = rdu.local_part %8 dim 0 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<8xi64> -> tensor<1xi64>
      %10 = rdu.map %9, %ne_3, %unsqueeze_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1xi64>, tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%11: i64, %12: i1, %13: i64):
        %14 = arith.constant 0 : i64
        %15 = arith.select %12, %13, %14 : i64
        %16 = arith.subi %15, %11 : i64
        rdu.yield %16 : i64
      }
      %11 = rdu.map %10 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%12: i64):
        %13 = arith.constant 0 : i64
        %14 = arith.constant 16032 : i64
        %15 = arith.cmpi sge, %12, %13 : i64
        %16 = arith.cmpi slt, %12, %14 : i64
        %17 = arith.andi %15, %16 : i1
        rdu.yield %17 : i1
      }
      %12 = rdu.map %11, %10 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%13: i1, %14: i64):
        %15 = arith.constant 0 : i64
        %16 = arith.select %13, %14, %15 : i64
        rdu.yield %16 : i64
      }
      %13 = rdu.map %11 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>) -> tensor<4096x1xf32> {
      ^bb0(%14: i1):
        %15 = arith.constant -1.000000e+00 : f32
        %16 = arith.constant 0.000000e+00 : f32
        %17 = arith.select %14, %15, %16 : f32
        rdu.yield %17 : f32
      }
      rdu.yield %div_2, %div_3, %ne_3, %12, %13 : tensor<f32>, tensor<f32>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xf32>
    }
    %mul = rdu.kernel "k9"(%3, %4, %ne_1, %div_1) : (tensor<4096x1xi64>, tensor<4096x1xf32>, tensor<4096x1xi1>, tensor<f32>) -> tensor<4096x16032xf32> {
    ^bb0(%5: tensor<4096x1xi64>, %6: tensor<4096x1xf32>, %ne_2: tensor<4096x1xi1>, %div_2: tensor<f32>):
      %7 = rdu.map {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : () -> tensor<4096x16032xf32> {
        %8 = arith.constant 0.000000e+00 : f32
        rdu.yield %8 : f32
      }
      %scatter = rdu.scatter %7[%5] = %6 dim 1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xf32> -> tensor<4096x16032xf32>
      %where = rdu.map %ne_2, %div_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<f32>) -> tensor<4096x1xf32> {
      ^bb0(%8: i1, %9: f32):
        %10 = arith.constant 0.000000e+00 : f32
        %11 = arith.select %8, %9, %10 : f32
        rdu.yield %11 : f32
      }
      %mul_1 = rdu.map %scatter, %where {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%8: f32, %9: f32):
        %10 = arith.mulf %8, %9 : f32
        rdu.yield %10 : f32
      }
      rdu.yield %mul_1 : tensor<4096x16032xf32>
    }
    %exp = rdu.kernel "k10"(%_log_softmax_1) : (tensor<4096x16032xf32>) -> tensor<4096x16032xf32> {
    ^bb0(%_log_softmax_2: tensor<4096x16032xf32>):
      %exp_1 = rdu.map %_log_softmax_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%5: f32):
        %6 = math.exp %5 : f32
        rdu.yield %6 : f32
      }
      rdu.yield %exp_1 : tensor<4096x16032xf32>
    }
    %sum = rdu.kernel "k11"(%mul) : (tensor<4096x16032xf32>) -> tensor<4096x1xf32> {
    ^bb0(%mul_1: tensor<4096x16032xf32>):
      %sum_1 = rdu.reduce sum %mul_1 dims [1] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      rdu.yield %sum_1 : tensor<4096x1xf32>
    }
    %view_27, %mm = rdu.kernel "k12"(%sum, %exp, %mul, %view_24) : (tensor<4096x1xf32>, tensor<4096x16032xf32>, tensor<4096x16032xf32>, tensor<4096x8192xbf16>) -> (tensor<4096x16032xbf16>, tensor<16032x8192xbf16>) {
    ^bb0(%sum_1: tensor<4096x1xf32>, %exp_1: tensor<4096x16032xf32>, %mul_1: tensor<4096x16032xf32>, %view_28: tensor<4096x8192xbf16>):
      %5 = rdu.all_reduce %sum_1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x1xf32>
      %sub = rdu.map %mul_1, %exp_1, %5 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%6: f32, %7: f32, %8: f32):
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.subf %6, %9 : f32
        rdu.yield %10 : f32
      }
      %view_29 = rdu.reshape %sub {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<1x4096x16032xf32>
      %_to_copy_15 = rdu.map %view_29 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x4096x16032xf32>) -> tensor<1x4096x16032xbf16> {
      ^bb0(%6: f32):
        %7 = arith.truncf %6 : f32 to bf16
        rdu.yield %7 : bf16
      }
      %view_30 = rdu.reshape %_to_copy_15 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096x16032xbf16> -> tensor<4096x16032xbf16>
      %permute_2 = rdu.transpose %view_30 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16> -> tensor<16032x4096xbf16>
      %mm_1 = rdu.matmul %permute_2, %view_28 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<16032x4096xbf16>, tensor<4096x8192xbf16> -> tensor<16032x8192xbf16>
      rdu.yield %view_30, %mm_1 : tensor<4096x16032xbf16>, tensor<16032x8192xbf16>
    }
    %mul_1, %mul_2 = rdu.kernel "k13"(%view_27, %p_model_lm_head_weight, %p_model_model_norm_weight, %_to_copy_13) : (tensor<4096x16032xbf16>, tensor<16032x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%view_28: tensor<4096x16032xbf16>, %p_model_lm_head_weight_1: tensor<16032x8192xbf16>, %p_model_model_norm_weight_1: tensor<8192xbf16>, %_to_copy_15: tensor<1x512x8192xbf16>):
      %mm_1 = rdu.matmul %view_28, %p_model_lm_head_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16>, tensor<16032x8192xbf16> -> tensor<4096x8192xbf16>
      %view_29 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %5 = rdu.reduce_scatter %view_29 dim 1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %mul_3 = rdu.map %5, %p_model_model_norm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%6: bf16, %7: bf16):
        %8 = arith.extf %6 : bf16 to f32
        %9 = arith.extf %7 : bf16 to f32
        %10 = arith.mulf %8, %9 : f32
        %11 = arith.truncf %10 : f32 to bf16
        rdu.yield %11 : bf16
      }
      %mul_4 = rdu.map %5, %_to_copy_15 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%6: bf16, %7: bf16):
        %8 = arith.extf %6 : bf16 to f32
        %9 = arith.extf %7 : bf16 to f32
        %10 = arith.mulf %8, %9 : f32
        %11 = arith.truncf %10 : f32 to bf16
        rdu.yield %11 : bf16
      }
      rdu.yield %mul_3, %mul_4 : tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>
    }
    %5, %_to_copy_15 = rdu.kernel "k14"(%mul_2, %mul_1, %_to_copy_12, %rsqrt_4) : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%mul_3: tensor<1x512x8192xbf16>, %mul_4: tensor<1x512x8192xbf16>, %_to_copy_16: tensor<1x512x8192xf32>, %rsqrt_5: tensor<1x512x1xf32>):
      %sum_1 = rdu.reduce sum %mul_3 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      %6 = rdu.all_reduce %sum_1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<1x1x8192xbf16> -> tensor<1x1x8192xbf16>
      %7 = rdu.reshape %6 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_17 = rdu.map %mul_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%8: bf16):
        %9 = arith.extf %8 : bf16 to f32
        rdu.yield %9 : f32
      }
      %mul_5 = rdu.map %_to_copy_17, %_to_copy_16 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%8: f32, %9: f32):
        %10 = arith.mulf %8, %9 : f32
        rdu.yield %10 : f32
      }
      %sum_2 = rdu.reduce sum %mul_5 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_6 = rdu.map %rsqrt_5, %sum_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%8: f32, %9: f32):
        %10 = arith.constant -5.000000e-01 : f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.constant 1.000000e+00 : f32
        %13 = arith.mulf %12, %8 : f32
        %14 = arith.mulf %13, %8 : f32
        %15 = arith.mulf %14, %8 : f32
        %16 = arith.mulf %11, %15 : f32
        rdu.yield %16 : f32
      }
      %expand = rdu.broadcast %mul_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
      %_to_copy_18 = rdu.map %_to_copy_17, %rsqrt_5, %expand, %_to_copy_16 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%8: f32, %9: f32, %10: f32, %11: f32):
        %12 = arith.constant 1.000000e+00 : f32
        %13 = arith.mulf %12, %11 : f32
        %14 = arith.constant 2.000000e+00 : f32
        %15 = arith.mulf %13, %14 : f32
        %16 = arith.constant 8.192000e+03 : f32
        %17 = arith.divf %10, %16 : f32
        %18 = arith.mulf %17, %15 : f32
        %19 = arith.mulf %8, %9 : f32
        %20 = arith.addf %19, %18 : f32
        %21 = arith.truncf %20 : f32 to bf16
        rdu.yield %21 : bf16
      }
      rdu.yield %7, %_to_copy_18 : tensor<8192xbf16>, tensor<1x512x8192xbf16>
    }
    %6 = rdu.kernel "k15"(%_to_copy_15) : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
    ^bb0(%_to_copy_16: tensor<1x512x8192xbf16>):
      %7 = rdu.send_recv %_to_copy_16 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x512x8192xbf16> -> tensor<1x512x8192xbf16>
      rdu.yield %7 : tensor<1x512x8192xbf16>
    }
    %mm_1, %mm_2, %mm_3, %view_28, %mm_4, %mm_5, %mm_6, %mm_7, %view_29, %add_2 = func.call @layer_backward(%6, %view_23, %p_model_model_layers_1_mlp_down_proj_weight, %_to_copy_11, %view_22, %view_21, %p_model_model_layers_1_mlp_up_proj_weight, %view_20, %view_19, %p_model_model_layers_1_mlp_gate_proj_weight, %p_model_model_layers_1_post_attention_layernorm_weight, %_to_copy_10, %_to_copy_9, %rsqrt_3, %view_18, %p_model_model_layers_1_self_attn_o_proj_weight, %view_16, %view_17, %_softmax_1, %logical_not_1, %view_15, %permute_1, %unsqueeze_3, %unsqueeze_2, %view_14, %p_model_model_layers_1_self_attn_v_proj_weight, %view_13, %p_model_model_layers_1_self_attn_k_proj_weight, %view_12, %p_model_model_layers_1_self_attn_q_proj_weight, %p_model_model_layers_1_input_layernorm_weight, %_to_copy_8, %_to_copy_7, %rsqrt_2) {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %7, %8 = rdu.kernel "k16"(%view_28, %view_29) {rdu.layer = "backward.layers.0"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_30: tensor<8192xbf16>, %view_31: tensor<8192xbf16>):
      %9 = rdu.all_reduce %view_30 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %10 = rdu.all_reduce %view_31 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %9, %10 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_8, %mm_9, %mm_10, %view_30, %mm_11, %mm_12, %mm_13, %mm_14, %view_31, %add_3 = func.call @layer_backward(%add_2, %view_11, %p_model_model_layers_0_mlp_down_proj_weight, %_to_copy_6, %view_10, %view_9, %p_model_model_layers_0_mlp_up_proj_weight, %view_8, %view_7, %p_model_model_layers_0_mlp_gate_proj_weight, %p_model_model_layers_0_post_attention_layernorm_weight, %_to_copy_5, %_to_copy_4, %rsqrt_1, %view_6, %p_model_model_layers_0_self_attn_o_proj_weight, %view_4, %view_5, %_softmax, %logical_not, %view_3, %permute, %unsqueeze_1, %unsqueeze, %view_2, %p_model_model_layers_0_self_attn_v_proj_weight, %view_1, %p_model_model_layers_0_self_attn_k_proj_weight, %view, %p_model_model_layers_0_self_attn_q_proj_weight, %p_model_model_layers_0_input_layernorm_weight, %_to_copy_3, %_to_copy_2, %rsqrt) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %9, %10, %11, %index_put = rdu.kernel "k17"(%view_30, %view_31, %add_3, %labels) {rdu.layer = "backward.layers.1"} : (tensor<8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x4096xi64>) -> (tensor<8192xbf16>, tensor<8192xbf16>, tensor<4096x8192xf32>, tensor<4096x8192xi64>) {
    ^bb0(%view_32: tensor<8192xbf16>, %view_33: tensor<8192xbf16>, %add_4: tensor<1x512x8192xbf16>, %labels_1: tensor<1x4096xi64>):
      %12 = rdu.all_reduce %view_32 group 8 {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %13 = rdu.all_reduce %view_33 group 8 {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %bitwise_and_1 = rdu.map %labels_1, %labels_1, %labels_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096xi64>, tensor<1x4096xi64>, tensor<1x4096xi64>) -> tensor<1x4096xi1> {
      ^bb0(%14: i64, %15: i64, %16: i64):
        %17 = arith.constant -1 : i64
        %18 = arith.cmpi ne, %16, %17 : i64
        %19 = arith.constant 128256 : i64
        %20 = arith.cmpi slt, %15, %19 : i64
        %21 = arith.constant 0 : i64
        %22 = arith.cmpi sge, %14, %21 : i64
        %23 = arith.andi %22, %20 : i1
        %24 = arith.andi %23, %18 : i1
        rdu.yield %24 : i1
      }
      %unsqueeze_4 = rdu.reshape %bitwise_and_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096xi1> -> tensor<1x4096x1xi1>
      %bitwise_not = rdu.map %unsqueeze_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xi1>) -> tensor<1x4096x1xi1> {
      ^bb0(%14: i1):
        %15 = arith.constant true
        %16 = arith.xori %14, %15 : i1
        rdu.yield %16 : i1
      }
      %14 = rdu.local_part %bitwise_not dim 1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096x1xi1> -> tensor<1x512x1xi1>
      %where = rdu.map %14, %add_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x1xi1>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%15: i1, %16: bf16):
        %17 = arith.extf %16 : bf16 to f32
        %18 = arith.constant 0.000000e+00 : f32
        %19 = arith.select %15, %18, %17 : f32
        rdu.yield %19 : f32
      }
      %index_put_1 = rdu.map %labels_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096xi64>) -> tensor<1x4096xi64> {
      ^bb0(%15: i64):
        %16 = arith.constant -128256 : i64
        %17 = arith.constant 128255 : i64
        %18 = arith.maxsi %15, %16 : i64
        %19 = arith.minsi %18, %17 : i64
        %20 = arith.constant 0 : i64
        %21 = arith.constant true
        %22 = arith.constant 128256 : i64
        %23 = arith.cmpi slt, %19, %20 : i64
        %24 = arith.addi %19, %22 : i64
        %25 = arith.select %23, %24, %19 : i64
        %26 = arith.cmpi sge, %25, %20 : i64
        %27 = arith.cmpi slt, %25, %22 : i64
        %28 = arith.andi %26, %27 : i1
        %29 = arith.andi %21, %28 : i1
        %30 = arith.constant 1 : i64
        %31 = arith.muli %25, %30 : i64
        %32 = arith.addi %20, %31 : i64
        %33 = arith.constant -1 : i64
        %34 = arith.select %29, %32, %33 : i64
        rdu.yield %34 : i64
      }
      %index_put_2 = rdu.reshape %where {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x512x8192xf32> -> tensor<512x8192xf32>
      %15 = rdu.all_gather %index_put_2 dim 0 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<512x8192xf32> -> tensor<4096x8192xf32>
      %index_put_3 = rdu.reshape %index_put_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096xi64> -> tensor<4096x1xi64>
      %index_put_4 = rdu.broadcast %index_put_3 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<4096x1xi64> -> tensor<4096x8192xi64>
      rdu.yield %12, %13, %15, %index_put_4 : tensor<8192xbf16>, tensor<8192xbf16>, tensor<4096x8192xf32>, tensor<4096x8192xi64>
    }
    %_to_copy_16 = rdu.kernel "k18"(%index_put, %11) : (tensor<4096x8192xi64>, tensor<4096x8192xf32>) -> tensor<128256x8192xbf16> {
    ^bb0(%index_put_1: tensor<4096x8192xi64>, %12: tensor<4096x8192xf32>):
      %full = rdu.map {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : () -> tensor<128256x8192xf32> {
        %13 = arith.constant 0.000000e+00 : f32
        rdu.yield %13 : f32
      }
      %index_put_2 = rdu.scatter %full[%index_put_1] = %12 dim 0 reduce sum {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<128256x8192xf32>, tensor<4096x8192xi64>, tensor<4096x8192xf32> -> tensor<128256x8192xf32>
      %_to_copy_17 = rdu.map %index_put_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<128256x8192xf32>) -> tensor<128256x8192xbf16> {
      ^bb0(%13: f32):
        %14 = arith.truncf %13 : f32 to bf16
        rdu.yield %14 : bf16
      }
      rdu.yield %_to_copy_17 : tensor<128256x8192xbf16>
    }
    func.return %div, %_to_copy_16, %mm_14, %mm_13, %mm_12, %mm_11, %mm_10, %mm_9, %mm_8, %10, %9, %mm_7, %mm_6, %mm_5, %mm_4, %mm_3, %mm_2, %mm_1, %8, %7, %5, %mm : tensor<f32>, tensor<128256x8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<16032x8192xbf16>
  }
  func.func private @layer_backward(%_to_copy: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %view: tensor<4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_1: tensor<1x4096x3584xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_1: tensor<1x4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_2: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_1_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_3: tensor<1x4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_4: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_1_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %_to_copy_2: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_3: tensor<1x512x8192xf32> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %rsqrt: tensor<1x512x1xf32> {rdu.input = "rsqrt", rdu.shard = #rdu.split<(1, 8, 1)>}, %view_5: tensor<4096x1024xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %view_6: tensor<8x4096x4096xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %view_7: tensor<8x4096x128xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %_softmax: tensor<1x8x4096x4096xf32> {rdu.input = "_softmax", rdu.shard = #rdu.split<(1, 8, 1)>}, %logical_not: tensor<1x1x4096x4096xi1> {rdu.input = "logical_not"}, %view_8: tensor<8x4096x128xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %permute: tensor<8x4096x128xf32> {rdu.input = "permute", rdu.shard = #rdu.split<(0, 8, 1)>}, %unsqueeze: tensor<1x1x4096x128xbf16> {rdu.input = "unsqueeze"}, %unsqueeze_1: tensor<1x1x4096x128xbf16> {rdu.input = "unsqueeze"}, %view_9: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_1_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_10: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_1_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_11: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_1_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_input_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %_to_copy_4: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_5: tensor<1x512x8192xf32> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %rsqrt_1: tensor<1x512x1xf32> {rdu.input = "rsqrt", rdu.shard = #rdu.split<(1, 8, 1)>}) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) attributes {rdu.outlined_from = "backward.layers.0", rdu.calls = 2 : i64, rdu.result_shards = [#rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>]} {
    %view_12, %mm = rdu.kernel "k0"(%_to_copy, %view) {rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>) -> (tensor<4096x8192xbf16>, tensor<8192x3584xbf16>) {
    ^bb0(%_to_copy_6: tensor<1x512x8192xbf16>, %view_13: tensor<4096x3584xbf16>):
      %0 = rdu.all_gather %_to_copy_6 dim 1 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_14 = rdu.reshape %0 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      %permute_1 = rdu.transpose %view_14 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<8192x4096xbf16>
      %mm_1 = rdu.matmul %permute_1, %view_13 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8192x4096xbf16>, tensor<4096x3584xbf16> -> tensor<8192x3584xbf16>
      rdu.yield %view_14, %mm_1 : tensor<4096x8192xbf16>, tensor<8192x3584xbf16>
    }
    %mul, %view_13 = rdu.kernel "k1"(%view_12, %p_model_model_layers_1_mlp_down_proj_weight, %_to_copy_1, %view_1) {rdu.layer = "backward.layers.0"} : (tensor<4096x8192xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> (tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>) {
    ^bb0(%view_14: tensor<4096x8192xbf16>, %p_model_model_layers_1_mlp_down_proj_weight_1: tensor<8192x3584xbf16>, %_to_copy_6: tensor<1x4096x3584xbf16>, %view_15: tensor<1x4096x3584xbf16>):
      %mm_1 = rdu.matmul %view_14, %p_model_model_layers_1_mlp_down_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16>, tensor<8192x3584xbf16> -> tensor<4096x3584xbf16>
      %view_16 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16> -> tensor<1x4096x3584xbf16>
      %mul_1 = rdu.map %view_16, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> tensor<1x4096x3584xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %mul_2 = rdu.map %view_16, %view_15 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> tensor<1x4096x3584xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %view_17 = rdu.reshape %mul_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x3584xbf16> -> tensor<4096x3584xbf16>
      rdu.yield %mul_2, %view_17 : tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>
    }
    %mm_1 = rdu.kernel "k2"(%view_13, %view_2) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<4096x8192xbf16>) -> tensor<3584x8192xbf16> {
    ^bb0(%view_14: tensor<4096x3584xbf16>, %view_15: tensor<4096x8192xbf16>):
      %permute_1 = rdu.transpose %view_14 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16> -> tensor<3584x4096xbf16>
      %mm_2 = rdu.matmul %permute_1, %view_15 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<3584x4096xbf16>, tensor<4096x8192xbf16> -> tensor<3584x8192xbf16>
      rdu.yield %mm_2 : tensor<3584x8192xbf16>
    }
    %view_14, %view_15 = rdu.kernel "k3"(%view_13, %p_model_model_layers_1_mlp_up_proj_weight, %mul, %view_3) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> (tensor<1x4096x8192xbf16>, tensor<4096x3584xbf16>) {
    ^bb0(%view_16: tensor<4096x3584xbf16>, %p_model_model_layers_1_mlp_up_proj_weight_1: tensor<3584x8192xbf16>, %mul_1: tensor<1x4096x3584xbf16>, %view_17: tensor<1x4096x3584xbf16>):
      %mm_2 = rdu.matmul %view_16, %p_model_model_layers_1_mlp_up_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16>, tensor<3584x8192xbf16> -> tensor<4096x8192xbf16>
      %view_18 = rdu.reshape %mm_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %_to_copy_6 = rdu.map %view_17 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x3584xbf16>) -> tensor<1x4096x3584xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      %sigmoid = rdu.map %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x3584xf32>) -> tensor<1x4096x3584xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 1.000000e+00 : f32
        %2 = arith.negf %0 : f32
        %3 = math.exp %2 : f32
        %4 = arith.addf %1, %3 : f32
        %5 = arith.divf %1, %4 : f32
        rdu.yield %5 : f32
      }
      %_to_copy_7 = rdu.map %sigmoid, %mul_1, %_to_copy_6, %sigmoid {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x3584xf32>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xf32>, tensor<1x4096x3584xf32>) -> tensor<1x4096x3584xbf16> {
      ^bb0(%0: f32, %1: bf16, %2: f32, %3: f32):
        %4 = arith.constant 1.000000e+00 : f32
        %5 = arith.subf %4, %3 : f32
        %6 = arith.mulf %2, %5 : f32
        %7 = arith.constant 1.000000e+00 : f32
        %8 = arith.addf %6, %7 : f32
        %9 = arith.extf %1 : bf16 to f32
        %10 = arith.mulf %9, %0 : f32
        %11 = arith.mulf %10, %8 : f32
        %12 = arith.truncf %11 : f32 to bf16
        rdu.yield %12 : bf16
      }
      %view_19 = rdu.reshape %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x3584xbf16> -> tensor<4096x3584xbf16>
      rdu.yield %view_18, %view_19 : tensor<1x4096x8192xbf16>, tensor<4096x3584xbf16>
    }
    %mm_2 = rdu.kernel "k4"(%view_15, %view_4) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<4096x8192xbf16>) -> tensor<3584x8192xbf16> {
    ^bb0(%view_16: tensor<4096x3584xbf16>, %view_17: tensor<4096x8192xbf16>):
      %permute_1 = rdu.transpose %view_16 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16> -> tensor<3584x4096xbf16>
      %mm_3 = rdu.matmul %permute_1, %view_17 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<3584x4096xbf16>, tensor<4096x8192xbf16> -> tensor<3584x8192xbf16>
      rdu.yield %mm_3 : tensor<3584x8192xbf16>
    }
    %mul_1, %mul_2 = rdu.kernel "k5"(%view_15, %p_model_model_layers_1_mlp_gate_proj_weight, %view_14, %p_model_model_layers_1_post_attention_layernorm_weight, %_to_copy_2) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%view_16: tensor<4096x3584xbf16>, %p_model_model_layers_1_mlp_gate_proj_weight_1: tensor<3584x8192xbf16>, %view_17: tensor<1x4096x8192xbf16>, %p_model_model_layers_1_post_attention_layernorm_weight_1: tensor<8192xbf16>, %_to_copy_6: tensor<1x512x8192xbf16>):
      %mm_3 = rdu.matmul %view_16, %p_model_model_layers_1_mlp_gate_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16>, tensor<3584x8192xbf16> -> tensor<4096x8192xbf16>
      %view_18 = rdu.reshape %mm_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %add = rdu.map %view_17, %view_18 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x8192xbf16>, tensor<1x4096x8192xbf16>) -> tensor<1x4096x8192xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.addf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %0 = rdu.reduce_scatter %add dim 1 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %mul_3 = rdu.map %0, %p_model_model_layers_1_post_attention_layernorm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %mul_4 = rdu.map %0, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      rdu.yield %mul_3, %mul_4 : tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>
    }
    %view_16, %add, %view_17, %mm_3 = rdu.kernel "k6"(%mul_2, %mul_1, %_to_copy_3, %rsqrt, %_to_copy, %view_5) {rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x1024xbf16>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<8192x1024xbf16>) {
    ^bb0(%mul_3: tensor<1x512x8192xbf16>, %mul_4: tensor<1x512x8192xbf16>, %_to_copy_6: tensor<1x512x8192xf32>, %rsqrt_2: tensor<1x512x1xf32>, %_to_copy_7: tensor<1x512x8192xbf16>, %view_18: tensor<4096x1024xbf16>):
      %sum = rdu.reduce sum %mul_3 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      %view_19 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_8 = rdu.map %mul_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      %mul_5 = rdu.map %_to_copy_8, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %sum_1 = rdu.reduce sum %mul_5 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_6 = rdu.map %rsqrt_2, %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.constant -5.000000e-01 : f32
        %3 = arith.mulf %1, %2 : f32
        %4 = arith.constant 1.000000e+00 : f32
        %5 = arith.mulf %4, %0 : f32
        %6 = arith.mulf %5, %0 : f32
        %7 = arith.mulf %6, %0 : f32
        %8 = arith.mulf %3, %7 : f32
        rdu.yield %8 : f32
      }
      %expand = rdu.broadcast %mul_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
      %add_1 = rdu.map %_to_copy_7, %_to_copy_8, %rsqrt_2, %expand, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%0: bf16, %1: f32, %2: f32, %3: f32, %4: f32):
        %5 = arith.constant 1.000000e+00 : f32
        %6 = arith.mulf %5, %4 : f32
        %7 = arith.constant 2.000000e+00 : f32
        %8 = arith.mulf %6, %7 : f32
        %9 = arith.constant 8.192000e+03 : f32
        %10 = arith.divf %3, %9 : f32
        %11 = arith.mulf %10, %8 : f32
        %12 = arith.mulf %1, %2 : f32
        %13 = arith.addf %12, %11 : f32
        %14 = arith.truncf %13 : f32 to bf16
        %15 = arith.extf %0 : bf16 to f32
        %16 = arith.extf %14 : bf16 to f32
        %17 = arith.addf %15, %16 : f32
        %18 = arith.truncf %17 : f32 to bf16
        rdu.yield %18 : bf16
      }
      %0 = rdu.all_gather %add_1 dim 1 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_20 = rdu.reshape %0 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      %permute_1 = rdu.transpose %view_20 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<8192x4096xbf16>
      %mm_4 = rdu.matmul %permute_1, %view_18 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8192x4096xbf16>, tensor<4096x1024xbf16> -> tensor<8192x1024xbf16>
      rdu.yield %view_19, %add_1, %view_20, %mm_4 : tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<8192x1024xbf16>
    }
    %view_18 = rdu.kernel "k7"(%view_17, %p_model_model_layers_1_self_attn_o_proj_weight) {rdu.layer = "backward.layers.0"} : (tensor<4096x8192xbf16>, tensor<8192x1024xbf16>) -> tensor<8x4096x128xf32> {
    ^bb0(%view_19: tensor<4096x8192xbf16>, %p_model_model_layers_1_self_attn_o_proj_weight_1: tensor<8192x1024xbf16>):
      %mm_4 = rdu.matmul %view_19, %p_model_model_layers_1_self_attn_o_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16>, tensor<8192x1024xbf16> -> tensor<4096x1024xbf16>
      %permute_1 = rdu.reshape %mm_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1024xbf16> -> tensor<4096x8x128xbf16>
      %permute_2 = rdu.transpose %permute_1 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8x128xbf16> -> tensor<8x4096x128xbf16>
      %permute_3 = rdu.reshape %permute_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<1x8x4096x128xbf16>
      %_to_copy_6 = rdu.map %permute_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xbf16>) -> tensor<1x8x4096x128xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      %view_20 = rdu.reshape %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xf32> -> tensor<8x4096x128xf32>
      rdu.yield %view_20 : tensor<8x4096x128xf32>
    }
    %bmm, %view_19 = rdu.kernel "k8"(%view_6, %view_18, %view_7) {rdu.layer = "backward.layers.0"} : (tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>) -> (tensor<8x4096x4096xf32>, tensor<1x8x4096x128xf32>) {
    ^bb0(%view_20: tensor<8x4096x4096xf32>, %view_21: tensor<8x4096x128xf32>, %view_22: tensor<8x4096x128xf32>):
      %permute_1 = rdu.transpose %view_20 perm [0, 2, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x4096xf32> -> tensor<8x4096x4096xf32>
      %bmm_1 = rdu.matmul %permute_1, %view_21 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x4096xf32>, tensor<8x4096x128xf32> -> tensor<8x4096x128xf32>
      %bmm_2 = rdu.matmul %view_21, %view_22 transpose_rhs {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xf32>, tensor<8x4096x128xf32> -> tensor<8x4096x4096xf32>
      %view_23 = rdu.reshape %bmm_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xf32> -> tensor<1x8x4096x128xf32>
      rdu.yield %bmm_2, %view_23 : tensor<8x4096x4096xf32>, tensor<1x8x4096x128xf32>
    }
    %view_20 = rdu.kernel "k9"(%bmm, %_softmax, %logical_not) {rdu.layer = "backward.layers.0"} : (tensor<8x4096x4096xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>) -> tensor<8x4096x4096xf32> {
    ^bb0(%bmm_1: tensor<8x4096x4096xf32>, %_softmax_1: tensor<1x8x4096x4096xf32>, %logical_not_1: tensor<1x1x4096x4096xi1>):
      %view_21 = rdu.reshape %bmm_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x4096xf32> -> tensor<1x8x4096x4096xf32>
      %mul_3 = rdu.map %view_21, %_softmax_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x4096xf32>, tensor<1x8x4096x4096xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %sum = rdu.reduce sum %mul_3 dims [3] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<1x8x4096x1xf32>
      %mul_4 = rdu.map %logical_not_1, %mul_3, %_softmax_1, %sum {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<1x8x4096x4096xf32>, tensor<1x8x4096x1xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: i1, %1: f32, %2: f32, %3: f32):
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.subf %1, %4 : f32
        %6 = arith.constant 0.000000e+00 : f32
        %7 = arith.select %0, %6, %5 : f32
        %8 = arith.constant 0.0883883461 : f32
        %9 = arith.mulf %7, %8 : f32
        rdu.yield %9 : f32
      }
      %view_22 = rdu.reshape %mul_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<8x4096x4096xf32>
      rdu.yield %view_22 : tensor<8x4096x4096xf32>
    }
    %bmm_1, %view_21 = rdu.kernel "k10"(%view_8, %view_20, %permute) {rdu.layer = "backward.layers.0"} : (tensor<8x4096x128xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>) -> (tensor<8x128x4096xf32>, tensor<1x8x4096x128xf32>) {
    ^bb0(%view_22: tensor<8x4096x128xf32>, %view_23: tensor<8x4096x4096xf32>, %permute_1: tensor<8x4096x128xf32>):
      %permute_2 = rdu.transpose %view_22 perm [0, 2, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xf32> -> tensor<8x128x4096xf32>
      %bmm_2 = rdu.matmul %permute_2, %view_23 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x128x4096xf32>, tensor<8x4096x4096xf32> -> tensor<8x128x4096xf32>
      %bmm_3 = rdu.matmul %view_23, %permute_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x4096xf32>, tensor<8x4096x128xf32> -> tensor<8x4096x128xf32>
      %view_24 = rdu.reshape %bmm_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xf32> -> tensor<1x8x4096x128xf32>
      rdu.yield %bmm_2, %view_24 : tensor<8x128x4096xf32>, tensor<1x8x4096x128xf32>
    }
    %mm_4, %mm_5, %add_1, %view_22 = rdu.kernel "k11"(%bmm_1, %view_19, %view_21, %unsqueeze, %unsqueeze_1, %view_9, %p_model_model_layers_1_self_attn_v_proj_weight, %view_10, %p_model_model_layers_1_self_attn_k_proj_weight) {rdu.layer = "backward.layers.0"} : (tensor<8x128x4096xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>) -> (tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<4096x1024xbf16>) {
    ^bb0(%bmm_2: tensor<8x128x4096xf32>, %view_23: tensor<1x8x4096x128xf32>, %view_24: tensor<1x8x4096x128xf32>, %unsqueeze_2: tensor<1x1x4096x128xbf16>, %unsqueeze_3: tensor<1x1x4096x128xbf16>, %view_25: tensor<4096x8192xbf16>, %p_model_model_layers_1_self_attn_v_proj_weight_1: tensor<128x8192xbf16>, %view_26: tensor<4096x8192xbf16>, %p_model_model_layers_1_self_attn_k_proj_weight_1: tensor<128x8192xbf16>):
      %permute_1 = rdu.transpose %bmm_2 perm [0, 2, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x128x4096xf32> -> tensor<8x4096x128xf32>
      %permute_2 = rdu.reshape %permute_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xf32> -> tensor<1x8x4096x128xf32>
      %_to_copy_6 = rdu.map %view_23 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xf32>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%0: f32):
        %1 = arith.truncf %0 : f32 to bf16
        rdu.yield %1 : bf16
      }
      %_to_copy_7 = rdu.map %permute_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xf32>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%0: f32):
        %1 = arith.truncf %0 : f32 to bf16
        rdu.yield %1 : bf16
      }
      %_to_copy_8 = rdu.map %view_24 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xf32>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%0: f32):
        %1 = arith.truncf %0 : f32 to bf16
        rdu.yield %1 : bf16
      }
      %view_27 = rdu.reshape %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x1x8x4096x128xbf16>
      %sum = rdu.reduce sum %view_27 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %view_28 = rdu.reshape %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x1x8x4096x128xbf16>
      %sum_1 = rdu.reduce sum %view_28 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %squeeze = rdu.reshape %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x1x4096x128xbf16>
      %mul_3 = rdu.map %squeeze, %unsqueeze_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x1x4096x128xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %slice = rdu.slice %mul_3 offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x1x4096x64xbf16>
      %slice_1 = rdu.slice %mul_3 offsets [0, 0, 0, 64] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x1x4096x64xbf16>
      %neg = rdu.map %slice {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x64xbf16>) -> tensor<1x1x4096x64xbf16> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        %2 = arith.negf %1 : f32
        %3 = arith.truncf %2 : f32 to bf16
        rdu.yield %3 : bf16
      }
      %0 = rdu.map {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : () -> tensor<1x1x4096x128xbf16> {
        %1 = arith.constant 0.000000e+00 : bf16
        rdu.yield %1 : bf16
      }
      %slice_scatter = rdu.iota start 64 step 1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<64xi64>
      %slice_scatter_1 = rdu.reshape %slice_scatter {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<64xi64> -> tensor<1x1x1x64xi64>
      %slice_scatter_2 = rdu.broadcast %slice_scatter_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x64xi64> -> tensor<1x1x4096x64xi64>
      %slice_scatter_3 = rdu.scatter %0[%slice_scatter_2] = %neg dim 3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16>, tensor<1x1x4096x64xi64>, tensor<1x1x4096x64xbf16> -> tensor<1x1x4096x128xbf16>
      %slice_scatter_4 = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<64xi64>
      %slice_scatter_5 = rdu.reshape %slice_scatter_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<64xi64> -> tensor<1x1x1x64xi64>
      %slice_scatter_6 = rdu.broadcast %slice_scatter_5 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x64xi64> -> tensor<1x1x4096x64xi64>
      %slice_scatter_7 = rdu.scatter %0[%slice_scatter_6] = %slice_1 dim 3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16>, tensor<1x1x4096x64xi64>, tensor<1x1x4096x64xbf16> -> tensor<1x1x4096x128xbf16>
      %add_2 = rdu.map %slice_scatter_3, %slice_scatter_7, %squeeze, %unsqueeze_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x1x4096x128xbf16> {
      ^bb0(%1: bf16, %2: bf16, %3: bf16, %4: bf16):
        %5 = arith.extf %3 : bf16 to f32
        %6 = arith.extf %4 : bf16 to f32
        %7 = arith.mulf %5, %6 : f32
        %8 = arith.truncf %7 : f32 to bf16
        %9 = arith.extf %1 : bf16 to f32
        %10 = arith.extf %2 : bf16 to f32
        %11 = arith.addf %9, %10 : f32
        %12 = arith.truncf %11 : f32 to bf16
        %13 = arith.extf %12 : bf16 to f32
        %14 = arith.extf %8 : bf16 to f32
        %15 = arith.addf %13, %14 : f32
        %16 = arith.truncf %15 : f32 to bf16
        rdu.yield %16 : bf16
      }
      %mul_4 = rdu.map %_to_copy_8, %unsqueeze_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %slice_2 = rdu.slice %mul_4 offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x8x4096x64xbf16>
      %slice_3 = rdu.slice %mul_4 offsets [0, 0, 0, 64] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x8x4096x64xbf16>
      %neg_1 = rdu.map %slice_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x64xbf16>) -> tensor<1x8x4096x64xbf16> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        %3 = arith.negf %2 : f32
        %4 = arith.truncf %3 : f32 to bf16
        rdu.yield %4 : bf16
      }
      %1 = rdu.map {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : () -> tensor<1x8x4096x128xbf16> {
        %2 = arith.constant 0.000000e+00 : bf16
        rdu.yield %2 : bf16
      }
      %slice_scatter_8 = rdu.broadcast %slice_scatter_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x64xi64> -> tensor<1x8x4096x64xi64>
      %slice_scatter_9 = rdu.scatter %1[%slice_scatter_8] = %neg_1 dim 3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16>, tensor<1x8x4096x64xi64>, tensor<1x8x4096x64xbf16> -> tensor<1x8x4096x128xbf16>
      %slice_scatter_10 = rdu.broadcast %slice_scatter_5 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x64xi64> -> tensor<1x8x4096x64xi64>
      %slice_scatter_11 = rdu.scatter %1[%slice_scatter_10] = %slice_3 dim 3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16>, tensor<1x8x4096x64xi64>, tensor<1x8x4096x64xbf16> -> tensor<1x8x4096x128xbf16>
      %add_3 = rdu.map %slice_scatter_9, %slice_scatter_11, %_to_copy_8, %unsqueeze_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%2: bf16, %3: bf16, %4: bf16, %5: bf16):
        %6 = arith.extf %4 : bf16 to f32
        %7 = arith.extf %5 : bf16 to f32
        %8 = arith.mulf %6, %7 : f32
        %9 = arith.truncf %8 : f32 to bf16
        %10 = arith.extf %2 : bf16 to f32
        %11 = arith.extf %3 : bf16 to f32
        %12 = arith.addf %10, %11 : f32
        %13 = arith.truncf %12 : f32 to bf16
        %14 = arith.extf %13 : bf16 to f32
        %15 = arith.extf %9 : bf16 to f32
        %16 = arith.addf %14, %15 : f32
        %17 = arith.truncf %16 : f32 to bf16
        rdu.yield %17 : bf16
      }
      %permute_3 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %permute_4 = rdu.transpose %permute_3 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<4096x1x128xbf16>
      %view_29 = rdu.reshape %permute_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<4096x128xbf16>
      %permute_5 = rdu.transpose %view_29 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16> -> tensor<128x4096xbf16>
      %mm_6 = rdu.matmul %permute_5, %view_25 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<128x4096xbf16>, tensor<4096x8192xbf16> -> tensor<128x8192xbf16>
      %mm_7 = rdu.matmul %view_29, %p_model_model_layers_1_self_attn_v_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16>, tensor<128x8192xbf16> -> tensor<4096x8192xbf16>
      %view_30 = rdu.reshape %mm_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %permute_6 = rdu.reshape %add_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %permute_7 = rdu.transpose %permute_6 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<4096x1x128xbf16>
      %view_31 = rdu.reshape %permute_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<4096x128xbf16>
      %permute_8 = rdu.transpose %view_31 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16> -> tensor<128x4096xbf16>
      %mm_8 = rdu.matmul %permute_8, %view_26 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<128x4096xbf16>, tensor<4096x8192xbf16> -> tensor<128x8192xbf16>
      %mm_9 = rdu.matmul %view_31, %p_model_model_layers_1_self_attn_k_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16>, tensor<128x8192xbf16> -> tensor<4096x8192xbf16>
      %view_32 = rdu.reshape %mm_9 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %add_4 = rdu.map %view_30, %view_32 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x8192xbf16>, tensor<1x4096x8192xbf16>) -> tensor<1x4096x8192xbf16> {
      ^bb0(%2: bf16, %3: bf16):
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.extf %3 : bf16 to f32
        %6 = arith.addf %4, %5 : f32
        %7 = arith.truncf %6 : f32 to bf16
        rdu.yield %7 : bf16
      }
      %permute_9 = rdu.reshape %add_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<8x4096x128xbf16>
      %permute_10 = rdu.transpose %permute_9 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<4096x8x128xbf16>
      %view_33 = rdu.reshape %permute_10 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8x128xbf16> -> tensor<4096x1024xbf16>
      rdu.yield %mm_6, %mm_8, %add_4, %view_33 : tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<4096x1024xbf16>
    }
    %mm_6 = rdu.kernel "k12"(%view_22, %view_11) {rdu.layer = "backward.layers.0"} : (tensor<4096x1024xbf16>, tensor<4096x8192xbf16>) -> tensor<1024x8192xbf16> {
    ^bb0(%view_23: tensor<4096x1024xbf16>, %view_24: tensor<4096x8192xbf16>):
      %permute_1 = rdu.transpose %view_23 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1024xbf16> -> tensor<1024x4096xbf16>
      %mm_7 = rdu.matmul %permute_1, %view_24 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1024x4096xbf16>, tensor<4096x8192xbf16> -> tensor<1024x8192xbf16>
      rdu.yield %mm_7 : tensor<1024x8192xbf16>
    }
    %view_23, %add_2 = rdu.kernel "k13"(%view_22, %p_model_model_layers_1_self_attn_q_proj_weight, %add_1, %p_model_model_layers_1_input_layernorm_weight, %_to_copy_4, %_to_copy_5, %rsqrt_1, %add) {rdu.layer = "backward.layers.0"} : (tensor<4096x1024xbf16>, tensor<1024x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%view_24: tensor<4096x1024xbf16>, %p_model_model_layers_1_self_attn_q_proj_weight_1: tensor<1024x8192xbf16>, %add_3: tensor<1x4096x8192xbf16>, %p_model_model_layers_1_input_layernorm_weight_1: tensor<8192xbf16>, %_to_copy_6: tensor<1x512x8192xbf16>, %_to_copy_7: tensor<1x512x8192xf32>, %rsqrt_2: tensor<1x512x1xf32>, %add_4: tensor<1x512x8192xbf16>):
      %mm_7 = rdu.matmul %view_24, %p_model_model_layers_1_self_attn_q_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1024xbf16>, tensor<1024x8192xbf16> -> tensor<4096x8192xbf16>
      %view_25 = rdu.reshape %mm_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %add_5 = rdu.map %add_3, %view_25 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x4096x8192xbf16>, tensor<1x4096x8192xbf16>) -> tensor<1x4096x8192xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.addf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %0 = rdu.reduce_scatter %add_5 dim 1 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %mul_3 = rdu.map %0, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %sum = rdu.reduce sum %mul_3 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      %view_26 = rdu.reshape %sum {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_8 = rdu.map %0, %p_model_model_layers_1_input_layernorm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        %7 = arith.extf %6 : bf16 to f32
        rdu.yield %7 : f32
      }
      %mul_4 = rdu.map %_to_copy_8, %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.mulf %1, %2 : f32
        rdu.yield %3 : f32
      }
      %sum_1 = rdu.reduce sum %mul_4 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_5 = rdu.map %rsqrt_2, %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.constant -5.000000e-01 : f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.constant 1.000000e+00 : f32
        %6 = arith.mulf %5, %1 : f32
        %7 = arith.mulf %6, %1 : f32
        %8 = arith.mulf %7, %1 : f32
        %9 = arith.mulf %4, %8 : f32
        rdu.yield %9 : f32
      }
      %expand = rdu.broadcast %mul_5 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
      %add_6 = rdu.map %add_4, %_to_copy_8, %rsqrt_2, %expand, %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: f32, %3: f32, %4: f32, %5: f32):
        %6 = arith.constant 1.000000e+00 : f32
        %7 = arith.mulf %6, %5 : f32
        %8 = arith.constant 2.000000e+00 : f32
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.constant 8.192000e+03 : f32
        %11 = arith.divf %4, %10 : f32
        %12 = arith.mulf %11, %9 : f32
        %13 = arith.mulf %2, %3 : f32
        %14 = arith.addf %13, %12 : f32
        %15 = arith.truncf %14 : f32 to bf16
        %16 = arith.extf %1 : bf16 to f32
        %17 = arith.extf %15 : bf16 to f32
        %18 = arith.addf %16, %17 : f32
        %19 = arith.truncf %18 : f32 to bf16
        rdu.yield %19 : bf16
      }
      rdu.yield %view_26, %add_6 : tensor<8192xbf16>, tensor<1x512x8192xbf16>
    }
    func.return %mm, %mm_1, %mm_2, %view_16, %mm_3, %mm_4, %mm_5, %mm_6, %view_23, %add_2 : tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>
  }
  func.func private @layer_forward(%embedding: tensor<1x512x8192xbf16> {rdu.input = "embedding", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_input_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %p_model_model_layers_0_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %_to_copy: tensor<1x4096x128xbf16> {rdu.value}, %_to_copy_1: tensor<1x4096x128xbf16> {rdu.value}, %bitwise_and: tensor<1x1x4096x4096xi1> {rdu.value}, %p_model_model_layers_0_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %p_model_model_layers_0_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 2 : i64, rdu.result_shards = [#rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<(2, 8, 1)>, #rdu.split<(2, 8, 1)>, #rdu.split<>, #rdu.split<(2, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>]} {
    %_to_copy_2, %rsqrt, %_to_copy_3, %view, %unsqueeze, %unsqueeze_1, %_to_copy_4, %permute, %view_1 = rdu.kernel "k0"(%embedding, %p_model_model_layers_0_input_layernorm_weight, %p_model_model_layers_0_self_attn_q_proj_weight, %p_model_model_layers_0_self_attn_k_proj_weight, %p_model_model_layers_0_self_attn_v_proj_weight, %_to_copy, %_to_copy_1) {rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>) {
    ^bb0(%embedding_1: tensor<1x512x8192xbf16>, %p_model_model_layers_0_input_layernorm_weight_1: tensor<8192xbf16>, %p_model_model_layers_0_self_attn_q_proj_weight_1: tensor<1024x8192xbf16>, %p_model_model_layers_0_self_attn_k_proj_weight_1: tensor<128x8192xbf16>, %p_model_model_layers_0_self_attn_v_proj_weight_1: tensor<128x8192xbf16>, %_to_copy_5: tensor<1x4096x128xbf16>, %_to_copy_6: tensor<1x4096x128xbf16>):
      %_to_copy_7 = rdu.map %embedding_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      %pow = rdu.map %_to_copy_7 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 1.000000e+00 : f32
        %2 = arith.mulf %1, %0 : f32
        %3 = arith.mulf %2, %0 : f32
        rdu.yield %3 : f32
      }
      %mean = rdu.reduce sum %pow dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %rsqrt_1 = rdu.map %mean {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 8.192000e+03 : f32
        %2 = arith.divf %0, %1 : f32
        %3 = arith.constant 1.000000e-05 : f32
        %4 = arith.addf %2, %3 : f32
        %5 = math.rsqrt %4 : f32
        rdu.yield %5 : f32
      }
      %_to_copy_8 = rdu.map %_to_copy_7, %rsqrt_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        %3 = arith.truncf %2 : f32 to bf16
        rdu.yield %3 : bf16
      }
      %mul = rdu.map %p_model_model_layers_0_input_layernorm_weight_1, %_to_copy_8 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %0 = rdu.all_gather %mul dim 1 group 8 {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_2 = rdu.reshape %0 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      %mm = rdu.matmul %view_2, %p_model_model_layers_0_self_attn_q_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16>, tensor<1024x8192xbf16> -> tensor<4096x1024xbf16>
      %permute_1 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x1024xbf16> -> tensor<4096x8x128xbf16>
      %permute_2 = rdu.transpose %permute_1 perm [1, 0, 2] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8x128xbf16> -> tensor<8x4096x128xbf16>
      %permute_3 = rdu.reshape %permute_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<1x8x4096x128xbf16>
      %mm_1 = rdu.matmul %view_2, %p_model_model_layers_0_self_attn_k_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16>, tensor<128x8192xbf16> -> tensor<4096x128xbf16>
      %permute_4 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x128xbf16> -> tensor<4096x1x128xbf16>
      %permute_5 = rdu.transpose %permute_4 perm [1, 0, 2] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<1x4096x128xbf16>
      %permute_6 = rdu.reshape %permute_5 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x1x4096x128xbf16>
      %mm_2 = rdu.matmul %view_2, %p_model_model_layers_0_self_attn_v_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16>, tensor<128x8192xbf16> -> tensor<4096x128xbf16>
      %permute_7 = rdu.reshape %mm_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x128xbf16> -> tensor<4096x1x128xbf16>
      %permute_8 = rdu.transpose %permute_7 perm [1, 0, 2] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<1x4096x128xbf16>
      %unsqueeze_2 = rdu.reshape %_to_copy_5 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x1x4096x128xbf16>
      %slice = rdu.slice %permute_2 offsets [0, 0, 0] strides [1, 1, 1] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<8x4096x64xbf16>
      %slice_1 = rdu.reshape %slice {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x64xbf16> -> tensor<1x8x4096x64xbf16>
      %slice_2 = rdu.slice %permute_2 offsets [0, 0, 64] strides [1, 1, 1] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<8x4096x64xbf16>
      %slice_3 = rdu.reshape %slice_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x64xbf16> -> tensor<1x8x4096x64xbf16>
      %neg = rdu.map %slice_3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x64xbf16>) -> tensor<1x8x4096x64xbf16> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        %3 = arith.negf %2 : f32
        %4 = arith.truncf %3 : f32 to bf16
        rdu.yield %4 : bf16
      }
      %cat = rdu.concat %neg, %slice_1 dim 3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x64xbf16>, tensor<1x8x4096x64xbf16>) -> tensor<1x8x4096x128xbf16>
      %unsqueeze_3 = rdu.reshape %_to_copy_6 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x1x4096x128xbf16>
      %slice_4 = rdu.slice %permute_5 offsets [0, 0, 0] strides [1, 1, 1] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x4096x64xbf16>
      %slice_5 = rdu.reshape %slice_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x64xbf16> -> tensor<1x1x4096x64xbf16>
      %slice_6 = rdu.slice %permute_5 offsets [0, 0, 64] strides [1, 1, 1] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x4096x64xbf16>
      %slice_7 = rdu.reshape %slice_6 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x64xbf16> -> tensor<1x1x4096x64xbf16>
      %neg_1 = rdu.map %slice_7 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x1x4096x64xbf16>) -> tensor<1x1x4096x64xbf16> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        %3 = arith.negf %2 : f32
        %4 = arith.truncf %3 : f32 to bf16
        rdu.yield %4 : bf16
      }
      %cat_1 = rdu.concat %neg_1, %slice_5 dim 3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x1x4096x64xbf16>, tensor<1x1x4096x64xbf16>) -> tensor<1x1x4096x128xbf16>
      %add = rdu.map %permute_6, %unsqueeze_2, %cat_1, %unsqueeze_3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x1x4096x128xbf16> {
      ^bb0(%1: bf16, %2: bf16, %3: bf16, %4: bf16):
        %5 = arith.extf %3 : bf16 to f32
        %6 = arith.extf %4 : bf16 to f32
        %7 = arith.mulf %5, %6 : f32
        %8 = arith.truncf %7 : f32 to bf16
        %9 = arith.extf %1 : bf16 to f32
        %10 = arith.extf %2 : bf16 to f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.truncf %11 : f32 to bf16
        %13 = arith.extf %12 : bf16 to f32
        %14 = arith.extf %8 : bf16 to f32
        %15 = arith.addf %13, %14 : f32
        %16 = arith.truncf %15 : f32 to bf16
        rdu.yield %16 : bf16
      }
      %unsqueeze_4 = rdu.reshape %add {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %expand = rdu.broadcast %unsqueeze_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x1x8x4096x128xbf16>
      %view_3 = rdu.reshape %expand {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x8x4096x128xbf16>
      %unsqueeze_5 = rdu.reshape %permute_8 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %expand_1 = rdu.broadcast %unsqueeze_5 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x1x8x4096x128xbf16>
      %view_4 = rdu.reshape %expand_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x8x4096x128xbf16>
      %_to_copy_9 = rdu.map %permute_3, %unsqueeze_2, %cat, %unsqueeze_3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x8x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x8x4096x128xf32> {
      ^bb0(%1: bf16, %2: bf16, %3: bf16, %4: bf16):
        %5 = arith.extf %3 : bf16 to f32
        %6 = arith.extf %4 : bf16 to f32
        %7 = arith.mulf %5, %6 : f32
        %8 = arith.truncf %7 : f32 to bf16
        %9 = arith.extf %1 : bf16 to f32
        %10 = arith.extf %2 : bf16 to f32
        %11 = arith.mulf %9, %10 : f32
        %12 = arith.truncf %11 : f32 to bf16
        %13 = arith.extf %12 : bf16 to f32
        %14 = arith.extf %8 : bf16 to f32
        %15 = arith.addf %13, %14 : f32
        %16 = arith.truncf %15 : f32 to bf16
        %17 = arith.extf %16 : bf16 to f32
        rdu.yield %17 : f32
      }
      %_to_copy_10 = rdu.map %view_3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x128xbf16>) -> tensor<1x8x4096x128xf32> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        rdu.yield %2 : f32
      }
      %_to_copy_11 = rdu.map %view_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x128xbf16>) -> tensor<1x8x4096x128xf32> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        rdu.yield %2 : f32
      }
      %permute_9 = rdu.reshape %_to_copy_10 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x128xf32> -> tensor<8x4096x128xf32>
      %view_5 = rdu.reshape %_to_copy_9 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x128xf32> -> tensor<8x4096x128xf32>
      rdu.yield %_to_copy_7, %rsqrt_1, %_to_copy_8, %view_2, %unsqueeze_2, %unsqueeze_3, %_to_copy_11, %permute_9, %view_5 : tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>
    }
    %logical_not, %_softmax, %view_2 = rdu.kernel "k1"(%view_1, %permute, %bitwise_and) {rdu.layer = "forward.layers.0"} : (tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>) -> (tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>) {
    ^bb0(%view_3: tensor<8x4096x128xf32>, %permute_1: tensor<8x4096x128xf32>, %bitwise_and_1: tensor<1x1x4096x4096xi1>):
      %bmm = rdu.matmul %view_3, %permute_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xf32>, tensor<8x4096x128xf32> -> tensor<8x4096x4096xf32>
      %view_4 = rdu.reshape %bmm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x4096xf32> -> tensor<1x8x4096x4096xf32>
      %logical_not_1 = rdu.map %bitwise_and_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x1x4096x4096xi1>) -> tensor<1x1x4096x4096xi1> {
      ^bb0(%0: i1):
        %1 = arith.constant true
        %2 = arith.xori %0, %1 : i1
        rdu.yield %2 : i1
      }
      %where = rdu.map %logical_not_1, %view_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: i1, %1: f32):
        %2 = arith.constant 0.0883883461 : f32
        %3 = arith.mulf %1, %2 : f32
        %4 = arith.constant 0xff800000 : f32
        %5 = arith.select %0, %4, %3 : f32
        rdu.yield %5 : f32
      }
      %_softmax_1 = rdu.reduce max %where dims [3] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<1x8x4096x1xf32>
      %_softmax_2 = rdu.map %where, %_softmax_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x4096xf32>, tensor<1x8x4096x1xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.subf %0, %1 : f32
        %3 = math.exp %2 : f32
        rdu.yield %3 : f32
      }
      %_softmax_3 = rdu.reduce sum %_softmax_2 dims [3] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<1x8x4096x1xf32>
      %_softmax_4 = rdu.map %where, %_softmax_1, %_softmax_3 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x4096xf32>, tensor<1x8x4096x1xf32>, tensor<1x8x4096x1xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: f32, %1: f32, %2: f32):
        %3 = arith.subf %0, %1 : f32
        %4 = math.exp %3 : f32
        %5 = arith.divf %4, %2 : f32
        rdu.yield %5 : f32
      }
      %view_5 = rdu.reshape %_softmax_4 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<8x4096x4096xf32>
      rdu.yield %logical_not_1, %_softmax_4, %view_5 : tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>
    }
    %view_3, %permute_1 = rdu.kernel "k2"(%_to_copy_4, %view_2) {rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x128xf32>, tensor<8x4096x4096xf32>) -> (tensor<8x4096x128xf32>, tensor<4096x8x128xbf16>) {
    ^bb0(%_to_copy_5: tensor<1x8x4096x128xf32>, %view_4: tensor<8x4096x4096xf32>):
      %view_5 = rdu.reshape %_to_copy_5 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x128xf32> -> tensor<8x4096x128xf32>
      %bmm = rdu.matmul %view_4, %view_5 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x4096xf32>, tensor<8x4096x128xf32> -> tensor<8x4096x128xf32>
      %view_6 = rdu.reshape %bmm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xf32> -> tensor<1x8x4096x128xf32>
      %_to_copy_6 = rdu.map %view_6 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x8x4096x128xf32>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%0: f32):
        %1 = arith.truncf %0 : f32 to bf16
        rdu.yield %1 : bf16
      }
      %permute_2 = rdu.reshape %_to_copy_6 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<8x4096x128xbf16>
      %permute_3 = rdu.transpose %permute_2 perm [1, 0, 2] {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<8x4096x128xbf16> -> tensor<4096x8x128xbf16>
      rdu.yield %view_5, %permute_3 : tensor<8x4096x128xf32>, tensor<4096x8x128xbf16>
    }
    %view_4, %add, %_to_copy_5 = rdu.kernel "k3"(%permute_1, %p_model_model_layers_0_self_attn_o_proj_weight, %embedding) {rdu.layer = "forward.layers.0"} : (tensor<4096x8x128xbf16>, tensor<8192x1024xbf16>, tensor<1x512x8192xbf16>) -> (tensor<4096x1024xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>) {
    ^bb0(%permute_2: tensor<4096x8x128xbf16>, %p_model_model_layers_0_self_attn_o_proj_weight_1: tensor<8192x1024xbf16>, %embedding_1: tensor<1x512x8192xbf16>):
      %view_5 = rdu.reshape %permute_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8x128xbf16> -> tensor<4096x1024xbf16>
      %mm = rdu.matmul %view_5, %p_model_model_layers_0_self_attn_o_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x1024xbf16>, tensor<8192x1024xbf16> -> tensor<4096x8192xbf16>
      %view_6 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %0 = rdu.reduce_scatter %view_6 dim 1 group 8 {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %add_1 = rdu.map %embedding_1, %0 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.addf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %_to_copy_6 = rdu.map %add_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        rdu.yield %2 : f32
      }
      rdu.yield %view_5, %add_1, %_to_copy_6 : tensor<4096x1024xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>
    }
    %rsqrt_1, %_to_copy_6, %view_5, %view_6, %_to_copy_7, %view_7, %view_8 = rdu.kernel "k4"(%_to_copy_5, %p_model_model_layers_0_post_attention_layernorm_weight, %p_model_model_layers_0_mlp_gate_proj_weight, %p_model_model_layers_0_mlp_up_proj_weight) {rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xf32>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>) -> (tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>) {
    ^bb0(%_to_copy_8: tensor<1x512x8192xf32>, %p_model_model_layers_0_post_attention_layernorm_weight_1: tensor<8192xbf16>, %p_model_model_layers_0_mlp_gate_proj_weight_1: tensor<3584x8192xbf16>, %p_model_model_layers_0_mlp_up_proj_weight_1: tensor<3584x8192xbf16>):
      %pow = rdu.map %_to_copy_8 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 1.000000e+00 : f32
        %2 = arith.mulf %1, %0 : f32
        %3 = arith.mulf %2, %0 : f32
        rdu.yield %3 : f32
      }
      %mean = rdu.reduce sum %pow dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %rsqrt_2 = rdu.map %mean {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 8.192000e+03 : f32
        %2 = arith.divf %0, %1 : f32
        %3 = arith.constant 1.000000e-05 : f32
        %4 = arith.addf %2, %3 : f32
        %5 = math.rsqrt %4 : f32
        rdu.yield %5 : f32
      }
      %_to_copy_9 = rdu.map %_to_copy_8, %rsqrt_2 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        %3 = arith.truncf %2 : f32 to bf16
        rdu.yield %3 : bf16
      }
      %mul = rdu.map %p_model_model_layers_0_post_attention_layernorm_weight_1, %_to_copy_9 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %0 = rdu.all_gather %mul dim 1 group 8 {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_9 = rdu.reshape %0 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      %mm = rdu.matmul %view_9, %p_model_model_layers_0_mlp_gate_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16>, tensor<3584x8192xbf16> -> tensor<4096x3584xbf16>
      %view_10 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x3584xbf16> -> tensor<1x4096x3584xbf16>
      %_to_copy_10 = rdu.map %view_10 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x4096x3584xbf16>) -> tensor<1x4096x3584xf32> {
      ^bb0(%1: bf16):
        %2 = arith.extf %1 : bf16 to f32
        rdu.yield %2 : f32
      }
      %_to_copy_11 = rdu.map %_to_copy_10, %_to_copy_10 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x4096x3584xf32>, tensor<1x4096x3584xf32>) -> tensor<1x4096x3584xbf16> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.constant 1.000000e+00 : f32
        %4 = arith.negf %2 : f32
        %5 = math.exp %4 : f32
        %6 = arith.addf %3, %5 : f32
        %7 = arith.divf %3, %6 : f32
        %8 = arith.mulf %1, %7 : f32
        %9 = arith.truncf %8 : f32 to bf16
        rdu.yield %9 : bf16
      }
      %mm_1 = rdu.matmul %view_9, %p_model_model_layers_0_mlp_up_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16>, tensor<3584x8192xbf16> -> tensor<4096x3584xbf16>
      %view_11 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x3584xbf16> -> tensor<1x4096x3584xbf16>
      %mul_1 = rdu.map %_to_copy_11, %view_11 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> tensor<1x4096x3584xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %view_12 = rdu.reshape %mul_1 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<1x4096x3584xbf16> -> tensor<4096x3584xbf16>
      rdu.yield %rsqrt_2, %_to_copy_9, %view_9, %view_10, %_to_copy_11, %view_11, %view_12 : tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>
    }
    %add_1 = rdu.kernel "k5"(%view_8, %p_model_model_layers_0_mlp_down_proj_weight, %add) {rdu.layer = "forward.layers.0"} : (tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
    ^bb0(%view_9: tensor<4096x3584xbf16>, %p_model_model_layers_0_mlp_down_proj_weight_1: tensor<8192x3584xbf16>, %add_2: tensor<1x512x8192xbf16>):
      %mm = rdu.matmul %view_9, %p_model_model_layers_0_mlp_down_proj_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x3584xbf16>, tensor<8192x3584xbf16> -> tensor<4096x8192xbf16>
      %view_10 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %0 = rdu.reduce_scatter %view_10 dim 1 group 8 {rdu.layer = "forward.layers.0", rdu.phase = #rdu<phase forward>} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %add_3 = rdu.map %add_2, %0 {rdu.phase = #rdu<phase forward>, rdu.layer = "forward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.addf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      rdu.yield %add_3 : tensor<1x512x8192xbf16>
    }
    func.return %_to_copy_2, %rsqrt, %_to_copy_3, %view, %view, %view, %unsqueeze, %unsqueeze_1, %permute, %view_1, %logical_not, %_softmax, %view_2, %view_3, %view_4, %_to_copy_5, %rsqrt_1, %_to_copy_6, %view_5, %view_6, %_to_copy_7, %view_5, %view_7, %view_8, %add_1 : tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>
  }
}