# Import of a tiny Llama (transformers, random init from a config): embedding
# as a gather, RMS norm, rotary embedding, GQA attention with softmax.
# RUN: %python %s | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import models
from rducc.driver import import_exported, module_text

model, inputs = models.tiny_llama()
print(module_text(import_exported(models.export(model, inputs))))

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
