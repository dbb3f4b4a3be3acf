package sessions

import (
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
)

// mlx-lm's prompt-cache files (models/cache.py, save_prompt_cache and
// load_prompt_cache) flatten a list of three items into the safetensors
// metadata, keys "{item}.{key}", and the caches' states into the tensors,
// keys "{layer}.{index}" (a tuple in a state adds ".{index}"). The items
// and the states changed between releases; both layouts are read:
//
//   - layoutMetaState, mlx-lm 0.32.0 and before, and Driftwood's format
//     version 1: [meta states, metadata, classes]. A KVCache's state is
//     its keys and values cut to the positions used, its meta state "";
//     a QuantizedKVCache's state is ((keys, scales, biases), (values,
//     scales, biases)) cut likewise, its meta state (offset, group_size,
//     bits) as decimal strings.
//   - layoutScalars, mlx-lm 0.32.2, and format version 2: [metadata,
//     classes, scalars]. A state holds its numbers: KVCache (keys, values,
//     offset), QuantizedKVCache ((keys, ...), (values, ...), offset,
//     group_size, bits), each number a 0-d int32 tensor that scalars
//     lists as ("{layer}.{index}", "scalar") after a leading "". The
//     tensors are the cache's whole buffer, which mlx-lm grows 256
//     positions at a time: offset says how many are used.
//
// mlx-lm's metadata dict holds "model" (what mlx_lm.generate loads, and
// must equal its --model when both are given) and "tokenizer_config" (a
// JSON object of keyword arguments for the tokenizer's from_pretrained,
// such as {"trust_remote_code": false}: not the folder's
// tokenizer_config.json). It stores no token ids.
type layout int

const (
	layoutMetaState layout = 1
	layoutScalars   layout = 2
)

// The cache classes Driftwood reads and writes.
const (
	classKV    = "KVCache"
	classQuant = "QuantizedKVCache"
)

// headerKey is the metadata dict's key of Driftwood's JSON header.
const headerKey = "driftwood"

// cacheMeta is a prompt-cache file's metadata taken apart.
type cacheMeta struct {
	layout   layout
	metadata map[string]string // mlx-lm's model and tokenizer_config; Driftwood's header
	classes  []string          // one per layer
	// metaStates are layoutMetaState's, one per layer (empty for "").
	metaStates [][]string
	// scalars maps each tensor layoutScalars lists to its type.
	scalars map[string]string
}

// index reads a list index as tree_flatten writes it.
func index(s string) (int, bool) {
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0 && strconv.Itoa(n) == s
}

// list turns entries indexed 0..n-1 into a slice, refusing a gap.
func list[T any](m map[int]T, what string) ([]T, error) {
	out := make([]T, len(m))
	for i := range out {
		v, ok := m[i]
		if !ok {
			return nil, fmt.Errorf("metadata has %d %s but none for index %d", len(m), what, i)
		}
		out[i] = v
	}
	return out, nil
}

