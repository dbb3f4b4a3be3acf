package controllers

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/internal/limitedfile"
)

// TestFaultsAreSurvived runs a reply with a controller that faults at its
// third step, for every fault the host must survive: the reply goes on
// unconstrained to its full length, the user gets one message naming the
// fault, and the next reply gets a fresh instance.
func TestFaultsAreSurvived(t *testing.T) {
	at3 := func(body string) string {
		return `(if (i32.eq (global.get $steps) (i32.const 3)) (then ` + body + `)) (i32.const 0)`
	}
	cases := []struct {
		name, reason string
		step, extra  string
		want         string
	}{
		{"trap", "a trap (a Go panic arrives as unreachable)", at3("unreachable"), "", "trapped (unreachable"},
		{"loop", "a runaway loop is interrupted by the step budget", at3("(loop $l (br $l))"), "", "ran past its 50ms time budget"},
		{"oom", "growing past the memory cap fails, and the guest aborts", at3(`(if (i32.lt_s (memory.grow (i32.const 8192)) (i32.const 0)) (then unreachable))`), "", "trapped (unreachable"},
		{"badptr", "a result record outside memory", at3("(return (i32.const 0x7ffffff0))"), "", "result record"},
		{"badflags", "unknown flag bits", at3("(return (i32.const 1024))"), `(data (i32.const 1024) "\00\01\00\00")`, "unknown bits"},
		{"fail2", "FAIL from a module of version 2, which has no such bit", at3("(return (i32.const 1024))"), `(data (i32.const 1024) "\20\00\00\00")`, "unknown bits"},
		{"badtoken", "a forced token outside the vocabulary", at3("(return (i32.const 1024))"),
			`(data (i32.const 1024) "\08\00\00\00\00\00\00\00\00\00\00\00\00\10\00\00\01\00\00\00") (data (i32.const 4096) "\ff\ff\00\00")`, "outside the vocabulary"},
		{"misforce", "a misaligned force list (ABI.md: every pointer in the record is 4-byte aligned)", at3("(return (i32.const 1024))"),
			`(data (i32.const 1024) "\08\00\00\00\00\00\00\00\00\00\00\00\02\10\00\00\01\00\00\00") (data (i32.const 4098) "\05\00\00\00")`, "misaligned"},
		{"badmask", "a mask that runs past memory", at3("(return (i32.const 1024))"), `(data (i32.const 1024) "\01\00\00\00\f0\ff\00\00")`, "mask at"},
		{"badtemp", "a negative temperature", at3("(return (i32.const 1024))"), `(data (i32.const 1024) "\04\00\00\00") (data (i32.const 1044) "\00\00\80\bf")`, "temperature"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			d := h.driver(nil)
			defer d.Close()
			d.Use(h.load(t, c.name, watModule("(i32.const 0)", c.step, c.extra)), "")
			reply, st, seq := h.reply(t, d, nil, 8, 0, nil)
			if len(reply) != 8 || st.Reason != engine.StopMaxTokens {
				t.Fatalf("%s: reply %v (%s), want 8 tokens", c.reason, reply, st.Reason)
			}
			if !slices.Equal(reply, h.g.Greedy.Tokens[:8]) {
				t.Errorf("%s: the reply after the fault is not the unconstrained greedy one: %v", c.reason, reply)
			}
			logs := h.logText()
			if strings.Count(logs, "controller off") != 1 || !strings.Contains(logs, c.want) {
				t.Errorf("%s: logs %q, want one message with %q", c.reason, logs, c.want)
			}
			// Next reply: a fresh instance (its step counter restarts), so
			// the fault happens again at its third step.
			h.logs = nil
			h.reply(t, d, seq, 4, 0, nil)
			if !strings.Contains(h.logText(), c.want) {
				t.Errorf("%s: the next reply did not get a fresh instance: %q", c.reason, h.logText())
			}
		})
	}
}

