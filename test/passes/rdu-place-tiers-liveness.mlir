// RUN: rducc-opt --check-roundtrip -p rdu-place-tiers %s | filecheck %s
// The HBM of a dead activation is reused: a chain of four kernels of 1024-byte
// results needs the input (1024 bytes, live throughout) and two results at a
// time, 3072 bytes, not the 5120 of all of them.
// So it fits the 4096 bytes of HBM of no-room.toml (all at once would not).
// RUN: rducc-opt -p 'rdu-place-tiers{target="%S/Inputs/no-room.toml"}' %s | filecheck %s

// CHECK: builtin.module attributes {rdu.level = #rdu<level kernels>, tier.hbm_weight_bytes = 0 : i64, tier.ddr_weight_bytes = 0 : i64, tier.activation_bytes = 3072 : i64}

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  func.func @forward(%x: tensor<4x64xf32> {rdu.input = "x"}) -> tensor<4x64xf32> {
    %a = rdu.kernel "k0"(%x) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%in: tensor<4x64xf32>):
      %m = rdu.map %in : (tensor<4x64xf32>) -> tensor<4x64xf32> {
      ^bb0(%0: f32):
        %1 = math.tanh %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %m : tensor<4x64xf32>
    }
    %b = rdu.kernel "k1"(%a) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%in: tensor<4x64xf32>):
      %m = rdu.map %in : (tensor<4x64xf32>) -> tensor<4x64xf32> {
      ^bb0(%0: f32):
        %1 = math.tanh %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %m : tensor<4x64xf32>
    }
    %c = rdu.kernel "k2"(%b) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%in: tensor<4x64xf32>):
      %m = rdu.map %in : (tensor<4x64xf32>) -> tensor<4x64xf32> {
      ^bb0(%0: f32):
        %1 = math.tanh %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %m : tensor<4x64xf32>
    }
    %d = rdu.kernel "k3"(%c) : (tensor<4x64xf32>) -> tensor<4x64xf32> {
    ^bb0(%in: tensor<4x64xf32>):
      %m = rdu.map %in : (tensor<4x64xf32>) -> tensor<4x64xf32> {
      ^bb0(%0: f32):
        %1 = math.tanh %0 : f32
        rdu.yield %1 : f32
      }
      rdu.yield %m : tensor<4x64xf32>
    }
    func.return %d : tensor<4x64xf32>
  }
}