// parseCacheMeta reads a prompt-cache file's metadata in either layout.
// A key outside the layout is refused: mlx-lm would not load the file.
func parseCacheMeta(md map[string]string) (*cacheMeta, error) {
	c := &cacheMeta{layout: layoutMetaState, metadata: map[string]string{}}
	if v, ok := md["2.0"]; ok && v == "" {
		c.layout = layoutScalars
	}
	classes := map[int]string{}
	states := map[int]map[int]string{}
	empty := map[int]bool{} // layers whose meta state is ""
	scalars := map[int][2]string{}
	seen := map[int][2]bool{}
	for k, v := range md {
		item, rest, _ := strings.Cut(k, ".")
		bad := fmt.Errorf("metadata key %q is not in mlx-lm's prompt-cache layout", k)
		switch {
		case rest == "":
			return nil, bad
		case item == "0" && c.layout == layoutScalars, item == "1" && c.layout == layoutMetaState:
			c.metadata[rest] = v
		case item == "1" && c.layout == layoutScalars, item == "2" && c.layout == layoutMetaState:
			l, ok := index(rest)
			if !ok {
				return nil, bad
			}
			classes[l] = v
		case item == "0": // layoutMetaState
			ls, js, sub := strings.Cut(rest, ".")
			l, ok := index(ls)
			if !ok {
				return nil, bad
			}
			if states[l] == nil {
				states[l] = map[int]string{}
			}
			if !sub {
				if v != "" {
					return nil, fmt.Errorf("metadata %s: layer %d's meta state %q is neither \"\" nor a tuple", k, l, v)
				}
				empty[l] = true
				continue
			}
			j, ok := index(js)
			if !ok {
				return nil, bad
			}
			states[l][j] = v
		case item == "2": // layoutScalars
			if rest == "0" {
				continue
			}
			is, field, _ := strings.Cut(rest, ".")
			i, ok := index(is)
			if !ok || i == 0 || field != "0" && field != "1" {
				return nil, bad
			}
			f := 0
			if field == "1" {
				f = 1
			}
			e, s := scalars[i], seen[i]
			e[f], s[f] = v, true
			scalars[i], seen[i] = e, s
		default:
			return nil, bad
		}
	}
	var err error
	if c.classes, err = list(classes, "layer classes"); err != nil {
		return nil, err
	}
	if c.layout == layoutMetaState {
		for l := range states {
			if l >= len(c.classes) {
				return nil, fmt.Errorf("metadata has a meta state for layer %d of %d", l, len(c.classes))
			}
		}
		c.metaStates = make([][]string, len(c.classes))
		for l := range c.metaStates {
			st, ok := states[l]
			switch {
			case !ok:
				return nil, fmt.Errorf("metadata has no meta state for layer %d", l)
			case empty[l] && len(st) > 0:
				return nil, fmt.Errorf("metadata gives layer %d two meta states", l)
			}
			if c.metaStates[l], err = list(st, "meta-state entries of layer "+strconv.Itoa(l)); err != nil {
				return nil, err
			}
		}
		return c, nil
	}
	c.scalars = map[string]string{}
	for i := 1; i <= len(scalars); i++ {
		e, ok := scalars[i]
		switch {
		case !ok:
			return nil, fmt.Errorf("metadata lists %d scalars but none at index %d", len(scalars), i)
		case !seen[i][0] || !seen[i][1]:
			return nil, fmt.Errorf("metadata's scalar %d lacks its tensor or its type", i)
		case c.scalars[e[0]] != "":
			return nil, fmt.Errorf("metadata lists tensor %s as a scalar twice", e[0])
		}
		c.scalars[e[0]] = e[1]
	}
	return c, nil
}

// cacheShape is what a prompt cache's tensors hold; every layer is alike.
type cacheShape struct {
	layout                 layout
	class                  string
	layers, heads, headDim int
	// capacity is the positions in each tensor; len those in use.
	capacity, len int
	// dtype is the keys' and values', or a quantised cache's scales'
	// and biases'.
	dtype       safetensors.DType
	group, bits int // a quantised cache's
}

// spec is one tensor a cacheShape needs.
type spec struct {
	name  string
	dtype safetensors.DType
	shape []int
}

// scalarNames are a layout's numbers in a state, by index: the offset,
// then a quantised cache's group size and bits.
func (s *cacheShape) scalarNames(l int) []string {
	if s.layout != layoutScalars {
		return nil
	}
	p := strconv.Itoa(l) + "."
	if s.class == classQuant {
		return []string{p + "2", p + "3", p + "4"}
	}
	return []string{p + "2"}
}

// specs lists layer l's tensors in state order, the checksum's order.
func (s *cacheShape) specs(l int) []spec {
	p := strconv.Itoa(l) + "."
	var out []spec
	if s.class == classKV {
		shape := []int{1, s.heads, s.capacity, s.headDim}
		out = []spec{{p + "0", s.dtype, shape}, {p + "1", s.dtype, shape}}
	} else {
		codes := []int{1, s.heads, s.capacity, s.headDim * s.bits / 32}
		groups := []int{1, s.heads, s.capacity, s.headDim / s.group}
		for _, kv := range []string{"0.", "1."} {
			out = append(out, spec{p + kv + "0", safetensors.U32, codes},
				spec{p + kv + "1", s.dtype, groups}, spec{p + kv + "2", s.dtype, groups})
		}
	}
	for _, name := range s.scalarNames(l) {
		out = append(out, spec{name, safetensors.I32, []int{}})
	}
	return out
}