// TestFailEndsTheReply: a version 3 controller's FAIL (here at its third
// step, with a take-back of one token) ends the reply there, after the
// take-back, as the controller's failure: one message, a fault in the
// reply's record of controllers; the instance goes on to the next reply.
func TestFailEndsTheReply(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	wat := strings.Replace(watModule("(i32.const 0)", `(if (i32.eq (global.get $steps) (i32.const 3)) (then (return (i32.const 1024)))) (i32.const 0)`,
		`(data (i32.const 1024) "\30\00\00\00\00\00\00\00\01\00\00\00")`), // FAIL|BACKTRACK, backtrack 1
		`(i32.const 2))`, `(i32.const 3))`, 1)
	d.Use(h.load(t, "fails", wat), "")
	reply, st, seq := h.reply(t, d, nil, 8, 0, nil)
	if !slices.Equal(reply, h.g.Greedy.Tokens[:1]) || st.Reason != engine.StopHook {
		t.Fatalf("reply %v (%s), want the greedy reply's first token (two sampled, one taken back), stopped by the controller", reply, st.Reason)
	}
	logs := h.logText()
	if strings.Count(logs, "cannot go on under its constraint") != 1 || strings.Contains(logs, "controller off") {
		t.Errorf("logs %q, want one message that the reply cannot go on", logs)
	}
	rc := d.ReplyControls()
	if last := rc[len(rc)-1]; !strings.Contains(last.Fault, "fails: the reply cannot go on") || last.From != 1 {
		t.Errorf("the reply's controllers %+v, want the failure from token 1", rc)
	}
	h.logs = nil
	if reply, _, _ := h.reply(t, d, seq, 4, 0, nil); len(reply) != 4 || h.logText() != "" {
		t.Errorf("the next reply %v, logs %q: want 4 tokens under the same instance, no message", reply, h.logText())
	}
}

func TestInitFaults(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		reason, wat, want string
	}{
		{"dw_init refusing its argument", watModule("(i32.const 3)", "(i32.const 0)", ""), "refused its argument"},
		{"another ABI version", strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""), `(func (export "dw_abi_version") (result i32) (i32.const 2))`, `(func (export "dw_abi_version") (result i32) (i32.const 1))`, 1), "ABI version 1"},
		{"dw_load refusing the vocabulary", strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""), `(result i32) (i32.const 0))
  (func (export "dw_init")`, `(result i32) (i32.const 5))
  (func (export "dw_init")`, 1), "refused the vocabulary"},
		{"a runaway dw_init", watModule("(loop $l (br $l)) (i32.const 0)", "(i32.const 0)", ""), "ran past its 2s time budget"},
		{"proc_exit", strings.Replace(watModule("(call $exit (i32.const 3)) (i32.const 0)", "(i32.const 0)", ""), "(module", `(module (import "wasi_snapshot_preview1" "proc_exit" (func $exit (param i32)))`, 1), "proc_exit(3)"},
	}
	for _, c := range cases {
		d := h.driver(nil)
		h.logs = nil
		d.Use(h.load(t, "bad", c.wat), "arg")
		reply, _, _ := h.reply(t, d, nil, 3, 0, nil)
		if len(reply) != 3 || !strings.Contains(h.logText(), c.want) {
			t.Errorf("%s: reply %v, logs %q; want 3 tokens and %q", c.reason, reply, h.logText(), c.want)
		}
		d.Close()
	}
}

// TestBeginRefusal pins what a non-zero dw_begin does (ABI.md, What
// dw_begin is given): the guest's reason, then one fault that says it
// refused the reply (it once said "malformed step result", though no
// step had run); no dw_step is called in that reply, which goes on
// unconstrained, and the next reply (a fresh instance) is refused the
// same way.
func TestBeginRefusal(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	wat := strings.Replace(watModule("(i32.const 0)", "(i32.const 1024)", only7Data+`
  (data (i32.const 700) "bad prompt")`),
		`(func (export "dw_begin") (param $p i32) (param $n i32) (result i32) (i32.const 0))`,
		`(func (export "dw_begin") (param $p i32) (param $n i32) (result i32) (call $log (i32.const 700) (i32.const 10)) (i32.const 4))`, 1)
	d.Use(h.load(t, "begin", wat), "")
	want := "begin: bad prompt\nbegin: refused to start the reply (dw_begin returned 4) (controller off until the next reply)"
	for i := range 2 {
		h.logs = nil
		reply, _, _ := h.reply(t, d, nil, 4, 0, nil)
		if !slices.Equal(reply, h.g.Greedy.Tokens[:4]) {
			t.Errorf("reply %d: %v, want the unconstrained greedy one", i, reply)
		}
		if got := h.logText(); got != want {
			t.Errorf("reply %d: logs %q, want %q", i, got, want)
		}
		if n := len(h.logs); n == 0 || !h.logs[n-1].Fault {
			t.Errorf("reply %d: the refusal is not marked as the fault", i)
		}
		if v, ok := d.kv.Get("steps"); ok {
			t.Errorf("reply %d: dw_step was called after dw_begin refused (steps %q)", i, v)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	h := newHarness(t)
	cases := []struct {
		reason, src, want string
	}{
		{"not Wasm at all", "hello", "neither a Wasm binary nor valid WAT"},
		{"missing exports", `(module (memory (export "memory") 1))`, "missing exports dw_abi_version, dw_alloc, dw_begin, dw_init, dw_load, dw_step"},
		{"a version 1 module", strings.Replace(strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""),
			`(func (export "dw_load") (param i32 i32 i32) (result i32) (i32.const 0))`, "", 1),
			`(func (export "dw_init") (param i32 i32)`, `(func (export "dw_init") (param i32 i32 i32 i32 i32)`, 1), "built for ABI version 1"},
		{"a wrong signature", strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""), `(func (export "dw_abi_version") (result i32) (i32.const 2))`, `(func (export "dw_abi_version") (param i32) (result i32) (i32.const 2))`, 1), "export dw_abi_version has type (i32)->(i32)"},
		{"an import outside the ABI", strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""), "(module", `(module (import "env" "open" (func))`, 1), "may import only driftwood and wasi_snapshot_preview1"},
		{"an unknown driftwood import", strings.Replace(watModule("(i32.const 0)", "(i32.const 0)", ""), "(module", `(module (import "driftwood" "exec" (func))`, 1), "driftwood.exec"},
	}
	for _, c := range cases {
		if _, err := h.rt.Load("x", []byte(c.src)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.reason, err, c.want)
		}
	}
}

