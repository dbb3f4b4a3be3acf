package controllers

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// only7 is the step body and data of a controller that allows only token
// 7: a reply of 7s shows that it was active (not refused, not faulted).
const only7Step, only7Data = "(i32.const 1024)", `
  (data (i32.const 1024) "\01\00\00\00\00\08\00\00")
  (data (i32.const 2048) "\80\00\00\00")`

// wantOnly7 runs a reply with wat as the controller and fails unless it
// is all 7s with nothing logged.
func wantOnly7(t *testing.T, reason, wat, arg string) {
	t.Helper()
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	d.Use(h.load(t, "abi", wat), arg)
	reply, _, _ := h.reply(t, d, nil, 4, 1.5, nil)
	if !slices.Equal(reply, []int32{7, 7, 7, 7}) || h.logText() != "" {
		t.Errorf("%s: reply %v, logs %q; want four 7s and no message", reason, reply, h.logText())
	}
}

// TestEmptyArgNeedsNoBuffer pins ABI.md's dw_alloc: an empty argument is
// passed as (0, 0) without calling dw_alloc, so an allocator that fails
// (or traps) on size 0, as malloc(0) may, is not a fault.
func TestEmptyArgNeedsNoBuffer(t *testing.T) {
	wat := strings.Replace(watModule("(i32.ne (local.get 0) (i32.const 0))", only7Step, only7Data),
		"(local $p i32)", "(local $p i32)\n    (if (i32.eqz (local.get $n)) (then unreachable))", 1)
	wantOnly7(t, "dw_init with an empty argument", wat, "")
}

// TestKVErrorValues pins the store's error values (ABI.md, The key-value
// store): -1 for a missing key, -2 for a key or buffer outside memory,
// checked by dw_init, which refuses when one is wrong.
func TestKVErrorValues(t *testing.T) {
	imports := `(module
  (import "driftwood" "kv_set" (func $kv_set (param i32 i32 i32 i32) (result i32)))
  (import "driftwood" "kv_get" (func $kv_get (param i32 i32 i32 i32) (result i32)))`
	init := `(i32.or (i32.or
      (i32.ne (call $kv_get (i32.const 700) (i32.const 3) (i32.const 720) (i32.const 8)) (i32.const -1))
      (i32.ne (call $kv_get (i32.const 700) (i32.const 3) (i32.const 0x7ffffff0) (i32.const 8)) (i32.const -2)))
    (i32.or
      (i32.ne (call $kv_set (i32.const 0x7ffffff0) (i32.const 3) (i32.const 720) (i32.const 1)) (i32.const -2))
      (i32.ne (call $kv_append (i32.const 700) (i32.const 3) (i32.const 0x7ffffff0) (i32.const 1)) (i32.const -2))))`
	wat := strings.Replace(watModule(init, only7Step, only7Data+`
  (data (i32.const 700) "abc")`), "(module", imports, 1)
	wantOnly7(t, "kv_get of a missing key, kv_* outside memory", wat, "x")
}

// TestTokenize pins ABI.md's tokenize: callable in dw_load, no BOS, the
// full count returned when out_cap is smaller (only out_cap ids written),
// and -2 for an out_cap whose buffer cannot be in memory (an out_cap of
// 2^30+1 once wrapped 4*out_cap to 4 and crashed the host).
func TestTokenize(t *testing.T) {
	h := newHarness(t)
	text := "hello world, hello"
	ids := h.vocab.Encode(text)
	if len(ids) < 2 {
		t.Fatalf("%q encodes as %v: want at least two ids for this test", text, ids)
	}
	imports := `(module
  (import "driftwood" "tokenize" (func $tokenize (param i32 i32 i32 i32) (result i32)))`
	// dw_load: tokenize the text into a 1-id buffer at 720 (a guard word
	// at 724 must stay 0); refuse unless it returns the full count and
	// the first id, and unless a wrapping out_cap gives -2.
	load := `(func (export "dw_load") (param i32 i32 i32) (result i32)
    (i32.or (i32.or
      (i32.ne (call $tokenize (i32.const 700) (i32.const ` + strconv.Itoa(len(text)) + `) (i32.const 720) (i32.const 1)) (i32.const ` + strconv.Itoa(len(ids)) + `))
      (i32.ne (i32.load (i32.const 720)) (i32.const ` + strconv.Itoa(int(ids[0])) + `)))
    (i32.or
      (i32.ne (i32.load (i32.const 724)) (i32.const 0))
      (i32.ne (call $tokenize (i32.const 700) (i32.const ` + strconv.Itoa(len(text)) + `) (i32.const 720) (i32.const 0x40000001)) (i32.const -2)))))`
	wat := watModule("(i32.const 0)", only7Step, only7Data+`
  (data (i32.const 700) "`+text+`")`)
	wat = strings.Replace(wat, `(func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))`, load, 1)
	wat = strings.Replace(wat, "(module", imports, 1)
	if h.model.Config.BOSTokenID != nil && ids[0] == int32(*h.model.Config.BOSTokenID) {
		t.Errorf("Encode(%q) starts with BOS %d: tokenize must not add it", text, ids[0])
	}
	wantOnly7(t, "tokenize in dw_load", wat, "")
}

