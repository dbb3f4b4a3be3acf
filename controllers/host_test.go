package controllers

import (
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/engine"
)

func TestMaskAllowsOneToken(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	d.Use(h.load(t, "only7", allowOnly(7)), "")
	reply, _, _ := h.reply(t, d, nil, 12, 1.5, nil)
	if len(reply) != 12 || slices.ContainsFunc(reply, func(id int32) bool { return id != 7 }) {
		t.Errorf("reply %v: want twelve 7s", reply)
	}
}

func TestForceThenStop(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	// flags FORCE|STOP (0x0a), force_ptr 4096, force_len 2
	mod := h.load(t, "force", watModule("(i32.const 0)", "(i32.const 1024)", `
  (data (i32.const 1024) "\0a\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\02\00\00\00")
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00")`))
	d.Use(mod, "")
	reply, st, _ := h.reply(t, d, nil, 0, 1, nil)
	if !slices.Equal(reply, []int32{40, 41}) || st.Reason != engine.StopHook {
		t.Errorf("reply %v (%s), want the forced [40 41] then stop", reply, st.Reason)
	}
}

// TestTemperatureOverride: a controller setting temperature 0 turns a hot
// sampler greedy, so the reply is the golden greedy continuation.
func TestTemperatureOverride(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	d.Use(h.load(t, "greedy", watModule("(i32.const 0)", "(i32.const 1024)", `
  (data (i32.const 1024) "\04\00\00\00")`)), "") // TEMPERATURE, value 0.0 at offset 20
	reply, _, _ := h.reply(t, d, nil, 24, 5, nil)
	if !slices.Equal(reply, h.g.Greedy.Tokens) {
		t.Errorf("reply %v, want golden greedy %v", reply, h.g.Greedy.Tokens)
	}
}

// TestBacktrack: at its 4th step the controller takes back two tokens;
// the host samples the replacement at once (no extra step), so the guest
// is given just that one token at the next step (the two are gone), and
// the sequence and KV cache stay consistent.
func TestBacktrack(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	// flags BACKTRACK (0x10), backtrack 2, greedy
	mod := h.load(t, "back", watModule("(i32.const 0)", `
    (if (result i32) (i32.eq (global.get $steps) (i32.const 4)) (then (i32.const 1024)) (else (i32.const 0)))`, `
  (data (i32.const 1024) "\10\00\00\00\00\00\00\00\02\00\00\00")`))
	d.Use(mod, "")
	reply, _, seq := h.reply(t, d, nil, 6, 0, nil)
	if len(reply) != 6 {
		t.Fatalf("reply %v", reply)
	}
	// Greedy with the same prefix: the regenerated tokens equal the golden ones.
	if !slices.Equal(reply, h.g.Greedy.Tokens[:6]) {
		t.Errorf("reply %v, want %v", reply, h.g.Greedy.Tokens[:6])
	}
	steps, _ := d.kv.Get("steps")
	// step 1: 0 tokens; then one each: the token sampled after the
	// take-back, within step 4, is the one step 5 is given.
	if want := []byte{0, 1, 1, 1, 1, 1, 1, 1}; !slices.Equal(steps, want) {
		t.Errorf("tokens given per step %v, want %v", steps, want)
	}
	if seq.Cache.Len() != len(seq.Tokens) {
		t.Errorf("cache %d, tokens %d", seq.Cache.Len(), len(seq.Tokens))
	}
}

func TestLogLines(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	// The second line starts with the controller's name, as the SDK's do:
	// the log does not repeat it.
	mod := h.load(t, "talk", watModule("(call $log (i32.const 700) (i32.const 5)) (call $log (i32.const 720) (i32.const 9)) (i32.const 0)", "(i32.const 0)", `
  (data (i32.const 700) "hello")
  (data (i32.const 720) "talk: bye")`))
	d.Use(mod, "")
	h.reply(t, d, nil, 2, 0, nil)
	if logs := h.logText(); logs != "talk: hello\ntalk: bye" {
		t.Errorf("logs %q", logs)
	}
}

