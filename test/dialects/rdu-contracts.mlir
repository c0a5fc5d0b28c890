// The typed contract attributes round-trip; a target whose figures were edited
// by hand no longer matches its hash and does not verify.
// RUN: rducc-opt --check-roundtrip %s | filecheck %s
// RUN: sed -e 's/sram_bytes = 520000000/sram_bytes = 1000/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=HASH

// CHECK: builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.target = #rdu.target<{name = "sn40l", sockets = 1, pcus = 1040,
// CHECK-SAME: hash = "3355446fda084c56">}
// CHECK: rdu.shard = #rdu.split<(0, 8, 2), (1, 2, 1)>
// CHECK-SAME: rdu.result_shards = [#rdu.split<>, #rdu.split<(1, 2, 1)>]
// CHECK: rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0, -1], out = [0], working_set = 1024>
// HASH: rdu.target: the figures do not match their hash

builtin.module attributes {rdu.level = #rdu<level kernels>, rdu.target = #rdu.target<{name = "sn40l", sockets = 1 : i64, pcus = 1040 : i64, pmus = 1040 : i64, lanes = 32 : i64, peak_flops_bf16 = 6.380000e+14 : f64, peak_flops_f32 = 1.595000e+14 : f64, peak_flops_int = 1.595000e+14 : f64, sram_bytes = 520000000 : i64, pmu_bytes = 500000 : i64, sram_bandwidth = 4.260000e+14 : f64, hbm_bytes = 64000000000 : i64, hbm_bandwidth = 1.600000e+12 : f64, ddr_bytes = 1500000000000 : i64, ddr_bandwidth = 1.000000e+11 : f64, dma_latency_s = 1.000000e-06 : f64, kernel_launch_s = 5.000000e-06 : f64, link_bandwidth = 1.000000e+11 : f64, link_latency_s = 1.000000e-06 : f64, kernel_looping = true, source = "sn40l"}, hash = "3355446fda084c56">} {
  func.func @forward(%x: tensor<128x4xf32> {rdu.input = "x", rdu.shard = #rdu.split<(0, 8, 2), (1, 2, 1)>}) -> (tensor<128x4xf32>, tensor<128x4xf32>) attributes {rdu.result_shards = [#rdu.split<>, #rdu.split<(1, 2, 1)>]} {
    %y = rdu.kernel "k0"(%x) {rdu.tile_plan = #rdu.tile_plan<tiles = 4, size = 32, in = [0, -1], out = [0], working_set = 1024>} : (tensor<128x4xf32>) -> tensor<128x4xf32> {
    ^bb0(%a: tensor<128x4xf32>):
      rdu.yield %a : tensor<128x4xf32>
    }
    func.return %y, %y : tensor<128x4xf32>, tensor<128x4xf32>
  }
}
