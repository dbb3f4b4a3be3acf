package cpu

// layout says how a matrix's kernels read their input: q4 codes want it in
// nibble order (permuteQ4), affine kernels want its per-group sums.
type layout struct {
	nibbles bool
	group   int  // affine group size; 0 for dense weights
	int8    bool // a single input goes to the kernels as int8 (int8.go)
	// floatBatch: with int8, a batch still goes to the kernels in float.
	floatBatch bool
	// super: with int8, a single input has one step per super-block of
	// 256 and its sums of each 16 (the set's quantK; blocks_i8.go).
	super bool
	// halves: with int8, a batch has the sums of each 16 of its int8s
	// too, for the set's gemmQ6K (prepareI8Batch); every k-quant's layout
	// says so, so that Q6_K's matrices share their input with the others.
	halves bool
}

// input is a matmul's activations prepared once for all the workers.
type input struct {
	lay  layout
	n    int
	x    []float32 // n == 1: the input in layout order
	xsum []float32 // n == 1, affine: the sum of each group (int8: block) of x
	xq   []int8    // n == 1, int8: x quantised (int8.go)
	dx   []float32 // n == 1, int8: the step of each block of xq
	bs   []int16   // n == 1, super: the sum of each 16 of xq
	// n > 1, int8: the batch quantised and transposed (prepareI8Batch)
	xqT      []int8
	dxT, xsT []float32
	hsT      []int32
	xT       []float32 // n > 1: (cols, np) in layout order, inputs past n zero
	np       int       // n rounded up to a multiple of 16
	// res, with int8x2 activations, is the int8 inputs' rounding error,
	// quantised the same way: the kernels' second pass (residual.go).
	res *input
}

// inputBuf is the storage behind an input.
type inputBuf struct {
	x, xsum, dx, xT, dxT, xsT []float32
	xq, xqT                   []int8
	bs                        []int16
	hsT                       []int32
	// res holds the residual's input (int8x2 activations only), rx the
	// rounding errors it quantises.
	res   *inputBuf
	resIn input
	rx    []float32
	// job is prepareI8Batch's on the pool.
	job quantJob
}

func newInputBuf(cols, batch int) inputBuf {
	return inputBuf{
		x:    make([]float32, cols),
		xsum: make([]float32, 16*cols/32), // room for sixteen inputs (quantJob)
		dx:   make([]float32, 16*cols/32),
		xq:   make([]int8, 16*cols),
		bs:   make([]int16, cols/16),
		xT:   make([]float32, cols*roundUp(batch, 16)),
		xqT:  make([]int8, cols*roundUp(batch, 16)),
		dxT:  make([]float32, cols/32*roundUp(batch, 16)),
		xsT:  make([]float32, cols/32*roundUp(batch, 16)),
		hsT:  make([]int32, cols/16*roundUp(batch, 16)),
	}
}

func roundUp(n, m int) int { return (n + m - 1) / m * m }

// prepare fills in with n inputs x (n, cols) in the form lay asks for, on
// the kernel set ks; an int8 batch is quantised on the pool p, with its
// workers' scratch scr, where p is not nil (prepareI8Batch).
func (in *input) prepare(ks *kernelSet, buf *inputBuf, x []float32, n, cols int, lay layout, p *pool, scr []*scratch) {
	*in = input{lay: lay, n: n}
	x = x[:n*cols]
	if n == 1 && lay.int8 {
		order := i8Natural
		if lay.nibbles {
			order = i8Q4Blocks
		}
		in.quantOne(ks, buf, x, order)
		if r := buf.res; r != nil {
			roundingError(buf.rx[:cols], x, in.xq, in.dx, order)
			buf.resIn = input{lay: lay, n: 1}
			buf.resIn.quantOne(ks, r, buf.rx[:cols], order)
			in.res = &buf.resIn
		}
		return
	}
	if lay.int8 && !lay.floatBatch {
		in.prepareI8Batch(ks, buf, x, n, cols, p, scr)
		return
	}
	if n == 1 {
		in.x = x
		if lay.nibbles {
			in.x = buf.x[:cols]
			permuteQ4(in.x, x)
		}
		if lay.group > 0 {
			in.xsum = buf.xsum[:cols/lay.group]
			for g := range in.xsum {
				in.xsum[g] = sum(x[g*lay.group : (g+1)*lay.group])
			}
		}
		return
	}
	np := roundUp(n, 16)
	in.np, in.xT = np, buf.xT[:cols*np]
	// Sixteen columns at a time, so that each input's cache line is read
	// once; dst holds where each of the sixteen goes.
	var dst [16]int
	for i0 := 0; i0 < cols; i0 += 16 {
		m := min(16, cols-i0)
		for j := range m {
			k := i0 + j
			if lay.nibbles {
				k = q4Index(k)
			}
			dst[j] = k * np
			clear(in.xT[dst[j]+n : dst[j]+np])
		}
		for t := 0; t < n; t++ {
			for j, v := range x[t*cols+i0 : t*cols+i0+m] {
				in.xT[dst[j]+t] = v
			}
		}
	}
}

