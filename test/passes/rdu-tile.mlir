// RUN: rducc-opt -p rdu-tile %s | filecheck %s --check-prefix=SN40L
// The recorded plans re-parse.
// RUN: rducc-opt --check-roundtrip -p 'rdu-tile{target="%S/Inputs/tiny.toml"}' %s | filecheck %s --check-prefix=TINY
//
// Diagnostics: a kernel no tiling fits (located at its first op), a target file missing a field.
// RUN: not rducc-opt -p 'rdu-tile{target="%S/Inputs/micro.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
// RUN: not rducc-opt -p 'rdu-tile{target="%S/Inputs/bad-missing-field.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR-FIELD

// On sn40l (520 MB of SRAM) every kernel fits whole: one tile, no tiled dims;
// working_set is the bytes the kernel keeps in SRAM (inputs, outputs and the
// peak of its intermediates).
// SN40L:      %y = rdu.kernel "k0"(%x, %p_w) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1], out = [-1], working_set = 212992>}
// SN40L-NEXT: ^bb0
// SN40L:      %s = rdu.kernel "k1"(%small) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 512>}
// SN40L:      %wide = rdu.kernel "k2"(%x2, %p_w2) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1], out = [-1], working_set = 279552>}
// SN40L:      %y3 = rdu.kernel "k3"(%x3, %p_w) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1, -1], out = [-1], working_set = 90112>}
// SN40L:      %rows = rdu.kernel "k4"(%x4) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 164032>}
// SN40L:      %rows5 = rdu.kernel "k5"(%x5) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 65664>}

// On a 64 KiB SRAM:
// k0 (208 KiB whole) runs in 8 row tiles of 32 (a lane multiple): the input
// x is tiled on dim 0 and double-buffered, the weight stays whole:
// 2 x 8 KiB + 16 KiB + 8 KiB output tile + 8 KiB matmul tile = 48 KiB.
// TINY:      %y = rdu.kernel "k0"(%x, %p_w) {rdu.tile_plan = #rdu.tile_plan<tiles = 8, size = 32, in = [0, -1], out = [0], working_set = 49152>}
// k1 fits whole.
// TINY:      %s = rdu.kernel "k1"(%small) {rdu.tile_plan = #rdu.tile_plan<tiles = 1, size = 0, in = [-1], out = [-1], working_set = 512>}
// k2: M is 4, so the loop is over N: rows of the transposed weight (dim 0),
// columns of the result (dim 1).
// TINY:      %wide = rdu.kernel "k2"(%x2, %p_w2) {rdu.tile_plan = #rdu.tile_plan<tiles = 16, size = 64, in = [-1, 0], out = [1], working_set = 34816>}
// k3: M = 96 needs 3 tiles of 32, N = 64 only 2: the fewest tiles win.
// TINY:      %y3 = rdu.kernel "k3"(%x3, %p_w) {rdu.tile_plan = #rdu.tile_plan<tiles = 2, size = 32, in = [-1, 0], out = [1], working_set = 65536>}
// k4: the reduced dim cannot be split; 40 rows have no lane-multiple divisor
// below 40, so the tile is the largest divisor that fits (5 rows).
// TINY:      %rows = rdu.kernel "k4"(%x4) {rdu.tile_plan = #rdu.tile_plan<tiles = 8, size = 5, in = [0], out = [0], working_set = 41024>}
// k5: 2 tiles of 48 rows would fit, but a lane multiple (32) is preferred.
// TINY:      %rows5 = rdu.kernel "k5"(%x5) {rdu.tile_plan = #rdu.tile_plan<tiles = 3, size = 32, in = [0], out = [0], working_set = 43648>}
// The bodies are unchanged: tiling is only recorded here.
// TINY:      rdu.reduce sum %{{.*}} dims [1] : tensor<96x170xf32> -> tensor<96xf32>

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: model.py:12:7: error: kernel k0 cannot be tiled to fit micro: untiled it needs 212992 bytes of SRAM (inputs 81920, outputs 65536, intermediates 65536) and 208 PMUs, against 8192 bytes and 1040 PMUs, and no parallel dimension splits it small enough
// ERR-NOT: Traceback

