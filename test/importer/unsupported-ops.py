# An op rducc lacks: one error listing every unsupported op with its count and
# first source line, exit status 1, no traceback, no output file.
# RUN: %python %s %t.pt2
# RUN: not rducc %t.pt2 -o %t.mlir 2> %t.err
# RUN: filecheck %s < %t.err
# RUN: %python -c "import os, sys; sys.exit(os.path.exists(sys.argv[1]))" %t.mlir

import sys

import torch


class UsesDigamma(torch.nn.Module):
    def forward(self, x):
        spectrum = torch.digamma(x).abs()
        twice = torch.digamma(spectrum).abs()
        return twice + torch.lgamma(x)


torch.export.save(torch.export.export(UsesDigamma(), (torch.randn(8),)), sys.argv[1])

# CHECK:      rducc: error: the model uses 2 operators rducc cannot import:
# CHECK-NEXT:   aten.digamma.default: 2 uses, first at {{.*}}unsupported-ops.py:15:9: spectrum = torch.digamma(x).abs()
# CHECK-NEXT:   aten.lgamma.default: 1 use, first at {{.*}}unsupported-ops.py:17:9: return twice + torch.lgamma(x)
# CHECK-NOT:  Traceback
