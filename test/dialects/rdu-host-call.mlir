// RUN: rducc-opt %s | rducc-opt | filecheck %s

// `rdu.host_call`: an ATen op run on the host CPU (torch's kernel). It prints
// and parses back; the verifier accepts only an aten overload on the host-call
// allow-list (dialects/rdu/aten_allowlist.txt), with a string argument only one of
// the values the list names, its operands and results bound by the schema.
// A user's custom op is named with #rdu.custom (its schema travels with it, so
// it verifies without the op's library; it runs only once its module is named).
// Complex operands and results cross as real pairs (a trailing dim of 2), named
// after the tensors: `pairs ["A"] -> [0, 1]` (the host runs the complex kernel).

%a = "test.op"() : () -> tensor<4x3xf32>
%l = "test.op"() : () -> tensor<2xi64>
%q, %r = rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = "reduced"}>(%a) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
%h, %hi = rdu.host_call #rdu.aten<"aten::mode.default", {dim = 0 : i64, keepdim = true}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xi64>)
%e0, %e1 = rdu.host_call #rdu.aten<"aten::_histogramdd_bin_edges.default", {bins = [3 : i64, 2 : i64]}>(%a) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
%z = rdu.host_call #rdu.aten<"aten::segment_reduce.default", {reduce = "sum", unsafe = false}>(%a, %l) tensors ["data", "lengths"] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
%b = "test.op"() : () -> !tier.buffer<hbm, 4x3xf32>
%s, %i = rdu.host_call #rdu.aten<"aten::mode.default", {dim = 0 : i64}>(%b) tensors ["self"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 3xf32>, !tier.buffer<hbm, 3xi64>)
%c = rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x, float scale=1.) -> Tensor", {scale = 2.0 : f64}>(%a) tensors ["x"] : (tensor<4x3xf32>) -> tensor<4x3xf32>
%c0, %c1 = rdu.host_call #rdu.custom<"mylib::split_rows.default", "mylib::split_rows(Tensor x, Tensor? w=None) -> (Tensor, Tensor)">(%b) tensors ["x"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 2x3xf32>, !tier.buffer<hbm, 2x3xf32>)
%ap = "test.op"() : () -> tensor<4x3x2xf32>
%zq, %zr = rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%ap) tensors ["A"] pairs ["A"] -> [0, 1] : (tensor<4x3x2xf32>) -> (tensor<4x4x2xf32>, tensor<4x3x2xf32>)
%p = "test.op"() : () -> !tier.buffer<hbm, 3x3x2xf64>
%w, %v = rdu.host_call #rdu.aten<"aten::_linalg_eigh.default">(%p) tensors ["A"] pairs ["A"] -> [1] : (!tier.buffer<hbm, 3x3x2xf64>) -> (!tier.buffer<hbm, 3xf64>, !tier.buffer<hbm, 3x3x2xf64>)
%ev, %evec = rdu.host_call #rdu.aten<"aten::linalg_eig.default">(%a) tensors ["self"] pairs [] -> [0, 1] : (tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x4x2xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::linalg_qr.default", {mode = "reduced"}>(%{{.*}}) tensors ["A"] : (tensor<4x3xf32>) -> (tensor<4x3xf32>, tensor<3x3xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::mode.default", {dim = 0 : i64, keepdim = true}>(%{{.*}}) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<1x3xf32>, tensor<1x3xi64>)
// CHECK: rdu.host_call #rdu.aten<"aten::_histogramdd_bin_edges.default", {bins = [3 : i64, 2 : i64]}>(%{{.*}}) tensors ["self"] : (tensor<4x3xf32>) -> (tensor<4xf32>, tensor<3xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::segment_reduce.default", {reduce = "sum", unsafe = false}>(%{{.*}}, %{{.*}}) tensors ["data", "lengths"] : (tensor<4x3xf32>, tensor<2xi64>) -> tensor<2x3xf32>
// CHECK: rdu.host_call #rdu.aten<"aten::mode.default", {dim = 0 : i64}>(%{{.*}}) tensors ["self"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 3xf32>, !tier.buffer<hbm, 3xi64>)
// CHECK: rdu.host_call #rdu.custom<"mylib::softsign.default", "mylib::softsign(Tensor x, float scale=1.) -> Tensor", {scale = 2.000000e+00 : f64}>(%{{.*}}) tensors ["x"] : (tensor<4x3xf32>) -> tensor<4x3xf32>
// CHECK: rdu.host_call #rdu.custom<"mylib::split_rows.default", "mylib::split_rows(Tensor x, Tensor? w=None) -> (Tensor, Tensor)">(%{{.*}}) tensors ["x"] : (!tier.buffer<hbm, 4x3xf32>) -> (!tier.buffer<hbm, 2x3xf32>, !tier.buffer<hbm, 2x3xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::linalg_qr.default">(%{{.*}}) tensors ["A"] pairs ["A"] -> [0, 1] : (tensor<4x3x2xf32>) -> (tensor<4x4x2xf32>, tensor<4x3x2xf32>)
// CHECK: rdu.host_call #rdu.aten<"aten::_linalg_eigh.default">(%{{.*}}) tensors ["A"] pairs ["A"] -> [1] : (!tier.buffer<hbm, 3x3x2xf64>) -> (!tier.buffer<hbm, 3xf64>, !tier.buffer<hbm, 3x3x2xf64>)
// CHECK: rdu.host_call #rdu.aten<"aten::linalg_eig.default">(%{{.*}}) tensors ["self"] pairs [] -> [0, 1] : (tensor<4x3xf32>) -> (tensor<4x2xf32>, tensor<4x4x2xf32>)