// TestSwapMidReply switches from allow-7 to allow-9 after the fourth token:
// the new controller is given the reply so far at its first step.
func TestSwapMidReply(t *testing.T) {
	h := newHarness(t)
	d := h.driver(nil)
	defer d.Close()
	seven, nine := h.load(t, "only7", allowOnly(7)), h.load(t, "only9", allowOnly(9))
	d.Use(seven, "")
	reply, _, _ := h.reply(t, d, nil, 10, 1, func(i int) {
		if i == 4 {
			d.Use(nine, "")
		}
	})
	// The step for token 5 may already be in flight when Use is called, so
	// the switch takes effect at token 5 or 6.
	n7 := 0
	for n7 < len(reply) && reply[n7] == 7 {
		n7++
	}
	if len(reply) != 10 || n7 < 4 || n7 > 5 || slices.ContainsFunc(reply[n7:], func(id int32) bool { return id != 9 }) {
		t.Fatalf("reply %v: want 7s then 9s from token 5 or 6", reply)
	}
	steps, _ := d.kv.Get("steps")
	// The KV store is the conversation's: both instances appended to it.
	// The new instance's first step was given the reply so far (n7 tokens).
	if !slices.Contains(steps, byte(n7)) {
		t.Errorf("tokens per step %v: the new controller was not given the %d reply tokens", steps, n7)
	}
	if mod, _ := d.Current(); mod == nil || mod.Name != "only9" {
		t.Errorf("active controller %+v, want only9", mod)
	}
}

// TestReloadOnChange rewrites a controller's file between replies: the next
// reply uses the new build; a broken rewrite keeps the previous one.
func TestReloadOnChange(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "ctl.wat")
	os.WriteFile(path, []byte(allowOnly(7)), 0o644)
	reg, err := newRegistry(h.rt, Shipped, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	mod, err := reg.Get("ctl")
	if err != nil {
		t.Fatal(err)
	}
	d := h.driver(reg)
	defer d.Close()
	d.Use(mod, "")
	reply, _, seq := h.reply(t, d, nil, 3, 1, nil)
	if !slices.Equal(reply, []int32{7, 7, 7}) {
		t.Fatalf("first build: %v", reply)
	}
	rewrite := func(src string) {
		os.WriteFile(path, []byte(src), 0o644)
		for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			reg.mu.Lock()
			changed := reg.changed[path]
			reg.mu.Unlock()
			if changed {
				return
			}
		}
		t.Fatal("no file event within 5 s")
	}
	rewrite(allowOnly(9))
	reply, _, seq = h.reply(t, d, seq, 3, 1, nil)
	if !slices.Equal(reply, []int32{9, 9, 9}) {
		t.Errorf("after the rewrite: %v, want the new build's 9s", reply)
	}
	h.rt.spares.work.Wait()
	for k := range h.rt.spares.ready {
		if k.mod == mod {
			t.Error("the replaced build still has a spare instance")
		}
	}
	rewrite("(module broken")
	reply, _, _ = h.reply(t, d, seq, 3, 1, nil)
	if !slices.Equal(reply, []int32{9, 9, 9}) || !strings.Contains(h.logText(), "reload failed, keeping the previous build") {
		t.Errorf("after a broken rewrite: %v, logs %q", reply, h.logText())
	}
}

