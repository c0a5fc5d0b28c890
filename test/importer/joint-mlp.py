# Import of a joint graph (torch.export.experimental._export_forward_backward of
# an MLP whose forward returns a loss): the loss is the first result, the
# gradients of the parameters follow (rdu.result_roles); every op carries the
# phase it belongs to: the forward is what the loss depends on, the rest is the
# backward.
# RUN: %python %s | filecheck %s

import torch
from torch import nn
from torch.export.experimental import _export_forward_backward

from rducc.driver import import_exported, module_text


class MLPLoss(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x, target):
        return nn.functional.cross_entropy(self.fc2(torch.relu(self.fc1(x))), target)


torch.manual_seed(0)
inputs = (torch.randn(3, 8), torch.tensor([0, 1, 2]))
joint = _export_forward_backward(torch.export.export(MLPLoss(), inputs))
print(module_text(import_exported(joint), locations=False))

# CHECK:      func.func @forward(%x: tensor<3x8xf32> {rdu.input = "x"}, %target: tensor<3xi64> {rdu.input = "target"}, %p_fc1_weight: tensor<16x8xf32> {rdu.global = @fc1.weight}
# CHECK-SAME:   -> (tensor<f32>, tensor<16x8xf32>, tensor<16xf32>, tensor<4x16xf32>, tensor<4xf32>)
# CHECK-SAME:   rdu.result_roles = ["loss", "gradient:parameter:fc1.weight", "gradient:parameter:fc1.bias", "gradient:parameter:fc2.weight", "gradient:parameter:fc2.bias"]
# CHECK:        %permute = rdu.transpose %p_fc1_weight perm [1, 0] {rdu.phase = #rdu<phase forward>}
# CHECK:        %addmm = rdu.matmul %x, %permute {rdu.phase = #rdu<phase forward>}
# CHECK:        rdu.reduce max {{.*}} {rdu.phase = #rdu<phase forward>}
# the backward: the gradient of fc1's weight is a matmul with the input
# CHECK:        rdu.matmul {{.*}}%x {rdu.phase = #rdu<phase backward>}
# CHECK-NOT:    #rdu<phase optimizer>
# CHECK:        func.return
