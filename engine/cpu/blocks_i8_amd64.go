package cpu

// blocksI8AVX2 are the int8 GGUF block kernels (blocks_i8_amd64.s) of
// the 256-bit int8 sets, by blockI8Type; blocksI8VNNI those of the
// AVX-512 VNNI ones.
var (
	blocksI8AVX2 = [3]blockGemvI8{
		asmBlockGemv(gemvQ4_0I8AVX2, 18),
		asmBlockGemv(gemvQ4_1I8AVX2, 20),
		asmBlockGemv(gemvQ8_0I8AVX2, 34),
	}
	blocksI8VNNI = [3]blockGemvI8{
		asmBlockGemv(gemvQ4_0I8VNNI, 18),
		asmBlockGemv(gemvQ4_1I8VNNI, 20),
		asmBlockGemv(gemvQ8_0I8VNNI, 34),
	}
)

// blockGemvAsm is an assembly int8 block kernel on the operands' first
// elements.
type blockGemvAsm func(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

// asmBlockGemv is the kernel f, for blocks of bb bytes, as a blockGemvI8
// that checks the lengths f trusts.
func asmBlockGemv(f blockGemvAsm, bb int) blockGemvI8 {
	return func(out []float32, w []byte, xq []int8, dx, xsum []float32) {
		rows := len(out)
		if rows == 0 {
			return
		}
		blocks := len(xq) / 32
		if blocks == 0 || len(xq)%32 != 0 || len(w) != rows*blocks*bb || len(dx) < blocks || len(xsum) < blocks {
			panic("cpu: int8 block gemv operands do not match")
		}
		f(&out[0], &w[0], rows, blocks*bb, &xq[0], &dx[0], &xsum[0], blocks)
	}
}

//go:noescape
func gemvQ4_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

//go:noescape
func gemvQ4_1I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

//go:noescape
func gemvQ8_0I8AVX2(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

//go:noescape
func gemvQ4_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

//go:noescape
func gemvQ4_1I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

//go:noescape
func gemvQ8_0I8VNNI(out *float32, w *byte, rows, rowBytes int, xq *int8, dx, xsum *float32, blocks int)

// blockPanelsAVX2 are the panel kernels (blocks_panel_amd64.s) of every
// x86 int8 set, by blockI8Type.
var blockPanelsAVX2 = [3]blockPanelI8{
	asmBlockPanel(panelQ4_0AVX2, 18),
	asmBlockPanel(panelQ4_1AVX2, 20),
	asmBlockPanel(panelQ8_0AVX2, 34),
}

// blockPanelAsm is an assembly panel kernel on the operands' first
// elements: sixteen rows of chunks blocks, rowBytes apart.
type blockPanelAsm func(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

// asmBlockPanel is the kernel f, for blocks of bb bytes, as a
// blockPanelI8 that checks the lengths f trusts.
func asmBlockPanel(f blockPanelAsm, bb int) blockPanelI8 {
	return func(p *i8Panel, w []byte, rowBytes int) {
		chunks := rowBytes / bb
		if chunks == 0 || rowBytes%bb != 0 || len(w) < 16*rowBytes || len(p.w) < 16*32*chunks || len(p.s) < 16*chunks || len(p.b) < 16*chunks {
			panic("cpu: int8 block panel operands do not match")
		}
		f(&p.w[0], &p.s[0], &p.b[0], &w[0], rowBytes, chunks)
	}
}

//go:noescape
func panelQ4_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ4_1AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)

//go:noescape
func panelQ8_0AVX2(wp *uint8, sp, bp *float32, w *byte, rowBytes, chunks int)
