package cpu

import "github.com/driftwoodlabs/driftwood/engine/gguf"

// blocksI8AVX2 are the int8 GGUF block kernels (blocks_i8_amd64.s) of
// the 256-bit int8 sets, by blockI8Type; blocksI8VNNI those of the
// AVX-512 VNNI ones.
var (
	blocksI8AVX2 = [blockI8Types]blockGemvI8{
		asmBlockGemv(gemvQ4_0I8AVX2, gguf.Q4_0),
		asmBlockGemv(gemvQ4_1I8AVX2, gguf.Q4_1),
		asmBlockGemv(gemvQ8_0I8AVX2, gguf.Q8_0),
		asmBlockGemv(gemvQ4_KI8AVX2, gguf.Q4_K),
		asmBlockGemv(gemvQ5_KI8AVX2, gguf.Q5_K),
		asmBlockGemv(gemvQ6_KI8AVX2, gguf.Q6_K),
	}
	blocksI8VNNI = [blockI8Types]blockGemvI8{
		q4Gemv(gemvQ4_0I8VNNI, gemvQ4_0I8VNNIR, gguf.Q4_0),
		q4Gemv(gemvQ4_1I8VNNI, gemvQ4_1I8VNNIR, gguf.Q4_1),
		asmBlockGemv(gemvQ8_0I8VNNI, gguf.Q8_0),
		asmKGemv(gemvQ4_KI8VNNI, gguf.Q4_K),
		asmKGemv(gemvQ5_KI8VNNI, gguf.Q5_K),
		asmKGemv(gemvQ6_KI8VNNI, gguf.Q6_K),
	}
)

// blockGemvAsm is an assembly int8 block kernel on the operands' first
// elements; blocks counts the input's chunks of 32, and ahead is how far
// ahead it prefetches the rows (gemvAhead).
type blockGemvAsm func(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

// asmBlockGemv is the kernel f, for blocks of typ, as a blockGemvI8 that
// checks the lengths f trusts.
func asmBlockGemv(f blockGemvAsm, typ gguf.Type) blockGemvI8 {
	return func(out []float32, w []byte, xq []int8, dx, xsum []float32, _ []int16) {
		if rows, rb, blocks := blockGemvShape(typ, out, w, xq, dx, xsum); rows > 0 {
			f(&out[0], &w[0], rows, rb, &xq[0], &dx[0], &xsum[0], blocks, gemvAhead())
		}
	}
}

// kGemvAsm is a k-quant kernel that folds its scales (blocks_i8.go): a
// blockGemvAsm that also reads bs, the sums of each 16 of xq.
type kGemvAsm func(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)

// asmKGemv is the kernel f, for k-quant blocks of typ, as a blockGemvI8
// that checks the lengths f trusts and that x has a step per super-block.
func asmKGemv(f kGemvAsm, typ gguf.Type) blockGemvI8 {
	return func(out []float32, w []byte, xq []int8, dx, xsum []float32, bs []int16) {
		rows, rb, blocks := blockGemvShape(typ, out, w, xq, dx, xsum)
		if rows == 0 {
			return
		}
		if len(bs) < len(xq)/16 || !superStep(dx[:blocks]) {
			panic("cpu: k-quant kernel wants x quantised by super-block (quantK)")
		}
		f(&out[0], &w[0], rows, rb, &xq[0], &dx[0], &xsum[0], &bs[0], blocks, gemvAhead())
	}
}

//go:noescape
func gemvQ4_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_1I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ8_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ5_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ6_KI8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)

//go:noescape
func gemvQ5_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)

//go:noescape
func gemvQ6_KI8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, bs *int16, blocks, ahead int)

//go:noescape
func gemvQ4_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_1I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_0I8VNNIR(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ4_1I8VNNIR(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

//go:noescape
func gemvQ8_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks, ahead int)

// blockPanelsAVX2 are the panel kernels (blocks_panel_amd64.s) of every
// x86 int8 set, by blockI8Type.
var blockPanelsAVX2 = [blockI8Types]blockPanelI8{
	asmBlockPanel(panelQ4_0AVX2, gguf.Q4_0),
	asmBlockPanel(panelQ4_1AVX2, gguf.Q4_1),
	asmBlockPanel(panelQ8_0AVX2, gguf.Q8_0),
	asmBlockPanel(panelQ4_KAVX2, gguf.Q4_K),
	asmBlockPanel(panelQ5_KAVX2, gguf.Q5_K),
	asmBlockPanel(panelQ6_KAVX2, gguf.Q6_K),
}

// blockPanelsVNNI are those of the AVX-512 VNNI set: the k-quants'
// transpose their scales in zmm registers (blocks_panel_amd64.s).
var blockPanelsVNNI = func() [blockI8Types]blockPanelI8 {
	p := blockPanelsAVX2
	p[blockI8Type(gguf.Q4_K)] = asmBlockPanel(panelQ4_KVNNI, gguf.Q4_K)
	p[blockI8Type(gguf.Q5_K)] = asmBlockPanel(panelQ5_KVNNI, gguf.Q5_K)
	p[blockI8Type(gguf.Q6_K)] = asmBlockPanel(panelQ6_KVNNI, gguf.Q6_K)
	return p
}()

// blockPanelAsm is an assembly panel kernel on the operands' first
// elements: sixteen rows of chunks blocks, rowBytes apart.
type blockPanelAsm func(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

// asmBlockPanel is the kernel f, for blocks of typ, as a blockPanelI8
// that checks the lengths f trusts.
func asmBlockPanel(f blockPanelAsm, typ gguf.Type) blockPanelI8 {
	return func(p *i8Panel, w []byte, rowBytes int) {
		f(&p.w[0], &p.s[0], &p.b[0], &w[0], rowBytes, checkBlockPanel(p, p.w, w, rowBytes, typ))
	}
}

// tileBlockPanel is the panel kernel f, which lays the codes out in tile
// order (i8Panel.a), as a blockPanelI8.
func tileBlockPanel(f blockPanelAsm, typ gguf.Type) blockPanelI8 {
	return func(p *i8Panel, w []byte, rowBytes int) {
		f(&p.a[0], &p.s[0], &p.b[0], &w[0], rowBytes, checkBlockPanel(p, p.a, w, rowBytes, typ))
		p.tiled = true
	}
}

// checkBlockPanel panics unless sixteen rows of w and a panel whose codes
// go to codes hold all that a panel kernel reads and writes, and returns
// the rows' chunks.
func checkBlockPanel(p *i8Panel, codes []uint8, w []byte, rowBytes int, typ gguf.Type) int {
	bb, per := typ.BlockBytes(), typ.BlockSize()
	chunks := rowBytes / bb * per / 32
	if chunks == 0 || rowBytes%bb != 0 || len(w) < 16*rowBytes || len(codes) < 16*32*chunks || len(p.s) < 16*chunks || len(p.b) < 16*chunks {
		panic("cpu: int8 block panel operands do not match")
	}
	return chunks
}

//go:noescape
func panelQ4_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_1AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ8_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ5_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ5_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ6_KVNNI(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ6_KAVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_0Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_1Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ8_0Tiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ5_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ6_KTiles(a *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func dequantQ6_KAVX2(dst *float32, src *byte, n int)