// checkNumbers refuses a cache shape whose numbers mlx-lm would not
// write or the engine cannot hold.
func (s *cacheShape) checkNumbers() error {
	switch {
	case s.class != classKV && s.class != classQuant:
		return fmt.Errorf("layers are %s caches: Driftwood reads %s and %s", s.class, classKV, classQuant)
	case s.layers < 0 || s.heads < 0 || s.headDim < 0 || s.len < 0 || s.len > s.capacity:
		return fmt.Errorf("%d layers of %d heads of %d, %d positions of %d", s.layers, s.heads, s.headDim, s.len, s.capacity)
	case s.dtype != safetensors.F32 && s.dtype != safetensors.F16 && s.dtype != safetensors.BF16:
		what := "keys and values"
		if s.class == classQuant {
			what = "scales and biases"
		}
		return fmt.Errorf("%s are %q: F32, F16 and BF16 are read", what, s.dtype)
	case s.class == classKV:
		return nil
	case s.bits != 4 && s.bits != 8:
		return fmt.Errorf("quantised with %d-bit codes: 4 and 8 are read", s.bits)
	case s.group != 32 && s.group != 64 && s.group != 128 || s.headDim%s.group != 0:
		return fmt.Errorf("quantised in groups of %d: 32, 64 or 128 dividing head_dim %d are read", s.group, s.headDim)
	}
	return nil
}

// shapeOf is the shape the tensors of kv have when written.
func shapeOf(kv *engine.KVState) *cacheShape {
	s := &cacheShape{layout: layoutScalars, class: classKV, layers: len(kv.K), heads: kv.KVHeads, headDim: kv.HeadDim,
		capacity: kv.Len, len: kv.Len, dtype: kv.DType}
	if q := kv.Quant; q != nil {
		s.class, s.dtype, s.group, s.bits = classQuant, q.ScaleDType, q.Group, q.Bits
	}
	return s
}

// layerData is layer l's tensor data in state order, as specs lists it.
func (s *cacheShape) layerData(kv *engine.KVState, l int) [][]byte {
	var out [][]byte
	if q := kv.Quant; q != nil {
		out = [][]byte{kv.K[l], q.KScales[l], q.KBiases[l], kv.V[l], q.VScales[l], q.VBiases[l]}
	} else {
		out = [][]byte{kv.K[l], kv.V[l]}
	}
	for _, n := range []int{s.len, s.group, s.bits}[:len(s.scalarNames(l))] {
		out = append(out, binary.LittleEndian.AppendUint32(nil, uint32(n)))
	}
	return out
}

// encodeCache lays kv out as mlx-lm's save_prompt_cache does (the newer
// layout) and computes the checksum of every tensor in order.
func encodeCache(kv *engine.KVState) (*cacheShape, []safetensors.Tensor, uint32, error) {
	s := shapeOf(kv)
	if err := s.checkNumbers(); err != nil {
		return nil, nil, 0, fmt.Errorf("KV state: %w", err)
	}
	if q := kv.Quant; q != nil && kv.DType != safetensors.U32 {
		return nil, nil, 0, fmt.Errorf("quantised KV state has dtype %s, want U32", kv.DType)
	}
	parts := [][][]byte{kv.V}
	if q := kv.Quant; q != nil {
		parts = append(parts, q.KScales, q.KBiases, q.VScales, q.VBiases)
	}
	for _, p := range parts {
		if len(p) != len(kv.K) {
			return nil, nil, 0, fmt.Errorf("KV state has %d key layers but %d of another part", len(kv.K), len(p))
		}
	}
	var out []safetensors.Tensor
	var crc uint32
	for l := range kv.K {
		data := s.layerData(kv, l)
		for i, sp := range s.specs(l) {
			t := safetensors.Tensor{Name: sp.name, DType: sp.dtype, Shape: sp.shape, Data: data[i]}
			if want := t.Elements() * t.DType.Size(); len(t.Data) != want {
				return nil, nil, 0, fmt.Errorf("KV state layer %d: tensor %s has %d bytes, want %d", l, sp.name, len(t.Data), want)
			}
			out = append(out, t)
			crc = crc32Update(crc, t.Data)
		}
	}
	return s, out, crc, nil
}

