# A row update through a transposed input buffer (Inputs/layout-view-scatter.mlir):
# the runtime binds the transpose as a NumPy view (rducc.runtime.layout_views),
# so rdu.scatter gets a strided operand. Its copy must be row-major, or its
# writes land in a temporary and row 4 keeps x's values.
# Invalid: the same program with a row index (7) outside the 6 rows is one
# error naming the op, no result.
# One process for both (a tool's start imports torch: seconds a process).
# RUN: %python %s %S/Inputs/layout-view-scatter.mlir | filecheck %s

import sys

import numpy as np
from xdsl.context import Context
from xdsl.dialects import arith, builtin, func
from xdsl.parser import Parser

from rducc.dialects.rdu.dataflow import Dataflow
from rducc.dialects.tier import Memory
from rducc.errors import RduccError
from rducc.runtime.interpreter import PlacedProgram

text = open(sys.argv[1]).read()
x = np.arange(96, dtype=np.float32).reshape(2, 6, 8)
v = -np.ones((1, 2, 8), np.float32)


def run(source: str) -> np.ndarray:
    context = Context()
    for dialect in (builtin.Builtin, func.Func, arith.Arith, Dataflow, Memory):
        context.load_dialect(dialect)
    module = Parser(context, source).parse_module()
    module.verify()
    return PlacedProgram(module).run([x, v], {})[0]


print("rows:", run(text)[:, :, 0].tolist())
# CHECK: rows: {{\[}}[0.0, 48.0], [8.0, 56.0], [16.0, 64.0], [24.0, 72.0], [-1.0, -1.0], [40.0, 88.0]]

try:
    run(text.replace("rdu.iota start 4", "rdu.iota start 7"))
    print("no error")
except RduccError as error:
    print("error:", error)
# CHECK-NEXT: error: 'rdu.scatter': rdu.scatter: an index is out of range [0, 6) along dim 0
# CHECK-NOT: no error
