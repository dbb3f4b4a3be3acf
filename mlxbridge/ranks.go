package mlxbridge

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os/signal"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/safetensors"
	"github.com/driftwoodlabs/driftwood/mlxbridge/internal/mlxc"
)

// Tensor parallelism over an MLX distributed group, as mlx-lm's sharded
// models do: every rank holds the query, key, value, gate and up
// projections' rows of its share of the heads and of the feed-forward
// width, and the output and down projections' matching columns; their
// partial products are summed over the group (all_sum), twice a layer.
// The embedding, the norms and the output layer are whole on every rank.
// Rank 0 drives: before each call that computes, it tells the other
// ranks what to run (a small command broadcast over the same group), so
// that every rank meets the others in the same collectives in the same
// order; the others only follow (Follow).

// Group is the MLX distributed group this process is a rank of.
type Group struct {
	lib *mlxc.Lib
	g   *mlxc.Group
	// Rank is this process's rank, Size the group's.
	Rank, Size int

	nextCache atomic.Int64 // the id rank 0 gives its next cache, over all its backends
	mu        sync.Mutex
	// lost is the error of a collective that failed (a rank went away):
	// the ranks are out of step, so no command is sent after it (it
	// could wait for a rank that is gone).
	lost error
}

// lostErr is the failed collective's error, or nil.
func (g *Group) lostErr() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.lost
}

func (g *Group) setLost(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.lost == nil {
		g.lost = err
	}
}

// Exit tells the other ranks to end (Follow returns there): rank 0 calls
// it once its last backend is closed. After a lost rank it does nothing.
func (g *Group) Exit() error {
	if g.Rank != 0 || g.Size < 2 || g.lostErr() != nil {
		return nil
	}
	return g.lib.Do(func(t *mlxc.Thread) error {
		dev, err := device(t, "")
		if err != nil {
			return err
		}
		s := t.DefaultStream(dev)
		defer t.FreeStream(s)
		t.Use(s)
		cmd := make([]int32, commandLength)
		cmd[0] = opExit
		t.Eval(g.sum(t, cmd))
		return t.Err()
	})
}

// sum adds cmd up over the ranks: rank 0's command, the others' zeros.
func (g *Group) sum(t *mlxc.Thread, cmd []int32) *mlxc.Array {
	return t.AllSum(t.FromBytes(int32Bytes(cmd), []int{len(cmd)}, mlxc.Int32), g.g)
}

