// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: rducc-opt %s --print-op-generic | rducc-opt | filecheck %s

// Replica groups (#rdu.groups, dialects/rdu/collectives.py): the sub-groups of
// a program's ranks a collective spans, as lists of ranks. dp=2 x tp=2 on 4
// ranks: tp's groups are the consecutive pairs, dp's the ranks 2 apart.

builtin.module attributes {rdu.partition = {tp = 2 : i64, pp = 1 : i64, dp = 2 : i64}} {
  func.func @f(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>) {
    // CHECK: %tp = rdu.all_reduce %x group 2 groups <[0, 1], [2, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
    %tp = rdu.all_reduce %x group 2 groups <[0, 1], [2, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
    // CHECK-NEXT: %dp = rdu.all_gather %tp dim 1 group 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<4x16xf32>
    %dp = rdu.all_gather %tp dim 1 group 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<4x16xf32>
    // CHECK-NEXT: %shard = rdu.reduce_scatter %x dim 0 group 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<2x8xf32>
    %shard = rdu.reduce_scatter %x dim 0 group 2 groups <[0, 2], [1, 3]> : tensor<4x8xf32> -> tensor<2x8xf32>
    // CHECK-NEXT: %mine = rdu.local_part %x dim 1 group 2 groups <[2, 0], [3, 1]> : tensor<4x8xf32> -> tensor<4x4xf32>
    %mine = rdu.local_part %x dim 1 group 2 groups <[2, 0], [3, 1]> : tensor<4x8xf32> -> tensor<4x4xf32>
    // CHECK-NEXT: %all = rdu.all_reduce %x group 4 groups <[0, 1, 2, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
    %all = rdu.all_reduce %x group 4 groups <[0, 1, 2, 3]> : tensor<4x8xf32> -> tensor<4x8xf32>
    func.return %tp, %dp, %shard, %mine, %all : tensor<4x8xf32>, tensor<4x16xf32>, tensor<2x8xf32>, tensor<4x4xf32>, tensor<4x8xf32>
  }
}