// TestApplyMaskCounts checks the allowed counts (bits past the vocabulary
// do not count) and the choice between a list and the mask itself.
func TestApplyMaskCounts(t *testing.T) {
	d := newDriver(nil, nil, nil, nil, nil)
	defer d.Close()
	for _, n := range []int{1000, 1001, 4097} {
		mask := make([]uint32, (n+31)/32)
		for i := range mask {
			mask[i] = uint32(i*2654435761) ^ uint32(i<<7)
		}
		mask[len(mask)-1] = math.MaxUint32 // bits past n are set
		allowed, dense, count := d.applyMask(make([]float32, n), mask)
		want := 0
		for i := 0; i < n; i++ {
			if mask[i/32]>>(i%32)&1 == 1 {
				want++
			}
		}
		if allowed != nil || len(dense) != len(mask) || count != want {
			t.Errorf("n=%d: list %v, mask of %d words, count %d; want the mask and %d", n, allowed != nil, len(dense), count, want)
		}
	}
	sparse := make([]uint32, 4)
	sparse[0], sparse[3] = 1<<5, 1<<31
	allowed, dense, count := d.applyMask(make([]float32, 127), sparse)
	// The list for the host's sampler, and the mask too, for a device's.
	if !slices.Equal(allowed, []int32{5}) || !slices.Equal(dense, sparse) || count != 1 {
		t.Errorf("sparse: %v %v %d, want [5] and the mask (127 is past the vocabulary)", allowed, dense, count)
	}
}

// TestWholePages: the pages handed to a device that maps the mask are
// the whole host pages around it, inside the memory; a memory that does
// not start on a page boundary gives none. And a real step's mask comes
// with its pages.
func TestWholePages(t *testing.T) {
	page := os.Getpagesize()
	buf := make([]byte, 5*page)
	base := (page - int(uintptr(unsafe.Pointer(&buf[0])))%page) % page
	mem := buf[base : base+4*page]
	for _, c := range []struct{ off, n, lo, hi int }{
		{0, 4, 0, page},
		{page - 4, 8, 0, 2 * page},
		{page + 100, page, page, 3 * page},
		{4*page - 4, 4, 3 * page, 4 * page},
	} {
		got := wholePages(mem, mem[c.off:c.off+c.n])
		if &got[0] != &mem[c.lo] || len(got) != c.hi-c.lo || cap(got) != len(got) {
			t.Errorf("mask at %d (+%d): pages at %d (+%d), want %d (+%d)", c.off, c.n,
				uintptr(unsafe.Pointer(&got[0]))-uintptr(unsafe.Pointer(&mem[0])), len(got), c.lo, c.hi-c.lo)
		}
	}
	if got := wholePages(mem[4:], mem[8:12]); got != nil {
		t.Errorf("memory off a page boundary: pages %d bytes, want none", len(got))
	}

	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	d.Use(h.load(t, "only7", allowOnly(7)), "")
	d.StartReply(0, 4)
	d.Begin([]int32{1, 2})
	dir := d.End(make([]float32, h.model.Config.VocabSize))
	if dir.Mask == nil || dir.MaskPages == nil || len(dir.MaskPages)%page != 0 || uintptr(unsafe.Pointer(&dir.MaskPages[0]))%uintptr(page) != 0 {
		t.Fatalf("a masked step: mask %v, pages of %d bytes", dir.Mask != nil, len(dir.MaskPages))
	}
	lo, m := uintptr(unsafe.Pointer(&dir.MaskPages[0])), uintptr(unsafe.Pointer(&dir.Mask[0]))
	if m < lo || m+4*uintptr(len(dir.Mask)) > lo+uintptr(len(dir.MaskPages)) {
		t.Errorf("the mask is not inside its pages")
	}
}

// TestSpareInstances checks that the runtime keeps a spare instance of a
// module in use, that a switch takes it (with the conversation's store
// attached), and that closing the runtime while one is prepared is safe.
func TestSpareInstances(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	mod := h.load(t, "only7", allowOnly(7))
	d.Use(mod, "first")
	if reply, _, _ := h.reply(t, d, nil, 4, 1, nil); !slices.Equal(reply, []int32{7, 7, 7, 7}) {
		t.Fatalf("reply %v", reply)
	}
	h.rt.spares.work.Wait()
	key := spareKey{mod, h.vocab}
	spare := h.rt.spares.ready[key]
	if spare == nil {
		t.Fatal("no spare instance after the first reply")
	}
	d.Use(mod, "second") // a switch: the spare becomes the controller
	if reply, _, _ := h.reply(t, d, nil, 4, 1, nil); !slices.Equal(reply, []int32{7, 7, 7, 7}) {
		t.Fatalf("reply after the switch %v", reply)
	}
	if d.inst != spare {
		t.Error("the switch did not take the spare")
	}
	if v, _ := d.kv.Get("steps"); len(v) != 8 {
		t.Errorf("store after two replies of 4 steps holds %d step records, want 8", len(v))
	}
	h.rt.spares.work.Wait()
	if h.rt.spares.ready[key] == nil || h.rt.spares.ready[key] == spare {
		t.Error("no new spare after the switch")
	}

	// Spares are kept for the modules used last only.
	var mods []*Module
	for i := range maxSpares + 1 {
		mods = append(mods, h.load(t, fmt.Sprint("m", i), allowOnly(i)))
		h.rt.spares.prewarm(mods[i], h.vocab)
		h.rt.spares.work.Wait()
	}
	if len(h.rt.spares.ready) != maxSpares || h.rt.spares.ready[spareKey{mods[0], h.vocab}] != nil || h.rt.spares.ready[spareKey{mods[maxSpares], h.vocab}] == nil {
		t.Errorf("%d spares kept, oldest kept %v", len(h.rt.spares.ready), h.rt.spares.ready[spareKey{mods[0], h.vocab}] != nil)
	}

	rt := newWasmRuntime(defaultLimits(), "")
	m, err := rt.Load("only7", []byte(allowOnly(7)))
	if err != nil {
		t.Fatal(err)
	}
	rt.spares.prewarm(m, h.vocab)
	rt.Close() // waits for the preparation, then frees it
	if len(rt.spares.ready) != 0 {
		t.Error("spares left after Close")
	}
}