func TestCompileCache(t *testing.T) {
	dir := t.TempDir()
	rt := newWasmRuntime(defaultLimits(), dir)
	defer rt.Close()
	src := []byte(allowOnly(3))
	a, err := rt.Load("a", src)
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, a.SHA256+"-*.cwasm"))
	if len(files) != 1 {
		t.Fatalf("cache holds %v", files)
	}
	if _, err := rt.Load("a", src); err != nil {
		t.Fatalf("loading from the cache: %v", err)
	}
	if info, err := os.Stat(files[0]); err != nil || info.Mode().Perm()&0o222 != 0 {
		t.Errorf("cache entry writable: %v %v", info.Mode(), err)
	}
	// Replaced, as every writer does (rewriting a mapped file in place
	// would pull the code from under a loaded module).
	garbage := filepath.Join(dir, "garbage")
	os.WriteFile(garbage, []byte("garbage"), 0o444)
	if err := os.Rename(garbage, files[0]); err != nil {
		t.Fatal(err)
	}
	if _, err := rt.Load("a", src); err != nil {
		t.Errorf("a corrupt cache entry must fall back to compiling: %v", err)
	}
}

func TestKVLimits(t *testing.T) {
	kv := newKVStore()
	if err := kv.Set("k", make([]byte, maxValueLen+1)); err == nil {
		t.Error("an oversized value was stored")
	}
	if err := kv.Set(strings.Repeat("k", maxKeyLen+1), nil); err == nil {
		t.Error("an oversized key was stored")
	}
	for i := 0; i < 15; i++ {
		if err := kv.Set(string(rune('a'+i)), make([]byte, maxValueLen)); err != nil {
			t.Fatal(err)
		}
	}
	if err := kv.Set("z", make([]byte, maxValueLen)); err == nil {
		t.Error("the store grew past its total limit")
	}
	kv.Append("a", []byte("x"))
	snap := kv.Snapshot()
	fresh := newKVStore()
	if err := fresh.Restore(snap); err != nil || len(fresh.Snapshot()) != 15 {
		t.Errorf("restore: %v", err)
	}
}

// TestFaultNamesTheControllerOnce: a fault's Log names the controller in
// its Controller field, and its Text does not repeat it, since every
// consumer prefixes the name ("controller slow: controller slow: …" in
// the chat's notice before). Init faults too.
func TestFaultNamesTheControllerOnce(t *testing.T) {
	h := newHarness(t)
	for _, c := range []struct {
		reason, wat, want string
	}{
		{"a step past its time budget", watModule("(i32.const 0)", "(loop $l (br $l)) (i32.const 0)", ""), "dw_step ran past its 50ms time budget (controller off until the next reply)"},
		{"dw_init refusing its argument", watModule("(i32.const 3)", "(i32.const 0)", ""), `refused its argument "arg" (dw_init returned 3) (controller off until the next reply)`},
	} {
		h.logs = nil
		d := h.driver(nil)
		d.Use(h.load(t, "slow", c.wat), "arg")
		h.reply(t, d, nil, 2, 0, nil)
		d.Close()
		if len(h.logs) != 1 || !h.logs[0].Fault || h.logs[0].Controller != "slow" || h.logs[0].Text != c.want {
			t.Errorf("%s: logs %+v, want one fault from slow saying %q", c.reason, h.logs, c.want)
		}
	}
}

// TestLoadFileRefusesEndlessFiles: a controller path naming a FIFO, a
// device or a huge file gets one clear error instead of hanging or
// filling the memory (os.ReadFile blocked on a FIFO, and read /dev/zero
// at ~1 GB/s until the machine ran out).
func TestLoadFileRefusesEndlessFiles(t *testing.T) {
	h := newHarness(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.wasm")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.wat")
	if err := os.WriteFile(huge, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, limitedfile.Controller+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	// In this order: before the fix the FIFO hung (stopped here after 5 s)
	// and /dev/zero would not have been reached.
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file (a FIFO)"},
		{huge, "larger than 256 MiB"},
		{"/dev/zero", "not a regular file (a device)"},
	} {
		done := make(chan error, 1)
		go func() {
			_, err := h.rt.LoadFile(c.path)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "controller "+c.path) || strings.Count(err.Error(), c.path) != 1 {
				t.Errorf("%s: %v, want an error naming it once and saying %q", c.path, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: LoadFile still reading after 5 s", c.path)
		}
	}
}
