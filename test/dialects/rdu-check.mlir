// RUN: rducc-opt %s --split-input-file --verify-diagnostics | filecheck %s

// `rdu.check`: a size compiled for the example's value, checked at run time
// (rducc.frontend.data_sizes). It round-trips; a wrong type is a verifier error.

%v = "test.op"() : () -> tensor<8xi64>
%c = "test.op"() : () -> tensor<i1>
%r = rdu.check %v if %c else "'bincount': another length" : tensor<8xi64>, tensor<i1> -> tensor<8xi64>
// CHECK: %r = rdu.check %v if %c else "'bincount': another length" : tensor<8xi64>, tensor<i1> -> tensor<8xi64>

// -----

%v = "test.op"() : () -> tensor<8xi64>
%c = "test.op"() : () -> tensor<i1>
%r = rdu.check %v if %c else "m" : tensor<8xi64>, tensor<i1> -> tensor<4xi64>
// CHECK: Operation does not verify: 'rdu.check' result must have its input's type

// -----

%v = "test.op"() : () -> tensor<8xi64>
%c = "test.op"() : () -> tensor<i64>
%r = rdu.check %v if %c else "m" : tensor<8xi64>, tensor<i64> -> tensor<8xi64>
// CHECK: Operation does not verify: 'rdu.check' condition must be i1
