# A layer norm of a bf16 input with float32 weight and bias (CPU autocast):
# the kernel's mean and rstd are float32, torch declares them bf16, so the
# torch.compile backend's partition (rducc.training.saved_statistics) has the
# backward graph compute them again from the saved input instead of reading
# the forward's (which would cross between the programs in bf16). A float32
# layer norm is left to the default partition.
# RUN: %python %s | filecheck %s

import torch
import torch.nn.functional as F
from torch import nn
from torch._dynamo.backends.common import aot_autograd

from rducc.training.saved_statistics import partition_recomputing_statistics
from rducc.tools.dynamo import _backward_decompositions


class Norms(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.norm, self.norm32, self.head = nn.Linear(4, 6), nn.LayerNorm(6), nn.LayerNorm(4), nn.Linear(6, 2)

    def forward(self, x):
        with torch.autocast("cpu", torch.bfloat16):
            return self.head(self.norm(self.inp(self.norm32(x))))


def show(name):
    def compiler(graph, example_inputs):
        print(f"# {name}")
        print(graph.code)
        return graph.forward
    return compiler


backend = aot_autograd(fw_compiler=show("forward"), bw_compiler=show("backward"),
                       decompositions=_backward_decompositions(), partition_fn=partition_recomputing_statistics)
F.cross_entropy(torch.compile(Norms(), backend=backend)(torch.randn(3, 4)).float(), torch.tensor([0, 1, 0])).backward()

# The forward saves the float32 layer norm's statistics and not the mixed one's.
# CHECK-LABEL: # forward
# CHECK:       native_layer_norm = torch.ops.aten.native_layer_norm.default([[X:primals_[0-9]+]], [4],
# CHECK:       getitem_1 = native_layer_norm[1]
# CHECK:       native_layer_norm_1 = torch.ops.aten.native_layer_norm.default([[IN:addmm]], [6],
# CHECK-NOT:   native_layer_norm_1[1]
# CHECK:       return ({{.*}} getitem_1, getitem_2,
# CHECK-LABEL: # backward
# CHECK:       [[AGAIN:native_layer_norm[_a-z0-9]*]] = torch.ops.aten.native_layer_norm.default([[IN]], [6], {{.*}}, 1e-05)
# CHECK-NEXT:  [[MEAN:getitem[_0-9]*]] = [[AGAIN]][1]
# CHECK-NEXT:  [[RSTD:getitem[_0-9]*]] = [[AGAIN]][2]
# CHECK-NEXT:  torch.ops.aten.native_layer_norm_backward.default({{.*}}, [[IN]], [6], [[MEAN]], [[RSTD]],
# CHECK:       torch.ops.aten.native_layer_norm_backward.default({{.*}}, [[X]], [4], getitem_1, getitem_2,
