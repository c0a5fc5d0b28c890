// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// Replica groups that are not a partition of the program's ranks into equal
// groups, or that disagree with the op, one per chunk.

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 2 groups <[0, 1], [1, 2]> : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' rank 1 is in more than one replica group

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 2 groups <[0, 1], [2, 4]> : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' replica groups must cover ranks 0..3: rank 3 is in none

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 2 groups <[0, 1, 2], [3]> : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' replica groups must be of one size, got sizes [1, 3]

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_reduce %x group 4 groups <[0, 1], [2, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
// CHECK: Operation does not verify: 'rdu.all_reduce' group 4 but its replica groups hold 2 ranks each

// -----

%x = "test.op"() : () -> tensor<4x8xf32>
%y = rdu.all_gather %x dim 1 group 2 stride 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<4x16xf32>
// CHECK: Operation does not verify: 'rdu.all_gather' takes either a stride or replica groups, not both

// -----

builtin.module attributes {rdu.partition = {tp = 4 : i64, pp = 1 : i64, dp = 2 : i64}} {
  func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
    %y = rdu.all_reduce %x group 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
    func.return %y : tensor<4x8xf32>
  }
}
// CHECK: Operation does not verify: 'rdu.all_reduce' replica groups cover 4 ranks; the program runs on 8
