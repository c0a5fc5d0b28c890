// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// The collectives of multi-socket programs (dialects/rdu/collectives.py).

%x, %h = "test.op"() : () -> (tensor<1x1x64xf32>, tensor<1x1x8xbf16>)

// CHECK: %sum = rdu.all_reduce %x group 8 : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
%sum = rdu.all_reduce %x group 8 : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
// CHECK-NEXT: %whole = rdu.all_gather %h dim 2 group 8 : tensor<1x1x8xbf16> -> tensor<1x1x64xbf16>
%whole = rdu.all_gather %h dim 2 group 8 : tensor<1x1x8xbf16> -> tensor<1x1x64xbf16>
// CHECK-NEXT: %part = rdu.reduce_scatter %x dim 2 group 8 : tensor<1x1x64xf32> -> tensor<1x1x8xf32>
%part = rdu.reduce_scatter %x dim 2 group 8 : tensor<1x1x64xf32> -> tensor<1x1x8xf32>
// CHECK-NEXT: %mine = rdu.local_part %x dim 2 group 8 : tensor<1x1x64xf32> -> tensor<1x1x8xf32>
%mine = rdu.local_part %x dim 2 group 8 : tensor<1x1x64xf32> -> tensor<1x1x8xf32>
// CHECK-NEXT: %next = rdu.send_recv %x from 0 to 1 : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
%next = rdu.send_recv %x from 0 to 1 : tensor<1x1x64xf32> -> tensor<1x1x64xf32>
// Over a factor of the ranks: the 8 ranks r % 2 + 2k of 16.
// CHECK-NEXT: %pairs = rdu.all_gather %h dim 2 group 8 stride 2 : tensor<1x1x8xbf16> -> tensor<1x1x64xbf16>
%pairs = rdu.all_gather %h dim 2 group 8 stride 2 : tensor<1x1x8xbf16> -> tensor<1x1x64xbf16>
// Expert parallelism's exchange: part j along dim 0 to rank j, joined along dim 1.
// CHECK-NEXT: %swapped = rdu.all_to_all %x split_dim 2 concat_dim 0 group 8 : tensor<1x1x64xf32> -> tensor<8x1x8xf32>
%swapped = rdu.all_to_all %x split_dim 2 concat_dim 0 group 8 : tensor<1x1x64xf32> -> tensor<8x1x8xf32>
// CHECK-NEXT: %same = rdu.all_to_all %h split_dim 2 concat_dim 2 group 8 : tensor<1x1x8xbf16> -> tensor<1x1x8xbf16>
%same = rdu.all_to_all %h split_dim 2 concat_dim 2 group 8 : tensor<1x1x8xbf16> -> tensor<1x1x8xbf16>
