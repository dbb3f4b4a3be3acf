package cpu

import "unsafe"

// Integer activations (docs/RATIONALE.md, "Integer activations"): for a
// single input, an affine matrix's kernels may take x quantised to int8 in
// blocks of int8Block, one step dx per block, instead of floats. Row r
// times x is then
//
//	Σ_c scale[r,g(c)]·dx[c]·Σ_{k∈c} q[r,k]·xq[k] + bias[r,g(c)]·xsum[c]
//
// over the blocks c (g(c) the weight group that holds c), where the inner
// sum is exact in int32 and xsum, the float sum of the block of x, keeps
// the bias term exact. This is llama.cpp's scheme (Q8_0 activations, also
// blocks of 32); the float kernels stay as the reference, chosen with
// Options.Kernels or DRIFTWOOD_KERNELS (see chooseKernels).

// int8Block is how many activations share one int8 step: the smallest MLX
// group, so a block never straddles two groups.
const int8Block = 32

// int8 reports whether ks multiplies quantised weights with int8
// activations (the float reference does not).
func (ks *kernelSet) int8() bool { return ks.gemvQ4I8 != nil }

// q4I8Index is the position of element k of a row of cols in the int8 q4
// order: blocks of 128 hold the even elements of their four 32-element
// chunks, then the odd ones (how the low and high nibbles of 64 code bytes
// come out); chunks past the last whole block are in nibble order.
func q4I8Index(k, cols int) int {
	if k >= cols&^127 {
		return q4Index(k)
	}
	return k&^127 + k&1*64 + k>>5&3*16 + k&31>>1
}

// quantSums sets xsum[c] to dx[c]·Σ xq over chunk c of xq (in order): the
// sum of the quantised activations, not of the float ones that quantI8
// gives. A product is then Σ_g s·Σ(q·xq)·dx + b·Σ(xq·dx), exactly the
// float product of the weights with the rounded activations x', whose
// error Σ w·(x'−x) is small because the weights w = s·q + b are centred
// on zero. With the exact float sum the bias no longer cancels its share
// of the rounding and the error is Σ s·q·(x'−x), where the codes q
// (0–15 or 0–255) are not centred: over 1,024 tokens of text on the
// random-weight 1B q4 model the mean KL divergence from the float path
// was 0.0029 that way (docs/RATIONALE.md, "Integer activations").
func quantSums(xsum, dx []float32, xq []int8, order i8Order) {
	blocks := 0 // where the 128-element blocks of the q4 order end
	if order == i8Q4Blocks {
		blocks = len(xq) &^ 127
	}
	for c := range xsum {
		k := c * int8Block
		var s int32
		if k < blocks {
			b, j := k&^127, k>>5&3 // a block's chunk j: its evens, then its odds
			s = sum16(xq[b+16*j:]) + sum16(xq[b+64+16*j:])
		} else {
			s = sum16(xq[k:]) + sum16(xq[k+16:])
		}
		xsum[c] = float32(s) * dx[c]
	}
}

// sum16 adds the first 16 of b, eight at a time in a word: each byte plus
// 128 (XOR 0x80) is unsigned, pairs of them add into 16-bit lanes, and a
// multiply sums the four lanes into the top one. Twice as fast as a loop
// over the bytes, which made quantSums cost more than the quantiser.
func sum16(b []int8) int32 {
	w := (*[2]uint64)(unsafe.Pointer(&b[:16][0]))
	const lanes, bias = 0x00ff00ff00ff00ff, 0x8080808080808080
	var s int32
	for _, v := range w {
		v ^= bias
		p := v&lanes + v>>8&lanes
		s += int32(p*0x0001000100010001>>48) - 8*128
	}
	return s
}

// gemvI8Go is the integer maths of the int8 kernels in scalar Go: their
// reference in the tests and the kernel for scales and biases of different
// dtypes (no checkpoint seen has them).
func gemvI8Go(out []float32, w []uint32, scales, biases halfVec, xq []int8, dx, xsum []float32, group, bits int) {
	cols := len(xq)
	wpr, groups, mask := cols*bits/32, cols/group, uint32(1)<<bits-1
	for r := range out {
		words := w[r*wpr : (r+1)*wpr]
		var sum float32
		for c := range cols / int8Block {
			var acc int32
			for k := c * int8Block; k < (c+1)*int8Block; k++ {
				q := int32(words[k*bits/32] >> (k * bits % 32) & mask)
				i := k
				if bits == 4 {
					i = q4I8Index(k, cols)
				}
				acc += q * int32(xq[i])
			}
			j := r*groups + c*int8Block/group
			sum += scales.at(j)*dx[c]*float32(acc) + biases.at(j)*xsum[c]
		}
		out[r] = sum
	}
}

