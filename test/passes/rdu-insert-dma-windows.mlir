// RUN: rducc-opt --check-roundtrip --split-input-file -p 'rdu-insert-dma{target="%S/Inputs/tiny.toml"}' %s | filecheck %s

// Move only what is read. k0 only passes on layer 2's part of a stacked input
// (contiguous): a tier.view, no kernel, no copy. k1 reads every other column of
// that view and of %x through static slices: strided window DMAs bring in just
// those elements, and the slices in the body index the windows.
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%cache: tensor<4x8x16xf32> {rdu.input = "cache"}, %x: tensor<8x16xf32> {rdu.input = "x"}) -> tensor<8x8xf32> {
    %w = rdu.kernel "k0"(%cache) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 1024>} : (tensor<4x8x16xf32>) -> tensor<8x16xf32> {
    ^bb0(%c: tensor<4x8x16xf32>):
      %s = rdu.slice %c offsets [2, 0, 0] strides [1, 1, 1] : tensor<4x8x16xf32> -> tensor<1x8x16xf32>
      %r = rdu.reshape %s : tensor<1x8x16xf32> -> tensor<8x16xf32>
      rdu.yield %r : tensor<8x16xf32>
    }
    %y = rdu.kernel "k1"(%w, %x) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1], out = [-1], working_set = 768>} : (tensor<8x16xf32>, tensor<8x16xf32>) -> tensor<8x8xf32> {
    ^bb0(%a: tensor<8x16xf32>, %b: tensor<8x16xf32>):
      %even = rdu.slice %a offsets [0, 0] strides [1, 2] : tensor<8x16xf32> -> tensor<8x8xf32>
      %odd = rdu.slice %b offsets [0, 1] strides [1, 2] : tensor<8x16xf32> -> tensor<8x8xf32>
      %p = rdu.map %even, %odd : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.mulf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %p : tensor<8x8xf32>
    }
    func.return %y : tensor<8x8xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:       %[[C2:[^ ]+]] = arith.constant 2 : index
// CHECK:       %w = tier.view %cache[%[[C2]], %{{[0-9]+}}, %{{[0-9]+}}] sizes [1, 8, 16] : !tier.buffer<hbm, 4x8x16xf32> -> !tier.buffer<hbm, 8x16xf32>
// CHECK-NOT:   tier.compute "k0"
// CHECK:       %a_sram = tier.alloc : !tier.buffer<sram, 8x8xf32>
// CHECK-NEXT:  %b_sram = tier.alloc : !tier.buffer<sram, 8x8xf32>
// CHECK:       tier.dma %w[%{{[0-9]+}}, %{{[0-9]+}}] -> %a_sram strides [1, 2] : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 8x8xf32>
// CHECK:       %[[C1:[^ ]+]] = arith.constant 1 : index
// CHECK-NEXT:  tier.dma %x[%{{[0-9]+}}, %[[C1]]] -> %b_sram strides [1, 2] : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 8x8xf32>
// CHECK-NEXT:  tier.compute "k1"
// CHECK-NEXT:  ^bb0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>):
// CHECK-NEXT:    %even = rdu.slice %a offsets [0, 0] strides [1, 1] : tensor<8x8xf32> -> tensor<8x8xf32>
// CHECK-NEXT:    %odd = rdu.slice %b offsets [0, 0] strides [1, 1] : tensor<8x8xf32> -> tensor<8x8xf32>

// -----

// Not a view: a window that is not contiguous (rows 2 to 5 of columns 4 to 11)
// is copied by its kernel, which still moves only that window; two slices of
// one input come in as their bounding box, each rebased into it.
builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%x: tensor<8x16xf32> {rdu.input = "x"}) -> (tensor<4x8xf32>, tensor<1x8xf32>) {
    %w, %v = rdu.kernel "k0"(%x) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1, -1], working_set = 512>} : (tensor<8x16xf32>) -> (tensor<4x8xf32>, tensor<1x8xf32>) {
    ^bb0(%a: tensor<8x16xf32>):
      %s = rdu.slice %a offsets [2, 4] strides [1, 1] : tensor<8x16xf32> -> tensor<4x8xf32>
      %t = rdu.slice %a offsets [5, 4] strides [1, 1] : tensor<8x16xf32> -> tensor<1x8xf32>
      rdu.yield %s, %t : tensor<4x8xf32>, tensor<1x8xf32>
    }
    func.return %w, %v : tensor<4x8xf32>, tensor<1x8xf32>
  }
}

// CHECK-LABEL: func.func @forward
// CHECK:       %a_sram = tier.alloc : !tier.buffer<sram, 4x8xf32>
// CHECK:       %[[R:[^ ]+]] = arith.constant 2 : index
// CHECK-NEXT:  %[[C:[^ ]+]] = arith.constant 4 : index
// CHECK-NEXT:  tier.dma %x[%[[R]], %[[C]]] -> %a_sram : !tier.buffer<hbm, 8x16xf32> -> !tier.buffer<sram, 4x8xf32>
// CHECK-NEXT:  tier.compute "k0"
// CHECK-NEXT:  ^bb0(%a: tensor<4x8xf32>):
// CHECK-NEXT:    %s = rdu.slice %a offsets [0, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK-NEXT:    %t = rdu.slice %a offsets [3, 0] strides [1, 1] : tensor<4x8xf32> -> tensor<1x8xf32>
