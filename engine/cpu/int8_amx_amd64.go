package cpu

import "github.com/driftwoodlabs/driftwood/engine/gguf"

// amxKernels is the avx512vnni set with the batch product over int8
// inputs on AMX-INT8 tiles (int8_amx_amd64.s; docs/RATIONALE.md, "AMX
// tiles for prefill"). It is in kernelSets only where the CPU has
// AMX-INT8 and Linux grants the process the tile data state (amxGranted).
var amxKernels = func() kernelSet {
	ks := avx512VNNIKernels
	ks.name = "amx"
	ks.panelI8 = [2]panelI8{
		i8PanelKernel{4, [3]panelAsm{panelQ4SF32Tiles, panelQ4SBF16Tiles, panelQ4SF16Tiles}, false, true}.panel,
		i8PanelKernel{8, [3]panelAsm{panelQ8SF32Tiles, panelQ8SBF16Tiles, panelQ8SF16Tiles}, false, true}.panel,
	}
	ks.gemmI8 = [2]gemmI8{amxGemm(gemmI8AMX), amxGemm(gemmI8AMX)}
	ks.gemmQ6K = amxGemm(gemmQ6KAMX)
	ks.gemmSigned = amxGemm(gemmSignedAMX)
	ks.gemmPairs = amxGemm(gemmPairsAMX)
	// The tiles multiply so fast that laying out each panel of sixteen
	// rows (once per batch) costs more than its products (a 128-token
	// prefill of the 1B Q8_0 file on one thread: 31 % of the time in
	// panelQ8_0Tiles, 26 % in gemmI8AMX), so batches of 128 tokens lay
	// it out half as often. The VNNI sets keep 64: their products
	// dominate, and with batches of 128 they ran slower on the same
	// machine (docs/RATIONALE.md, "Chosen at run time").
	ks.batch = 128
	ks.panelBlocksI8 = [blockI8Types]blockPanelI8{
		tileBlockPanel(panelQ4_0Tiles, gguf.Q4_0),
		tileBlockPanel(panelQ4_1Tiles, gguf.Q4_1),
		tileBlockPanel(panelQ8_0Tiles, gguf.Q8_0),
		tileBlockPanel(panelQ4_KTiles, gguf.Q4_K),
		tileBlockPanel(panelQ5_KTiles, gguf.Q5_K),
		tileBlockPanel(panelQ6_KTiles, gguf.Q6_K),
	}
	return ks
}()

// amxTiles is an AMX batch kernel on the operands' first elements.
type amxTiles func(tile *float32, a *uint8, sp, bp *float32, xq *int8, dx, xs *float32, c *int32, np, nt, chunks int, pf *byte, pfn int)

// amxGemm is the tile kernel f as the amx set's gemmI8: the panel's codes
// laid out again for the tiles (amxPanel, into p.a) unless its kernel put
// them there (p.tiled: the amx set's own panel kernels), then f, which
// stores each chunk's int32 sums to p.c on their way to floats.
func amxGemm(f amxTiles) gemmI8 {
	return func(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, _ []int32, np, nt int) {
		chunks := checkGemmI8(tile, p, xq, dx, xs, np, nt, 8)
		if np%16 != 0 || len(p.a) < 512*chunks || len(p.c) < 1024 {
			panic("cpu: int8 gemm operands do not match")
		}
		if !p.tiled {
			amxPanel(&p.a[0], &p.w[0], chunks)
		}
		pf, pfn := p.prefetch()
		f(&tile[0], &p.a[0], &p.s[0], &p.b[0], &xq[0], &dx[0], &xs[0], &p.c[0], np, nt, chunks, pf, pfn)
	}
}

//go:noescape
func amxPanel(a, w *uint8, chunks int)

//go:noescape
func gemmQ6KAMX(tile *float32, a *uint8, sp, bp *float32, xq *int8, dx, xs *float32, c *int32, np, nt, chunks int, pf *byte, pfn int)

//go:noescape
func gemmPairsAMX(tile *float32, a *uint8, sp, bp *float32, xq *int8, dx, xs *float32, c *int32, np, nt, chunks int, pf *byte, pfn int)

//go:noescape
func gemmSignedAMX(tile *float32, a *uint8, sp, bp *float32, xq *int8, dx, xs *float32, c *int32, np, nt, chunks int, pf *byte, pfn int)

//go:noescape
func gemmI8AMX(tile *float32, a *uint8, sp, bp *float32, xq *int8, dx, xs *float32, c *int32, np, nt, chunks int, pf *byte, pfn int)

// xgetbv0 is XCR0, the state components the OS has enabled.
func xgetbv0() uint64
