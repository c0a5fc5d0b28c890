# Import of a tiny Llama (transformers, random init from a config): embedding
# as a gather, RMS norm, rotary embedding, GQA attention with softmax; and the
# same export's two decoder layers imported once (compiler/frontend/layer_reuse.py,
# as the -O pipelines do): the first layer's nodes become @layer, each layer a call
# with its own weights; the IR rdu-outline-layers gives after an inline import.
# One export and decomposition for both imports (each costs seconds of CPU).
# RUN: %python %s %t
# RUN: filecheck %s --check-prefix=CHECK < %t.inline.mlir
# RUN: filecheck %s --check-prefix=LAYERS < %t.layers.mlir

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import models
from rducc.driver import import_exported, module_text
from rducc.frontend.importer import decompose, import_program

model, inputs = models.tiny_llama()
exported = models.export(model, inputs)
Path(sys.argv[1] + ".inline.mlir").write_text(module_text(import_exported(exported)))
Path(sys.argv[1] + ".layers.mlir").write_text(module_text(import_program(decompose(exported), outline_layers=True)))

# CHECK:      tier.global @model.model.embed_tokens.weight : tensor<256x64xf32> {kind = "parameter"}
# CHECK:      func.func @forward(%input_ids: tensor<1x8xi64>
# CHECK:      %embedding = rdu.gather %p_model_model_embed_tokens_weight[%input_ids] dim 0 : tensor<256x64xf32>, tensor<1x8xi64> -> tensor<1x8x64xf32> loc("{{.*}}modeling_llama.py":{{[0-9]+}}:{{[0-9]+}})
# CHECK:      rdu.iota start 0 step 1 {{.*}}: tensor<8xi64>
# rotary embedding tables
# CHECK:        math.cos
# CHECK:        math.sin
# RMS norm: mean of squares, then rsqrt
# CHECK:      rdu.reduce sum %{{.*}} dims [2] keepdim {rdu.layer = "model.model.layers.0"} : tensor<1x8x64xf32> -> tensor<1x8x1xf32>
# CHECK:        math.rsqrt
# attention scores and softmax
# CHECK:      rdu.matmul %{{.*}} {rdu.layer = "model.model.layers.0"} : tensor<4x8x16xf32>, tensor<4x16x8xf32> -> tensor<4x8x8xf32>
# CHECK:      rdu.reduce max %{{.*}} dims [3] keepdim {{.*}}: tensor<1x4x8x8xf32> -> tensor<1x4x8x1xf32>
# CHECK:        math.exp
# CHECK:      func.return %{{.*}} : tensor<1x8x256xf32>

# LAYERS:      func.func @forward(%input_ids: tensor<1x8xi64>
# LAYERS:      %embedding = rdu.gather
# LAYERS:      = func.call @layer(%embedding, %p_model_model_layers_0_input_layernorm_weight, {{.*}}) {rdu.layer = "model.model.layers.0"} : ({{.*}}) -> tensor<1x8x64xf32> loc(
# LAYERS-NOT:  rdu.matmul
# LAYERS:      = func.call @layer(%{{.*}}, %p_model_model_layers_1_input_layernorm_weight, {{.*}}) {rdu.layer = "model.model.layers.1"}
# LAYERS:      func.return %{{.*}} : tensor<1x8x256xf32>
# LAYERS:      func.func private @layer(%embedding: tensor<1x8x64xf32> {rdu.input = "embedding"}{{.*}}, %p_model_model_layers_0_input_layernorm_weight: tensor<64xf32> {rdu.weight}
# LAYERS-SAME: attributes {rdu.outlined_from = "model.model.layers.0", rdu.calls = 2 : i64}
# LAYERS:      rdu.matmul {{.*}} {rdu.layer = "model.model.layers.0"}
# LAYERS-NOT:  rdu.layer = "model.model.layers.1"
# LAYERS:      func.return
