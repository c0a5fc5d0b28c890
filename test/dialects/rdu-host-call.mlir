// RUN: rducc-opt %s | rducc-opt | filecheck %s

// `rdu.host_call`: an ATen op run on the host CPU (torch's kernel). It prints
// and parses back; the verifier accepts only a functional, deterministic aten
// overload that resolves, with its operands and results bound by the schema.

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call "aten.linalg_qr.default"(%a) tensors ["A"] args {mode = "reduced"} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
%h = rdu.host_call "aten.histc.default"(%a) tensors ["self"] args {bins = 5 : i64, min = 0.0 : f64, max = 1.0 : f64} : (tensor<4x3xf32>) -> tensor<5xf32>
%e0, %e1 = rdu.host_call "aten._histogramdd_bin_edges.default"(%a) tensors ["self"] args {bins = [3 : i64, 2 : i64]} : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
%z = rdu.host_call "aten.resize.default"(%a) tensors ["self"] args {size = [2 : i64, 2 : i64], memory_format = "contiguous_format"} : (tensor<4x3xf32>) -> tensor<2x2xf32>
%b = "test.op"() : () -> !tier.buffer<hbm, 4x3xf32>
%s, %i = rdu.host_call "aten.sort.stable"(%b) tensors ["self"] args {stable = true, dim = 0 : i64} : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 4x3xi64>)
// CHECK: rdu.host_call "aten.linalg_qr.default"(%{{.*}}) tensors ["A"] args {mode = "reduced"} : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: rdu.host_call "aten.histc.default"(%{{.*}}) tensors ["self"] args {bins = 5 : i64, min = 0.000000e+00 : f64, max = 1.000000e+00 : f64} : (tensor<4x3xf32>) -> tensor<5xf32>
// CHECK: rdu.host_call "aten._histogramdd_bin_edges.default"(%{{.*}}) tensors ["self"] args {bins = [3 : i64, 2 : i64]} : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
// CHECK: rdu.host_call "aten.resize.default"(%{{.*}}) tensors ["self"] args {size = [2 : i64, 2 : i64], memory_format = "contiguous_format"} : (tensor<4x3xf32>) -> tensor<2x2xf32>
// CHECK: rdu.host_call "aten.sort.stable"(%{{.*}}) tensors ["self"] args {stable = true, dim = 0 : i64} : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 4x3xi64>)
