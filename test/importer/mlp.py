# Import of the MLP: weights become globals and trailing @forward arguments,
# linear becomes transpose + matmul + bias map, gelu an erf map body.
# RUN: %python %s | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import models
from rducc.driver import import_exported, module_text

model, inputs = models.mlp()
print(module_text(import_exported(models.export(model, inputs))))

# CHECK:      builtin.module attributes {rdu.level = #rdu<level graph>} {
# CHECK-NEXT:   tier.global @fc1.weight : tensor<64x32xf32> {kind = "parameter"}
# CHECK-NEXT:   tier.global @fc1.bias : tensor<64xf32> {kind = "parameter"}
# CHECK:        func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"} {{.*}}, %p_fc1_weight: tensor<64x32xf32> {rdu.global = @fc1.weight}
# CHECK-SAME:     -> tensor<4x10xf32>
# CHECK:        %permute = rdu.transpose %p_fc1_weight perm [1, 0] : tensor<64x32xf32> -> tensor<32x64xf32> loc("{{.*}}examples/models.py":23:9)
# CHECK-NEXT:   %addmm = rdu.matmul %x, %permute : tensor<4x32xf32>, tensor<32x64xf32> -> tensor<4x64xf32>
# CHECK-NEXT:   %addmm_1 = rdu.map %p_fc1_bias, %addmm : (tensor<64xf32>, tensor<4x64xf32>) -> tensor<4x64xf32> {
# CHECK:          arith.addf
# CHECK:        %relu = rdu.map %addmm_1
# CHECK:          arith.maximumf
# CHECK:        %gelu = rdu.map
# CHECK:          math.erf
# CHECK:        func.return %{{.*}} : tensor<4x10xf32> loc("output")
