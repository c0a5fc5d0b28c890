// rducc-opt --load-pass-plugin: a plugin's passes join -p; a broken plugin file
// or a broken pass is one located error naming the file or the pass.
// RUN: rducc-opt --load-pass-plugin %S/Inputs/faulty_passes.py -p 'scale{factor=3.0}' %s | filecheck %s --check-prefix=SCALE
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/faulty_passes.py -p break-ir %s 2>&1 | filecheck %s --check-prefix=BREAK
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/faulty_passes.py -p crash %s 2>&1 | filecheck %s --check-prefix=CRASH
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/syntax_error.py -p cse %s 2>&1 | filecheck %s --check-prefix=SYNTAX
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/raises_on_load.py -p cse %s 2>&1 | filecheck %s --check-prefix=RAISES
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/no_pass.py -p cse %s 2>&1 | filecheck %s --check-prefix=NOPASS
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/clashing_name.py -p cse %s 2>&1 | filecheck %s --check-prefix=CLASH
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/missing.py -p cse %s 2>&1 | filecheck %s --check-prefix=MISSING
// RUN: not rducc-opt --load-pass-plugin %S/Inputs/faulty_passes.py -p 'scale{factor=x}' %s 2>&1 | filecheck %s --check-prefix=OPTION

// SCALE:      %sigmoid = rdu.map %x
// SCALE:      arith.constant 3.000000e+00 : f32
// SCALE:      %mul = rdu.map %x, %{{.*}}

// BREAK-NOT:  Traceback
// BREAK:      rducc-opt: error: the IR does not verify after pass 'break-ir':
// BREAK-NEXT: model.py:12:16: error: 'rdu.map' input #0 of shape [4, 32] does not broadcast to the result shape [1]
// BREAK-NEXT:   %sigmoid = rdu.map %x : (tensor<4x32xf32>) -> tensor<1xf32> {
// BREAK-NOT:  Traceback

// CRASH:      rducc-opt: error: pass 'crash' failed at {{.*}}faulty_passes.py:{{[0-9]+}}: KeyError: 'maps'
// SYNTAX:     rducc-opt: error: {{.*}}syntax_error.py:6:{{[0-9]+}}: error: pass plugin does not parse
// RAISES:     rducc-opt: error: {{.*}}raises_on_load.py:6: error: pass plugin failed while loading: KeyError: 'tiles'
// NOPASS:     rducc-opt: error: {{.*}}no_pass.py: error: the pass plugin defines no pass
// CLASH:      rducc-opt: error: {{.*}}clashing_name.py: error: the plugin's pass 'rdu-fuse' has the name of a pass that exists already (rducc.passes.rdu_fuse); rename it
// MISSING:    rducc-opt: error: {{.*}}missing.py: error: pass plugin file not found
// OPTION-NOT: Traceback
// OPTION:     rducc-opt: error: bad options for pass 'scale': Incompatible types: given ('x',), expected <class 'float'>

builtin.module attributes {rdu.level = #rdu<level graph>} {
  func.func @forward(%x: tensor<4x32xf32> {rdu.input = "x"}) -> tensor<4x32xf32> {
    %sigmoid = rdu.map %x : (tensor<4x32xf32>) -> tensor<4x32xf32> {
    ^bb0(%0: f32):
      %1 = arith.constant 1.000000e+00 : f32
      %2 = arith.negf %0 : f32
      %3 = math.exp %2 : f32
      %4 = arith.addf %1, %3 : f32
      %5 = arith.divf %1, %4 : f32
      rdu.yield %5 : f32
    } loc("model.py":12:16)
    %mul = rdu.map %x, %sigmoid : (tensor<4x32xf32>, tensor<4x32xf32>) -> tensor<4x32xf32> {
    ^bb0(%0: f32, %1: f32):
      %2 = arith.mulf %0, %1 : f32
      rdu.yield %2 : f32
    } loc("model.py":12:12)
    func.return %mul : tensor<4x32xf32>
  }
}
