// A training step at rdu-place-saved's input (kernels level): Llama 3.1 70B's widths with 16
// decoder layers (bench/train_llama.py's joint step, no optimizer, meta device, sequence
// 4,096), outlined (@layer_forward, @layer_backward), partitioned tp=8 pp=2 with sequence
// parallelism for sn40l-16, as the 80-layer row's split chooser picks:
//   pipeline_text(2, "kernels", 16, (8, 2)) with rdu-partition{tp=8 pp=2 sequence_parallel=true}
// (written without locations, site-packages paths cut to the package's own). At 12 GB of HBM
// a socket it places as the 80-layer step does on sn40l-16 (rdu-place-saved-uncharged-plan.mlir).
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
  tier.global @model.model.layers.2.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.2.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.2.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.2.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.2.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.2.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.2.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.2.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.2.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.3.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.3.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.3.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.3.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.3.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.3.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.3.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.3.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.3.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.4.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.4.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.4.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.4.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.4.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.4.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.4.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.4.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.4.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.5.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.5.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.5.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.5.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.5.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.5.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.5.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.5.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.5.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.6.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.6.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.6.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.6.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.6.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.6.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.6.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.6.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.6.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.7.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.7.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.7.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.7.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.7.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.7.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.7.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.7.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.7.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.8.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.8.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.8.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.8.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.8.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.8.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.8.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.8.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.8.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.9.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.9.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.9.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.9.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.9.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.9.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.9.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.9.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.9.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.10.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.10.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.10.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.10.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.10.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.10.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.10.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.10.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.10.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.11.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.11.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.11.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.11.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.11.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.11.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.11.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.11.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.11.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.12.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.12.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.12.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.12.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.12.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.12.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.12.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.12.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.12.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.13.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.13.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.13.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.13.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.13.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.13.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.13.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.13.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.13.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.14.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.14.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.14.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.14.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.14.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.14.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.14.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.14.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.14.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.15.self_attn.q_proj.weight : tensor<1024x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.15.self_attn.k_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.15.self_attn.v_proj.weight : tensor<128x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.15.self_attn.o_proj.weight : tensor<8192x1024xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.15.mlp.gate_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.15.mlp.up_proj.weight : tensor<3584x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.layers.15.mlp.down_proj.weight : tensor<8192x3584xbf16> {kind = "parameter", rdu.shard = #rdu.split<(1, 8, 1)>}
  tier.global @model.model.layers.15.input_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.layers.15.post_attention_layernorm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.model.norm.weight : tensor<8192xbf16> {kind = "parameter", rdu.whole_reader = ["rdu.map", "transformers/models/llama/modeling_llama.py:67:9"]}
  tier.global @model.lm_head.weight : tensor<16032x8192xbf16> {kind = "parameter", rdu.shard = #rdu.split<(0, 8, 1)>}
  tier.global @model.model.rotary_emb.inv_freq : tensor<64xbf16> {kind = "buffer"}
  tier.global @model.model.rotary_emb.original_inv_freq : tensor<64xbf16> {kind = "buffer"}
  func.func @forward(%ids: tensor<1x4096xi64> {rdu.input = "ids"}, %labels: tensor<1x4096xi64> {rdu.input = "labels"}, %p_model_model_embed_tokens_weight: tensor<128256x8192xbf16> {rdu.global = @model.model.embed_tokens.weight}, %p_model_model_layers_0_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.0.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.0.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.0.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.0.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.0.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.0.input_layernorm.weight}, %p_model_model_layers_0_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.0.post_attention_layernorm.weight}, %p_model_model_layers_1_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.1.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.1.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.1.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.1.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_1_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.1.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_1_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.1.input_layernorm.weight}, %p_model_model_layers_1_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.1.post_attention_layernorm.weight}, %p_model_model_layers_2_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.2.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_2_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.2.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_2_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.2.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_2_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.2.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_2_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.2.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_2_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.2.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_2_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.2.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_2_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.2.input_layernorm.weight}, %p_model_model_layers_2_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.2.post_attention_layernorm.weight}, %p_model_model_layers_3_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.3.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_3_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.3.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_3_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.3.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_3_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.3.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_3_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.3.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_3_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.3.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_3_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.3.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_3_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.3.input_layernorm.weight}, %p_model_model_layers_3_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.3.post_attention_layernorm.weight}, %p_model_model_layers_4_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.4.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_4_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.4.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_4_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.4.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_4_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.4.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_4_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.4.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_4_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.4.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_4_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.4.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_4_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.4.input_layernorm.weight}, %p_model_model_layers_4_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.4.post_attention_layernorm.weight}, %p_model_model_layers_5_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.5.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_5_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.5.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_5_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.5.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_5_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.5.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_5_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.5.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_5_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.5.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_5_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.5.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_5_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.5.input_layernorm.weight}, %p_model_model_layers_5_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.5.post_attention_layernorm.weight}, %p_model_model_layers_6_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.6.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_6_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.6.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_6_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.6.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_6_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.6.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_6_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.6.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_6_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.6.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_6_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.6.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_6_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.6.input_layernorm.weight}, %p_model_model_layers_6_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.6.post_attention_layernorm.weight}, %p_model_model_layers_7_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.7.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_7_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.7.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_7_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.7.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_7_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.7.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_7_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.7.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_7_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.7.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_7_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.7.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_7_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.7.input_layernorm.weight}, %p_model_model_layers_7_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.7.post_attention_layernorm.weight}, %p_model_model_layers_8_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.8.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_8_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.8.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_8_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.8.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_8_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.8.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_8_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.8.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_8_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.8.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_8_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.8.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_8_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.8.input_layernorm.weight}, %p_model_model_layers_8_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.8.post_attention_layernorm.weight}, %p_model_model_layers_9_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.9.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_9_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.9.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_9_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.9.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_9_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.9.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_9_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.9.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_9_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.9.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_9_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.9.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_9_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.9.input_layernorm.weight}, %p_model_model_layers_9_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.9.post_attention_layernorm.weight}, %p_model_model_layers_10_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.10.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_10_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.10.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_10_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.10.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_10_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.10.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_10_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.10.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_10_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.10.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_10_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.10.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_10_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.10.input_layernorm.weight}, %p_model_model_layers_10_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.10.post_attention_layernorm.weight}, %p_model_model_layers_11_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.11.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_11_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.11.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_11_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.11.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_11_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.11.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_11_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.11.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_11_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.11.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_11_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.11.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_11_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.11.input_layernorm.weight}, %p_model_model_layers_11_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.11.post_attention_layernorm.weight}, %p_model_model_layers_12_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.12.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_12_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.12.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_12_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.12.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_12_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.12.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_12_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.12.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_12_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.12.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_12_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.12.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_12_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.12.input_layernorm.weight}, %p_model_model_layers_12_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.12.post_attention_layernorm.weight}, %p_model_model_layers_13_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.13.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_13_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.13.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_13_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.13.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_13_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.13.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_13_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.13.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_13_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.13.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_13_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.13.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_13_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.13.input_layernorm.weight}, %p_model_model_layers_13_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.13.post_attention_layernorm.weight}, %p_model_model_layers_14_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.14.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_14_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.14.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_14_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.14.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_14_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.14.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_14_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.14.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_14_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.14.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_14_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.14.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_14_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.14.input_layernorm.weight}, %p_model_model_layers_14_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.14.post_attention_layernorm.weight}, %p_model_model_layers_15_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.global = @model.model.layers.15.self_attn.q_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.15.self_attn.k_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.global = @model.model.layers.15.self_attn.v_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.global = @model.model.layers.15.self_attn.o_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_15_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.15.mlp.gate_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.global = @model.model.layers.15.mlp.up_proj.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.global = @model.model.layers.15.mlp.down_proj.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_15_input_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.15.input_layernorm.weight}, %p_model_model_layers_15_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.global = @model.model.layers.15.post_attention_layernorm.weight}, %p_model_model_norm_weight: tensor<8192xbf16> {rdu.global = @model.model.norm.weight}, %p_model_lm_head_weight: tensor<16032x8192xbf16> {rdu.global = @model.lm_head.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %b_model_model_rotary_emb_inv_freq: tensor<64xbf16> {rdu.global = @model.model.rotary_emb.inv_freq}, %b_model_model_rotary_emb_original_inv_freq: tensor<64xbf16> {rdu.global = @model.model.rotary_emb.original_inv_freq}) -> (tensor<f32>, tensor<128256x8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<16032x8192xbf16>) attributes {rdu.result_roles = ["loss", "gradient:parameter:model.model.embed_tokens.weight", "gradient:parameter:model.model.layers.0.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.0.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.0.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.0.mlp.up_proj.weight", "gradient:parameter:model.model.layers.0.mlp.down_proj.weight", "gradient:parameter:model.model.layers.0.input_layernorm.weight", "gradient:parameter:model.model.layers.0.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.1.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.1.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.1.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.1.mlp.up_proj.weight", "gradient:parameter:model.model.layers.1.mlp.down_proj.weight", "gradient:parameter:model.model.layers.1.input_layernorm.weight", "gradient:parameter:model.model.layers.1.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.2.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.2.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.2.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.2.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.2.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.2.mlp.up_proj.weight", "gradient:parameter:model.model.layers.2.mlp.down_proj.weight", "gradient:parameter:model.model.layers.2.input_layernorm.weight", "gradient:parameter:model.model.layers.2.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.3.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.3.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.3.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.3.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.3.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.3.mlp.up_proj.weight", "gradient:parameter:model.model.layers.3.mlp.down_proj.weight", "gradient:parameter:model.model.layers.3.input_layernorm.weight", "gradient:parameter:model.model.layers.3.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.4.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.4.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.4.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.4.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.4.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.4.mlp.up_proj.weight", "gradient:parameter:model.model.layers.4.mlp.down_proj.weight", "gradient:parameter:model.model.layers.4.input_layernorm.weight", "gradient:parameter:model.model.layers.4.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.5.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.5.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.5.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.5.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.5.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.5.mlp.up_proj.weight", "gradient:parameter:model.model.layers.5.mlp.down_proj.weight", "gradient:parameter:model.model.layers.5.input_layernorm.weight", "gradient:parameter:model.model.layers.5.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.6.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.6.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.6.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.6.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.6.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.6.mlp.up_proj.weight", "gradient:parameter:model.model.layers.6.mlp.down_proj.weight", "gradient:parameter:model.model.layers.6.input_layernorm.weight", "gradient:parameter:model.model.layers.6.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.7.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.7.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.7.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.7.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.7.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.7.mlp.up_proj.weight", "gradient:parameter:model.model.layers.7.mlp.down_proj.weight", "gradient:parameter:model.model.layers.7.input_layernorm.weight", "gradient:parameter:model.model.layers.7.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.8.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.8.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.8.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.8.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.8.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.8.mlp.up_proj.weight", "gradient:parameter:model.model.layers.8.mlp.down_proj.weight", "gradient:parameter:model.model.layers.8.input_layernorm.weight", "gradient:parameter:model.model.layers.8.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.9.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.9.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.9.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.9.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.9.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.9.mlp.up_proj.weight", "gradient:parameter:model.model.layers.9.mlp.down_proj.weight", "gradient:parameter:model.model.layers.9.input_layernorm.weight", "gradient:parameter:model.model.layers.9.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.10.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.10.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.10.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.10.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.10.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.10.mlp.up_proj.weight", "gradient:parameter:model.model.layers.10.mlp.down_proj.weight", "gradient:parameter:model.model.layers.10.input_layernorm.weight", "gradient:parameter:model.model.layers.10.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.11.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.11.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.11.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.11.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.11.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.11.mlp.up_proj.weight", "gradient:parameter:model.model.layers.11.mlp.down_proj.weight", "gradient:parameter:model.model.layers.11.input_layernorm.weight", "gradient:parameter:model.model.layers.11.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.12.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.12.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.12.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.12.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.12.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.12.mlp.up_proj.weight", "gradient:parameter:model.model.layers.12.mlp.down_proj.weight", "gradient:parameter:model.model.layers.12.input_layernorm.weight", "gradient:parameter:model.model.layers.12.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.13.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.13.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.13.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.13.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.13.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.13.mlp.up_proj.weight", "gradient:parameter:model.model.layers.13.mlp.down_proj.weight", "gradient:parameter:model.model.layers.13.input_layernorm.weight", "gradient:parameter:model.model.layers.13.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.14.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.14.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.14.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.14.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.14.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.14.mlp.up_proj.weight", "gradient:parameter:model.model.layers.14.mlp.down_proj.weight", "gradient:parameter:model.model.layers.14.input_layernorm.weight", "gradient:parameter:model.model.layers.14.post_attention_layernorm.weight", "gradient:parameter:model.model.layers.15.self_attn.q_proj.weight", "gradient:parameter:model.model.layers.15.self_attn.k_proj.weight", "gradient:parameter:model.model.layers.15.self_attn.v_proj.weight", "gradient:parameter:model.model.layers.15.self_attn.o_proj.weight", "gradient:parameter:model.model.layers.15.mlp.gate_proj.weight", "gradient:parameter:model.model.layers.15.mlp.up_proj.weight", "gradient:parameter:model.model.layers.15.mlp.down_proj.weight", "gradient:parameter:model.model.layers.15.input_layernorm.weight", "gradient:parameter:model.model.layers.15.post_attention_layernorm.weight", "gradient:parameter:model.model.norm.weight", "gradient:parameter:model.lm_head.weight"], rdu.result_shards = [#rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>]} {
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
    %_to_copy_12, %rsqrt_4, %_to_copy_13, %view_24, %view_25, %view_26, %unsqueeze_4, %unsqueeze_5, %permute_2, %view_27, %logical_not_2, %_softmax_2, %view_28, %view_29, %view_30, %_to_copy_14, %rsqrt_5, %_to_copy_15, %view_31, %view_32, %_to_copy_16, %view_33, %view_34, %view_35, %add_2 = func.call @layer_forward(%add_1, %p_model_model_layers_2_input_layernorm_weight, %p_model_model_layers_2_self_attn_q_proj_weight, %p_model_model_layers_2_self_attn_k_proj_weight, %p_model_model_layers_2_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_2_self_attn_o_proj_weight, %p_model_model_layers_2_post_attention_layernorm_weight, %p_model_model_layers_2_mlp_gate_proj_weight, %p_model_model_layers_2_mlp_up_proj_weight, %p_model_model_layers_2_mlp_down_proj_weight) {rdu.layer = "forward.layers.2", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_17, %rsqrt_6, %_to_copy_18, %view_36, %view_37, %view_38, %unsqueeze_6, %unsqueeze_7, %permute_3, %view_39, %logical_not_3, %_softmax_3, %view_40, %view_41, %view_42, %_to_copy_19, %rsqrt_7, %_to_copy_20, %view_43, %view_44, %_to_copy_21, %view_45, %view_46, %view_47, %add_3 = func.call @layer_forward(%add_2, %p_model_model_layers_3_input_layernorm_weight, %p_model_model_layers_3_self_attn_q_proj_weight, %p_model_model_layers_3_self_attn_k_proj_weight, %p_model_model_layers_3_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_3_self_attn_o_proj_weight, %p_model_model_layers_3_post_attention_layernorm_weight, %p_model_model_layers_3_mlp_gate_proj_weight, %p_model_model_layers_3_mlp_up_proj_weight, %p_model_model_layers_3_mlp_down_proj_weight) {rdu.layer = "forward.layers.3", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_22, %rsqrt_8, %_to_copy_23, %view_48, %view_49, %view_50, %unsqueeze_8, %unsqueeze_9, %permute_4, %view_51, %logical_not_4, %_softmax_4, %view_52, %view_53, %view_54, %_to_copy_24, %rsqrt_9, %_to_copy_25, %view_55, %view_56, %_to_copy_26, %view_57, %view_58, %view_59, %add_4 = func.call @layer_forward(%add_3, %p_model_model_layers_4_input_layernorm_weight, %p_model_model_layers_4_self_attn_q_proj_weight, %p_model_model_layers_4_self_attn_k_proj_weight, %p_model_model_layers_4_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_4_self_attn_o_proj_weight, %p_model_model_layers_4_post_attention_layernorm_weight, %p_model_model_layers_4_mlp_gate_proj_weight, %p_model_model_layers_4_mlp_up_proj_weight, %p_model_model_layers_4_mlp_down_proj_weight) {rdu.layer = "forward.layers.4", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_27, %rsqrt_10, %_to_copy_28, %view_60, %view_61, %view_62, %unsqueeze_10, %unsqueeze_11, %permute_5, %view_63, %logical_not_5, %_softmax_5, %view_64, %view_65, %view_66, %_to_copy_29, %rsqrt_11, %_to_copy_30, %view_67, %view_68, %_to_copy_31, %view_69, %view_70, %view_71, %add_5 = func.call @layer_forward(%add_4, %p_model_model_layers_5_input_layernorm_weight, %p_model_model_layers_5_self_attn_q_proj_weight, %p_model_model_layers_5_self_attn_k_proj_weight, %p_model_model_layers_5_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_5_self_attn_o_proj_weight, %p_model_model_layers_5_post_attention_layernorm_weight, %p_model_model_layers_5_mlp_gate_proj_weight, %p_model_model_layers_5_mlp_up_proj_weight, %p_model_model_layers_5_mlp_down_proj_weight) {rdu.layer = "forward.layers.5", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_32, %rsqrt_12, %_to_copy_33, %view_72, %view_73, %view_74, %unsqueeze_12, %unsqueeze_13, %permute_6, %view_75, %logical_not_6, %_softmax_6, %view_76, %view_77, %view_78, %_to_copy_34, %rsqrt_13, %_to_copy_35, %view_79, %view_80, %_to_copy_36, %view_81, %view_82, %view_83, %add_6 = func.call @layer_forward(%add_5, %p_model_model_layers_6_input_layernorm_weight, %p_model_model_layers_6_self_attn_q_proj_weight, %p_model_model_layers_6_self_attn_k_proj_weight, %p_model_model_layers_6_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_6_self_attn_o_proj_weight, %p_model_model_layers_6_post_attention_layernorm_weight, %p_model_model_layers_6_mlp_gate_proj_weight, %p_model_model_layers_6_mlp_up_proj_weight, %p_model_model_layers_6_mlp_down_proj_weight) {rdu.layer = "forward.layers.6", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_37, %rsqrt_14, %_to_copy_38, %view_84, %view_85, %view_86, %unsqueeze_14, %unsqueeze_15, %permute_7, %view_87, %logical_not_7, %_softmax_7, %view_88, %view_89, %view_90, %_to_copy_39, %rsqrt_15, %_to_copy_40, %view_91, %view_92, %_to_copy_41, %view_93, %view_94, %view_95, %add_7 = func.call @layer_forward(%add_6, %p_model_model_layers_7_input_layernorm_weight, %p_model_model_layers_7_self_attn_q_proj_weight, %p_model_model_layers_7_self_attn_k_proj_weight, %p_model_model_layers_7_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_7_self_attn_o_proj_weight, %p_model_model_layers_7_post_attention_layernorm_weight, %p_model_model_layers_7_mlp_gate_proj_weight, %p_model_model_layers_7_mlp_up_proj_weight, %p_model_model_layers_7_mlp_down_proj_weight) {rdu.layer = "forward.layers.7", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_42, %rsqrt_16, %_to_copy_43, %view_96, %view_97, %view_98, %unsqueeze_16, %unsqueeze_17, %permute_8, %view_99, %logical_not_8, %_softmax_8, %view_100, %view_101, %view_102, %_to_copy_44, %rsqrt_17, %_to_copy_45, %view_103, %view_104, %_to_copy_46, %view_105, %view_106, %view_107, %add_8 = func.call @layer_forward(%add_7, %p_model_model_layers_8_input_layernorm_weight, %p_model_model_layers_8_self_attn_q_proj_weight, %p_model_model_layers_8_self_attn_k_proj_weight, %p_model_model_layers_8_self_attn_v_proj_weight, %_to_copy, %_to_copy_1, %bitwise_and, %p_model_model_layers_8_self_attn_o_proj_weight, %p_model_model_layers_8_post_attention_layernorm_weight, %p_model_model_layers_8_mlp_gate_proj_weight, %p_model_model_layers_8_mlp_up_proj_weight, %p_model_model_layers_8_mlp_down_proj_weight) {rdu.layer = "forward.layers.8", rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %1, %2, %3, %4 = rdu.kernel "k1"(%add_8, %b_model_model_rotary_emb_inv_freq, %bitwise_and) : (tensor<1x512x8192xbf16>, tensor<64xbf16>, tensor<1x1x4096x4096xi1>) -> (tensor<1x512x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>) {
    ^bb0(%add_9: tensor<1x512x8192xbf16>, %b_model_model_rotary_emb_inv_freq_1: tensor<64xbf16>, %bitwise_and_1: tensor<1x1x4096x4096xi1>):
      %5 = rdu.send_recv %add_9 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x512x8192xbf16>
      %arange = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64>
      %add_10 = rdu.map %arange {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<4096xi64>) -> tensor<4096xi64> {
      ^bb0(%6: i64):
        %7 = arith.constant 0 : i64
        %8 = arith.addi %6, %7 : i64
        rdu.yield %8 : i64
      }
      %_to_copy_47 = rdu.map %b_model_model_rotary_emb_inv_freq_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<64xbf16>) -> tensor<64xf32> {
      ^bb0(%6: bf16):
        %7 = arith.extf %6 : bf16 to f32
        rdu.yield %7 : f32
      }
      %unsqueeze_18 = rdu.reshape %add_10 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x4096x1xi64>
      %_to_copy_48 = rdu.map %unsqueeze_18 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xi64>) -> tensor<1x4096x1xf32> {
      ^bb0(%6: i64):
        %7 = arith.sitofp %6 : i64 to f32
        rdu.yield %7 : f32
      }
      %mul = rdu.map %_to_copy_48, %_to_copy_47 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xf32>, tensor<64xf32>) -> tensor<1x4096x64xf32> {
      ^bb0(%6: f32, %7: f32):
        %8 = arith.mulf %6, %7 : f32
        rdu.yield %8 : f32
      }
      %cat = rdu.reshape %mul {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x64xf32> -> tensor<1x4096x1x64xf32>
      %cat_1 = rdu.broadcast %cat {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x1x64xf32> -> tensor<1x4096x2x64xf32>
      %cat_2 = rdu.reshape %cat_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x2x64xf32> -> tensor<1x4096x128xf32>
      %_to_copy_49 = rdu.map %cat_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x128xf32>) -> tensor<1x4096x128xbf16> {
      ^bb0(%6: f32):
        %7 = math.cos %6 : f32
        %8 = arith.constant 1.000000e+00 : f32
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.truncf %9 : f32 to bf16
        rdu.yield %10 : bf16
      }
      %6 = rdu.send_recv %_to_copy_49 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %arange_1 = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64>
      %add_11 = rdu.map %arange_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<4096xi64>) -> tensor<4096xi64> {
      ^bb0(%7: i64):
        %8 = arith.constant 0 : i64
        %9 = arith.addi %7, %8 : i64
        rdu.yield %9 : i64
      }
      %_to_copy_50 = rdu.map %b_model_model_rotary_emb_inv_freq_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<64xbf16>) -> tensor<64xf32> {
      ^bb0(%7: bf16):
        %8 = arith.extf %7 : bf16 to f32
        rdu.yield %8 : f32
      }
      %unsqueeze_19 = rdu.reshape %add_11 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<4096xi64> -> tensor<1x4096x1xi64>
      %_to_copy_51 = rdu.map %unsqueeze_19 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xi64>) -> tensor<1x4096x1xf32> {
      ^bb0(%7: i64):
        %8 = arith.sitofp %7 : i64 to f32
        rdu.yield %8 : f32
      }
      %mul_1 = rdu.map %_to_copy_51, %_to_copy_50 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xf32>, tensor<64xf32>) -> tensor<1x4096x64xf32> {
      ^bb0(%7: f32, %8: f32):
        %9 = arith.mulf %7, %8 : f32
        rdu.yield %9 : f32
      }
      %cat_3 = rdu.reshape %mul_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x64xf32> -> tensor<1x4096x1x64xf32>
      %cat_4 = rdu.broadcast %cat_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x1x64xf32> -> tensor<1x4096x2x64xf32>
      %cat_5 = rdu.reshape %cat_4 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : tensor<1x4096x2x64xf32> -> tensor<1x4096x128xf32>
      %_to_copy_52 = rdu.map %cat_5 {rdu.phase = #rdu<phase forward>, rdu.stage = 0 : i64} : (tensor<1x4096x128xf32>) -> tensor<1x4096x128xbf16> {
      ^bb0(%7: f32):
        %8 = math.sin %7 : f32
        %9 = arith.constant 1.000000e+00 : f32
        %10 = arith.mulf %8, %9 : f32
        %11 = arith.truncf %10 : f32 to bf16
        rdu.yield %11 : bf16
      }
      %7 = rdu.send_recv %_to_copy_52 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %8 = rdu.send_recv %bitwise_and_1 from 0 to 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x1x4096x4096xi1> -> tensor<1x1x4096x4096xi1>
      rdu.yield %5, %6, %7, %8 : tensor<1x512x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>
    }
    %_to_copy_47, %rsqrt_18, %_to_copy_48, %view_108, %view_109, %view_110, %unsqueeze_18, %unsqueeze_19, %permute_9, %view_111, %logical_not_9, %_softmax_9, %view_112, %view_113, %view_114, %_to_copy_49, %rsqrt_19, %_to_copy_50, %view_115, %view_116, %_to_copy_51, %view_117, %view_118, %view_119, %add_9 = func.call @layer_forward(%1, %p_model_model_layers_9_input_layernorm_weight, %p_model_model_layers_9_self_attn_q_proj_weight, %p_model_model_layers_9_self_attn_k_proj_weight, %p_model_model_layers_9_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_9_self_attn_o_proj_weight, %p_model_model_layers_9_post_attention_layernorm_weight, %p_model_model_layers_9_mlp_gate_proj_weight, %p_model_model_layers_9_mlp_up_proj_weight, %p_model_model_layers_9_mlp_down_proj_weight) {rdu.layer = "forward.layers.9", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_52, %rsqrt_20, %_to_copy_53, %view_120, %view_121, %view_122, %unsqueeze_20, %unsqueeze_21, %permute_10, %view_123, %logical_not_10, %_softmax_10, %view_124, %view_125, %view_126, %_to_copy_54, %rsqrt_21, %_to_copy_55, %view_127, %view_128, %_to_copy_56, %view_129, %view_130, %view_131, %add_10 = func.call @layer_forward(%add_9, %p_model_model_layers_10_input_layernorm_weight, %p_model_model_layers_10_self_attn_q_proj_weight, %p_model_model_layers_10_self_attn_k_proj_weight, %p_model_model_layers_10_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_10_self_attn_o_proj_weight, %p_model_model_layers_10_post_attention_layernorm_weight, %p_model_model_layers_10_mlp_gate_proj_weight, %p_model_model_layers_10_mlp_up_proj_weight, %p_model_model_layers_10_mlp_down_proj_weight) {rdu.layer = "forward.layers.10", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_57, %rsqrt_22, %_to_copy_58, %view_132, %view_133, %view_134, %unsqueeze_22, %unsqueeze_23, %permute_11, %view_135, %logical_not_11, %_softmax_11, %view_136, %view_137, %view_138, %_to_copy_59, %rsqrt_23, %_to_copy_60, %view_139, %view_140, %_to_copy_61, %view_141, %view_142, %view_143, %add_11 = func.call @layer_forward(%add_10, %p_model_model_layers_11_input_layernorm_weight, %p_model_model_layers_11_self_attn_q_proj_weight, %p_model_model_layers_11_self_attn_k_proj_weight, %p_model_model_layers_11_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_11_self_attn_o_proj_weight, %p_model_model_layers_11_post_attention_layernorm_weight, %p_model_model_layers_11_mlp_gate_proj_weight, %p_model_model_layers_11_mlp_up_proj_weight, %p_model_model_layers_11_mlp_down_proj_weight) {rdu.layer = "forward.layers.11", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_62, %rsqrt_24, %_to_copy_63, %view_144, %view_145, %view_146, %unsqueeze_24, %unsqueeze_25, %permute_12, %view_147, %logical_not_12, %_softmax_12, %view_148, %view_149, %view_150, %_to_copy_64, %rsqrt_25, %_to_copy_65, %view_151, %view_152, %_to_copy_66, %view_153, %view_154, %view_155, %add_12 = func.call @layer_forward(%add_11, %p_model_model_layers_12_input_layernorm_weight, %p_model_model_layers_12_self_attn_q_proj_weight, %p_model_model_layers_12_self_attn_k_proj_weight, %p_model_model_layers_12_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_12_self_attn_o_proj_weight, %p_model_model_layers_12_post_attention_layernorm_weight, %p_model_model_layers_12_mlp_gate_proj_weight, %p_model_model_layers_12_mlp_up_proj_weight, %p_model_model_layers_12_mlp_down_proj_weight) {rdu.layer = "forward.layers.12", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_67, %rsqrt_26, %_to_copy_68, %view_156, %view_157, %view_158, %unsqueeze_26, %unsqueeze_27, %permute_13, %view_159, %logical_not_13, %_softmax_13, %view_160, %view_161, %view_162, %_to_copy_69, %rsqrt_27, %_to_copy_70, %view_163, %view_164, %_to_copy_71, %view_165, %view_166, %view_167, %add_13 = func.call @layer_forward(%add_12, %p_model_model_layers_13_input_layernorm_weight, %p_model_model_layers_13_self_attn_q_proj_weight, %p_model_model_layers_13_self_attn_k_proj_weight, %p_model_model_layers_13_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_13_self_attn_o_proj_weight, %p_model_model_layers_13_post_attention_layernorm_weight, %p_model_model_layers_13_mlp_gate_proj_weight, %p_model_model_layers_13_mlp_up_proj_weight, %p_model_model_layers_13_mlp_down_proj_weight) {rdu.layer = "forward.layers.13", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_72, %rsqrt_28, %_to_copy_73, %view_168, %view_169, %view_170, %unsqueeze_28, %unsqueeze_29, %permute_14, %view_171, %logical_not_14, %_softmax_14, %view_172, %view_173, %view_174, %_to_copy_74, %rsqrt_29, %_to_copy_75, %view_175, %view_176, %_to_copy_76, %view_177, %view_178, %view_179, %add_14 = func.call @layer_forward(%add_13, %p_model_model_layers_14_input_layernorm_weight, %p_model_model_layers_14_self_attn_q_proj_weight, %p_model_model_layers_14_self_attn_k_proj_weight, %p_model_model_layers_14_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_14_self_attn_o_proj_weight, %p_model_model_layers_14_post_attention_layernorm_weight, %p_model_model_layers_14_mlp_gate_proj_weight, %p_model_model_layers_14_mlp_up_proj_weight, %p_model_model_layers_14_mlp_down_proj_weight) {rdu.layer = "forward.layers.14", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_77, %rsqrt_30, %_to_copy_78, %view_180, %view_181, %view_182, %unsqueeze_30, %unsqueeze_31, %permute_15, %view_183, %logical_not_15, %_softmax_15, %view_184, %view_185, %view_186, %_to_copy_79, %rsqrt_31, %_to_copy_80, %view_187, %view_188, %_to_copy_81, %view_189, %view_190, %view_191, %add_15 = func.call @layer_forward(%add_14, %p_model_model_layers_15_input_layernorm_weight, %p_model_model_layers_15_self_attn_q_proj_weight, %p_model_model_layers_15_self_attn_k_proj_weight, %p_model_model_layers_15_self_attn_v_proj_weight, %2, %3, %4, %p_model_model_layers_15_self_attn_o_proj_weight, %p_model_model_layers_15_post_attention_layernorm_weight, %p_model_model_layers_15_mlp_gate_proj_weight, %p_model_model_layers_15_mlp_up_proj_weight, %p_model_model_layers_15_mlp_down_proj_weight) {rdu.layer = "forward.layers.15", rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x128xbf16>, tensor<1x4096x128xbf16>, tensor<1x1x4096x4096xi1>, tensor<8192x1024xbf16>, tensor<8192xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>)
    %_to_copy_82, %rsqrt_32, %_to_copy_83, %view_192 = rdu.kernel "k2"(%add_15, %p_model_model_norm_weight) : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>) {
    ^bb0(%add_16: tensor<1x512x8192xbf16>, %p_model_model_norm_weight_1: tensor<8192xbf16>):
      %_to_copy_84 = rdu.map %add_16 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%5: bf16):
        %6 = arith.extf %5 : bf16 to f32
        rdu.yield %6 : f32
      }
      %pow = rdu.map %_to_copy_84 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%5: f32):
        %6 = arith.constant 1.000000e+00 : f32
        %7 = arith.mulf %6, %5 : f32
        %8 = arith.mulf %7, %5 : f32
        rdu.yield %8 : f32
      }
      %mean = rdu.reduce sum %pow dims [2] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %rsqrt_33 = rdu.map %mean {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%5: f32):
        %6 = arith.constant 8.192000e+03 : f32
        %7 = arith.divf %5, %6 : f32
        %8 = arith.constant 1.000000e-05 : f32
        %9 = arith.addf %7, %8 : f32
        %10 = math.rsqrt %9 : f32
        rdu.yield %10 : f32
      }
      %_to_copy_85 = rdu.map %_to_copy_84, %rsqrt_33 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%5: f32, %6: f32):
        %7 = arith.mulf %5, %6 : f32
        %8 = arith.truncf %7 : f32 to bf16
        rdu.yield %8 : bf16
      }
      %mul = rdu.map %p_model_model_norm_weight_1, %_to_copy_85 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%5: bf16, %6: bf16):
        %7 = arith.extf %5 : bf16 to f32
        %8 = arith.extf %6 : bf16 to f32
        %9 = arith.mulf %7, %8 : f32
        %10 = arith.truncf %9 : f32 to bf16
        rdu.yield %10 : bf16
      }
      %5 = rdu.all_gather %mul dim 1 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_193 = rdu.reshape %5 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      rdu.yield %_to_copy_84, %rsqrt_33, %_to_copy_85, %view_193 : tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>
    }
    %_to_copy_84 = rdu.kernel "k3"(%view_192, %p_model_lm_head_weight) : (tensor<4096x8192xbf16>, tensor<16032x8192xbf16>) -> tensor<1x4096x16032xf32> {
    ^bb0(%view_193: tensor<4096x8192xbf16>, %p_model_lm_head_weight_1: tensor<16032x8192xbf16>):
      %mm = rdu.matmul %view_193, %p_model_lm_head_weight_1 transpose_rhs {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x8192xbf16>, tensor<16032x8192xbf16> -> tensor<4096x16032xbf16>
      %view_194 = rdu.reshape %mm {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16> -> tensor<1x4096x16032xbf16>
      %_to_copy_85 = rdu.map %view_194 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x4096x16032xbf16>) -> tensor<1x4096x16032xf32> {
      ^bb0(%5: bf16):
        %6 = arith.extf %5 : bf16 to f32
        rdu.yield %6 : f32
      }
      rdu.yield %_to_copy_85 : tensor<1x4096x16032xf32>
    }
    %slice = rdu.kernel "k4"(%labels) : (tensor<1x4096xi64>) -> tensor<1x4096xi64> {
    ^bb0(%labels_1: tensor<1x4096xi64>):
      %constant_pad_nd = rdu.map {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : () -> tensor<1x1xi64> {
        %5 = arith.constant -100 : i64
        rdu.yield %5 : i64
      }
      %constant_pad_nd_1 = rdu.concat %labels_1, %constant_pad_nd dim 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<1x4096xi64>, tensor<1x1xi64>) -> tensor<1x4097xi64>
      %slice_1 = rdu.slice %constant_pad_nd_1 offsets [0, 1] strides [1, 1] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4097xi64> -> tensor<1x4096xi64>
      rdu.yield %slice_1 : tensor<1x4096xi64>
    }
    %view_193 = rdu.kernel "k5"(%_to_copy_84) : (tensor<1x4096x16032xf32>) -> tensor<4096x16032xf32> {
    ^bb0(%_to_copy_85: tensor<1x4096x16032xf32>):
      %view_194 = rdu.reshape %_to_copy_85 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096x16032xf32> -> tensor<4096x16032xf32>
      rdu.yield %view_194 : tensor<4096x16032xf32>
    }
    %view_194, %_log_softmax = rdu.kernel "k6"(%slice, %view_193) : (tensor<1x4096xi64>, tensor<4096x16032xf32>) -> (tensor<4096xi64>, tensor<4096x1xf32>) {
    ^bb0(%slice_1: tensor<1x4096xi64>, %view_195: tensor<4096x16032xf32>):
      %view_196 = rdu.reshape %slice_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<1x4096xi64> -> tensor<4096xi64>
      %5 = rdu.reduce max %view_195 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      %6 = rdu.all_gather %5 dim 1 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x8xf32>
      %_log_softmax_1 = rdu.reduce max %6 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x8xf32> -> tensor<4096x1xf32>
      rdu.yield %view_196, %_log_softmax_1 : tensor<4096xi64>, tensor<4096x1xf32>
    }
    %_log_softmax_1 = rdu.kernel "k7"(%view_193, %_log_softmax) : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
    ^bb0(%view_195: tensor<4096x16032xf32>, %_log_softmax_2: tensor<4096x1xf32>):
      %_log_softmax_3 = rdu.map %view_195, %_log_softmax_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%5: f32, %6: f32):
        %7 = arith.subf %5, %6 : f32
        %8 = math.exp %7 : f32
        rdu.yield %8 : f32
      }
      %_log_softmax_4 = rdu.reduce sum %_log_softmax_3 dims [1] keepdim {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      %5 = rdu.all_reduce %_log_softmax_4 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x1xf32>
      %_log_softmax_5 = rdu.map %view_195, %_log_softmax_2, %5 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%6: f32, %7: f32, %8: f32):
        %9 = arith.subf %6, %7 : f32
        %10 = math.log %8 : f32
        %11 = arith.subf %9, %10 : f32
        rdu.yield %11 : f32
      }
      rdu.yield %_log_softmax_5 : tensor<4096x16032xf32>
    }
    %ne, %5, %6, %gather = rdu.kernel "k8"(%view_194) : (tensor<4096xi64>) -> (tensor<4096xi1>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xi64>) {
    ^bb0(%view_195: tensor<4096xi64>):
      %ne_1 = rdu.map %view_195 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi64>) -> tensor<4096xi1> {
      ^bb0(%7: i64):
        %8 = arith.constant -100 : i64
        %9 = arith.cmpi ne, %7, %8 : i64
        rdu.yield %9 : i1
      }
      %where = rdu.map %ne_1, %view_195 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>, tensor<4096xi64>) -> tensor<4096xi64> {
      ^bb0(%7: i1, %8: i64):
        %9 = arith.constant 0 : i64
        %10 = arith.select %7, %8, %9 : i64
        rdu.yield %10 : i64
      }
      %unsqueeze_32 = rdu.reshape %where {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<4096x1xi64>
      %7 = rdu.iota start 0 step 16032 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<8xi64>
      %8 = rdu.local_part %7 dim 0 group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<8xi64> -> tensor<1xi64>
      %9 = rdu.map %unsqueeze_32, %8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>, tensor<1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%10: i64, %11: i64):
        %12 = arith.subi %10, %11 : i64
        rdu.yield %12 : i64
      }
      %10 = rdu.map %9 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%11: i64):
        %12 = arith.constant 0 : i64
        %13 = arith.constant 16032 : i64
        %14 = arith.cmpi sge, %11, %12 : i64
        %15 = arith.cmpi slt, %11, %13 : i64
        %16 = arith.andi %14, %15 : i1
        rdu.yield %16 : i1
      }
      %11 = rdu.map %10, %9 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%12: i1, %13: i64):
        %14 = arith.constant 0 : i64
        %15 = arith.select %12, %13, %14 : i64
        rdu.yield %15 : i64
      }
      %gather_1 = rdu.iota start 0 step 1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64>
      %gather_2 = rdu.reshape %gather_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<4096x1xi64>
      rdu.yield %ne_1, %10, %11, %gather_2 : tensor<4096xi1>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xi64>
    }
    %div, %div_1, %ne_1, %7, %8 = rdu.kernel "k9"(%_log_softmax_1, %gather, %6, %5, %ne, %slice) : (tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xi64>, tensor<4096x1xi1>, tensor<4096xi1>, tensor<1x4096xi64>) -> (tensor<f32>, tensor<f32>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xf32>) {
    ^bb0(%_log_softmax_2: tensor<4096x16032xf32>, %gather_1: tensor<4096x1xi64>, %9: tensor<4096x1xi64>, %10: tensor<4096x1xi1>, %ne_2: tensor<4096xi1>, %slice_1: tensor<1x4096xi64>):
      %gather_2 = rdu.gather %_log_softmax_2[%gather_1, %9] dim 0 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xi64> -> tensor<4096x1xf32>
      %gather_3 = rdu.map %10, %gather_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xf32>) -> tensor<4096x1xf32> {
      ^bb0(%11: i1, %12: f32):
        %13 = arith.constant 0.000000e+00 : f32
        %14 = arith.select %11, %12, %13 : f32
        rdu.yield %14 : f32
      }
      %squeeze = rdu.reshape %gather_3 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096xf32>
      %neg = rdu.map %squeeze {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xf32>) -> tensor<4096xf32> {
      ^bb0(%11: f32):
        %12 = arith.negf %11 : f32
        rdu.yield %12 : f32
      }
      %11 = rdu.all_reduce %neg group 8 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xf32> -> tensor<4096xf32>
      %where = rdu.map %ne_2, %11 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>, tensor<4096xf32>) -> tensor<4096xf32> {
      ^bb0(%12: i1, %13: f32):
        %14 = arith.constant 0.000000e+00 : f32
        %15 = arith.select %12, %13, %14 : f32
        rdu.yield %15 : f32
      }
      %sum = rdu.map %ne_2 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<4096xi1>) -> tensor<4096xi64> {
      ^bb0(%12: i1):
        %13 = arith.extui %12 : i1 to i64
        rdu.yield %13 : i64
      }
      %sum_1 = rdu.reduce sum %sum dims [0] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xi64> -> tensor<i64>
      %_to_copy_85 = rdu.map %sum_1 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<i64>) -> tensor<f32> {
      ^bb0(%12: i64):
        %13 = arith.sitofp %12 : i64 to f32
        rdu.yield %13 : f32
      }
      %sum_2 = rdu.reduce sum %where dims [0] {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : tensor<4096xf32> -> tensor<f32>
      %div_2 = rdu.map %sum_2, %_to_copy_85 {rdu.phase = #rdu<phase forward>, rdu.stage = 1 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32> {
      ^bb0(%12: f32, %13: f32):
        %14 = arith.divf %12, %13 : f32
        rdu.yield %14 : f32
      }
      %div_3 = rdu.map %_to_copy_85 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<f32>) -> tensor<f32> {
      ^bb0(%12: f32):
        %13 = arith.constant 1.000000e+00 : f32
        %14 = arith.divf %13, %12 : f32
        rdu.yield %14 : f32
      }
      %unsqueeze_32 = rdu.reshape %slice_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096xi64> -> tensor<4096x1xi64>
      %ne_3 = rdu.map %unsqueeze_32 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%12: i64):
        %13 = arith.constant -100 : i64
        %14 = arith.cmpi ne, %12, %13 : i64
        rdu.yield %14 : i1
      }
      %12 = rdu.iota start 0 step 16032 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<8xi64>
      %13 = rdu.local_part %12 dim 0 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<8xi64> -> tensor<1xi64>
      %14 = rdu.map %13, %ne_3, %unsqueeze_32 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1xi64>, tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%15: i64, %16: i1, %17: i64):
        %18 = arith.constant 0 : i64
        %19 = arith.select %16, %17, %18 : i64
        %20 = arith.subi %19, %15 : i64
        rdu.yield %20 : i64
      }
      %15 = rdu.map %14 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi64>) -> tensor<4096x1xi1> {
      ^bb0(%16: i64):
        %17 = arith.constant 0 : i64
        %18 = arith.constant 16032 : i64
        %19 = arith.cmpi sge, %16, %17 : i64
        %20 = arith.cmpi slt, %16, %18 : i64
        %21 = arith.andi %19, %20 : i1
        rdu.yield %21 : i1
      }
      %16 = rdu.map %15, %14 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<4096x1xi64>) -> tensor<4096x1xi64> {
      ^bb0(%17: i1, %18: i64):
        %19 = arith.constant 0 : i64
        %20 = arith.select %17, %18, %19 : i64
        rdu.yield %20 : i64
      }
      %17 = rdu.map %15 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>) -> tensor<4096x1xf32> {
      ^bb0(%18: i1):
        %19 = arith.constant -1.000000e+00 : f32
        %20 = arith.constant 0.000000e+00 : f32
        %21 = arith.select %18, %19, %20 : f32
        rdu.yield %21 : f32
      }
      rdu.yield %div_2, %div_3, %ne_3, %16, %17 : tensor<f32>, tensor<f32>, tensor<4096x1xi1>, tensor<4096x1xi64>, tensor<4096x1xf32>
    }
    %mul = rdu.kernel "k10"(%7, %8, %ne_1, %div_1) : (tensor<4096x1xi64>, tensor<4096x1xf32>, tensor<4096x1xi1>, tensor<f32>) -> tensor<4096x16032xf32> {
    ^bb0(%9: tensor<4096x1xi64>, %10: tensor<4096x1xf32>, %ne_2: tensor<4096x1xi1>, %div_2: tensor<f32>):
      %11 = rdu.map {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : () -> tensor<4096x16032xf32> {
        %12 = arith.constant 0.000000e+00 : f32
        rdu.yield %12 : f32
      }
      %scatter = rdu.scatter %11[%9] = %10 dim 1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32>, tensor<4096x1xi64>, tensor<4096x1xf32> -> tensor<4096x16032xf32>
      %where = rdu.map %ne_2, %div_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x1xi1>, tensor<f32>) -> tensor<4096x1xf32> {
      ^bb0(%12: i1, %13: f32):
        %14 = arith.constant 0.000000e+00 : f32
        %15 = arith.select %12, %13, %14 : f32
        rdu.yield %15 : f32
      }
      %mul_1 = rdu.map %scatter, %where {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%12: f32, %13: f32):
        %14 = arith.mulf %12, %13 : f32
        rdu.yield %14 : f32
      }
      rdu.yield %mul_1 : tensor<4096x16032xf32>
    }
    %_to_copy_85 = rdu.kernel "k11"(%_log_softmax_1, %mul) : (tensor<4096x16032xf32>, tensor<4096x16032xf32>) -> tensor<1x4096x16032xbf16> {
    ^bb0(%_log_softmax_2: tensor<4096x16032xf32>, %mul_1: tensor<4096x16032xf32>):
      %sum = rdu.reduce sum %mul_1 dims [1] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<4096x1xf32>
      %9 = rdu.all_reduce %sum group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x1xf32> -> tensor<4096x1xf32>
      %sub = rdu.map %mul_1, %9, %_log_softmax_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<4096x16032xf32>, tensor<4096x1xf32>, tensor<4096x16032xf32>) -> tensor<4096x16032xf32> {
      ^bb0(%10: f32, %11: f32, %12: f32):
        %13 = math.exp %12 : f32
        %14 = arith.mulf %13, %11 : f32
        %15 = arith.subf %10, %14 : f32
        rdu.yield %15 : f32
      }
      %view_195 = rdu.reshape %sub {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xf32> -> tensor<1x4096x16032xf32>
      %_to_copy_86 = rdu.map %view_195 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x4096x16032xf32>) -> tensor<1x4096x16032xbf16> {
      ^bb0(%10: f32):
        %11 = arith.truncf %10 : f32 to bf16
        rdu.yield %11 : bf16
      }
      rdu.yield %_to_copy_86 : tensor<1x4096x16032xbf16>
    }
    %view_195, %mm = rdu.kernel "k12"(%_to_copy_85, %view_192) : (tensor<1x4096x16032xbf16>, tensor<4096x8192xbf16>) -> (tensor<4096x16032xbf16>, tensor<16032x8192xbf16>) {
    ^bb0(%_to_copy_86: tensor<1x4096x16032xbf16>, %view_196: tensor<4096x8192xbf16>):
      %view_197 = rdu.reshape %_to_copy_86 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096x16032xbf16> -> tensor<4096x16032xbf16>
      %permute_16 = rdu.transpose %view_197 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16> -> tensor<16032x4096xbf16>
      %mm_1 = rdu.matmul %permute_16, %view_196 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<16032x4096xbf16>, tensor<4096x8192xbf16> -> tensor<16032x8192xbf16>
      rdu.yield %view_197, %mm_1 : tensor<4096x16032xbf16>, tensor<16032x8192xbf16>
    }
    %mul_1, %mul_2 = rdu.kernel "k13"(%view_195, %p_model_lm_head_weight, %p_model_model_norm_weight, %_to_copy_83) : (tensor<4096x16032xbf16>, tensor<16032x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%view_196: tensor<4096x16032xbf16>, %p_model_lm_head_weight_1: tensor<16032x8192xbf16>, %p_model_model_norm_weight_1: tensor<8192xbf16>, %_to_copy_86: tensor<1x512x8192xbf16>):
      %mm_1 = rdu.matmul %view_196, %p_model_lm_head_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x16032xbf16>, tensor<16032x8192xbf16> -> tensor<4096x8192xbf16>
      %view_197 = rdu.reshape %mm_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %9 = rdu.reduce_scatter %view_197 dim 1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x4096x8192xbf16> -> tensor<1x512x8192xbf16>
      %mul_3 = rdu.map %9, %p_model_model_norm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%10: bf16, %11: bf16):
        %12 = arith.extf %10 : bf16 to f32
        %13 = arith.extf %11 : bf16 to f32
        %14 = arith.mulf %12, %13 : f32
        %15 = arith.truncf %14 : f32 to bf16
        rdu.yield %15 : bf16
      }
      %mul_4 = rdu.map %9, %_to_copy_86 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%10: bf16, %11: bf16):
        %12 = arith.extf %10 : bf16 to f32
        %13 = arith.extf %11 : bf16 to f32
        %14 = arith.mulf %12, %13 : f32
        %15 = arith.truncf %14 : f32 to bf16
        rdu.yield %15 : bf16
      }
      rdu.yield %mul_3, %mul_4 : tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>
    }
    %9, %_to_copy_86 = rdu.kernel "k14"(%mul_2, %mul_1, %_to_copy_82, %rsqrt_32) : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%mul_3: tensor<1x512x8192xbf16>, %mul_4: tensor<1x512x8192xbf16>, %_to_copy_87: tensor<1x512x8192xf32>, %rsqrt_33: tensor<1x512x1xf32>):
      %sum = rdu.reduce sum %mul_3 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      %10 = rdu.all_reduce %sum group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<1x1x8192xbf16> -> tensor<1x1x8192xbf16>
      %11 = rdu.reshape %10 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_88 = rdu.map %mul_4 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%12: bf16):
        %13 = arith.extf %12 : bf16 to f32
        rdu.yield %13 : f32
      }
      %mul_5 = rdu.map %_to_copy_88, %_to_copy_87 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%12: f32, %13: f32):
        %14 = arith.mulf %12, %13 : f32
        rdu.yield %14 : f32
      }
      %sum_1 = rdu.reduce sum %mul_5 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_6 = rdu.map %rsqrt_33, %sum_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
      ^bb0(%12: f32, %13: f32):
        %14 = arith.constant -5.000000e-01 : f32
        %15 = arith.mulf %13, %14 : f32
        %16 = arith.constant 1.000000e+00 : f32
        %17 = arith.mulf %16, %12 : f32
        %18 = arith.mulf %17, %12 : f32
        %19 = arith.mulf %18, %12 : f32
        %20 = arith.mulf %15, %19 : f32
        rdu.yield %20 : f32
      }
      %expand = rdu.broadcast %mul_6 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
      %_to_copy_89 = rdu.map %_to_copy_88, %rsqrt_33, %expand, %_to_copy_87 {rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xbf16> {
      ^bb0(%12: f32, %13: f32, %14: f32, %15: f32):
        %16 = arith.constant 1.000000e+00 : f32
        %17 = arith.mulf %16, %15 : f32
        %18 = arith.constant 2.000000e+00 : f32
        %19 = arith.mulf %17, %18 : f32
        %20 = arith.constant 8.192000e+03 : f32
        %21 = arith.divf %14, %20 : f32
        %22 = arith.mulf %21, %19 : f32
        %23 = arith.mulf %12, %13 : f32
        %24 = arith.addf %23, %22 : f32
        %25 = arith.truncf %24 : f32 to bf16
        rdu.yield %25 : bf16
      }
      rdu.yield %11, %_to_copy_89 : tensor<8192xbf16>, tensor<1x512x8192xbf16>
    }
    %mm_1, %mm_2, %mm_3, %view_196, %mm_4, %mm_5, %mm_6, %mm_7, %view_197, %add_16 = func.call @layer_backward(%_to_copy_86, %view_191, %p_model_model_layers_15_mlp_down_proj_weight, %_to_copy_81, %view_190, %view_189, %p_model_model_layers_15_mlp_up_proj_weight, %view_188, %view_187, %p_model_model_layers_15_mlp_gate_proj_weight, %p_model_model_layers_15_post_attention_layernorm_weight, %_to_copy_80, %_to_copy_79, %rsqrt_31, %view_186, %p_model_model_layers_15_self_attn_o_proj_weight, %view_184, %view_185, %_softmax_15, %logical_not_15, %view_183, %permute_15, %unsqueeze_31, %unsqueeze_30, %view_182, %p_model_model_layers_15_self_attn_v_proj_weight, %view_181, %p_model_model_layers_15_self_attn_k_proj_weight, %view_180, %p_model_model_layers_15_self_attn_q_proj_weight, %p_model_model_layers_15_input_layernorm_weight, %_to_copy_78, %_to_copy_77, %rsqrt_30) {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %10, %11 = rdu.kernel "k15"(%view_196, %view_197) {rdu.layer = "backward.layers.0"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_198: tensor<8192xbf16>, %view_199: tensor<8192xbf16>):
      %12 = rdu.all_reduce %view_198 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %13 = rdu.all_reduce %view_199 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %12, %13 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_8, %mm_9, %mm_10, %view_198, %mm_11, %mm_12, %mm_13, %mm_14, %view_199, %add_17 = func.call @layer_backward(%add_16, %view_179, %p_model_model_layers_14_mlp_down_proj_weight, %_to_copy_76, %view_178, %view_177, %p_model_model_layers_14_mlp_up_proj_weight, %view_176, %view_175, %p_model_model_layers_14_mlp_gate_proj_weight, %p_model_model_layers_14_post_attention_layernorm_weight, %_to_copy_75, %_to_copy_74, %rsqrt_29, %view_174, %p_model_model_layers_14_self_attn_o_proj_weight, %view_172, %view_173, %_softmax_14, %logical_not_14, %view_171, %permute_14, %unsqueeze_29, %unsqueeze_28, %view_170, %p_model_model_layers_14_self_attn_v_proj_weight, %view_169, %p_model_model_layers_14_self_attn_k_proj_weight, %view_168, %p_model_model_layers_14_self_attn_q_proj_weight, %p_model_model_layers_14_input_layernorm_weight, %_to_copy_73, %_to_copy_72, %rsqrt_28) {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %12, %13 = rdu.kernel "k16"(%view_198, %view_199) {rdu.layer = "backward.layers.1"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_200: tensor<8192xbf16>, %view_201: tensor<8192xbf16>):
      %14 = rdu.all_reduce %view_200 group 8 {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %15 = rdu.all_reduce %view_201 group 8 {rdu.layer = "backward.layers.1", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %14, %15 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_15, %mm_16, %mm_17, %view_200, %mm_18, %mm_19, %mm_20, %mm_21, %view_201, %add_18 = func.call @layer_backward(%add_17, %view_167, %p_model_model_layers_13_mlp_down_proj_weight, %_to_copy_71, %view_166, %view_165, %p_model_model_layers_13_mlp_up_proj_weight, %view_164, %view_163, %p_model_model_layers_13_mlp_gate_proj_weight, %p_model_model_layers_13_post_attention_layernorm_weight, %_to_copy_70, %_to_copy_69, %rsqrt_27, %view_162, %p_model_model_layers_13_self_attn_o_proj_weight, %view_160, %view_161, %_softmax_13, %logical_not_13, %view_159, %permute_13, %unsqueeze_27, %unsqueeze_26, %view_158, %p_model_model_layers_13_self_attn_v_proj_weight, %view_157, %p_model_model_layers_13_self_attn_k_proj_weight, %view_156, %p_model_model_layers_13_self_attn_q_proj_weight, %p_model_model_layers_13_input_layernorm_weight, %_to_copy_68, %_to_copy_67, %rsqrt_26) {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %14, %15 = rdu.kernel "k17"(%view_200, %view_201) {rdu.layer = "backward.layers.2"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_202: tensor<8192xbf16>, %view_203: tensor<8192xbf16>):
      %16 = rdu.all_reduce %view_202 group 8 {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %17 = rdu.all_reduce %view_203 group 8 {rdu.layer = "backward.layers.2", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %16, %17 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_22, %mm_23, %mm_24, %view_202, %mm_25, %mm_26, %mm_27, %mm_28, %view_203, %add_19 = func.call @layer_backward(%add_18, %view_155, %p_model_model_layers_12_mlp_down_proj_weight, %_to_copy_66, %view_154, %view_153, %p_model_model_layers_12_mlp_up_proj_weight, %view_152, %view_151, %p_model_model_layers_12_mlp_gate_proj_weight, %p_model_model_layers_12_post_attention_layernorm_weight, %_to_copy_65, %_to_copy_64, %rsqrt_25, %view_150, %p_model_model_layers_12_self_attn_o_proj_weight, %view_148, %view_149, %_softmax_12, %logical_not_12, %view_147, %permute_12, %unsqueeze_25, %unsqueeze_24, %view_146, %p_model_model_layers_12_self_attn_v_proj_weight, %view_145, %p_model_model_layers_12_self_attn_k_proj_weight, %view_144, %p_model_model_layers_12_self_attn_q_proj_weight, %p_model_model_layers_12_input_layernorm_weight, %_to_copy_63, %_to_copy_62, %rsqrt_24) {rdu.layer = "backward.layers.3", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %16, %17 = rdu.kernel "k18"(%view_202, %view_203) {rdu.layer = "backward.layers.3"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_204: tensor<8192xbf16>, %view_205: tensor<8192xbf16>):
      %18 = rdu.all_reduce %view_204 group 8 {rdu.layer = "backward.layers.3", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %19 = rdu.all_reduce %view_205 group 8 {rdu.layer = "backward.layers.3", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %18, %19 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_29, %mm_30, %mm_31, %view_204, %mm_32, %mm_33, %mm_34, %mm_35, %view_205, %add_20 = func.call @layer_backward(%add_19, %view_143, %p_model_model_layers_11_mlp_down_proj_weight, %_to_copy_61, %view_142, %view_141, %p_model_model_layers_11_mlp_up_proj_weight, %view_140, %view_139, %p_model_model_layers_11_mlp_gate_proj_weight, %p_model_model_layers_11_post_attention_layernorm_weight, %_to_copy_60, %_to_copy_59, %rsqrt_23, %view_138, %p_model_model_layers_11_self_attn_o_proj_weight, %view_136, %view_137, %_softmax_11, %logical_not_11, %view_135, %permute_11, %unsqueeze_23, %unsqueeze_22, %view_134, %p_model_model_layers_11_self_attn_v_proj_weight, %view_133, %p_model_model_layers_11_self_attn_k_proj_weight, %view_132, %p_model_model_layers_11_self_attn_q_proj_weight, %p_model_model_layers_11_input_layernorm_weight, %_to_copy_58, %_to_copy_57, %rsqrt_22) {rdu.layer = "backward.layers.4", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %18, %19 = rdu.kernel "k19"(%view_204, %view_205) {rdu.layer = "backward.layers.4"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_206: tensor<8192xbf16>, %view_207: tensor<8192xbf16>):
      %20 = rdu.all_reduce %view_206 group 8 {rdu.layer = "backward.layers.4", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %21 = rdu.all_reduce %view_207 group 8 {rdu.layer = "backward.layers.4", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %20, %21 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_36, %mm_37, %mm_38, %view_206, %mm_39, %mm_40, %mm_41, %mm_42, %view_207, %add_21 = func.call @layer_backward(%add_20, %view_131, %p_model_model_layers_10_mlp_down_proj_weight, %_to_copy_56, %view_130, %view_129, %p_model_model_layers_10_mlp_up_proj_weight, %view_128, %view_127, %p_model_model_layers_10_mlp_gate_proj_weight, %p_model_model_layers_10_post_attention_layernorm_weight, %_to_copy_55, %_to_copy_54, %rsqrt_21, %view_126, %p_model_model_layers_10_self_attn_o_proj_weight, %view_124, %view_125, %_softmax_10, %logical_not_10, %view_123, %permute_10, %unsqueeze_21, %unsqueeze_20, %view_122, %p_model_model_layers_10_self_attn_v_proj_weight, %view_121, %p_model_model_layers_10_self_attn_k_proj_weight, %view_120, %p_model_model_layers_10_self_attn_q_proj_weight, %p_model_model_layers_10_input_layernorm_weight, %_to_copy_53, %_to_copy_52, %rsqrt_20) {rdu.layer = "backward.layers.5", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %20, %21 = rdu.kernel "k20"(%view_206, %view_207) {rdu.layer = "backward.layers.5"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_208: tensor<8192xbf16>, %view_209: tensor<8192xbf16>):
      %22 = rdu.all_reduce %view_208 group 8 {rdu.layer = "backward.layers.5", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %23 = rdu.all_reduce %view_209 group 8 {rdu.layer = "backward.layers.5", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %22, %23 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_43, %mm_44, %mm_45, %view_208, %mm_46, %mm_47, %mm_48, %mm_49, %view_209, %add_22 = func.call @layer_backward(%add_21, %view_119, %p_model_model_layers_9_mlp_down_proj_weight, %_to_copy_51, %view_118, %view_117, %p_model_model_layers_9_mlp_up_proj_weight, %view_116, %view_115, %p_model_model_layers_9_mlp_gate_proj_weight, %p_model_model_layers_9_post_attention_layernorm_weight, %_to_copy_50, %_to_copy_49, %rsqrt_19, %view_114, %p_model_model_layers_9_self_attn_o_proj_weight, %view_112, %view_113, %_softmax_9, %logical_not_9, %view_111, %permute_9, %unsqueeze_19, %unsqueeze_18, %view_110, %p_model_model_layers_9_self_attn_v_proj_weight, %view_109, %p_model_model_layers_9_self_attn_k_proj_weight, %view_108, %p_model_model_layers_9_self_attn_q_proj_weight, %p_model_model_layers_9_input_layernorm_weight, %_to_copy_48, %_to_copy_47, %rsqrt_18) {rdu.layer = "backward.layers.6", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %22, %23 = rdu.kernel "k21"(%view_208, %view_209) {rdu.layer = "backward.layers.6"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_210: tensor<8192xbf16>, %view_211: tensor<8192xbf16>):
      %24 = rdu.all_reduce %view_210 group 8 {rdu.layer = "backward.layers.6", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %25 = rdu.all_reduce %view_211 group 8 {rdu.layer = "backward.layers.6", rdu.phase = #rdu<phase backward>, rdu.stage = 1 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %24, %25 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %24 = rdu.kernel "k22"(%add_22) : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
    ^bb0(%add_23: tensor<1x512x8192xbf16>):
      %25 = rdu.send_recv %add_23 from 1 to 0 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x512x8192xbf16> -> tensor<1x512x8192xbf16>
      rdu.yield %25 : tensor<1x512x8192xbf16>
    }
    %mm_50, %mm_51, %mm_52, %view_210, %mm_53, %mm_54, %mm_55, %mm_56, %view_211, %add_23 = func.call @layer_backward(%24, %view_107, %p_model_model_layers_8_mlp_down_proj_weight, %_to_copy_46, %view_106, %view_105, %p_model_model_layers_8_mlp_up_proj_weight, %view_104, %view_103, %p_model_model_layers_8_mlp_gate_proj_weight, %p_model_model_layers_8_post_attention_layernorm_weight, %_to_copy_45, %_to_copy_44, %rsqrt_17, %view_102, %p_model_model_layers_8_self_attn_o_proj_weight, %view_100, %view_101, %_softmax_8, %logical_not_8, %view_99, %permute_8, %unsqueeze_17, %unsqueeze_16, %view_98, %p_model_model_layers_8_self_attn_v_proj_weight, %view_97, %p_model_model_layers_8_self_attn_k_proj_weight, %view_96, %p_model_model_layers_8_self_attn_q_proj_weight, %p_model_model_layers_8_input_layernorm_weight, %_to_copy_43, %_to_copy_42, %rsqrt_16) {rdu.layer = "backward.layers.7", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %25, %26 = rdu.kernel "k23"(%view_210, %view_211) {rdu.layer = "backward.layers.7"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_212: tensor<8192xbf16>, %view_213: tensor<8192xbf16>):
      %27 = rdu.all_reduce %view_212 group 8 {rdu.layer = "backward.layers.7", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %28 = rdu.all_reduce %view_213 group 8 {rdu.layer = "backward.layers.7", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %27, %28 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_57, %mm_58, %mm_59, %view_212, %mm_60, %mm_61, %mm_62, %mm_63, %view_213, %add_24 = func.call @layer_backward(%add_23, %view_95, %p_model_model_layers_7_mlp_down_proj_weight, %_to_copy_41, %view_94, %view_93, %p_model_model_layers_7_mlp_up_proj_weight, %view_92, %view_91, %p_model_model_layers_7_mlp_gate_proj_weight, %p_model_model_layers_7_post_attention_layernorm_weight, %_to_copy_40, %_to_copy_39, %rsqrt_15, %view_90, %p_model_model_layers_7_self_attn_o_proj_weight, %view_88, %view_89, %_softmax_7, %logical_not_7, %view_87, %permute_7, %unsqueeze_15, %unsqueeze_14, %view_86, %p_model_model_layers_7_self_attn_v_proj_weight, %view_85, %p_model_model_layers_7_self_attn_k_proj_weight, %view_84, %p_model_model_layers_7_self_attn_q_proj_weight, %p_model_model_layers_7_input_layernorm_weight, %_to_copy_38, %_to_copy_37, %rsqrt_14) {rdu.layer = "backward.layers.8", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %27, %28 = rdu.kernel "k24"(%view_212, %view_213) {rdu.layer = "backward.layers.8"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_214: tensor<8192xbf16>, %view_215: tensor<8192xbf16>):
      %29 = rdu.all_reduce %view_214 group 8 {rdu.layer = "backward.layers.8", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %30 = rdu.all_reduce %view_215 group 8 {rdu.layer = "backward.layers.8", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %29, %30 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_64, %mm_65, %mm_66, %view_214, %mm_67, %mm_68, %mm_69, %mm_70, %view_215, %add_25 = func.call @layer_backward(%add_24, %view_83, %p_model_model_layers_6_mlp_down_proj_weight, %_to_copy_36, %view_82, %view_81, %p_model_model_layers_6_mlp_up_proj_weight, %view_80, %view_79, %p_model_model_layers_6_mlp_gate_proj_weight, %p_model_model_layers_6_post_attention_layernorm_weight, %_to_copy_35, %_to_copy_34, %rsqrt_13, %view_78, %p_model_model_layers_6_self_attn_o_proj_weight, %view_76, %view_77, %_softmax_6, %logical_not_6, %view_75, %permute_6, %unsqueeze_13, %unsqueeze_12, %view_74, %p_model_model_layers_6_self_attn_v_proj_weight, %view_73, %p_model_model_layers_6_self_attn_k_proj_weight, %view_72, %p_model_model_layers_6_self_attn_q_proj_weight, %p_model_model_layers_6_input_layernorm_weight, %_to_copy_33, %_to_copy_32, %rsqrt_12) {rdu.layer = "backward.layers.9", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %29, %30 = rdu.kernel "k25"(%view_214, %view_215) {rdu.layer = "backward.layers.9"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_216: tensor<8192xbf16>, %view_217: tensor<8192xbf16>):
      %31 = rdu.all_reduce %view_216 group 8 {rdu.layer = "backward.layers.9", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %32 = rdu.all_reduce %view_217 group 8 {rdu.layer = "backward.layers.9", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %31, %32 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_71, %mm_72, %mm_73, %view_216, %mm_74, %mm_75, %mm_76, %mm_77, %view_217, %add_26 = func.call @layer_backward(%add_25, %view_71, %p_model_model_layers_5_mlp_down_proj_weight, %_to_copy_31, %view_70, %view_69, %p_model_model_layers_5_mlp_up_proj_weight, %view_68, %view_67, %p_model_model_layers_5_mlp_gate_proj_weight, %p_model_model_layers_5_post_attention_layernorm_weight, %_to_copy_30, %_to_copy_29, %rsqrt_11, %view_66, %p_model_model_layers_5_self_attn_o_proj_weight, %view_64, %view_65, %_softmax_5, %logical_not_5, %view_63, %permute_5, %unsqueeze_11, %unsqueeze_10, %view_62, %p_model_model_layers_5_self_attn_v_proj_weight, %view_61, %p_model_model_layers_5_self_attn_k_proj_weight, %view_60, %p_model_model_layers_5_self_attn_q_proj_weight, %p_model_model_layers_5_input_layernorm_weight, %_to_copy_28, %_to_copy_27, %rsqrt_10) {rdu.layer = "backward.layers.10", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %31, %32 = rdu.kernel "k26"(%view_216, %view_217) {rdu.layer = "backward.layers.10"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_218: tensor<8192xbf16>, %view_219: tensor<8192xbf16>):
      %33 = rdu.all_reduce %view_218 group 8 {rdu.layer = "backward.layers.10", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %34 = rdu.all_reduce %view_219 group 8 {rdu.layer = "backward.layers.10", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %33, %34 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_78, %mm_79, %mm_80, %view_218, %mm_81, %mm_82, %mm_83, %mm_84, %view_219, %add_27 = func.call @layer_backward(%add_26, %view_59, %p_model_model_layers_4_mlp_down_proj_weight, %_to_copy_26, %view_58, %view_57, %p_model_model_layers_4_mlp_up_proj_weight, %view_56, %view_55, %p_model_model_layers_4_mlp_gate_proj_weight, %p_model_model_layers_4_post_attention_layernorm_weight, %_to_copy_25, %_to_copy_24, %rsqrt_9, %view_54, %p_model_model_layers_4_self_attn_o_proj_weight, %view_52, %view_53, %_softmax_4, %logical_not_4, %view_51, %permute_4, %unsqueeze_9, %unsqueeze_8, %view_50, %p_model_model_layers_4_self_attn_v_proj_weight, %view_49, %p_model_model_layers_4_self_attn_k_proj_weight, %view_48, %p_model_model_layers_4_self_attn_q_proj_weight, %p_model_model_layers_4_input_layernorm_weight, %_to_copy_23, %_to_copy_22, %rsqrt_8) {rdu.layer = "backward.layers.11", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %33, %34 = rdu.kernel "k27"(%view_218, %view_219) {rdu.layer = "backward.layers.11"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_220: tensor<8192xbf16>, %view_221: tensor<8192xbf16>):
      %35 = rdu.all_reduce %view_220 group 8 {rdu.layer = "backward.layers.11", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %36 = rdu.all_reduce %view_221 group 8 {rdu.layer = "backward.layers.11", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %35, %36 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_85, %mm_86, %mm_87, %view_220, %mm_88, %mm_89, %mm_90, %mm_91, %view_221, %add_28 = func.call @layer_backward(%add_27, %view_47, %p_model_model_layers_3_mlp_down_proj_weight, %_to_copy_21, %view_46, %view_45, %p_model_model_layers_3_mlp_up_proj_weight, %view_44, %view_43, %p_model_model_layers_3_mlp_gate_proj_weight, %p_model_model_layers_3_post_attention_layernorm_weight, %_to_copy_20, %_to_copy_19, %rsqrt_7, %view_42, %p_model_model_layers_3_self_attn_o_proj_weight, %view_40, %view_41, %_softmax_3, %logical_not_3, %view_39, %permute_3, %unsqueeze_7, %unsqueeze_6, %view_38, %p_model_model_layers_3_self_attn_v_proj_weight, %view_37, %p_model_model_layers_3_self_attn_k_proj_weight, %view_36, %p_model_model_layers_3_self_attn_q_proj_weight, %p_model_model_layers_3_input_layernorm_weight, %_to_copy_18, %_to_copy_17, %rsqrt_6) {rdu.layer = "backward.layers.12", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %35, %36 = rdu.kernel "k28"(%view_220, %view_221) {rdu.layer = "backward.layers.12"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_222: tensor<8192xbf16>, %view_223: tensor<8192xbf16>):
      %37 = rdu.all_reduce %view_222 group 8 {rdu.layer = "backward.layers.12", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %38 = rdu.all_reduce %view_223 group 8 {rdu.layer = "backward.layers.12", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %37, %38 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_92, %mm_93, %mm_94, %view_222, %mm_95, %mm_96, %mm_97, %mm_98, %view_223, %add_29 = func.call @layer_backward(%add_28, %view_35, %p_model_model_layers_2_mlp_down_proj_weight, %_to_copy_16, %view_34, %view_33, %p_model_model_layers_2_mlp_up_proj_weight, %view_32, %view_31, %p_model_model_layers_2_mlp_gate_proj_weight, %p_model_model_layers_2_post_attention_layernorm_weight, %_to_copy_15, %_to_copy_14, %rsqrt_5, %view_30, %p_model_model_layers_2_self_attn_o_proj_weight, %view_28, %view_29, %_softmax_2, %logical_not_2, %view_27, %permute_2, %unsqueeze_5, %unsqueeze_4, %view_26, %p_model_model_layers_2_self_attn_v_proj_weight, %view_25, %p_model_model_layers_2_self_attn_k_proj_weight, %view_24, %p_model_model_layers_2_self_attn_q_proj_weight, %p_model_model_layers_2_input_layernorm_weight, %_to_copy_13, %_to_copy_12, %rsqrt_4) {rdu.layer = "backward.layers.13", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %37, %38 = rdu.kernel "k29"(%view_222, %view_223) {rdu.layer = "backward.layers.13"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_224: tensor<8192xbf16>, %view_225: tensor<8192xbf16>):
      %39 = rdu.all_reduce %view_224 group 8 {rdu.layer = "backward.layers.13", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %40 = rdu.all_reduce %view_225 group 8 {rdu.layer = "backward.layers.13", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %39, %40 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_99, %mm_100, %mm_101, %view_224, %mm_102, %mm_103, %mm_104, %mm_105, %view_225, %add_30 = func.call @layer_backward(%add_29, %view_23, %p_model_model_layers_1_mlp_down_proj_weight, %_to_copy_11, %view_22, %view_21, %p_model_model_layers_1_mlp_up_proj_weight, %view_20, %view_19, %p_model_model_layers_1_mlp_gate_proj_weight, %p_model_model_layers_1_post_attention_layernorm_weight, %_to_copy_10, %_to_copy_9, %rsqrt_3, %view_18, %p_model_model_layers_1_self_attn_o_proj_weight, %view_16, %view_17, %_softmax_1, %logical_not_1, %view_15, %permute_1, %unsqueeze_3, %unsqueeze_2, %view_14, %p_model_model_layers_1_self_attn_v_proj_weight, %view_13, %p_model_model_layers_1_self_attn_k_proj_weight, %view_12, %p_model_model_layers_1_self_attn_q_proj_weight, %p_model_model_layers_1_input_layernorm_weight, %_to_copy_8, %_to_copy_7, %rsqrt_2) {rdu.layer = "backward.layers.14", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %39, %40 = rdu.kernel "k30"(%view_224, %view_225) {rdu.layer = "backward.layers.14"} : (tensor<8192xbf16>, tensor<8192xbf16>) -> (tensor<8192xbf16>, tensor<8192xbf16>) {
    ^bb0(%view_226: tensor<8192xbf16>, %view_227: tensor<8192xbf16>):
      %41 = rdu.all_reduce %view_226 group 8 {rdu.layer = "backward.layers.14", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %42 = rdu.all_reduce %view_227 group 8 {rdu.layer = "backward.layers.14", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      rdu.yield %41, %42 : tensor<8192xbf16>, tensor<8192xbf16>
    }
    %mm_106, %mm_107, %mm_108, %view_226, %mm_109, %mm_110, %mm_111, %mm_112, %view_227, %add_31 = func.call @layer_backward(%add_30, %view_11, %p_model_model_layers_0_mlp_down_proj_weight, %_to_copy_6, %view_10, %view_9, %p_model_model_layers_0_mlp_up_proj_weight, %view_8, %view_7, %p_model_model_layers_0_mlp_gate_proj_weight, %p_model_model_layers_0_post_attention_layernorm_weight, %_to_copy_5, %_to_copy_4, %rsqrt_1, %view_6, %p_model_model_layers_0_self_attn_o_proj_weight, %view_4, %view_5, %_softmax, %logical_not, %view_3, %permute, %unsqueeze_1, %unsqueeze, %view_2, %p_model_model_layers_0_self_attn_v_proj_weight, %view_1, %p_model_model_layers_0_self_attn_k_proj_weight, %view, %p_model_model_layers_0_self_attn_q_proj_weight, %p_model_model_layers_0_input_layernorm_weight, %_to_copy_3, %_to_copy_2, %rsqrt) {rdu.layer = "backward.layers.15", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<4096x1024xbf16>, tensor<8192x1024xbf16>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<1x8x4096x4096xf32>, tensor<1x1x4096x4096xi1>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>)
    %41, %42, %43, %index_put = rdu.kernel "k31"(%view_226, %view_227, %add_31, %labels) {rdu.layer = "backward.layers.15"} : (tensor<8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x4096xi64>) -> (tensor<8192xbf16>, tensor<8192xbf16>, tensor<4096x8192xf32>, tensor<4096x8192xi64>) {
    ^bb0(%view_228: tensor<8192xbf16>, %view_229: tensor<8192xbf16>, %add_32: tensor<1x512x8192xbf16>, %labels_1: tensor<1x4096xi64>):
      %44 = rdu.all_reduce %view_228 group 8 {rdu.layer = "backward.layers.15", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %45 = rdu.all_reduce %view_229 group 8 {rdu.layer = "backward.layers.15", rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64, rdu.deferred} : tensor<8192xbf16> -> tensor<8192xbf16>
      %bitwise_and_1 = rdu.map %labels_1, %labels_1, %labels_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096xi64>, tensor<1x4096xi64>, tensor<1x4096xi64>) -> tensor<1x4096xi1> {
      ^bb0(%46: i64, %47: i64, %48: i64):
        %49 = arith.constant -1 : i64
        %50 = arith.cmpi ne, %48, %49 : i64
        %51 = arith.constant 128256 : i64
        %52 = arith.cmpi slt, %47, %51 : i64
        %53 = arith.constant 0 : i64
        %54 = arith.cmpi sge, %46, %53 : i64
        %55 = arith.andi %54, %52 : i1
        %56 = arith.andi %55, %50 : i1
        rdu.yield %56 : i1
      }
      %unsqueeze_32 = rdu.reshape %bitwise_and_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096xi1> -> tensor<1x4096x1xi1>
      %bitwise_not = rdu.map %unsqueeze_32 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096x1xi1>) -> tensor<1x4096x1xi1> {
      ^bb0(%46: i1):
        %47 = arith.constant true
        %48 = arith.xori %46, %47 : i1
        rdu.yield %48 : i1
      }
      %46 = rdu.local_part %bitwise_not dim 1 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096x1xi1> -> tensor<1x512x1xi1>
      %where = rdu.map %46, %add_32 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x512x1xi1>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%47: i1, %48: bf16):
        %49 = arith.extf %48 : bf16 to f32
        %50 = arith.constant 0.000000e+00 : f32
        %51 = arith.select %47, %50, %49 : f32
        rdu.yield %51 : f32
      }
      %index_put_1 = rdu.map %labels_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<1x4096xi64>) -> tensor<1x4096xi64> {
      ^bb0(%47: i64):
        %48 = arith.constant -128256 : i64
        %49 = arith.constant 128255 : i64
        %50 = arith.maxsi %47, %48 : i64
        %51 = arith.minsi %50, %49 : i64
        %52 = arith.constant 0 : i64
        %53 = arith.constant true
        %54 = arith.constant 128256 : i64
        %55 = arith.cmpi slt, %51, %52 : i64
        %56 = arith.addi %51, %54 : i64
        %57 = arith.select %55, %56, %51 : i64
        %58 = arith.cmpi sge, %57, %52 : i64
        %59 = arith.cmpi slt, %57, %54 : i64
        %60 = arith.andi %58, %59 : i1
        %61 = arith.andi %53, %60 : i1
        %62 = arith.constant 1 : i64
        %63 = arith.muli %57, %62 : i64
        %64 = arith.addi %52, %63 : i64
        %65 = arith.constant -1 : i64
        %66 = arith.select %61, %64, %65 : i64
        rdu.yield %66 : i64
      }
      %index_put_2 = rdu.reshape %where {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x512x8192xf32> -> tensor<512x8192xf32>
      %47 = rdu.all_gather %index_put_2 dim 0 group 8 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<512x8192xf32> -> tensor<4096x8192xf32>
      %index_put_3 = rdu.reshape %index_put_1 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<1x4096xi64> -> tensor<4096x1xi64>
      %index_put_4 = rdu.broadcast %index_put_3 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<4096x1xi64> -> tensor<4096x8192xi64>
      rdu.yield %44, %45, %47, %index_put_4 : tensor<8192xbf16>, tensor<8192xbf16>, tensor<4096x8192xf32>, tensor<4096x8192xi64>
    }
    %_to_copy_87 = rdu.kernel "k32"(%index_put, %43) : (tensor<4096x8192xi64>, tensor<4096x8192xf32>) -> tensor<128256x8192xbf16> {
    ^bb0(%index_put_1: tensor<4096x8192xi64>, %44: tensor<4096x8192xf32>):
      %full = rdu.map {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : () -> tensor<128256x8192xf32> {
        %45 = arith.constant 0.000000e+00 : f32
        rdu.yield %45 : f32
      }
      %index_put_2 = rdu.scatter %full[%index_put_1] = %44 dim 0 reduce sum {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : tensor<128256x8192xf32>, tensor<4096x8192xi64>, tensor<4096x8192xf32> -> tensor<128256x8192xf32>
      %_to_copy_88 = rdu.map %index_put_2 {rdu.phase = #rdu<phase backward>, rdu.stage = 0 : i64} : (tensor<128256x8192xf32>) -> tensor<128256x8192xbf16> {
      ^bb0(%45: f32):
        %46 = arith.truncf %45 : f32 to bf16
        rdu.yield %46 : bf16
      }
      rdu.yield %_to_copy_88 : tensor<128256x8192xbf16>
    }
    func.return %div, %_to_copy_87, %mm_112, %mm_111, %mm_110, %mm_109, %mm_108, %mm_107, %mm_106, %42, %41, %mm_105, %mm_104, %mm_103, %mm_102, %mm_101, %mm_100, %mm_99, %40, %39, %mm_98, %mm_97, %mm_96, %mm_95, %mm_94, %mm_93, %mm_92, %38, %37, %mm_91, %mm_90, %mm_89, %mm_88, %mm_87, %mm_86, %mm_85, %36, %35, %mm_84, %mm_83, %mm_82, %mm_81, %mm_80, %mm_79, %mm_78, %34, %33, %mm_77, %mm_76, %mm_75, %mm_74, %mm_73, %mm_72, %mm_71, %32, %31, %mm_70, %mm_69, %mm_68, %mm_67, %mm_66, %mm_65, %mm_64, %30, %29, %mm_63, %mm_62, %mm_61, %mm_60, %mm_59, %mm_58, %mm_57, %28, %27, %mm_56, %mm_55, %mm_54, %mm_53, %mm_52, %mm_51, %mm_50, %26, %25, %mm_49, %mm_48, %mm_47, %mm_46, %mm_45, %mm_44, %mm_43, %23, %22, %mm_42, %mm_41, %mm_40, %mm_39, %mm_38, %mm_37, %mm_36, %21, %20, %mm_35, %mm_34, %mm_33, %mm_32, %mm_31, %mm_30, %mm_29, %19, %18, %mm_28, %mm_27, %mm_26, %mm_25, %mm_24, %mm_23, %mm_22, %17, %16, %mm_21, %mm_20, %mm_19, %mm_18, %mm_17, %mm_16, %mm_15, %15, %14, %mm_14, %mm_13, %mm_12, %mm_11, %mm_10, %mm_9, %mm_8, %13, %12, %mm_7, %mm_6, %mm_5, %mm_4, %mm_3, %mm_2, %mm_1, %11, %10, %9, %mm : tensor<f32>, tensor<128256x8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<1024x8192xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<8192x1024xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192x3584xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<8192xbf16>, tensor<16032x8192xbf16>
  }
  func.func private @layer_backward(%_to_copy: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %view: tensor<4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_15_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_1: tensor<1x4096x3584xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_1: tensor<1x4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_2: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_15_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_3: tensor<1x4096x3584xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(2, 8, 1)>}, %view_4: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_15_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %_to_copy_2: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_3: tensor<1x512x8192xf32> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %rsqrt: tensor<1x512x1xf32> {rdu.input = "rsqrt", rdu.shard = #rdu.split<(1, 8, 1)>}, %view_5: tensor<4096x1024xbf16> {rdu.input = "view", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_15_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %view_6: tensor<8x4096x4096xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %view_7: tensor<8x4096x128xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %_softmax: tensor<1x8x4096x4096xf32> {rdu.input = "_softmax", rdu.shard = #rdu.split<(1, 8, 1)>}, %logical_not: tensor<1x1x4096x4096xi1> {rdu.input = "logical_not"}, %view_8: tensor<8x4096x128xf32> {rdu.input = "view", rdu.shard = #rdu.split<(0, 8, 1)>}, %permute: tensor<8x4096x128xf32> {rdu.input = "permute", rdu.shard = #rdu.split<(0, 8, 1)>}, %unsqueeze: tensor<1x1x4096x128xbf16> {rdu.input = "unsqueeze"}, %unsqueeze_1: tensor<1x1x4096x128xbf16> {rdu.input = "unsqueeze"}, %view_9: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_15_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_10: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_15_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %view_11: tensor<4096x8192xbf16> {rdu.input = "view"}, %p_model_model_layers_15_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_15_input_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %_to_copy_4: tensor<1x512x8192xbf16> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %_to_copy_5: tensor<1x512x8192xf32> {rdu.input = "_to_copy", rdu.shard = #rdu.split<(1, 8, 1)>}, %rsqrt_1: tensor<1x512x1xf32> {rdu.input = "rsqrt", rdu.shard = #rdu.split<(1, 8, 1)>}) -> (tensor<8192x3584xbf16>, tensor<3584x8192xbf16>, tensor<3584x8192xbf16>, tensor<8192xbf16>, tensor<8192x1024xbf16>, tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1024x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) attributes {rdu.outlined_from = "backward.layers.0", rdu.calls = 16 : i64, rdu.result_shards = [#rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>]} {
    %view_12, %mm = rdu.kernel "k0"(%_to_copy, %view) {rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<4096x3584xbf16>) -> (tensor<4096x8192xbf16>, tensor<8192x3584xbf16>) {
    ^bb0(%_to_copy_6: tensor<1x512x8192xbf16>, %view_13: tensor<4096x3584xbf16>):
      %0 = rdu.all_gather %_to_copy_6 dim 1 group 8 {rdu.layer = "backward.layers.0", rdu.phase = #rdu<phase backward>} : tensor<1x512x8192xbf16> -> tensor<1x4096x8192xbf16>
      %view_14 = rdu.reshape %0 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x8192xbf16> -> tensor<4096x8192xbf16>
      %permute_1 = rdu.transpose %view_14 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<8192x4096xbf16>
      %mm_1 = rdu.matmul %permute_1, %view_13 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<8192x4096xbf16>, tensor<4096x3584xbf16> -> tensor<8192x3584xbf16>
      rdu.yield %view_14, %mm_1 : tensor<4096x8192xbf16>, tensor<8192x3584xbf16>
    }
    %mul, %view_13 = rdu.kernel "k1"(%view_12, %p_model_model_layers_15_mlp_down_proj_weight, %_to_copy_1, %view_1) {rdu.layer = "backward.layers.0"} : (tensor<4096x8192xbf16>, tensor<8192x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> (tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>) {
    ^bb0(%view_14: tensor<4096x8192xbf16>, %p_model_model_layers_15_mlp_down_proj_weight_1: tensor<8192x3584xbf16>, %_to_copy_6: tensor<1x4096x3584xbf16>, %view_15: tensor<1x4096x3584xbf16>):
      %mm_1 = rdu.matmul %view_14, %p_model_model_layers_15_mlp_down_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16>, tensor<8192x3584xbf16> -> tensor<4096x3584xbf16>
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
    %view_14, %view_15 = rdu.kernel "k3"(%view_13, %p_model_model_layers_15_mlp_up_proj_weight, %mul, %view_3) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>) -> (tensor<1x4096x8192xbf16>, tensor<4096x3584xbf16>) {
    ^bb0(%view_16: tensor<4096x3584xbf16>, %p_model_model_layers_15_mlp_up_proj_weight_1: tensor<3584x8192xbf16>, %mul_1: tensor<1x4096x3584xbf16>, %view_17: tensor<1x4096x3584xbf16>):
      %mm_2 = rdu.matmul %view_16, %p_model_model_layers_15_mlp_up_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16>, tensor<3584x8192xbf16> -> tensor<4096x8192xbf16>
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
    %mul_1, %sum = rdu.kernel "k5"(%view_15, %p_model_model_layers_15_mlp_gate_proj_weight, %view_14, %p_model_model_layers_15_post_attention_layernorm_weight, %_to_copy_2) {rdu.layer = "backward.layers.0"} : (tensor<4096x3584xbf16>, tensor<3584x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>) -> (tensor<1x512x8192xbf16>, tensor<1x1x8192xbf16>) {
    ^bb0(%view_16: tensor<4096x3584xbf16>, %p_model_model_layers_15_mlp_gate_proj_weight_1: tensor<3584x8192xbf16>, %view_17: tensor<1x4096x8192xbf16>, %p_model_model_layers_15_post_attention_layernorm_weight_1: tensor<8192xbf16>, %_to_copy_6: tensor<1x512x8192xbf16>):
      %mm_3 = rdu.matmul %view_16, %p_model_model_layers_15_mlp_gate_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x3584xbf16>, tensor<3584x8192xbf16> -> tensor<4096x8192xbf16>
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
      %mul_2 = rdu.map %0, %p_model_model_layers_15_post_attention_layernorm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %mul_3 = rdu.map %0, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %sum_1 = rdu.reduce sum %mul_3 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      rdu.yield %mul_2, %sum_1 : tensor<1x512x8192xbf16>, tensor<1x1x8192xbf16>
    }
    %view_16, %add, %view_17, %mm_3 = rdu.kernel "k6"(%sum, %mul_1, %_to_copy_3, %rsqrt, %_to_copy, %view_5) {rdu.layer = "backward.layers.0"} : (tensor<1x1x8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x1024xbf16>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<8192x1024xbf16>) {
    ^bb0(%sum_1: tensor<1x1x8192xbf16>, %mul_2: tensor<1x512x8192xbf16>, %_to_copy_6: tensor<1x512x8192xf32>, %rsqrt_2: tensor<1x512x1xf32>, %_to_copy_7: tensor<1x512x8192xbf16>, %view_18: tensor<4096x1024xbf16>):
      %view_19 = rdu.reshape %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_8 = rdu.map %mul_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: bf16):
        %1 = arith.extf %0 : bf16 to f32
        rdu.yield %1 : f32
      }
      %mul_3 = rdu.map %_to_copy_8, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %sum_2 = rdu.reduce sum %mul_3 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_4 = rdu.map %rsqrt_2, %sum_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
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
      %expand = rdu.broadcast %mul_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
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
    %view_18 = rdu.kernel "k7"(%view_17, %p_model_model_layers_15_self_attn_o_proj_weight) {rdu.layer = "backward.layers.0"} : (tensor<4096x8192xbf16>, tensor<8192x1024xbf16>) -> tensor<8x4096x128xf32> {
    ^bb0(%view_19: tensor<4096x8192xbf16>, %p_model_model_layers_15_self_attn_o_proj_weight_1: tensor<8192x1024xbf16>):
      %mm_4 = rdu.matmul %view_19, %p_model_model_layers_15_self_attn_o_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16>, tensor<8192x1024xbf16> -> tensor<4096x1024xbf16>
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
      %mul_2 = rdu.map %view_21, %_softmax_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x4096xf32>, tensor<1x8x4096x4096xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      %sum_1 = rdu.reduce sum %mul_2 dims [3] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<1x8x4096x1xf32>
      %mul_3 = rdu.map %logical_not_1, %mul_2, %_softmax_1, %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<1x8x4096x4096xf32>, tensor<1x8x4096x1xf32>) -> tensor<1x8x4096x4096xf32> {
      ^bb0(%0: i1, %1: f32, %2: f32, %3: f32):
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.subf %1, %4 : f32
        %6 = arith.constant 0.000000e+00 : f32
        %7 = arith.select %0, %6, %5 : f32
        %8 = arith.constant 0.0883883461 : f32
        %9 = arith.mulf %7, %8 : f32
        rdu.yield %9 : f32
      }
      %view_22 = rdu.reshape %mul_3 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x4096xf32> -> tensor<8x4096x4096xf32>
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
    %mm_4, %mm_5, %add_1, %view_22 = rdu.kernel "k11"(%bmm_1, %view_19, %view_21, %unsqueeze, %unsqueeze_1, %view_9, %p_model_model_layers_15_self_attn_v_proj_weight, %view_10, %p_model_model_layers_15_self_attn_k_proj_weight) {rdu.layer = "backward.layers.0"} : (tensor<8x128x4096xf32>, tensor<1x8x4096x128xf32>, tensor<1x8x4096x128xf32>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>, tensor<4096x8192xbf16>, tensor<128x8192xbf16>) -> (tensor<128x8192xbf16>, tensor<128x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<4096x1024xbf16>) {
    ^bb0(%bmm_2: tensor<8x128x4096xf32>, %view_23: tensor<1x8x4096x128xf32>, %view_24: tensor<1x8x4096x128xf32>, %unsqueeze_2: tensor<1x1x4096x128xbf16>, %unsqueeze_3: tensor<1x1x4096x128xbf16>, %view_25: tensor<4096x8192xbf16>, %p_model_model_layers_15_self_attn_v_proj_weight_1: tensor<128x8192xbf16>, %view_26: tensor<4096x8192xbf16>, %p_model_model_layers_15_self_attn_k_proj_weight_1: tensor<128x8192xbf16>):
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
      %sum_1 = rdu.reduce sum %view_27 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %view_28 = rdu.reshape %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x1x8x4096x128xbf16>
      %sum_2 = rdu.reduce sum %view_28 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8x4096x128xbf16> -> tensor<1x1x1x4096x128xbf16>
      %squeeze = rdu.reshape %sum_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x1x4096x128xbf16>
      %mul_2 = rdu.map %squeeze, %unsqueeze_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x1x4096x128xbf16> {
      ^bb0(%0: bf16, %1: bf16):
        %2 = arith.extf %0 : bf16 to f32
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.mulf %2, %3 : f32
        %5 = arith.truncf %4 : f32 to bf16
        rdu.yield %5 : bf16
      }
      %slice = rdu.slice %mul_2 offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x1x4096x64xbf16>
      %slice_1 = rdu.slice %mul_2 offsets [0, 0, 0, 64] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x1x4096x64xbf16>
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
      %mul_3 = rdu.map %_to_copy_8, %unsqueeze_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x8x4096x128xbf16>, tensor<1x1x4096x128xbf16>) -> tensor<1x8x4096x128xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %slice_2 = rdu.slice %mul_3 offsets [0, 0, 0, 0] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x8x4096x64xbf16>
      %slice_3 = rdu.slice %mul_3 offsets [0, 0, 0, 64] strides [1, 1, 1, 1] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x8x4096x128xbf16> -> tensor<1x8x4096x64xbf16>
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
      %permute_3 = rdu.reshape %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %permute_4 = rdu.transpose %permute_3 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<4096x1x128xbf16>
      %view_29 = rdu.reshape %permute_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<4096x128xbf16>
      %permute_5 = rdu.transpose %view_29 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16> -> tensor<128x4096xbf16>
      %mm_6 = rdu.matmul %permute_5, %view_25 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<128x4096xbf16>, tensor<4096x8192xbf16> -> tensor<128x8192xbf16>
      %mm_7 = rdu.matmul %view_29, %p_model_model_layers_15_self_attn_v_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16>, tensor<128x8192xbf16> -> tensor<4096x8192xbf16>
      %view_30 = rdu.reshape %mm_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x8192xbf16> -> tensor<1x4096x8192xbf16>
      %permute_6 = rdu.reshape %add_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x4096x128xbf16> -> tensor<1x4096x128xbf16>
      %permute_7 = rdu.transpose %permute_6 perm [1, 0, 2] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x4096x128xbf16> -> tensor<4096x1x128xbf16>
      %view_31 = rdu.reshape %permute_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1x128xbf16> -> tensor<4096x128xbf16>
      %permute_8 = rdu.transpose %view_31 perm [1, 0] {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16> -> tensor<128x4096xbf16>
      %mm_8 = rdu.matmul %permute_8, %view_26 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<128x4096xbf16>, tensor<4096x8192xbf16> -> tensor<128x8192xbf16>
      %mm_9 = rdu.matmul %view_31, %p_model_model_layers_15_self_attn_k_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x128xbf16>, tensor<128x8192xbf16> -> tensor<4096x8192xbf16>
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
    %view_23, %add_2 = rdu.kernel "k13"(%view_22, %p_model_model_layers_15_self_attn_q_proj_weight, %add_1, %p_model_model_layers_15_input_layernorm_weight, %_to_copy_4, %_to_copy_5, %rsqrt_1, %add) {rdu.layer = "backward.layers.0"} : (tensor<4096x1024xbf16>, tensor<1024x8192xbf16>, tensor<1x4096x8192xbf16>, tensor<8192xbf16>, tensor<1x512x8192xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>) -> (tensor<8192xbf16>, tensor<1x512x8192xbf16>) {
    ^bb0(%view_24: tensor<4096x1024xbf16>, %p_model_model_layers_15_self_attn_q_proj_weight_1: tensor<1024x8192xbf16>, %add_3: tensor<1x4096x8192xbf16>, %p_model_model_layers_15_input_layernorm_weight_1: tensor<8192xbf16>, %_to_copy_6: tensor<1x512x8192xbf16>, %_to_copy_7: tensor<1x512x8192xf32>, %rsqrt_2: tensor<1x512x1xf32>, %add_4: tensor<1x512x8192xbf16>):
      %mm_7 = rdu.matmul %view_24, %p_model_model_layers_15_self_attn_q_proj_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<4096x1024xbf16>, tensor<1024x8192xbf16> -> tensor<4096x8192xbf16>
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
      %mul_2 = rdu.map %0, %_to_copy_6 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<1x512x8192xbf16>) -> tensor<1x512x8192xbf16> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        rdu.yield %6 : bf16
      }
      %sum_1 = rdu.reduce sum %mul_2 dims [0, 1] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xbf16> -> tensor<1x1x8192xbf16>
      %view_26 = rdu.reshape %sum_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x1x8192xbf16> -> tensor<8192xbf16>
      %_to_copy_8 = rdu.map %0, %p_model_model_layers_15_input_layernorm_weight_1 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xbf16>, tensor<8192xbf16>) -> tensor<1x512x8192xf32> {
      ^bb0(%1: bf16, %2: bf16):
        %3 = arith.extf %1 : bf16 to f32
        %4 = arith.extf %2 : bf16 to f32
        %5 = arith.mulf %3, %4 : f32
        %6 = arith.truncf %5 : f32 to bf16
        %7 = arith.extf %6 : bf16 to f32
        rdu.yield %7 : f32
      }
      %mul_3 = rdu.map %_to_copy_8, %_to_copy_7 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x8192xf32>, tensor<1x512x8192xf32>) -> tensor<1x512x8192xf32> {
      ^bb0(%1: f32, %2: f32):
        %3 = arith.mulf %1, %2 : f32
        rdu.yield %3 : f32
      }
      %sum_2 = rdu.reduce sum %mul_3 dims [2] keepdim {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x8192xf32> -> tensor<1x512x1xf32>
      %mul_4 = rdu.map %rsqrt_2, %sum_2 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : (tensor<1x512x1xf32>, tensor<1x512x1xf32>) -> tensor<1x512x1xf32> {
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
      %expand = rdu.broadcast %mul_4 {rdu.phase = #rdu<phase backward>, rdu.layer = "backward.layers.0"} : tensor<1x512x1xf32> -> tensor<1x512x8192xf32>
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
  func.func private @layer_forward(%embedding: tensor<1x512x8192xbf16> {rdu.input = "embedding", rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_input_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %p_model_model_layers_0_self_attn_q_proj_weight: tensor<1024x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_k_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_self_attn_v_proj_weight: tensor<128x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %_to_copy: tensor<1x4096x128xbf16> {rdu.value}, %_to_copy_1: tensor<1x4096x128xbf16> {rdu.value}, %bitwise_and: tensor<1x1x4096x4096xi1> {rdu.value}, %p_model_model_layers_0_self_attn_o_proj_weight: tensor<8192x1024xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}, %p_model_model_layers_0_post_attention_layernorm_weight: tensor<8192xbf16> {rdu.weight}, %p_model_model_layers_0_mlp_gate_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_up_proj_weight: tensor<3584x8192xbf16> {rdu.weight, rdu.shard = #rdu.split<(0, 8, 1)>}, %p_model_model_layers_0_mlp_down_proj_weight: tensor<8192x3584xbf16> {rdu.weight, rdu.shard = #rdu.split<(1, 8, 1)>}) -> (tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x1x4096x128xbf16>, tensor<1x1x4096x128xbf16>, tensor<8x4096x128xf32>, tensor<8x4096x128xf32>, tensor<1x1x4096x4096xi1>, tensor<1x8x4096x4096xf32>, tensor<8x4096x4096xf32>, tensor<8x4096x128xf32>, tensor<4096x1024xbf16>, tensor<1x512x8192xf32>, tensor<1x512x1xf32>, tensor<1x512x8192xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x8192xbf16>, tensor<1x4096x3584xbf16>, tensor<4096x3584xbf16>, tensor<1x512x8192xbf16>) attributes {rdu.outlined_from = "forward.layers.0", rdu.calls = 16 : i64, rdu.result_shards = [#rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<>, #rdu.split<(1, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(0, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<>, #rdu.split<(2, 8, 1)>, #rdu.split<(2, 8, 1)>, #rdu.split<>, #rdu.split<(2, 8, 1)>, #rdu.split<(1, 8, 1)>, #rdu.split<(1, 8, 1)>]} {
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