// JoinGroup loads libmlxc (as Options.Library says) and joins the group
// that MLX_RANK and MLX_HOSTFILE describe, over MLX's ring backend (TCP),
// waiting for every rank to join.
//
// A rank that goes away closes its sockets; MLX's next send to it would
// raise SIGPIPE on MLX's thread, which kills a Go program, so JoinGroup
// ignores SIGPIPE for the process: the send fails and MLX reports it as
// an error of the collective instead.
func JoinGroup(library string) (*Group, error) {
	lib, err := open(library)
	if err != nil {
		return nil, err
	}
	signal.Ignore(syscall.SIGPIPE)
	var g *mlxc.Group
	err = lib.Do(func(t *mlxc.Thread) error {
		g, err = t.JoinGroup("ring")
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("mlx: joining the ranks: %w", err)
	}
	return &Group{lib: lib, g: g, Rank: g.Rank, Size: g.Size}, nil
}

// The commands rank 0 sends before each call that computes.
const (
	opForward    = iota + 1 // cache, n tokens: a forward pass
	opTruncate              // cache, n: Truncate(n)
	opNewCache              // cache, window: NewCache(window)
	opCloseCache            // cache
	opExport                // cache: Export (the heads gathered)
	opImport                // cache, len; tokens: stateHeader: Import (the state sent)
	opExit                  // rank 0 is done: Follow returns
	opCheck                 // checkModel
)

// A command is its fields (op, cache, a number, the token count) and up
// to commandTokens tokens, the most a forward pass of a split model
// takes at once.
const (
	commandHeader = 4
	commandTokens = 512
	commandLength = commandHeader + commandTokens
)

// sharded says whether the backend is one rank of several.
func (b *Backend) sharded() bool { return b.group != nil && b.group.Size > 1 }

// tell sends a command from rank 0 to the others (an all_sum to which
// they add zeros). It does nothing on a single rank, on the others, or
// once a collective failed.
func (b *Backend) tell(t *mlxc.Thread, op, cache, a int, tokens []int32) {
	if !b.sharded() || b.group.Rank != 0 || b.group.lostErr() != nil {
		return
	}
	cmd := b.command
	clear(cmd)
	cmd[0], cmd[1], cmd[2], cmd[3] = int32(op), int32(cache), int32(a), int32(len(tokens))
	copy(cmd[commandHeader:], tokens)
	t.Eval(b.group.sum(t, cmd))
	if t.Err() != nil {
		b.group.setLost(t.Err())
	}
}

// hear waits for rank 0's next command.
func (b *Backend) hear(t *mlxc.Thread) (op, cache, a int, tokens []int32) {
	cmd := b.command
	clear(cmd)
	raw := t.Bytes(t.AsType(b.group.sum(t, cmd), mlxc.Uint32)) // every field is 0 or more
	if t.Err() != nil {
		return 0, 0, 0, nil
	}
	got := unsafe.Slice((*int32)(unsafe.Pointer(&raw[0])), len(cmd))
	n := int(got[3])
	if n < 0 || n > commandTokens {
		n = 0
	}
	return int(got[0]), int(got[1]), int(got[2]), got[commandHeader : commandHeader+n]
}

// Follow runs a rank other than 0: it loads its share of m, as rank 0
// does with the same options, and runs what rank 0 tells its backends of
// m (one after another, or several at once: a chat reopening its model)
// until rank 0 says Exit. It returns the first error (an MLX error, or a
// command it cannot run); rank 0 then fails in the next collective.
func Follow(m *engine.Model, opt Options) error {
	if opt.Group == nil || opt.Group.Rank == 0 {
		return errors.New("mlx: Follow runs the ranks other than 0")
	}
	b, err := New(m, opt)
	if err != nil {
		return err
	}
	defer b.Close()
	caches := map[int]*cache{}
	// The caches rank 0 left open (it failed, or a test ends) are freed
	// here: a follower serves model after model in one process.
	defer b.lib.Do(func(t *mlxc.Thread) error {
		for _, c := range caches {
			c.kv.free(t)
		}
		return nil
	})
	for {
		var fail error
		done := false
		err := b.lib.Do(func(t *mlxc.Thread) error {
			t.Use(b.stream)
			op, id, a, tokens := b.hear(t)
			if t.Err() != nil {
				return t.Err()
			}
			c := caches[id]
			if c == nil && op != opNewCache && op != opExit && op != opCheck {
				fail = fmt.Errorf("mlx rank %d: rank 0 names cache %d, which it never made", b.group.Rank, id)
				return nil
			}
			switch op {
			case opNewCache:
				caches[id] = &cache{b: b, window: a, kv: newKVBuffers(len(b.layout), b.cfg.NumHiddenLayers)}
			case opForward:
				b.forward(t, c, tokens, logitsNone)
			case opTruncate:
				c.n = min(a, c.n)
			case opCloseCache:
				c.kv.free(t)
				delete(caches, id)
			case opExport:
				c.gather(t)
			case opImport:
				s, err := stateFromHeader(b.cfg, a, tokens)
				if err != nil {
					fail = fmt.Errorf("mlx rank %d: %w", b.group.Rank, err)
					return nil
				}
				c.importState(t, s, b.receive(t))
			case opExit:
				done = true
			case opCheck:
				// A mismatch is rank 0's to report: it refuses that
				// backend and may open the right model next.
				if err := b.checkModel(t); err != nil && t.Err() != nil {
					fail = err
				}
			default:
				fail = fmt.Errorf("mlx rank %d: unknown command %d from rank 0", b.group.Rank, op)
			}
			return nil
		})
		switch {
		case err != nil:
			return err
		case fail != nil:
			return fail
		case done:
			return nil
		}
	}
}

// shardable checks that the model divides into the group's ranks: whole
// heads, key-value heads and feed-forward columns on each.
func shardable(cfg *engine.Config, n int) error {
	switch {
	case cfg.NumKeyValueHeads%n != 0:
		return fmt.Errorf("the model's %d key-value heads do not divide among %d ranks", cfg.NumKeyValueHeads, n)
	case cfg.IntermediateSize%n != 0:
		return fmt.Errorf("the model's feed-forward width %d does not divide among %d ranks", cfg.IntermediateSize, n)
	}
	return nil
}

// share keeps rank's share of m, of n: its rows (byRows) or its
// columns, each part of the group's width. The whole matrix was read;
// the share is made contiguous and evaluated, and the whole freed, one
// matrix at a time. MLX's buffer cache keeps the freed wholes until the
// load clears it, so a rank's peak during the load can pass one whole
// process's (docs/two-machines.md); after it, the rank holds its shares
// and the layers every rank keeps whole.
func (l *loader) share(m matrix, byRows bool) matrix {
	g := l.b.group
	if l.err != nil || g == nil || g.Size < 2 {
		return m
	}
	part := func(a *mlxc.Array) *mlxc.Array {
		if a == nil {
			return nil
		}
		shape := l.t.Shape(a)
		axis := 1
		if byRows {
			axis = 0
		}
		if shape[axis]%g.Size != 0 {
			if l.err == nil {
				l.err = fmt.Errorf("a weight of shape %v does not divide among %d ranks along axis %d (quantisation groups must not straddle ranks)", shape, g.Size, axis)
			}
			return a
		}
		w := shape[axis] / g.Size
		lo, hi := []int{0, 0}, slices.Clone(shape)
		lo[axis], hi[axis] = g.Rank*w, (g.Rank+1)*w
		s := l.t.Contiguous(l.t.Slice(a, lo, hi))
		l.t.Eval(s)
		l.swap(a, s)
		return s
	}
	out := m
	out.w, out.scales, out.biases = part(m.w), part(m.scales), part(m.biases)
	if m.wT != nil {
		l.swap(m.wT, nil)
		out.wT = l.keep(l.t.Transpose(out.w, 1, 0))
	}
	if m.plus != nil {
		p := l.share(*m.plus, byRows)
		out.plus = &p
	}
	return out
}

// shareVector keeps rank's share of a bias vector (Qwen2's).
func (l *loader) shareVector(v *mlxc.Array) *mlxc.Array {
	g := l.b.group
	if l.err != nil || v == nil || g == nil || g.Size < 2 {
		return v
	}
	n := l.t.Shape(v)[0] / g.Size
	s := l.t.Contiguous(l.t.Slice(v, []int{g.Rank * n}, []int{(g.Rank + 1) * n}))
	l.t.Eval(s)
	l.swap(v, s)
	return s
}

// swap replaces old among the backend's arrays with new (or drops it
// when new is nil) and frees old. old is one of the last arrays kept.
func (l *loader) swap(old, new *mlxc.Array) {
	owned := l.b.owned
	for i := len(owned) - 1; i >= 0; i-- {
		if owned[i] == old {
			if new == nil {
				owned = append(owned[:i], owned[i+1:]...)
			} else {
				owned[i] = l.t.Keep(new)
			}
			break
		}
	}
	l.b.owned = owned
	l.t.Free(old)
}

// reduce sums a partial product over the group's ranks (the output and
// down projections' columns); on a single rank it is x.
func (b *Backend) reduce(t *mlxc.Thread, x *mlxc.Array) *mlxc.Array {
	if !b.sharded() {
		return x
	}
	return t.AllSum(x, b.group.g)
}

// gather is a cache's used positions with every rank's heads, in head
// order, as Export gives them, evaluated: on every rank (each must take
// part, in the same order).
func (c *cache) gather(t *mlxc.Thread) [][]*mlxc.Array {
	out := make([][]*mlxc.Array, len(c.kv.parts))
	origin := make([]int, 4)
	var all []*mlxc.Array
	for p := range c.kv.parts {
		out[p] = make([]*mlxc.Array, len(c.kv.parts[p]))
		for l, buf := range c.kv.parts[p] {
			if c.n == 0 {
				continue
			}
			x := t.Slice(buf, origin, c.shape(p, c.n))
			if c.b.sharded() {
				x = t.AllGather(t.Reshape(x, c.b.kvHeads, c.n, c.b.layout[p].width), c.b.group.g)
			}
			out[p][l] = x
			all = append(all, x)
		}
	}
	t.Eval(all...)
	return out
}

// kvDTypes numbers the dtypes of a KV state's tensors in stateHeader.
var kvDTypes = []safetensors.DType{safetensors.F32, safetensors.F16, safetensors.BF16, safetensors.U32}

// stateHeader is what the other ranks need to receive a KV state besides
// its length and the model's shape: its dtype and quantisation.
func stateHeader(s *engine.KVState) []int32 {
	h := []int32{int32(slices.Index(kvDTypes, s.DType)), 0, 0, 0}
	if q := s.Quant; q != nil {
		h[1], h[2], h[3] = int32(q.Group), int32(q.Bits), int32(slices.Index(kvDTypes, q.ScaleDType))
	}
	return h
}

// stateFromHeader is the KV state rank 0 is sending, without its data.
func stateFromHeader(cfg *engine.Config, n int, h []int32) (*engine.KVState, error) {
	dtype := func(i int32) (safetensors.DType, error) {
		if i < 0 || int(i) >= len(kvDTypes) {
			return "", fmt.Errorf("rank 0 sends a KV state of dtype %d", i)
		}
		return kvDTypes[i], nil
	}
	if len(h) != 4 {
		return nil, fmt.Errorf("rank 0 sends a KV state header of %d numbers", len(h))
	}
	s := &engine.KVState{Len: n, KVHeads: cfg.NumKeyValueHeads, HeadDim: cfg.HeadDim}
	var err error
	if s.DType, err = dtype(h[0]); err != nil {
		return nil, err
	}
	if h[1] != 0 {
		q := &engine.KVQuant{Group: int(h[1]), Bits: int(h[2])}
		if q.ScaleDType, err = dtype(h[3]); err != nil {
			return nil, err
		}
		s.Quant = q
	}
	return s, nil
}

// broadcast gives s's tensors on every rank: rank 0 sends each (an
// all_sum of its bytes as words, which the others add zeros to).
func (b *Backend) broadcast(t *mlxc.Thread, s *engine.KVState) kvTensor {
	return func(layer, which int, shape []int, dtype mlxc.Dtype) *mlxc.Array {
		data := stateBytes(s, layer, which)
		words := make([]byte, (len(data)+3)/4*4)
		copy(words, data)
		return b.exchange(t, t.FromBytes(words, []int{len(words) / 4}, mlxc.Uint32), shape, dtype)
	}
}

// receive is broadcast on the other ranks.
func (b *Backend) receive(t *mlxc.Thread) kvTensor {
	return func(layer, which int, shape []int, dtype mlxc.Dtype) *mlxc.Array {
		n := dtype.Size()
		for _, d := range shape {
			n *= d
		}
		return b.exchange(t, t.Zeros([]int{(n + 3) / 4}, mlxc.Uint32), shape, dtype)
	}
}

// exchange sums words over the ranks, at once (so that every rank meets
// the others in the same order), and reads the sum as a tensor of shape
// and dtype.
func (b *Backend) exchange(t *mlxc.Thread, words *mlxc.Array, shape []int, dtype mlxc.Dtype) *mlxc.Array {
	sum := t.AllSum(words, b.group.g)
	t.Eval(sum)
	if t.Err() != nil {
		b.group.setLost(t.Err())
	}
	count := 1
	for _, d := range shape {
		count *= d
	}
	return t.Reshape(t.Slice(t.View(sum, dtype), []int{0}, []int{count}), shape...)
}

// checkModel has every rank compare the model it loaded with the others'
// (a digest of its fingerprint, all gathered), so that a rank that
// opened another model is an error at load, never wrong tokens.
func (b *Backend) checkModel(t *mlxc.Thread) error {
	sum := sha256.Sum256([]byte(b.fingerprint))
	mine := sum[:16]
	all := t.Bytes(t.AllGather(t.FromBytes(mine, []int{1, 4}, mlxc.Uint32), b.group.g))
	if err := t.Err(); err != nil {
		b.group.setLost(err)
		return err
	}
	for r := range b.group.Size {
		if !bytes.Equal(all[16*r:16*r+16], mine) {
			return fmt.Errorf("rank %d opened another model than rank %d (its fingerprint differs): every rank must open the same model", r, b.group.Rank)
		}
	}
	return nil
}
