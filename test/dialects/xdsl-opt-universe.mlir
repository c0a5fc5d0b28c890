// The stock xdsl-opt finds rducc's dialects through the `xdsl.universe` entry point.
// RUN: xdsl-opt %s | filecheck %s

%x = "test.op"() : () -> tensor<2x8xf32>
// CHECK: %t = rdu.transpose %x perm [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
%t = rdu.transpose %x perm [1, 0] : tensor<2x8xf32> -> tensor<8x2xf32>
// CHECK: %b = tier.alloc offset 0 : !tier.buffer<sram, 8x2xf32>
%b = tier.alloc offset 0 : !tier.buffer<sram, 8x2xf32>
