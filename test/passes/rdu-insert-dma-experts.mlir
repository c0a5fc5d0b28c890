// Expert parallelism at level 3: an expert gather the partitioner marked with the
// rows a socket's experts serve (rdu.owned_rows = [owned, rows]) becomes an
// indexed DMA (tier.gather) that keeps the mark, and the cost model counts only
// those rows of the table (compiler/model/program_walk.py, transfer_bytes). The
// block: 3 tokens x top-2 = 6 pairs over 8 experts at ep=tp=4, tables too large
// to load whole (a local up table is 2 x 4096 x 8192 bf16, 128 MB; the 6 rows 403 MB).
// RUN: rducc-opt --check-roundtrip -p 'rdu-partition{tp=4 ep=4},rdu-fuse{level=1},rdu-tile,rdu-place-tiers,rdu-insert-dma' %s | filecheck %s
//
// Diagnostic: rows too large for SRAM even one pair at a time along the table's
// dims; a tier.gather reads whole rows, so no tile loop may cut them there.
// RUN: sed -e 's/4096/16384/g' %s | not rducc-opt -p 'rdu-partition{tp=4 ep=4},rdu-fuse{level=1},rdu-tile' 2>&1 | filecheck %s --check-prefix=ERR


builtin.module attributes {rdu.level = #rdu<level graph>, rdu.target = "sn40l-16"} {
  tier.global @up : tensor<8x4096x8192xbf16> {kind = "parameter"}
  tier.global @down : tensor<8x8192x4096xbf16> {kind = "parameter"}
  func.func @forward(%x: tensor<3x8192xbf16> {rdu.input = "x"}, %ids: tensor<3x2xi64> {rdu.input = "ids"}, %weights: tensor<3x2xbf16> {rdu.input = "weights"}, %wu: tensor<8x4096x8192xbf16> {rdu.global = @up}, %wd: tensor<8x8192x4096xbf16> {rdu.global = @down}) -> tensor<3x8192xbf16> {
    %flat = rdu.reshape %ids {rdu.layer = "layers.0"} : tensor<3x2xi64> -> tensor<6xi64>
    %rows = rdu.reshape %x {rdu.layer = "layers.0"} : tensor<3x8192xbf16> -> tensor<3x1x8192xbf16>
    %pairs = rdu.broadcast %rows {rdu.layer = "layers.0"} : tensor<3x1x8192xbf16> -> tensor<3x2x8192xbf16>
    %cols = rdu.reshape %pairs {rdu.layer = "layers.0"} : tensor<3x2x8192xbf16> -> tensor<6x8192x1xbf16>
    %up = rdu.gather %wu[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<8x4096x8192xbf16>, tensor<6xi64> -> tensor<6x4096x8192xbf16>
    %h = rdu.matmul %up, %cols {rdu.layer = "layers.0"} : tensor<6x4096x8192xbf16>, tensor<6x8192x1xbf16> -> tensor<6x4096x1xbf16>
    %down = rdu.gather %wd[%flat] dim 0 wraps {rdu.layer = "layers.0"} : tensor<8x8192x4096xbf16>, tensor<6xi64> -> tensor<6x8192x4096xbf16>
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
    func.return %out : tensor<3x8192xbf16>
  }
}



// CHECK:      tier.gather %wu[%{{.*}}] -> %{{.*}} wraps {rdu.owned_rows = [2 : i64, 6 : i64]} : !tier.buffer<hbm, 2x4096x8192xbf16>, !tier.buffer<sram, 6xi64> -> !tier.buffer<sram, 6x4096x8192xbf16>
// CHECK:      tier.gather %wd[%{{.*}}] -> %{{.*}} wraps {rdu.owned_rows = [2 : i64, 6 : i64]} : !tier.buffer<hbm, 2x8192x4096xbf16>, !tier.buffer<sram, 6xi64> -> !tier.buffer<sram, 6x8192x4096xbf16>

// ERR-NOT: Traceback
// ERR:     rducc-opt: error: kernel k{{[0-9]+}} cannot be tiled to fit sn40l-16: {{.*}} no parallel dimension splits it small enough
// ERR-NOT: Traceback