// cacheMetadata is the safetensors metadata of s's tensors with the
// metadata dict md: [md, classes, scalars] flattened.
func cacheMetadata(s *cacheShape, md map[string]string) map[string]string {
	out := map[string]string{"2.0": ""}
	for k, v := range md {
		out["0."+k] = v
	}
	scalar := 0
	for l := 0; l < s.layers; l++ {
		out["1."+strconv.Itoa(l)] = s.class
		for _, name := range s.scalarNames(l) {
			scalar++
			i := "2." + strconv.Itoa(scalar)
			out[i+".0"], out[i+".1"] = name, "scalar"
		}
	}
	return out
}

// readShape infers a header-less cache's shape from layer 0's tensors
// and numbers; checkTensors then holds every layer to it.
func readShape(f *safetensors.File, cm *cacheMeta) (*cacheShape, error) {
	s := &cacheShape{layout: cm.layout, layers: len(cm.classes)}
	if s.layers == 0 {
		return nil, fmt.Errorf("the cache has no layers")
	}
	s.class = cm.classes[0]
	first := "0.0"
	if s.class == classQuant {
		first = "0.0.1" // the keys' scales: the dtype; the codes give the width
	}
	if s.class != classKV && s.class != classQuant {
		return s, s.checkNumbers()
	}
	t, ok := f.Tensors[first]
	if !ok {
		return nil, fmt.Errorf("missing tensor %s", first)
	}
	if len(t.Shape) != 4 || t.Shape[0] != 1 {
		return nil, fmt.Errorf("tensor %s has shape %v, want (1, kv_heads, positions, %s)", first, t.Shape, map[bool]string{true: "head_dim", false: "head_dim/group_size"}[s.class == classKV])
	}
	s.heads, s.capacity, s.headDim, s.dtype = t.Shape[1], t.Shape[2], t.Shape[3], t.DType
	nums, err := numbers(f, cm, s, 0)
	if err != nil {
		return nil, err
	}
	s.len = nums[0]
	if s.class == classQuant {
		s.group, s.bits = nums[1], nums[2]
		codes, ok := f.Tensors["0.0.0"]
		if !ok {
			return nil, fmt.Errorf("missing tensor 0.0.0")
		}
		if len(codes.Shape) != 4 {
			return nil, fmt.Errorf("tensor 0.0.0 has shape %v, want (1, kv_heads, positions, head_dim·bits/32)", codes.Shape)
		}
		if s.bits > 0 {
			s.headDim = codes.Shape[3] * 32 / s.bits
		}
	}
	if err := s.checkNumbers(); err != nil {
		return nil, err
	}
	return s, nil
}

// numbers are layer l's offset (and a quantised cache's group size and
// bits): from its scalar tensors, its meta state, or, for an older
// KVCache, its length.
func numbers(f *safetensors.File, cm *cacheMeta, s *cacheShape, l int) ([]int, error) {
	if s.layout == layoutScalars {
		var out []int
		for _, name := range s.scalarNames(l) {
			t, ok := f.Tensors[name]
			switch {
			case !ok:
				return nil, fmt.Errorf("missing tensor %s", name)
			case cm.scalars[name] != "scalar":
				return nil, fmt.Errorf("tensor %s is not listed in the metadata as a scalar", name)
			case t.DType != safetensors.I32 || len(t.Shape) != 0:
				return nil, fmt.Errorf("tensor %s is %s %v, want an I32 scalar", name, t.DType, t.Shape)
			}
			out = append(out, int(int32(binary.LittleEndian.Uint32(t.Data))))
		}
		return out, nil
	}
	st := cm.metaStates[l]
	if s.class == classKV {
		if len(st) != 0 {
			return nil, fmt.Errorf("layer %d's meta state is %q, want \"\"", l, st)
		}
		return []int{s.capacity}, nil
	}
	if len(st) != 3 {
		return nil, fmt.Errorf("layer %d's meta state is %q, want (offset, group_size, bits)", l, st)
	}
	out := make([]int, 3)
	for i, v := range st {
		n, ok := index(v)
		if !ok {
			return nil, fmt.Errorf("layer %d's meta state is %q, want three numbers", l, st)
		}
		out[i] = n
	}
	return out, nil
}

