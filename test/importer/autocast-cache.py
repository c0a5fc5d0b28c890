# Autocast's weight cache written into a training step's autocast region
# (rducc.training.autocast_cache): a trained weight autocast casts for several
# ops (one Linear applied twice) is cast to bf16 once and both ops read the
# cast; a weight cast for one op (the head), a float32 weight autocast does not
# cast (LayerNorm's) and a frozen weight are left to autocast.
# RUN: %python %s | filecheck %s

import torch
from torch import nn

from rducc.training.autocast_cache import shared_autocast_casts
from rducc.training.compile import TrainingForward


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer, self.norm, self.frozen, self.head = nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 4), nn.Linear(4, 2)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        x = self.layer(self.norm(x))
        x = self.frozen(self.frozen(self.layer(self.norm(x))))
        return self.head(x)


inputs = (torch.randn(3, 4), torch.tensor([0, 1, 0]))
ep = torch.export.export(TrainingForward(Twice(), nn.functional.cross_entropy, torch.bfloat16), inputs)
ep = shared_autocast_casts(ep)
region = next(n for n in ep.graph.nodes if n.target is torch.ops.higher_order.wrap_with_autocast)
print(getattr(ep.graph_module, region.args[4].target).code)

# The region's inputs: x, then norm, layer, frozen and head's weight and bias, then the labels.
# CHECK:      def forward(self, [[X:arg[0-9]+_1]], [[NW:arg[0-9]+_1]], [[NB:arg[0-9]+_1]], [[W:arg[0-9]+_1]], [[B:arg[0-9]+_1]], [[FW:arg[0-9]+_1]], [[FB:arg[0-9]+_1]], [[HW:arg[0-9]+_1]], [[HB:arg[0-9]+_1]],
# CHECK-NEXT: [[CW:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default([[W]], dtype = torch.bfloat16)
# CHECK-NEXT: [[CB:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default([[B]], dtype = torch.bfloat16)
# CHECK-NEXT: layer_norm = torch.ops.aten.layer_norm.default([[X]], [4], [[NW]], [[NB]],
# CHECK-NEXT: linear = torch.ops.aten.linear.default(layer_norm, [[CW]], [[CB]])
# CHECK-NEXT: layer_norm_1 = torch.ops.aten.layer_norm.default(linear, [4], [[NW]], [[NB]],
# CHECK-NEXT: linear_1 = torch.ops.aten.linear.default(layer_norm_1, [[CW]], [[CB]])
# CHECK-NEXT: linear_2 = torch.ops.aten.linear.default(linear_1, [[FW]], [[FB]])
# CHECK-NEXT: linear_3 = torch.ops.aten.linear.default(linear_2, [[FW]], [[FB]])
# CHECK-NEXT: linear_4 = torch.ops.aten.linear.default(linear_3, [[HW]], [[HB]])