// i8Order is the order in which a quantI8 kernel writes xq.
type i8Order int

const (
	i8Natural  i8Order = iota // as x
	i8Q4Blocks                // q4I8Index: the single-input q4 kernels'
	i8Nibbles                 // q4Index: every chunk's even elements, then its odd ones
)

// pos is where element k of a row of cols goes in order o.
func (o i8Order) pos(k, cols int) int {
	switch o {
	case i8Q4Blocks:
		return q4I8Index(k, cols)
	case i8Nibbles:
		return q4Index(k)
	}
	return k
}

// i8Panel is up to sixteen rows of affine weights laid out for gemmI8:
// w holds, for each four columns (in nibble order for q4), each row's four
// codes, (cols/4, 16, 4); s and b each 32-column chunk's scale and bias of
// each row, (cols/32, 16). Rows past the matrix's end are zero. a and c
// are the amx set's scratch: w laid out for its tiles (for each chunk,
// each row's 32 codes), and four tiles of int32 sums; tiled says that a
// panel kernel wrote the codes to a instead of w. next is the weights of
// the panel after this one, which a batch kernel may prefetch while it
// multiplies this one.
type i8Panel struct {
	w     []uint8
	s, b  []float32
	a     []uint8
	c     []int32
	tiled bool
	next  []byte
}

func newI8Panel(cols int) i8Panel {
	return i8Panel{w: make([]uint8, 16*cols), s: make([]float32, cols/2), b: make([]float32, cols/2),
		a: make([]uint8, 16*cols), c: make([]int32, 1024)}
}

// panelI8 fills p from rows of affine weights (w, scales and biases
// starting at the panel's first row).
type panelI8 func(p *i8Panel, w []uint32, scales, biases halfVec, rows, cols, group int)

// gemmI8 multiplies a panel with nt of np inputs (kernelSet.gemmI8); hs
// is the batch's hsT (prepareI8Batch), which only the Q6_K kernels of
// sets whose codes go unsigned read.
type gemmI8 func(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, hs []int32, np, nt int)

// panelI8Go is panelI8 in scalar Go: the reference in the tests and the
// kernel for scales and biases of different dtypes.
func panelI8Go(p *i8Panel, w []uint32, scales, biases halfVec, rows, cols, group, bits int) {
	wpr, groups, mask := cols*bits/32, cols/group, uint32(1)<<bits-1
	for r := range rows {
		words := w[r*wpr : (r+1)*wpr]
		for k := range cols {
			src := k // the column whose code goes to position k
			if bits == 4 {
				j := k & 31
				src = k&^31 + (j&15)*2 + j>>4
			}
			code := uint8(words[src*bits/32] >> (src * bits % 32) & mask)
			p.w[(k/4*16+r)*4+k%4] = code
		}
		for c := range cols / int8Block {
			p.s[c*16+r] = scales.at(r*groups + c*int8Block/group)
			p.b[c*16+r] = biases.at(r*groups + c*int8Block/group)
		}
	}
}

// prepareI8Batch quantises n inputs x (n, cols) for gemmI8: xqT holds,
// for each four columns, each input's four int8s, (cols/4, np, 4), and
// dxT, xsT each chunk's step and sum of each input, (cols/32, np); with
// lay.halves, hsT −32·the sum of each sixteen of an input's int8s,
// (cols/16, np), what Q6_K's codes moved up by 32 add (gemmQ6KVNNI);
// inputs from n to np are zero. The inputs go sixteen at a time, which
// fill a cache line of each transposed row: with a pool p shared out
// among its workers, each quantising into its own scratch in scr;
// without one through buf's buffers.
func (in *input) prepareI8Batch(ks *kernelSet, buf *inputBuf, x []float32, n, cols int, p *pool, scr []*scratch) {
	np, chunks := roundUp(n, 16), cols/int8Block
	in.np = np
	in.xqT, in.dxT, in.xsT = buf.xqT[:cols*np], buf.dxT[:chunks*np], buf.xsT[:chunks*np]
	halves := 0
	if in.lay.halves {
		halves = cols / 16
		in.hsT = buf.hsT[:halves*np]
	}
	order := i8Natural
	if in.lay.nibbles {
		order = i8Nibbles
	}
	buf.job = quantJob{in: in, ks: ks, buf: buf, x: x, n: n, cols: cols, halves: halves, order: order, scr: scr}
	if p == nil {
		buf.job.inputs(0, np, buf.xq[:16*cols], buf.dx[:16*chunks], buf.xsum[:16*chunks])
	} else {
		p.parallel(&buf.job, np, 16)
	}
	if r := buf.res; r != nil {
		buf.resIn = input{lay: in.lay, n: n}
		buf.resIn.prepareI8Batch(ks, r, buf.rx[:n*cols], n, cols, p, scr)
		in.res = &buf.resIn
	}
}

