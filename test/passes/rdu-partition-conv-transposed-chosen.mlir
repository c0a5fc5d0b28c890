// RUN: rducc-opt -p 'rdu-partition{target=sn40l-8}' %s | filecheck %s
// RUN: sed 's/bf16/f32/g' %s | rducc-opt -p 'rdu-partition{target=sn40l-8}' | filecheck %s --check-prefix=F32

// With no split given, the cost model chooses one for transposed
// convolutions as for direct ones: two 2048-channel 3x3 transposed
// convolutions are worth splitting 8 ways (the first's output channels, the
// second's input channels, one all-reduce), as the same direct convolutions
// are. Before, a transposed convolution was never split, so every tp
// candidate ran it whole on each socket and the chooser kept one socket.

// CHECK: builtin.module attributes {{{.*}}rdu.partition = {tp = 8 : i64, pp = 1 : i64}}
// CHECK: %a = rdu.conv %x, %wa {{.*}} transposed : tensor<1x2048x16x16xbf16>, tensor<2048x256x3x3xbf16> -> tensor<1x256x16x16xbf16>
// CHECK: %b = rdu.conv %a, %wb {{.*}} transposed : tensor<1x256x16x16xbf16>, tensor<256x2048x3x3xbf16> -> tensor<1x2048x16x16xbf16>
// CHECK: rdu.all_reduce %b group 8

// The same in float32, whose transposed convolutions are the same op since
// tconv23 (before, the frontend wrote them as direct convolutions of a
// spread input by a computed weight, which tp did not split): tp=8 too.

// F32: builtin.module attributes {{{.*}}rdu.partition = {tp = 8 : i64, pp = 1 : i64}}
// F32: %a = rdu.conv %x, %wa {{.*}} transposed : tensor<1x2048x16x16xf32>, tensor<2048x256x3x3xf32> -> tensor<1x256x16x16xf32>
// F32: %b = rdu.conv %a, %wb {{.*}} transposed : tensor<1x256x16x16xf32>, tensor<256x2048x3x3xf32> -> tensor<1x2048x16x16xf32>
// F32: rdu.all_reduce %b group 8

builtin.module attributes {rdu.level = #rdu<level graph>} {
  tier.global @a.weight : tensor<2048x2048x3x3xbf16> {kind = "parameter"}
  tier.global @b.weight : tensor<2048x2048x3x3xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<1x2048x16x16xbf16> {rdu.input = "x"}, %wa: tensor<2048x2048x3x3xbf16> {rdu.global = @a.weight}, %wb: tensor<2048x2048x3x3xbf16> {rdu.global = @b.weight}) -> tensor<1x2048x16x16xbf16> {
    %a = rdu.conv %x, %wa stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed : tensor<1x2048x16x16xbf16>, tensor<2048x2048x3x3xbf16> -> tensor<1x2048x16x16xbf16>
    %b = rdu.conv %a, %wb stride [1, 1] padding [1, 1] dilation [1, 1] output_padding [0, 0] groups 1 transposed : tensor<1x2048x16x16xbf16>, tensor<2048x2048x3x3xbf16> -> tensor<1x2048x16x16xbf16>
    func.return %b : tensor<1x2048x16x16xbf16>
  }
}