// TestStoreDuringLoad checks that a guest using the key-value store in
// dw_load, before any conversation is attached, is refused cleanly.
func TestStoreDuringLoad(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	wat := strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""),
		`(func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))`,
		`(func (export "dw_load") (param i32 i32 i32) (result i32) (call $kv_append (i32.const 512) (i32.const 5) (i32.const 600) (i32.const 1)))`, 1)
	d.Use(h.load(t, "early", wat), "")
	reply, _, _ := h.reply(t, d, nil, 3, 0, nil)
	if len(reply) != 3 || !strings.Contains(h.logText(), "refused the vocabulary") {
		t.Errorf("reply %v, logs %q", reply, h.logText())
	}
}

// TestForceWithMask is the ABI's order for one step's result: the forced
// tokens are appended, then the next token is sampled among those the
// same record's mask allows, with no dw_step in between. (The host used
// to drop the mask and step again: the token after the five forced ones
// was 184, 179 or 391 for seeds 1, 2, 3.) FORCE alone samples the next
// token unconstrained, also without another step.
func TestForceWithMask(t *testing.T) {
	forced := []int32{40, 41, 42, 43, 44}
	for _, c := range []struct {
		name, flags string
		want21      bool
	}{
		{"FORCE|MASK", `\09`, true},
		{"FORCE", `\08`, false},
	} {
		h := newHarness(t)
		// At step 1 only: flags, mask_ptr 2048 (only id 21), force_ptr
		// 4096, force_len 5.
		wat := watModule("(i32.const 0)", `
    (if (result i32) (i32.eq (global.get $steps) (i32.const 1)) (then (i32.const 1024)) (else (i32.const 0)))`, `
  (data (i32.const 1024) "`+c.flags+`\00\00\00\00\08\00\00\00\00\00\00\00\10\00\00\05\00\00\00")
  (data (i32.const 2048) "`+le32(1<<21)+`")
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00\2a\00\00\00\2b\00\00\00\2c\00\00\00")`)
		mod := h.load(t, "fm", wat)
		for seed := uint64(1); seed <= 3; seed++ {
			d := h.driver(nil)
			d.Use(mod, "")
			reply, _ := h.replyWith(t, d, 8, 1.5, seed)
			steps, _ := d.kv.Get("steps")
			d.Close()
			if len(reply) != 8 || !slices.Equal(reply[:5], forced) {
				t.Fatalf("%s seed %d: reply %v, want the 5 forced tokens first, 8 in all", c.name, seed, reply)
			}
			if c.want21 && reply[5] != 21 {
				t.Errorf("%s seed %d: token after the forced ones is %d, want 21, the only one the mask allows", c.name, seed, reply[5])
			}
			// Step 1 forces and samples; step 2 is given the five forced
			// tokens and the sampled one; then one token a step.
			if want := []byte{0, 6, 1}; !slices.Equal(steps[:3], want) {
				t.Errorf("%s seed %d: tokens given per step %v, want %v… (no step between the forced tokens and the sampled one)", c.name, seed, steps, want)
			}
		}
	}
}

// TestForcedTokensCountAgainstTheLimit: with MaxTokens 3, a controller
// that forces five tokens gets a three-token reply that stops for
// max_tokens (it got all five before).
func TestForcedTokensCountAgainstTheLimit(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	// FORCE (0x08), force_ptr 4096, force_len 5, at every step.
	d.Use(h.load(t, "force5", watModule("(i32.const 0)", "(i32.const 1024)", `
  (data (i32.const 1024) "\08\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\05\00\00\00")
  (data (i32.const 4096) "\28\00\00\00\29\00\00\00\2a\00\00\00\2b\00\00\00\2c\00\00\00")`)), "")
	reply, st, seq := h.reply(t, d, nil, 3, 0, nil)
	if !slices.Equal(reply, []int32{40, 41, 42}) || st.Reason != engine.StopMaxTokens || st.GenTokens != 3 {
		t.Errorf("reply %v (%d tokens, %s), want [40 41 42] and max_tokens", reply, st.GenTokens, st.Reason)
	}
	if seq.Cache.Len() != len(seq.Tokens) || len(seq.Tokens) > len(h.g.Prompt.IDs)+3 {
		t.Errorf("sequence holds %d tokens, cache %d: want them equal, at most the prompt and the 3 kept", len(seq.Tokens), seq.Cache.Len())
	}
}