// checkTensors holds every layer of f to s: its class, each tensor's
// name, dtype and shape, and no tensor or listed scalar besides. says
// names where s came from, for the errors. It returns the tensors in
// checksum order.
func checkTensors(f *safetensors.File, cm *cacheMeta, s *cacheShape, says string) ([]*safetensors.Tensor, error) {
	if len(cm.classes) != s.layers {
		return nil, fmt.Errorf("metadata names the classes of %d layers, %s %d", len(cm.classes), says, s.layers)
	}
	var out []*safetensors.Tensor
	scalars := 0
	for l := 0; l < s.layers; l++ {
		if c := cm.classes[l]; c != s.class {
			return nil, fmt.Errorf("layer %d is a %s, %s %s", l, c, says, s.class)
		}
		for _, sp := range s.specs(l) {
			t, ok := f.Tensors[sp.name]
			switch {
			case !ok:
				return nil, fmt.Errorf("missing tensor %s", sp.name)
			case t.DType != sp.dtype || !slices.Equal(t.Shape, sp.shape):
				return nil, fmt.Errorf("tensor %s is %s %v, %s %s %v", sp.name, t.DType, t.Shape, says, sp.dtype, sp.shape)
			}
			out = append(out, t)
		}
		scalars += len(s.scalarNames(l))
	}
	if len(f.Tensors) != len(out) {
		for _, name := range f.Names() {
			if !slices.ContainsFunc(out, func(t *safetensors.Tensor) bool { return t.Name == name }) {
				return nil, fmt.Errorf("unexpected tensor %s", name)
			}
		}
	}
	if len(cm.scalars) != scalars {
		return nil, fmt.Errorf("metadata lists %d scalars, the %d layers hold %d", len(cm.scalars), s.layers, scalars)
	}
	return out, nil
}

// checkNumbers holds every layer's numbers (checkTensors has checked
// the tensors that hold them) to s.
func checkNumbers(f *safetensors.File, cm *cacheMeta, s *cacheShape, says string) error {
	for l := 0; l < s.layers; l++ {
		nums, err := numbers(f, cm, s, l)
		if err != nil {
			return err
		}
		want := []int{s.len, s.group, s.bits}[:len(nums)]
		if !slices.Equal(nums, want) {
			return fmt.Errorf("layer %d holds %v (offset, group size, bits), %s %v", l, nums, says, want)
		}
	}
	return nil
}

// kvState is the engine's form of the checked tensors ts of shape s: views
// into the file when every position is used, else copies of the used ones.
func kvState(s *cacheShape, ts []*safetensors.Tensor) *engine.KVState {
	kv := &engine.KVState{Len: s.len, KVHeads: s.heads, HeadDim: s.headDim, DType: s.dtype,
		K: make([][]byte, s.layers), V: make([][]byte, s.layers)}
	var q *engine.KVQuant
	if s.class == classQuant {
		kv.DType = safetensors.U32
		q = &engine.KVQuant{Group: s.group, Bits: s.bits, ScaleDType: s.dtype}
		for _, p := range []*[][]byte{&q.KScales, &q.KBiases, &q.VScales, &q.VBiases} {
			*p = make([][]byte, s.layers)
		}
		kv.Quant = q
	}
	used := func(t *safetensors.Tensor) []byte {
		if s.len == s.capacity {
			return t.Data
		}
		row := t.Shape[3] * t.DType.Size()
		out := make([]byte, 0, s.heads*s.len*row)
		for h := 0; h < s.heads; h++ {
			out = append(out, t.Data[h*s.capacity*row:(h*s.capacity+s.len)*row]...)
		}
		return out
	}
	per := len(ts) / max(s.layers, 1)
	for l := 0; l < s.layers; l++ {
		lt := ts[l*per:]
		if q == nil {
			kv.K[l], kv.V[l] = used(lt[0]), used(lt[1])
			continue
		}
		kv.K[l], q.KScales[l], q.KBiases[l] = used(lt[0]), used(lt[1]), used(lt[2])
		kv.V[l], q.VScales[l], q.VBiases[l] = used(lt[3]), used(lt[4]), used(lt[5])
	}
	return kv
}