// TestBackgroundLoadLogsAreShown pins ABI.md's Log lines: what dw_load
// logs is shown when the instance starts, also when the host prepared it
// in the background (Use always does), where it once was lost; an
// unfinished stdout line of dw_load is shown too.
func TestBackgroundLoadLogsAreShown(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	load := `(func (export "dw_load") (param i32 i32 i32) (result i32)
    (call $log (i32.const 700) (i32.const 6))
    (i32.store (i32.const 720) (i32.const 710)) (i32.store (i32.const 724) (i32.const 4))
    (drop (call $fd_write (i32.const 1) (i32.const 720) (i32.const 1) (i32.const 728)))
    (i32.const 0))`
	wat := watModule("(i32.const 0)", "(i32.const 0)", `
  (data (i32.const 700) "loaded")
  (data (i32.const 710) "half")`)
	wat = strings.Replace(wat, `(func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))`, load, 1)
	wat = strings.Replace(wat, "(module", `(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))`, 1)
	mod := h.load(t, "bg", wat)
	h.rt.spares.prewarm(mod, h.vocab)
	d.Use(mod, "")
	h.reply(t, d, nil, 2, 0, nil)
	if got := h.logText(); got != "bg: loaded\nbg: half" {
		t.Errorf("logs %q, want dw_load's two lines once", got)
	}
}

// TestTrieImport pins ABI.md's trie import, checked by dw_load, which
// returns which check failed (the refusal names it): buf_cap 0 asks for
// the size; -2 for a buffer outside memory (once -1, unlike the other
// imports) or a negative buf_cap; a buf_cap one short copies nothing but
// still returns the size; a big enough one gets the trie, "DWT1" first.
func TestTrieImport(t *testing.T) {
	h := newHarness(t)
	size := strconv.Itoa(len(h.vocab.trie()))
	load := `(func (export "dw_load") (param i32 i32 i32) (result i32)
    (drop (memory.grow (i32.add (i32.shr_u (i32.const ` + size + `) (i32.const 16)) (i32.const 2))))
    (if (i32.ne (call $trie (i32.const 0) (i32.const 0)) (i32.const ` + size + `)) (then (return (i32.const 1))))
    (if (i32.ne (call $trie (i32.const 0x7ffffff0) (i32.const 16)) (i32.const -2)) (then (return (i32.const 2))))
    (if (i32.ne (call $trie (i32.const 65536) (i32.const -1)) (i32.const -2)) (then (return (i32.const 3))))
    (if (i32.ne (call $trie (i32.const 65536) (i32.sub (i32.const ` + size + `) (i32.const 1))) (i32.const ` + size + `)) (then (return (i32.const 4))))
    (if (i32.ne (i32.load (i32.const 65536)) (i32.const 0)) (then (return (i32.const 5))))
    (if (i32.ne (call $trie (i32.const 65536) (i32.const ` + size + `)) (i32.const ` + size + `)) (then (return (i32.const 6))))
    (if (i32.ne (i32.load (i32.const 65536)) (i32.const 0x31545744)) (then (return (i32.const 7)))) ;; "DWT1"
    (i32.const 0))`
	wat := watModule("(i32.const 0)", only7Step, only7Data)
	wat = strings.Replace(wat, `(func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))`, load, 1)
	wat = strings.Replace(wat, "(module", `(module
  (import "driftwood" "trie" (func $trie (param i32 i32) (result i32)))`, 1)
	wantOnly7(t, "the trie import in dw_load", wat, "")
}
