# An op rducc lacks: one error listing every unsupported op with its count and
# first source line, exit status 1, no traceback, no output file.
# RUN: %python %s %t.pt2
# RUN: not rducc %t.pt2 -o %t.mlir 2> %t.err
# RUN: filecheck %s < %t.err
# RUN: %python -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.mlir

import sys

import torch


class ReadsBack(torch.nn.Module):
    def forward(self, x):
        peak = x.abs().max().item()
        floor = x.min().item()
        return torch.ops.aten.elu(x, 2.0, peak) - torch.ops.aten.elu(x, 2.0, floor)


torch.export.save(torch.export.export(ReadsBack(), (torch.randn(8),)), sys.argv[1])

# CHECK:      rducc: error: the model uses 1 operator rducc cannot import:
# CHECK-NEXT:   aten._local_scalar_dense.default (a tensor read back as a Python number and passed to aten.elu.default as a Scalar: that op has no Tensor overload, and torch's decomposition of it does not keep the number a value (it computes with it in Python or branches on it)): 2 uses, first at {{.*}}unsupported-ops.py:15:9: peak = x.abs().max().item()
# CHECK-NOT:  Traceback
