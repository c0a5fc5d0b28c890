// The bundled example through the `rducc` CLI, re-parsed by rducc-opt.
// RUN: rducc %S/../../examples/mlp.pt2 -o %t.mlir
// RUN: rducc-opt %t.mlir | filecheck %s
// RUN: rducc %S/../../examples/mlp.pt2 -o - | filecheck %s --check-prefix=LOC

// CHECK: tier.global @fc3.bias : tensor<10xf32> {kind = "parameter"}
// CHECK: func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}
// CHECK: rdu.matmul
// CHECK: func.return %{{.*}} : tensor<4x10xf32>

// LOC: rdu.matmul {{.*}} loc("{{.*}}models.py":{{[0-9]+}}:{{[0-9]+}})
