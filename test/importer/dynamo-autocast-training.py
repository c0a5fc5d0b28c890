# The torch.compile backend's two rewrites for bf16 autocast training, on one
# Dynamo graph:
# 1. Autocast's weight cache written into the graph Dynamo hands over
#    (rducc.training.autocast_cache.shared_autocast_casts_in_graph), before AOT
#    autograd traces it with the cache off: in the first autocast region a
#    Linear applied twice reads one bf16 cast of its weight and bias; in the
#    second region (eager's cache is cleared between them) its one use is left
#    to autocast, as are the head (one use), the LayerNorms (float32 under
#    autocast) and a frozen Linear applied twice.
# 2. The layer norm of a bf16 input with float32 weight and bias: its kernel's
#    mean and rstd are float32, torch declares them bf16, so the partition
#    (rducc.training.saved_statistics) has the backward compute them again
#    from the saved input instead of reading the forward's (which would cross
#    between the programs in bf16). The float32 layer norm is left as it was.
# RUN: %python %s | filecheck %s

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.backends.common import aot_autograd

from rducc.tools.dynamo import _backward_decompositions
from rducc.training.autocast_cache import shared_autocast_casts_in_graph
from rducc.training.saved_statistics import partition_recomputing_statistics


class TwoRegions(nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.layer, self.norm, self.frozen, self.head = (
            nn.LayerNorm(4), nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 4), nn.Linear(4, 2))
        self.frozen.requires_grad_(False)

    def forward(self, x):
        with torch.autocast("cpu", torch.bfloat16):
            x = self.norm(self.layer(self.layer(self.first(x))))
            x = self.frozen(self.frozen(x))
        with torch.autocast("cpu", torch.bfloat16):
            return self.head(self.layer(x))


def show(name):
    def compiler(graph, example_inputs):
        print(f"# {name}")
        print(graph.code)
        return graph.forward
    return compiler


def backend(graph, example_inputs):
    print("# dynamo")
    print(shared_autocast_casts_in_graph(graph).code)
    return aot_autograd(fw_compiler=show("forward"), bw_compiler=show("backward"),
                        decompositions=_backward_decompositions(),
                        partition_fn=partition_recomputing_statistics)(graph, example_inputs)


F.cross_entropy(torch.compile(TwoRegions(), backend=backend)(torch.randn(3, 4)).float(),
                torch.tensor([0, 1, 0])).backward()

# CHECK-LABEL: # dynamo
# CHECK:       _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', torch.bfloat16, True, None)
# CHECK-NEXT:  layer_norm = torch.nn.functional.layer_norm(l_x_, (4,), l_self_modules_first_parameters_weight_, l_self_modules_first_parameters_bias_,
# CHECK-NEXT:  [[CW:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default(l_self_modules_layer_parameters_weight_, dtype = torch.bfloat16)
# CHECK-NEXT:  [[CB:_to_copy[_a-z0-9]*]] = torch.ops.aten._to_copy.default(l_self_modules_layer_parameters_bias_, dtype = torch.bfloat16)
# CHECK-NEXT:  linear = torch._C._nn.linear(layer_norm, [[CW]], [[CB]])
# CHECK-NEXT:  linear_1 = torch._C._nn.linear(linear, [[CW]], [[CB]])
# CHECK-NEXT:  x = torch.nn.functional.layer_norm(linear_1, (4,), l_self_modules_norm_parameters_weight_, l_self_modules_norm_parameters_bias_,
# CHECK-NEXT:  linear_2 = torch._C._nn.linear(x, l_self_modules_frozen_parameters_weight_, l_self_modules_frozen_parameters_bias_)
# CHECK-NEXT:  x_1 = torch._C._nn.linear(linear_2, l_self_modules_frozen_parameters_weight_, l_self_modules_frozen_parameters_bias_)
# CHECK-NEXT:  _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast)
# CHECK-NEXT:  _enter_autocast_1 = torch.amp.autocast_mode._enter_autocast('cpu', torch.bfloat16, True, None)
# CHECK-NEXT:  linear_4 = torch._C._nn.linear(x_1, l_self_modules_layer_parameters_weight_, l_self_modules_layer_parameters_bias_)
# CHECK-NEXT:  linear_5 = torch._C._nn.linear(linear_4, l_self_modules_head_parameters_weight_, l_self_modules_head_parameters_bias_)

# The forward saves the float32 layer norm's statistics (of the input x) and not the mixed one's.
# CHECK-LABEL: # forward
# CHECK:       native_layer_norm = torch.ops.aten.native_layer_norm.default([[X:primals_[0-9]+]], [4],
# CHECK:       native_layer_norm_1 = torch.ops.aten.native_layer_norm.default([[IN:addmm_1]], [4],
# CHECK-NOT:   native_layer_norm_1[1]
# CHECK:       return ({{.*}} getitem_1, getitem_2,

# The backward computes the mixed layer norm's statistics itself, from its saved bf16 input.
# CHECK-LABEL: # backward
# CHECK:       [[AGAIN:native_layer_norm[_a-z0-9]*]] = torch.ops.aten.native_layer_norm.default([[IN]], [4], {{.*}}, 1e-05)
# CHECK-NEXT:  [[MEAN:getitem[_0-9]*]] = [[AGAIN]][1]
# CHECK-NEXT:  [[RSTD:getitem[_0-9]*]] = [[AGAIN]][2]
# CHECK-NEXT:  torch.ops.aten.native_layer_norm_backward.default({{.*}}, [[IN]], [4], [[MEAN]], [[RSTD]],
# CHECK:       torch.ops.aten.native_layer_norm_backward.default({{.*}}, [[X]], [4], getitem_1, getitem_2,
