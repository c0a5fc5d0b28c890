# Import of the small CNN: conv with stride/padding, inference batch norm as
# one map with rsqrt, max pool, and adaptive average pool as a mean.
# RUN: %python %s | filecheck %s

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

import models
from rducc.driver import import_exported, module_text

model, inputs = models.cnn()
print(module_text(import_exported(models.export(model, inputs)), locations=False))

# CHECK:      func.func @forward(%x: tensor<2x3x16x16xf32>
# CHECK:      %convolution = rdu.conv %x, %p_conv1_weight stride [2, 2] padding [1, 1] dilation [1, 1] groups 1 : tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32> -> tensor<2x8x8x8xf32>
# CHECK:      rdu.reshape %b_bn1_running_mean : tensor<8xf32> -> tensor<8x1x1xf32>
# CHECK:      rdu.map %{{.*}} : (tensor<2x8x8x8xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>, tensor<8x1x1xf32>) -> tensor<2x8x8x8xf32>
# CHECK:        math.rsqrt
# CHECK:      rdu.pool max %{{.*}} window [2, 2] stride [2, 2] padding [0, 0] dilation [1, 1] {{.*}}: tensor<2x8x8x8xf32> -> tensor<2x8x4x4xf32>
# CHECK:      rdu.reduce sum %{{.*}} dims [2, 3] keepdim {{.*}}: tensor<2x16x4x4xf32> -> tensor<2x16x1x1xf32>
# CHECK:      func.return %{{.*}} : tensor<2x10xf32>
