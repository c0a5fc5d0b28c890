// Residency by reads (rdu-place-tiers): a global's heat is the bytes its readers'
// DMAs stream a step per byte it holds, whatever op reads it. @embed (1000 rows) is
// read by an indexed gather of the token's 8 rows: 2,048 of its 256,000 bytes. The
// expert table @experts is read whole by `rdu.grouped_matmul` (its DMA loads the
// whole table), as is @proj by a matmul: both heat 1. Target: 34,000 bytes of HBM
// (Inputs/reads-hbm.toml), 30,848 after the activations (3,152). The two do not fit
// whole: both keep one share of their rows (runs of the last dim: 256 in @experts,
// 64 in @proj) in HBM, 30,848 / (32,768 + 8,192) = 75.3%: 192 and 48 rows
// (`tier.hbm_rows`), the rest in DDR; @embed, the coldest, last: in DDR. Before
// (first-read order; @embed counted as read whole; only an expert gather's table
// could keep rows in HBM), @experts went to DDR whole and 22,656 bytes of HBM
// stayed empty.
// RUN: rducc-opt --check-roundtrip -p 'rdu-place-tiers{target="%S/Inputs/reads-hbm.toml"}' %s | filecheck %s
//
// Diagnostic: `tier.hbm_rows` counts rows of the last dim (a [4, 64, 32] table has
// 256): as many as the table has is refused.
// RUN: sed -e 's/tier.global @experts : tensor<4x64x32xf32> {kind = "parameter"}/tier.global @experts in ddr : tensor<4x64x32xf32> {kind = "parameter", tier.hbm_rows = 256 : i64}/' %s | not rducc-opt 2>&1 | filecheck %s --check-prefix=ERR

builtin.module attributes {rdu.level = #rdu<level kernels>} {
  tier.global @embed : tensor<1000x64xf32> {kind = "parameter"}
  tier.global @experts : tensor<4x64x32xf32> {kind = "parameter"}
  tier.global @proj : tensor<64x32xf32> {kind = "parameter"}
  func.func @forward(%ids: tensor<8xi64> {rdu.input = "ids"}, %offs: tensor<4xi32> {rdu.input = "offsets"}, %p_embed: tensor<1000x64xf32> {rdu.global = @embed}, %p_experts: tensor<4x64x32xf32> {rdu.global = @experts}, %p_proj: tensor<64x32xf32> {rdu.global = @proj}) -> tensor<8x64xf32> {
    %rows = rdu.kernel "k0"(%p_embed, %ids) : (tensor<1000x64xf32>, tensor<8xi64>) -> tensor<8x64xf32> {
    ^bb0(%table: tensor<1000x64xf32>, %i: tensor<8xi64>):
      %g = rdu.gather %table[%i] dim 0 : tensor<1000x64xf32>, tensor<8xi64> -> tensor<8x64xf32>
      rdu.yield %g : tensor<8x64xf32>
    }
    %h = rdu.kernel "k1"(%rows, %p_experts, %offs) : (tensor<8x64xf32>, tensor<4x64x32xf32>, tensor<4xi32>) -> tensor<8x32xf32> {
    ^bb0(%r: tensor<8x64xf32>, %e: tensor<4x64x32xf32>, %o: tensor<4xi32>):
      %y = rdu.grouped_matmul %r, %e offsets %o : tensor<8x64xf32>, tensor<4x64x32xf32>, tensor<4xi32> -> tensor<8x32xf32>
      rdu.yield %y : tensor<8x32xf32>
    }
    %out = rdu.kernel "k2"(%h, %p_proj) : (tensor<8x32xf32>, tensor<64x32xf32>) -> tensor<8x64xf32> {
    ^bb0(%a: tensor<8x32xf32>, %w: tensor<64x32xf32>):
      %mm = rdu.matmul %a, %w transpose_rhs : tensor<8x32xf32>, tensor<64x32xf32> -> tensor<8x64xf32>
      rdu.yield %mm : tensor<8x64xf32>
    }
    func.return %out : tensor<8x64xf32>
  }
}

// CHECK:      builtin.module attributes {rdu.level = #rdu<level kernels>, tier.hbm_weight_bytes = 30720 : i64, tier.ddr_weight_bytes = 266240 : i64, tier.activation_bytes = 3152 : i64} {
// CHECK-NEXT:   tier.global @embed in ddr : tensor<1000x64xf32> {kind = "parameter"}
// CHECK-NEXT:   tier.global @experts in ddr : tensor<4x64x32xf32> {kind = "parameter", tier.hbm_rows = 192 : i64}
// CHECK-NEXT:   tier.global @proj in ddr : tensor<64x32xf32> {kind = "parameter", tier.hbm_rows = 48 : i64}

// ERR-NOT: Traceback
// ERR:     'tier.global' @experts: tier.hbm_rows = 256 needs a global in ddr with more rows than that (it has 256 rows of its last dim)