// quantOne sets in's xq, dx and xsum (and with in.lay.super its bs) to
// the single input x quantised in order, in buf's storage.
func (in *input) quantOne(ks *kernelSet, buf *inputBuf, x []float32, order i8Order) {
	cols := len(x)
	blocks := cols / int8Block
	in.xq, in.dx, in.xsum = buf.xq[:cols], buf.dx[:blocks], buf.xsum[:blocks]
	if in.lay.super {
		in.bs = buf.bs[:cols/16]
		ks.quantK(in.xq, in.dx, in.xsum, x)
		sums16(in.bs, in.xq)
	} else {
		ks.quantI8(in.xq, in.dx, in.xsum, x, order)
	}
	quantSums(in.xsum, in.dx, in.xq, order)
}

func sum(x []float32) float32 {
	var s float32
	for _, v := range x {
		s += v
	}
	return s
}

// scratch is one worker's private buffers.
type scratch struct {
	panel  []float32 // four dequantised weight rows
	tile   []float32 // gemm4 output: sixteen rows for each input
	scores []float32 // attention scores over the cache
	f      []float32 // int8 kernels: scale·dx per block of a row
	i8     i8Panel   // int8 batch kernel: sixteen rows laid out
	q      []float32 // scaled attention queries, the vectors of an item
	o      []float32 // their attention outputs before the softmax's 1/Σ
	top    []float32 // each vector's largest attention score
	sum    []float32 // and the sum of its weights
	deq    []float32 // a GGUF row (or the blocks of a panel) dequantised
	res    []float32 // int8x2: the second pass's rows (gemvTwice)
	// xq, dx and xs hold sixteen inputs of a batch on their way to the
	// transposed batch (prepareI8Batch).
	xq     []int8
	dx, xs []float32
	head   []float32 // one attention head reordered (unpermuteHeads)
}

func newScratch(cols, batch int) *scratch {
	return &scratch{
		panel: make([]float32, 4*cols),
		deq:   make([]float32, cols+256),
		tile:  make([]float32, 16*roundUp(batch, 16)),
		f:     make([]float32, cols/32+16),
		i8:    newI8Panel(cols),
		xq:    make([]int8, 16*cols),
		dx:    make([]float32, 16*cols/32),
		xs:    make([]float32, 16*cols/32),
	}
}

// gemm sets out[t·rows+r] = row r · input t for r in [lo, hi) and every
// input. The columns go in chunks whose share of the transposed input
// fits in L2 next to the weights (Tuning.GemmBlock), so that each chunk
// is read from L2 by every block of rows; per chunk, four rows at a
// time are dequantised once and multiplied with the whole batch into a
// tile of sixteen rows per input, which is then added to out a cache line
// per input; ks multiplies.
func gemm(ks *kernelSet, m matrix, out []float32, in *input, lo, hi int, s *scratch) {
	if in.xqT != nil {
		gemmBatchI8(m.(i8Matrix), out, in, lo, hi, s)
		return
	}
	rows, cols := m.dims()
	kc := max(128, DetectTuning().GemmBlock/4/in.np/128*128)
	for k0 := 0; k0 < cols; k0 += kc {
		k1 := min(k0+kc, cols)
		xT := in.xT[k0*in.np : k1*in.np]
		for r0 := lo; r0 < hi; r0 += 16 {
			nr := min(16, hi-r0)
			for r := 0; r < nr; r += 4 {
				w, stride := m.panel(r0+r, k0, k1, s)
				ks.gemm4(s.tile[r:], 16, in.n, w, stride, xT, in.np)
			}
			for t := 0; t < in.n; t++ {
				o, tl := out[t*rows+r0:t*rows+r0+nr], s.tile[t*16:t*16+nr]
				if k0 == 0 {
					copy(o, tl)
					continue
				}
				for r, v := range tl {
					o[r] += v
				}
			}
		}
	}
}