// quantJob is prepareI8Batch's work on the inputs, for the pool.
type quantJob struct {
	in      *input
	ks      *kernelSet
	buf     *inputBuf
	x       []float32
	n, cols int
	halves  int
	order   i8Order
	scr     []*scratch
}

func (j *quantJob) run(lo, hi, worker int) {
	s, chunks := j.scr[worker], j.cols/int8Block
	j.inputs(lo, hi, s.xq[:16*j.cols], s.dx[:16*chunks], s.xs[:16*chunks])
}

// inputs quantises inputs [lo, hi), lo a multiple of sixteen, into their
// places in the transposed batch: sixteen at a time into xq, dx and xs
// (sixteen inputs' room), then each cache line of the transposed rows
// written whole. Scattering each input's four-byte groups as it came
// (each line written sixteen times, 512 bytes apart for a 128-token
// batch), this job took 36 ms of the 1B Q8_0 file's 128-token prefill
// on one thread (530 ms); written a line at a time, 26 ms.
func (j *quantJob) inputs(lo, hi int, xq []int8, dx, xs []float32) {
	in, cols, np := j.in, j.cols, j.in.np
	words, chunks := cols/4, cols/int8Block
	q32 := unsafe.Slice((*uint32)(unsafe.Pointer(&in.xqT[0])), words*np)
	rows := unsafe.Slice((*uint32)(unsafe.Pointer(&xq[0])), 16*words)
	for t0 := lo; t0 < hi; t0 += 16 {
		for i := range 16 {
			q, d, s := xq[i*cols:(i+1)*cols], dx[i*chunks:(i+1)*chunks], xs[i*chunks:(i+1)*chunks]
			if t := t0 + i; t < j.n {
				x := j.x[t*cols : (t+1)*cols]
				j.ks.quantI8(q, d, s, x, j.order)
				quantSums(s, d, q, j.order)
				if j.buf.res != nil {
					roundingError(j.buf.rx[t*cols:(t+1)*cols], x, q, d, j.order)
				}
			} else {
				clear(q)
				clear(d)
				clear(s)
			}
		}
		for k := range words {
			line := q32[k*np+t0 : k*np+t0+16]
			for i := range line {
				line[i] = rows[i*words+k]
			}
		}
		for c := range chunks {
			dl, sl := in.dxT[c*np+t0:c*np+t0+16], in.xsT[c*np+t0:c*np+t0+16]
			for i := range dl {
				dl[i], sl[i] = dx[i*chunks+c], xs[i*chunks+c]
			}
		}
		for h := range j.halves {
			hl := in.hsT[h*np+t0 : h*np+t0+16]
			for i := range hl {
				hl[i] = -32 * sum16(xq[i*cols+16*h:])
			}
		}
	}
}

// gemmI8Asm is an assembly batch kernel (gemmI8 in kernelSet) on the
// operands' first elements.
type gemmI8Asm func(tile *float32, wp *uint8, sp, bp *float32, xq *int8, dx, xs *float32, np, nt, chunks int)

// checkGemmI8 panics unless a batch kernel's operands hold all that it
// reads: nt inputs, a multiple of step, of a batch of np prepared by
// prepareI8Batch, and a panel of as many chunks. It returns the chunks.
func checkGemmI8(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, np, nt, step int) int {
	chunks := len(dx) / max(np, 1)
	if nt <= 0 || nt%step != 0 || nt > np || np%step != 0 || chunks == 0 || len(xq) < 4*8*chunks*np ||
		len(xs) < chunks*np || len(tile) < 16*nt || len(p.w) < 512*chunks || len(p.s) < 16*chunks || len(p.b) < 16*chunks {
		panic("cpu: int8 gemm operands do not match")
	}
	return chunks
}

