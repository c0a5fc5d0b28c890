// The padding a program of shape buckets allows (#rdu.padding, `rducc.shapes.padding`):
// the dims a call may pad up to a larger bucket, per input and per output the
// padded dim each of its dims carries, each refused dim with its reason, and per
// input the value its padded positions hold ("" zero; "-inf", "inf", "1": the
// neutral value of a max, min or product it meets; "valid": a hidden validity input
// after the user inputs, one vector over one padded dim, for masked reductions). It
// round-trips; a row naming a dim the attribute does not list, a padded dim the
// buckets are not for, a fill that is not one of those, or a validity input over
// more than one dim, is refused.
// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: sed -e 's/\[\["batch", ""\]\], \[\["batch", ""\]\]/[["seq", ""]], [["batch", ""]]/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=UNLISTED
// RUN: sed -e 's/\["-inf"\]>/["nan"]>/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=FILL
// RUN: sed -e 's/\[\["batch", ""\]\], \[\["batch", ""\]\], \[\], \["-inf"\]/[["batch", ""], ["batch"]], [["batch", ""]], [], ["-inf", "valid"]/' %s | rducc-opt | filecheck %s --check-prefix=VALID
// RUN: sed -e 's/\[\["batch", ""\]\], \[\["batch", ""\]\], \[\], \["-inf"\]/[["batch", ""], ["batch", ""]], [["batch", ""]], [], ["-inf", "valid"]/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=VALID-ROW
// RUN: sed -e 's/#rdu.padding<\["batch"\], \[\["batch", ""\]\], \[\["batch", ""\]\]/#rdu.padding<["seq"], [["seq", ""]], [["seq", ""]]/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=DIMS

// CHECK:      builtin.module attributes {rdu.level = #rdu<level graph>, rdu.padding = #rdu.padding<["batch"], [["batch", ""]], [["batch", ""]], [], ["-inf"]>} {
// CHECK-NEXT:   builtin.module @forward__batch4 attributes {rdu.bucket = #rdu.bucket<batch = 4>} {

// UNLISTED: #rdu.padding names 'seq', which is not one of its dims
// FILL: #rdu.padding fills an input with 'nan'; a fill is one of '', '-inf', 'inf', '1'
// VALID: rdu.padding = #rdu.padding<["batch"], [["batch", ""], ["batch"]], [["batch", ""]], [], ["-inf", "valid"]>
// VALID-ROW: #rdu.padding has a validity input of dims ['batch', '']; it is one vector over one padded dim
// DIMS: rdu.padding names dims seq; the buckets are for batch

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.padding = #rdu.padding<["batch"], [["batch", ""]], [["batch", ""]], [], ["-inf"]>} {
  builtin.module @forward__batch4 attributes {rdu.bucket = #rdu.bucket<batch = 4>} {
    func.func @forward(%x: tensor<4x8xf32> {rdu.input = "x"}) -> tensor<4x8xf32> {
      %relu = rdu.map %x : (tensor<4x8xf32>) -> tensor<4x8xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      func.return %relu : tensor<4x8xf32>
    }
  }
}
