// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Every verifier error of the collectives (dialects/rdu/collectives.py), one per chunk.

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 0 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' group must be >= 1, got 0

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 2 : tensor<4x8xf32> -> tensor<4x4xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' result must have the input's type

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 2 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: Operation does not verify: 'rdu.all_reduce' input and result: element types differ (f32 vs bf16)

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_gather %x dim 1 group 2 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_gather' shapes [4, 8] -> [4, 8] do not match dim 1 split 2 ways

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_gather %x dim 2 group 2 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK: Operation does not verify: 'rdu.all_gather' dim 2 is out of range for rank 2

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.reduce_scatter %x dim 1 group 3 : tensor<4x8xf32> -> tensor<4x2xf32>
// CHECK: Operation does not verify: 'rdu.reduce_scatter' shapes [4, 8] -> [4, 2] do not match dim 1 split 3 ways

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.send_recv %x from 1 to 1 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.send_recv' sends stage 1 to itself

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.send_recv %x from -1 to 1 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.send_recv' stages must be >= 0, got -1 -> 1

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_gather %x dim 1 group 2 stride 0 : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK: Operation does not verify: 'rdu.all_gather' stride must be >= 1, got 0

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.local_part %x dim 1 group 2 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.local_part' shapes [4, 8] -> [4, 8] do not match dim 1 split 2 ways

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_to_all %x split_dim 1 concat_dim 0 group 3 : tensor<4x8xf32> -> tensor<12x2xf32>
// CHECK: Operation does not verify: 'rdu.all_to_all' split_dim 1 of size 8 does not split 3 ways

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_to_all %x split_dim 1 concat_dim 0 group 2 : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_to_all' shapes [4, 8] -> [4, 8]: expected [8, 4] (split_dim 1 divided, concat_dim 0 multiplied by 2)

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_to_all %x split_dim 2 concat_dim 0 group 2 : tensor<4x8xf32> -> tensor<8x4xf32>
// CHECK: Operation does not verify: 'rdu.all_to_all' split_dim 2 is out of range for rank 2

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_to_all %x split_dim 0 concat_dim 0 group 2 : tensor<4x8xf32> -> tensor<4x8xbf16>
// CHECK: Operation does not verify: 'rdu.all_to_all' input and result: element types differ (f32 vs bf16)