// asmGemm is the assembly batch kernel f, which takes step inputs a
// pass, as a gemmI8 that checks the lengths f trusts.
func asmGemm(f gemmI8Asm, step int) gemmI8 {
	return func(tile []float32, p *i8Panel, xq []int8, dx, xs []float32, _ []int32, np, nt int) {
		chunks := checkGemmI8(tile, p, xq, dx, xs, np, nt, step)
		f(&tile[0], &p.w[0], &p.s[0], &p.b[0], &xq[0], &dx[0], &xs[0], np, nt, chunks)
	}
}

// i8Matrix is a matrix whose rows the int8 batch kernels multiply.
type i8Matrix interface {
	matrix
	// fillI8 lays out rows [r0, r0+nr) as p, rows past nr left alone.
	fillI8(p *i8Panel, r0, nr int)
	// batchGemm is the batch kernel for its panels.
	batchGemm() gemmI8
	// codes are the bytes of rows [r0, r1)'s codes (none if r0 >= r1).
	codes(r0, r1 int) []byte
}

// prefetch is p.next as a batch kernel's pf and pfn arguments.
func (p *i8Panel) prefetch() (*byte, int) {
	if len(p.next) == 0 {
		return nil, 0
	}
	return &p.next[0], len(p.next)
}

// gemmBatchI8 sets out[t·rows+r] = row r · input t for r in [lo, hi) and every
// input of in, a batch prepared by prepareI8Batch: sixteen rows at a time
// laid out in s.i8 and multiplied with the whole batch.
func gemmBatchI8(m i8Matrix, out []float32, in *input, lo, hi int, s *scratch) {
	rows, cols := m.dims()
	nt := roundUp(in.n, 8)
	gemm := m.batchGemm()
	for r0 := lo; r0 < hi; r0 += 16 {
		nr := min(16, hi-r0)
		p := &s.i8
		if nr < 16 {
			clear(p.w[:16*cols])
			clear(p.s[:cols/2])
			clear(p.b[:cols/2])
		}
		p.tiled = false // until a tile-order panel kernel says so
		m.fillI8(p, r0, nr)
		p.next = m.codes(r0+16, min(r0+32, hi))
		// The lines of out that the panel's products go to, one per
		// input and scattered over megabytes, asked for while the
		// products are made rather than when they are copied.
		for t := range in.n {
			prefetch(unsafe.Pointer(&out[t*rows+r0]), 4*nr)
		}
		gemm(s.tile, p, in.xqT, in.dxT, in.xsT, in.hsT, in.np, nt)
		for t := range in.n {
			copy(out[t*rows+r0:t*rows+r0+nr], s.tile[t*16:t*16+nr])
		}
		if r := in.res; r != nil { // the same panel times the rounding errors
			gemm(s.tile, p, r.xqT, r.dxT, r.xsT, r.hsT, r.np, nt)
			for t := range in.n {
				add(out[t*rows+r0:t*rows+r0+nr], s.tile[t*16:t*16+nr])
			}
		}
	}
}

func (m *affineMatrix) fillI8(p *i8Panel, r0, nr int) {
	groups, wpr := m.cols/m.group, m.cols*m.bits/32
	m.ks.panelI8[m.bits/8](p, m.packed[r0*wpr:(r0+nr)*wpr], m.scales.slice(r0*groups, (r0+nr)*groups),
		m.biases.slice(r0*groups, (r0+nr)*groups), nr, m.cols, m.group)
}

// batchGemm: kernelSet.gemmI8[1] where codes reach 255, or the set's
// gemmPairs where each group spans whole pairs of chunks.
func (m *affineMatrix) batchGemm() gemmI8 {
	if m.group%(2*int8Block) == 0 && m.ks.gemmPairs != nil {
		return m.ks.gemmPairs
	}
	return m.ks.gemmI8[m.bits/8]
}

func (m *affineMatrix) codes(r0, r1 int) []byte {
	if r0 >= r1 {
		return nil
	}
	wpr := m.cols * m.bits / 32
	return unsafe.Slice((*byte)(unsafe.Pointer(&m.packed[r0*wpr])), (r1-r0)*wpr*4)
}
