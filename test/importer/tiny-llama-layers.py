# Tiny Llama's two decoder layers imported once (compiler/frontend/layer_reuse.py, as
# the -O pipelines do): the first layer's nodes become @layer, each layer a call
# with its own weights; the IR rdu-outline-layers gives after an inline import.
# RUN: %python %s | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import models
from rducc.driver import module_text
from rducc.frontend.importer import decompose, import_program

model, inputs = models.tiny_llama()
print(module_text(import_program(decompose(models.export(model, inputs)), outline_layers=True)))

# CHECK:      func.func @forward(%input_ids: tensor<1x8xi64>
# CHECK:      %embedding = rdu.gather
# CHECK:      = func.call @layer(%embedding, %p_model_model_layers_0_input_layernorm_weight, {{.*}}) {rdu.layer = "model.model.layers.0"} : ({{.*}}) -> tensor<1x8x64xf32> loc(
# CHECK-NOT:  rdu.matmul
# CHECK:      = func.call @layer(%{{.*}}, %p_model_model_layers_1_input_layernorm_weight, {{.*}}) {rdu.layer = "model.model.layers.1"}
# CHECK:      func.return %{{.*}} : tensor<1x8x256xf32>
# CHECK:      func.func private @layer(%embedding: tensor<1x8x64xf32> {rdu.input = "embedding"}{{.*}}, %p_model_model_layers_0_input_layernorm_weight: tensor<64xf32> {rdu.weight}
# CHECK-SAME: attributes {rdu.outlined_from = "model.model.layers.0", rdu.calls = 2 : i64}
# CHECK:      rdu.matmul {{.*}} {rdu.layer = "model.model.layers.0"}
# CHECK-NOT:  rdu.layer = "model.model.layers.1"
# CHECK:      func.return
