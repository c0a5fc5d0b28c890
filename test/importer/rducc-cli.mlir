// The bundled example through the `rducc` CLI, re-parsed by rducc-opt.
// RUN: rducc %S/../../examples/mlp.pt2 --emit graph -o %t.mlir
// RUN: rducc-opt %t.mlir | filecheck %s
// RUN: rducc %S/../../examples/mlp.pt2 --emit graph -o - | filecheck %s --check-prefix=LOC
// The default: -O2 for sn40l, the fully placed program.
// RUN: rducc %S/../../examples/mlp.pt2 -o %t.placed.mlir
// RUN: rducc-opt %t.placed.mlir | filecheck %s --check-prefix=PLACED

// CHECK: tier.global @fc3.bias : tensor<10xf32> {kind = "parameter"}
// CHECK: func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}
// CHECK: rdu.matmul
// CHECK: func.return %{{.*}} : tensor<4x10xf32>

// LOC: rdu.matmul {{.*}} loc("{{.*}}models.py":{{[0-9]+}}:{{[0-9]+}})

// PLACED: builtin.module attributes {rdu.level = #rdu<level placed>, rdu.target = #rdu.target<{name = "sn40l"
// PLACED: tier.global @fc1.weight in hbm : tensor<64x32xf32>
// PLACED: func.func @forward(%x: !tier.buffer<hbm, 4x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 4x10xf32> attributes {tier.sram_capacity = 520000000 : i64
// PLACED: tier.alloc offset {{[0-9]+}} : !tier.buffer<sram, 4x32xf32>
// PLACED: tier.compute "k0"
// PLACED: func.return %{{.*}} : !tier.buffer<hbm, 4x10xf32>
