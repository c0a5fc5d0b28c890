// The mapping round-trips: printed, parsed (its verifier passes) and printed the same.
// RUN: rducc-opt --check-roundtrip -p 'rdu-sram-alloc,rdu-map-units{target="%S/Inputs/fabric-8.toml"}' %s | filecheck %s
// A kernel of more stages than PCUs is split into sections.
// RUN: rducc-opt -p 'rdu-sram-alloc,rdu-map-units{target="%S/Inputs/fabric-3.toml"}' %s | filecheck %s --check-prefix=SECTIONS
// Diagnostic: an op whose buffers alone need more PMUs than the chip has.
// RUN: not rducc-opt -p 'rdu-sram-alloc,rdu-map-units{target="%S/Inputs/fabric-no-room.toml"}' %s 2>&1 | filecheck %s --check-prefix=ERR
//
// Stage rows are [op, section, first PCU, PCUs, hops], buffer rows [buffer,
// section, first PMU, PMUs]; buffers are the ins, the outs, then body values.
//
// k0 on 8 PCUs: four one-op maps of 1,024 elements (1,024 FLOPs each on one
// tile; each may use at most ceil(1,024 / (32 lanes x 6 stages)) = 6 PCUs and at
// least 1). sn40l's figures make every stage fed, not computed: a PCU
// (159.5 TFLOP/s f32 / 8 PCUs x 1/2 for a one-op map x compute_efficiency 0.85)
// computes 1,024 FLOPs in 0.12 ns, but pcu_feed_bandwidth (204.8 GB/s) brings
// the operands in 4,096 / 204.8e9 = 20 ns, and the last map reads two tensors,
// 8,192 B in 40 ns. Work 20, 20, 20, 40 ns: the slowest stage cannot get below
// 20 ns on 8 PCUs (10 ns needs 2, 2, 2, 4 = 10; 13.3 ns needs 2, 2, 2, 3 = 9),
// and 20 ns needs 1, 1, 1, 2; the 3 PCUs left over would make no stage of the
// slowest faster, so they stay free (as `balance` leaves a 7th unit of two
// equal stages). PMUs: 16, each buffer at least ceil(4,096 / 500,000) = 1,
// balanced by its traffic.
// CHECK: tier.compute "k0"
// CHECK-SAME: rdu.mapping = #rdu.mapping<grid = [4, 8], sections = 1, stages = [[0, 0, 0, 1, 3], [1, 0, 1, 1, 5], [2, 0, 2, 1, 7], [3, 0, 3, 2, 11]], buffers = [[0, 0, 0, 3], [2, 0, 3, 3], [3, 0, 6, 3], [4, 0, 9, 3], [1, 0, 12, 2]]>
//
// k1: sqrt on 512 elements (512 FLOPs, at most 3 PCUs) then a multiply-add (1,024
// FLOPs, at most 6), both fed, not computed: 2,048 B in 10 ns and 2,056 B (the
// tile and two scalars) in 10.04 ns. 9 PCUs would be each stage's most, 8 are
// there; the balance gives 3 and 5 (10 / 3 = 3.33 ns and 10.04 / 5 = 2.01 ns:
// the first stage, at its most, is the slowest; 2 and 6 would make it 5 ns).
// CHECK: tier.compute "k1"
// CHECK-SAME: rdu.mapping = #rdu.mapping<grid = [4, 8], sections = 1, stages = [[0, 0, 0, 3, 1], [1, 0, 3, 5, 5]]

// On 3 PCUs k0's four stages take two sections: the first three, then the last.
// SECTIONS: tier.compute "k0"
// SECTIONS-SAME: sections = 2, stages = [[0, 0, 0, 1, 3], [1, 0, 1, 1, 5], [2, 0, 2, 1, 7], [3, 1, 0, 3, 3]]
// SECTIONS: tier.compute "k1"
// SECTIONS-SAME: sections = 1

// ERR-NOT:  Traceback
// ERR:      error: rdu-map-units: no room for 'rdu.map' of kernel 'k0': it needs 1 PCUs and 3 PMUs at once but the target has 2 and 2
// ERR-NOT:  Traceback

