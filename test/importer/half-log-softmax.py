# Import of log_softmax on bf16 tensors: along the last dim the sum of exps is
# rounded to bf16, its log taken in f32 and rounded to bf16 again before
# x - max - log (eager's CPU kernel keeps the sum in the tensor's type); along
# another dim, and in f32, the log is taken of the f32 sum inside the last map.
# RUN: %python %s | filecheck %s

import torch

from rducc.driver import import_exported, module_text


class LogSoftmaxes(torch.nn.Module):
    def forward(self, x):
        return x.log_softmax(-1), x.log_softmax(0), x.float().log_softmax(-1)


inputs = (torch.randn(3, 5).bfloat16(),)
print(module_text(import_exported(torch.export.export(LogSoftmaxes(), inputs)), locations=False))

# Along the last dim: the f32 sum, then its log between two roundings to bf16.
# CHECK:      %[[SUM:.*]] = rdu.reduce sum %{{.*}} dims [1] keepdim : tensor<3x5xf32> -> tensor<3x1xf32>
# CHECK-NEXT: %[[LOG:.*]] = rdu.map %[[SUM]] : (tensor<3x1xf32>) -> tensor<3x1xf32> {
# CHECK-NEXT: ^bb0(%0: f32):
# CHECK-NEXT:   %1 = arith.truncf %0 : f32 to bf16
# CHECK-NEXT:   %2 = arith.extf %1 : bf16 to f32
# CHECK-NEXT:   %3 = math.log %2 : f32
# CHECK-NEXT:   %4 = arith.truncf %3 : f32 to bf16
# CHECK-NEXT:   %5 = arith.extf %4 : bf16 to f32
# CHECK:      rdu.map %x, %{{.*}}, %[[LOG]] : (tensor<3x5xbf16>, tensor<3x1xbf16>, tensor<3x1xf32>) -> tensor<3x5xbf16> {
# CHECK-NOT:  math.log
# CHECK:      arith.truncf %{{.*}} : f32 to bf16
# Along dim 0 and in f32: the log of the f32 sum, in the last map, not rounded.
# CHECK:      %[[SUM0:.*]] = rdu.reduce sum %{{.*}} dims [0] keepdim : tensor<3x5xf32> -> tensor<1x5xf32>
# CHECK-NEXT: rdu.map %x, %{{.*}}, %[[SUM0]] : (tensor<3x5xbf16>, tensor<1x5xbf16>, tensor<1x5xf32>) -> tensor<3x5xbf16> {
# CHECK-NOT:  arith.truncf
# CHECK:      math.log %2 : f32
# CHECK:      %[[SUM1:.*]] = rdu.reduce sum %{{.*}} dims [1] keepdim : tensor<3x5xf32> -> tensor<3x1xf32>
# CHECK-NEXT: rdu.map %_to_copy, %{{.*}}, %[[SUM1]] : (tensor<3x5xf32>, tensor<3x1xf32>, tensor<3x1xf32>) -> tensor<3x5xf32> {
# CHECK-NOT:  arith.truncf
# CHECK:      math.log %2 : f32