// ERR-FIELD-NOT: Traceback
// ERR-FIELD:     rducc-opt: error: target file {{.*}}Inputs/bad-missing-field.toml: missing field 'ddr_bytes'
// ERR-FIELD-NOT: Traceback

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @w : tensor<64x64xf32> {kind = "parameter"}
  tier.global @w2 : tensor<1024x64xf32> {kind = "parameter"}
  func.func @forward(%x: tensor<256x64xf32> {rdu.input = "x"}, %small: tensor<4x16xf32> {rdu.input = "small"}, %x2: tensor<4x64xf32> {rdu.input = "x2"}, %x3: tensor<96x64xf32> {rdu.input = "x3"}, %x4: tensor<40x1024xf32> {rdu.input = "x4"}, %x5: tensor<96x170xf32> {rdu.input = "x5"}, %p_w: tensor<64x64xf32> {rdu.global = @w}, %p_w2: tensor<1024x64xf32> {rdu.global = @w2}) -> (tensor<256x64xf32>, tensor<4x16xf32>, tensor<4x1024xf32>, tensor<96x64xf32>, tensor<40xf32>, tensor<96xf32>) {
    %y = rdu.kernel "k0"(%x, %p_w) : (tensor<256x64xf32>, tensor<64x64xf32>) -> tensor<256x64xf32> {
    ^bb0(%a: tensor<256x64xf32>, %w: tensor<64x64xf32>):
      %mm = rdu.matmul %a, %w transpose_rhs : tensor<256x64xf32>, tensor<64x64xf32> -> tensor<256x64xf32> loc("model.py":12:7)
      %r = rdu.map %mm : (tensor<256x64xf32>) -> tensor<256x64xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %r : tensor<256x64xf32>
    }
    %s = rdu.kernel "k1"(%small) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
    ^bb0(%a: tensor<4x16xf32>):
      %e = rdu.map %a : (tensor<4x16xf32>) -> tensor<4x16xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %e : tensor<4x16xf32>
    }
    %wide = rdu.kernel "k2"(%x2, %p_w2) : (tensor<4x64xf32>, tensor<1024x64xf32>) -> tensor<4x1024xf32> {
    ^bb0(%a: tensor<4x64xf32>, %w: tensor<1024x64xf32>):
      %mm = rdu.matmul %a, %w transpose_rhs : tensor<4x64xf32>, tensor<1024x64xf32> -> tensor<4x1024xf32>
      rdu.yield %mm : tensor<4x1024xf32>
    }
    %y3 = rdu.kernel "k3"(%x3, %p_w) : (tensor<96x64xf32>, tensor<64x64xf32>) -> tensor<96x64xf32> {
    ^bb0(%a: tensor<96x64xf32>, %w: tensor<64x64xf32>):
      %mm = rdu.matmul %a, %w transpose_rhs : tensor<96x64xf32>, tensor<64x64xf32> -> tensor<96x64xf32>
      %r = rdu.map %mm : (tensor<96x64xf32>) -> tensor<96x64xf32> {
      ^bb0(%0: f32):
        %1 = arith.constant 0.000000e+00 : f32
        %2 = arith.maximumf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %r : tensor<96x64xf32>
    }
    %rows = rdu.kernel "k4"(%x4) : (tensor<40x1024xf32>) -> tensor<40xf32> {
    ^bb0(%a: tensor<40x1024xf32>):
      %sum = rdu.reduce sum %a dims [1] : tensor<40x1024xf32> -> tensor<40xf32>
      rdu.yield %sum : tensor<40xf32>
    }
    %rows5 = rdu.kernel "k5"(%x5) : (tensor<96x170xf32>) -> tensor<96xf32> {
    ^bb0(%a: tensor<96x170xf32>):
      %sum = rdu.reduce sum %a dims [1] : tensor<96x170xf32> -> tensor<96xf32>
      rdu.yield %sum : tensor<96xf32>
    }
    func.return %y, %s, %wide, %y3, %rows, %rows5 : tensor<256x64xf32>, tensor<4x16xf32>, tensor<4x1024xf32>, tensor<96x64xf32>, tensor<40xf32>, tensor<96xf32>
  }
}
