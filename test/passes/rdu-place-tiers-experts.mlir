// Residency by heat (rdu-place-tiers): weights read whole a token are placed
// before the stacked expert tables, which a token reads only in the rows its
// experts select (`rdu.owned_rows`: here 2 of 6 pairs on each socket's 4 local
// experts, half of each table a token). An outlined layer's expert tables are one
// group per parameter (both calls' @down and @down1 share @layer's parameter).
// Where the weights stop fitting whole, the tables of that heat (all four: each
// read in half its rows) keep one share of their rows in HBM (rows are runs of
// the last dim: 4 x 4096 in a socket's up table, 4 x 8192 in its down table),
// what HBM has left after the hotter weights, recorded as `tier.hbm_rows` on the
// global and on the parameter, the rest in DDR (the global's tier). Target:
// sn40l-16 with 800 MiB of HBM a socket (Inputs/experts-hbm.toml): @head (16 MiB
// a socket, read whole, read last) fits, then 12,540 of the 16,384 rows of each up
// table and 25,080 of the 32,768 of each down table (76.5%): HBM full to within a
// row of each table. In first-read order @head would be left out in DDR.
// RUN: rducc-opt --check-roundtrip -p 'rdu-outline-layers,rdu-partition{tp=4 ep=4},rdu-fuse{level=1},rdu-tile,rdu-place-tiers{target="%S/Inputs/experts-hbm.toml"}' %s | filecheck %s
// (With the HBM of sn40l-16 every table fits whole: rdu-insert-dma-experts.mlir.)
//
// Diagnostic: `tier.hbm_rows` on a global that keeps all its rows in HBM (the
// verifier also refuses one on a global not in DDR).
// RUN: sed -e 's/tier.global @head : tensor<4096x8192xbf16> {kind = "parameter"}/tier.global @head in ddr : tensor<4096x8192xbf16> {kind = "parameter", tier.hbm_rows = 4096 : i64}/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-16"} {
  tier.global @up : tensor<16x4096x8192xbf16> {kind = "parameter"}
  tier.global @down : tensor<16x8192x4096xbf16> {kind = "parameter"}
  tier.global @up1 : tensor<16x4096x8192xbf16> {kind = "parameter"}
  tier.global @down1 : tensor<16x8192x4096xbf16> {kind = "parameter"}
  tier.global @head : tensor<4096x8192xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<3x8192xbf16> {rdu.input = "x"}, %ids: tensor<3x2xi64> {rdu.input = "ids"}, %weights: tensor<3x2xbf16> {rdu.input = "weights"}, %wu: tensor<16x4096x8192xbf16> {rdu.global = @up}, %wd: tensor<16x8192x4096xbf16> {rdu.global = @down}, %wu1: tensor<16x4096x8192xbf16> {rdu.global = @up1}, %wd1: tensor<16x8192x4096xbf16> {rdu.global = @down1}, %head: tensor<4096x8192xbf16> {rdu.global = @head}) -> tensor<3x4096xbf16> {
    %flat = rdu.reshape %ids {rdu.layer = "layers.0"} : tensor<3x2xi64> -> tensor<6xi64>
    %rows = rdu.reshape %x {rdu.layer = "layers.0"} : tensor<3x8192xbf16> -> tensor<3x1x8192xbf16>
    %pairs = rdu.broadcast %rows {rdu.layer = "layers.0"} : tensor<3x1x8192xbf16> -> tensor<3x2x8192xbf16>
    %cols = rdu.reshape %pairs {rdu.layer = "layers.0"} : tensor<3x2x8192xbf16> -> tensor<6x8192x1xbf16>
    %up = rdu.gather %wu[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<16x4096x8192xbf16>, tensor<6xi64> -> tensor<6x4096x8192xbf16>
    %h = rdu.matmul %up, %cols {rdu.layer = "layers.0"} : tensor<6x4096x8192xbf16>, tensor<6x8192x1xbf16> -> tensor<6x4096x1xbf16>
    %down = rdu.gather %wd[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<16x8192x4096xbf16>, tensor<6xi64> -> tensor<6x8192x4096xbf16>
    %y = rdu.matmul %down, %h {rdu.layer = "layers.0"} : tensor<6x8192x4096xbf16>, tensor<6x4096x1xbf16> -> tensor<6x8192x1xbf16>
    %yf = rdu.reshape %y {rdu.layer = "layers.0"} : tensor<6x8192x1xbf16> -> tensor<6x8192xbf16>
    %w = rdu.reshape %weights {rdu.layer = "layers.0"} : tensor<3x2xbf16> -> tensor<6x1xbf16>
    %scaled = rdu.map %yf, %w {rdu.layer = "layers.0"} : (tensor<6x8192xbf16>, tensor<6x1xbf16>) -> tensor<6x8192xbf16> {
    ^bb0(%a: bf16, %b: bf16):
      %m = arith.mulf %a, %b : bf16
      rdu.yield %m : bf16
    }
    %per_token = rdu.reshape %scaled {rdu.layer = "layers.0"} : tensor<6x8192xbf16> -> tensor<3x2x8192xbf16>
    %out = rdu.reduce sum %per_token dims [1] {rdu.layer = "layers.0"} : tensor<3x2x8192xbf16> -> tensor<3x8192xbf16>
    %flat_1 = rdu.reshape %ids {rdu.layer = "layers.1"} : tensor<3x2xi64> -> tensor<6xi64>
    %rows_1 = rdu.reshape %out {rdu.layer = "layers.1"} : tensor<3x8192xbf16> -> tensor<3x1x8192xbf16>
    %pairs_1 = rdu.broadcast %rows_1 {rdu.layer = "layers.1"} : tensor<3x1x8192xbf16> -> tensor<3x2x8192xbf16>
    %cols_1 = rdu.reshape %pairs_1 {rdu.layer = "layers.1"} : tensor<3x2x8192xbf16> -> tensor<6x8192x1xbf16>
    %up_1 = rdu.gather %wu1[%flat_1] dim 0 wraps {rdu.layer = "layers.1"} : tensor<16x4096x8192xbf16>, tensor<6xi64> -> tensor<6x4096x8192xbf16>
    %h_1 = rdu.matmul %up_1, %cols_1 {rdu.layer = "layers.1"} : tensor<6x4096x8192xbf16>, tensor<6x8192x1xbf16> -> tensor<6x4096x1xbf16>
    %down_1 = rdu.gather %wd1[%flat_1] dim 0 wraps {rdu.layer = "layers.1"} : tensor<16x8192x4096xbf16>, tensor<6xi64> -> tensor<6x8192x4096xbf16>
    %y_1 = rdu.matmul %down_1, %h_1 {rdu.layer = "layers.1"} : tensor<6x8192x4096xbf16>, tensor<6x4096x1xbf16> -> tensor<6x8192x1xbf16>
    %yf_1 = rdu.reshape %y_1 {rdu.layer = "layers.1"} : tensor<6x8192x1xbf16> -> tensor<6x8192xbf16>
    %w_1 = rdu.reshape %weights {rdu.layer = "layers.1"} : tensor<3x2xbf16> -> tensor<6x1xbf16>
    %scaled_1 = rdu.map %yf_1, %w_1 {rdu.layer = "layers.1"} : (tensor<6x8192xbf16>, tensor<6x1xbf16>) -> tensor<6x8192xbf16> {
    ^bb0(%a: bf16, %b: bf16):
      %m = arith.mulf %a, %b : bf16
      rdu.yield %m : bf16
    }
    %per_token_1 = rdu.reshape %scaled_1 {rdu.layer = "layers.1"} : tensor<6x8192xbf16> -> tensor<3x2x8192xbf16>
    %out_1 = rdu.reduce sum %per_token_1 dims [1] {rdu.layer = "layers.1"} : tensor<3x2x8192xbf16> -> tensor<3x8192xbf16>
    %logits = rdu.matmul %out_1, %head transpose_rhs : tensor<3x8192xbf16>, tensor<4096x8192xbf16> -> tensor<3x4096xbf16>
    func.return %logits : tensor<3x4096xbf16>
  }
}

// CHECK:      builtin.module attributes {{{.*}}tier.hbm_weight_bytes = 838598656 : i64, tier.ddr_weight_bytes = 251920384 : i64, tier.activation_bytes = 245868 : i64
// CHECK-NEXT:   tier.global @up in ddr : tensor<4x4096x8192xbf16> {{{.*}}tier.hbm_rows = 12540 : i64}
// CHECK-NEXT:   tier.global @down in ddr : tensor<4x8192x4096xbf16> {{{.*}}tier.hbm_rows = 25080 : i64}
// CHECK-NEXT:   tier.global @up1 in ddr : tensor<4x4096x8192xbf16> {{{.*}}tier.hbm_rows = 12540 : i64}
// CHECK-NEXT:   tier.global @down1 in ddr : tensor<4x8192x4096xbf16> {{{.*}}tier.hbm_rows = 25080 : i64}
// CHECK-NEXT:   tier.global @head in hbm : tensor<1024x8192xbf16>
// CHECK:        func.func private @layer({{.*}}%wu: tensor<4x4096x8192xbf16> {{{.*}}tier.tier = #tier<tier ddr>, tier.hbm_rows = 12540 : i64}, %wd: tensor<4x8192x4096xbf16> {{{.*}}tier.tier = #tier<tier ddr>, tier.hbm_rows = 25080 : i64}
// CHECK:          rdu.gather %{{.*}} dim 0 wraps {{{.*}}rdu.owned_rows = [2 : i64, 6 : i64]} : tensor<4x8192x4096xbf16>

// ERR-NOT: Traceback
// ERR:     'tier.global' @head: tier.hbm_rows = 4096 needs a global in ddr with more rows than that (it has 4096 rows of its last dim)