// TestLogLinesAreTheGuests: a guest's log text cannot pass for the
// host's. A '\n' in a log call starts a new line that is a Log of its own
// (so whoever shows it prefixes the controller's name again; it printed a
// second, unprefixed line before), control characters such as ESC and CR
// are shown escaped, and a message is cut at maxLogLine bytes. Output on
// stdout gets the same treatment.
func TestLogLinesAreTheGuests(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	long := maxLogLine + 500
	wat := strings.Replace(watModule(`(call $log (i32.const 700) (i32.const 25))
    (local.set 0 (i32.mul (memory.grow (i32.const 1)) (i32.const 65536))) ;; a fresh page
    (memory.fill (local.get 0) (i32.const 97) (i32.const `+fmt.Sprint(long)+`))
    (call $log (local.get 0) (i32.const `+fmt.Sprint(long)+`))
    (drop (call $fd_write (i32.const 1) (i32.const 760) (i32.const 1) (i32.const 768)))
    (i32.const 0)`, "(i32.const 0)", `
  (data (i32.const 700) "one\0a[driftwood] two\1b[2J\0d\0a")
  (data (i32.const 740) "out\0dline\0a")
  (data (i32.const 760) "\e4\02\00\00\09\00\00\00")`), "(module", `(module (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))`, 1)
	d.Use(h.load(t, "talk", wat), "")
	h.reply(t, d, nil, 1, 0, nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	var texts []string
	for _, l := range h.logs {
		texts = append(texts, l.Text)
	}
	if len(texts) != 4 {
		for i := range texts {
			texts[i] = texts[i][:min(len(texts[i]), 80)]
		}
		t.Fatalf("logs %q, want 4 lines", texts)
	}
	if want := []string{"one", `[driftwood] two\x1b[2J\x0d`}; !slices.Equal(texts[:2], want) {
		t.Errorf("a log call with newlines and escapes gave %q, want %q", texts[:2], want)
	}
	if n := len(texts[2]); n > maxLogLine+len("…") || !strings.HasSuffix(texts[2], "…") || !strings.HasPrefix(texts[2], "aaaa") {
		t.Errorf("a %d-byte message gave a line of %d bytes (%q…), want at most %d, marked cut", long, n, texts[2][:min(n, 20)], maxLogLine)
	}
	if texts[3] != `out\x0dline` {
		t.Errorf("stdout line %q, want the CR escaped", texts[3])
	}
}

// TestStoreIsTheConversations pins the store's scope (ABI.md, The
// key-value store): one store per conversation, shared by every
// controller used in it, with NAME/ keys by convention. Controller a
// writes "a/said"; after a switch, controller b reads it (and constrains
// the reply to 7s only when it finds it), and the store still holds it.
func TestStoreIsTheConversations(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	imports := `(module
  (import "driftwood" "kv_set" (func $kv_set (param i32 i32 i32 i32) (result i32)))
  (import "driftwood" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))`
	a := strings.Replace(watModule("(i32.const 0)", `
    (drop (call $kv_set (i32.const 700) (i32.const 6) (i32.const 710) (i32.const 2)))
    (i32.const 0)`, `
  (data (i32.const 700) "a/said")
  (data (i32.const 710) "hi")`), "(module", imports, 1)
	b := strings.Replace(watModule("(i32.const 0)", `
    (if (result i32) (i32.eq (call $kv_get (i32.const 700) (i32.const 6) (i32.const 720) (i32.const 8)) (i32.const 2))
      (then (i32.const 1024)) (else (i32.const 0)))`, `
  (data (i32.const 700) "a/said")
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2048) "`+le32(1<<7)+`")`), "(module", imports, 1)
	d.Use(h.load(t, "a", a), "")
	_, _, seq := h.reply(t, d, nil, 3, 1.5, nil)
	d.Use(h.load(t, "b", b), "")
	reply, _, _ := h.reply(t, d, seq, 4, 1.5, nil) // the next turn
	if !slices.Equal(reply, []int32{7, 7, 7, 7}) {
		t.Errorf("b's reply %v: want four 7s, b having read a's key", reply)
	}
	if v, ok := d.kv.Get("a/said"); !ok || string(v) != "hi" {
		t.Errorf("the store lost a's key after the switch: %q %v", v, ok)
	}
}