builtin.module attributes {rdu.level = #rdu<level memory>} {
  func.func @forward(%x: !tier.buffer<hbm, 32x32xf32> {rdu.input = "x"}) -> !tier.buffer<hbm, 32x32xf32> {
    %a = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %a_out = tier.alloc : !tier.buffer<sram, 32x32xf32>
    %mid = tier.alloc : !tier.buffer<hbm, 32x32xf32>
    tier.dma %x -> %a : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 32x32xf32>
    tier.compute "k0" ins(%a : !tier.buffer<sram, 32x32xf32>) outs(%a_out : !tier.buffer<sram, 32x32xf32>) {
    ^bb0(%t: tensor<32x32xf32>):
      %e1 = rdu.map %t : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.exp %0 : f32
        rdu.yield %1 : f32
      } loc("model.py":20:3)
      %e2 = rdu.map %e1 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = arith.negf %0 : f32
        rdu.yield %1 : f32
      }
      %e3 = rdu.map %e2 : (tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32):
        %1 = math.sqrt %0 : f32
        rdu.yield %1 : f32
      }
      %n = rdu.map %e3, %t : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<32x32xf32> {
      ^bb0(%0: f32, %1: f32):
        %2 = arith.addf %0, %1 : f32
        rdu.yield %2 : f32
      }
      rdu.yield %n : tensor<32x32xf32>
    }
    tier.dma %a_out -> %mid : !tier.buffer<sram, 32x32xf32> -> !tier.buffer<hbm, 32x32xf32>
    tier.dealloc %a : !tier.buffer<sram, 32x32xf32>
    tier.dealloc %a_out : !tier.buffer<sram, 32x32xf32>
    %b = tier.alloc buffers 2 : !tier.buffer<sram, 16x32xf32>
    %scale = tier.alloc : !tier.buffer<sram, 1xf32>
    %shift = tier.alloc : !tier.buffer<sram, 1xf32>
    %b_out = tier.alloc : !tier.buffer<sram, 16x32xf32>
    %y = tier.alloc : !tier.buffer<hbm, 32x32xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c16 = arith.constant 16 : index
    scf.for %i = %c0 to %c2 step %c1 {
      %off = arith.muli %i, %c16 : index
      tier.dma %mid[%off, %c0] -> %b : !tier.buffer<hbm, 32x32xf32> -> !tier.buffer<sram, 16x32xf32>
      tier.compute "k1" ins(%b, %scale, %shift : !tier.buffer<sram, 16x32xf32>, !tier.buffer<sram, 1xf32>, !tier.buffer<sram, 1xf32>) outs(%b_out : !tier.buffer<sram, 16x32xf32>) {
      ^bb0(%t: tensor<16x32xf32>, %k: tensor<1xf32>, %h: tensor<1xf32>):
        %u = rdu.map %t : (tensor<16x32xf32>) -> tensor<16x32xf32> {
        ^bb0(%0: f32):
          %1 = math.sqrt %0 : f32
          rdu.yield %1 : f32
        }
        %v = rdu.map %u, %k, %h : (tensor<16x32xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<16x32xf32> {
        ^bb0(%0: f32, %1: f32, %2: f32):
          %3 = arith.mulf %0, %1 : f32
          %4 = arith.addf %3, %2 : f32
          rdu.yield %4 : f32
        }
        rdu.yield %v : tensor<16x32xf32>
      }
      tier.dma %b_out -> %y[%off, %c0] : !tier.buffer<sram, 16x32xf32> -> !tier.buffer<hbm, 32x32xf32>
    }
    tier.dealloc %b : !tier.buffer<sram, 16x32xf32>
    tier.dealloc %scale : !tier.buffer<sram, 1xf32>
    tier.dealloc %shift : !tier.buffer<sram, 1xf32>
    tier.dealloc %b_out : !tier.buffer<sram, 16x32xf32>
    tier.dealloc %mid : !tier.buffer<hbm, 32x32xf32>
    func.return %y : !tier.buffer<hbm, 32x32xf32>
  }
}
