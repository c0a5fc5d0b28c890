// RUN: rducc-opt %s | rducc-opt | filecheck %s

// `rdu.host_call`: an ATen op run on the host CPU (torch's kernel). It prints
// and parses back; the verifier accepts only a functional, deterministic aten
// overload that resolves, with its operands and results bound by the schema.

%a = "test.op"() : () -> tensor<4x3xf32>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = "reduced"}>(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
%h = rdu.host_call #rdu.aten<"aten::histc.default", {bins = 5 : i64, min = 0.0 : f64, max = 1.0 : f64}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> tensor<5xf32>
%e0, %e1 = rdu.host_call #rdu.aten<"aten::_histogramdd_bin_edges.default", {bins = [3 : i64, 2 : i64]}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
%z = rdu.host_call #rdu.aten<"aten::resize.default", {size = [2 : i64, 2 : i64], memory_format = "contiguous_format"}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> tensor<2x2xf32>
%b = "test.op"() : () -> !tier.buffer<hbm, 4x3xf32>
%s, %i = rdu.host_call #rdu.aten<"aten::sort.stable", {stable = true, dim = 0 : i64}>(%b) tensors ["self"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 4x3xi64>)
// CHECK: rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = "reduced"}>(%{{.*}}) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::histc.default", {bins = 5 : i64, min = 0.000000e+00 : f64, max = 1.000000e+00 : f64}>(%{{.*}}) tensors ["self"] : (tensor<4x3xf32>) -> tensor<5xf32>
// CHECK: rdu.host_call #rdu.aten<"aten::_histogramdd_bin_edges.default", {bins = [3 : i64, 2 : i64]}>(%{{.*}}) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::resize.default", {size = [2 : i64, 2 : i64], memory_format = "contiguous_format"}>(%{{.*}}) tensors ["self"] : (tensor<4x3xf32>) -> tensor<2x2xf32>
// CHECK: rdu.host_call #rdu.aten<"aten::sort.stable", {stable = true, dim = 0 : i64}>(%{{.*}}) tensors ["self"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 4x3xf32>, !tier.buffer<hbm, 4x3xi64>)
