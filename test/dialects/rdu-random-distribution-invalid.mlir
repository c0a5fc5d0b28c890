// RUN: not rducc-opt %s 2>&1 | filecheck %s

// `rdu.random`'s distribution is an enum attribute: a name it does not list is
// a parse error naming the ones it does.

%rnd = rdu.random poisson seed 0 : tensor<4xf32>
// CHECK: rdu-random-distribution-invalid.mlir:6:19: error: Expected `uniform`, or `normal`.
