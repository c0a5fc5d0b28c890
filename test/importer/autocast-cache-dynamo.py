# Autocast's weight cache written into the graph Dynamo hands the rducc
# backend (rducc.training.autocast_cache.shared_autocast_casts_in_graph),
# before AOT autograd traces it with the cache off: in the first autocast
# region a Linear applied twice reads one bf16 cast of its weight and bias; in
# the second region (eager's cache is cleared between them) its one use is
# left to autocast, as are the head (one use), the LayerNorm (float32 under
# autocast) and a frozen Linear applied twice.
# RUN: %python %s | filecheck %s

import torch
from torch import nn

from rducc.training.autocast_cache import shared_autocast_casts_in_graph


class TwoRegions(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer, self.norm, self.frozen, self.head = nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 4), nn.Linear(4, 2)
        self.frozen.requires_grad_(False)

    def forward(self, x):
        with torch.autocast("cpu", torch.bfloat16):
            x = self.layer(self.layer(self.norm(x)))
            x = self.frozen(self.frozen(x))
        with torch.autocast("cpu", torch.bfloat16):
            return self.head(self.layer(x))


def show(graph, example_inputs):
    print(shared_autocast_casts_in_graph(graph).code)
    return graph.forward


torch.compile(TwoRegions(), backend=show)(torch.randn(3, 4))

# CHECK:      _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', torch.bfloat16, True, None)
# CHECK-NEXT: layer_norm = torch.nn.functional.layer_norm(l_x_, (4,), l_self_modules_norm_parameters_weight_, l_self_modules_norm_parameters_bias_, 1e-05)
# CHECK-NEXT: [[CW:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default(l_self_modules_layer_parameters_weight_, dtype = torch.bfloat16)
# CHECK-NEXT: [[CB:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default(l_self_modules_layer_parameters_bias_, dtype = torch.bfloat16)
# CHECK-NEXT: linear = torch._C._nn.linear(layer_norm, [[CW]], [[CB]])
# CHECK-NEXT: x = torch._C._nn.linear(linear, [[CW]], [[CB]])
# CHECK-NEXT: linear_2 = torch._C._nn.linear(x, l_self_modules_frozen_parameters_weight_, l_self_modules_frozen_parameters_bias_)
# CHECK-NEXT: x_1 = torch._C._nn.linear(linear_2, l_self_modules_frozen_parameters_weight_, l_self_modules_frozen_parameters_bias_)
# CHECK-NEXT: _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
# CHECK-NEXT: _enter_autocast_1 = torch.amp.autocast_mode._enter_autocast('cpu', torch.bfloat16, True, None)
# CHECK-NEXT: linear_4 = torch._C._nn.linear(x_1, l_self_modules_layer_parameters_weight_, l_self_modules_layer_parameters_bias_)
# CHECK-NEXT: linear_5 = torch._C._nn.linear(linear_4, l_self_modules_head_parameters_weight_, l_self_modules_head_parameters_bias_)
# CHECK-NOT:  _to_copy
