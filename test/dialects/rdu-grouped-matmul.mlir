// RUN: rducc-opt --check-roundtrip %s | filecheck %s --check-prefix=ROUND
// RUN: rducc-opt -p rdu-canonicalize %s | filecheck %s --check-prefix=CANON

// rdu.grouped_matmul: a mixture of experts' rows (sorted by expert) times each
// row's own expert matrix, the experts' cumulative row counts as an operand.
// A transpose swapping the rhs's last two dims folds into it as transpose_rhs
// (an expert table stored [E, N, K]); a transpose of other dims stays.

// ROUND-LABEL: func.func @forms
// ROUND-NEXT: %y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// ROUND-NEXT: %yt = rdu.grouped_matmul %x, %wt offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
func.func @forms(%x: tensor<6x8xf32>, %w: tensor<4x8x5xf32>, %wt: tensor<4x5x8xf32>, %offs: tensor<4xi32>) -> (tensor<6x5xf32>, tensor<6x5xf32>) {
  %y = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
  %yt = rdu.grouped_matmul %x, %wt offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
  func.return %y, %yt : tensor<6x5xf32>, tensor<6x5xf32>
}

// CANON-LABEL: func.func @fold
// CANON-NEXT:    %folded = rdu.grouped_matmul %x, %wt offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CANON-NEXT:    %cancel = rdu.grouped_matmul %x, %w offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
// CANON-NEXT:    %experts_moved = rdu.transpose %v perm [1, 0, 2]
// CANON-NEXT:    %kept = rdu.grouped_matmul %x, %experts_moved offsets %offs :
func.func @fold(%x: tensor<6x8xf32>, %w: tensor<4x8x5xf32>, %wt: tensor<4x5x8xf32>, %offs: tensor<4xi32>, %v: tensor<8x4x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) {
  %t = rdu.transpose %wt perm [0, 2, 1] : tensor<4x5x8xf32> -> tensor<4x8x5xf32>
  %folded = rdu.grouped_matmul %x, %t offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
  %t2 = rdu.transpose %w perm [0, 2, 1] : tensor<4x8x5xf32> -> tensor<4x5x8xf32>
  %cancel = rdu.grouped_matmul %x, %t2 offsets %offs transpose_rhs : tensor<6x8xf32>, tensor<4x5x8xf32>, tensor<4xi32> -> tensor<6x5xf32>
  %experts_moved = rdu.transpose %v perm [1, 0, 2] : tensor<8x4x5xf32> -> tensor<4x8x5xf32>
  %kept = rdu.grouped_matmul %x, %experts_moved offsets %offs : tensor<6x8xf32>, tensor<4x8x5xf32>, tensor<4xi32> -> tensor<6x5xf32>
  func.return %folded, %cancel, %kept : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>
}
