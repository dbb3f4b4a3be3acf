package sdk_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// toy is a small vocabulary: single bytes, a few words, and specials.
func toy() *sdk.Vocab {
	texts := []string{"a", "b", "c", " ", "ab", "abc", "ba", "cab", "<|eot_id|>", "", "bb", "<|other|>", "\xc3", "\xa9", "é", "aé"}
	v := &sdk.Vocab{Special: make([]bool, len(texts))}
	for i, s := range texts {
		v.Tokens = append(v.Tokens, []byte(s))
		v.Special[i] = s == "<|eot_id|>" || s == "<|other|>"
	}
	return v
}

func TestVocabRoundTrip(t *testing.T) {
	v := toy()
	blob := sdk.EncodeVocab(v.Tokens, v.Special)
	// The layout: u8 flags, u16 length, bytes.
	if blob[0] != 0 || binary.LittleEndian.Uint16(blob[1:]) != 1 || blob[3] != 'a' {
		t.Fatalf("first entry % x", blob[:4])
	}
	got, err := sdk.ParseVocab(blob, v.Len())
	if err != nil {
		t.Fatal(err)
	}
	for id := range v.Tokens {
		if !bytes.Equal(got.Tokens[id], v.Tokens[id]) || got.Special[id] != v.Special[id] {
			t.Errorf("token %d: %q %v, want %q %v", id, got.Tokens[id], got.Special[id], v.Tokens[id], v.Special[id])
		}
	}
	blob[3] = 'z' // the parsed vocabulary owns its bytes
	if got.Tokens[0][0] != 'a' {
		t.Error("ParseVocab kept the host's buffer")
	}
	for _, n := range []int{v.Len() - 1, v.Len() + 1, -1} {
		if _, err := sdk.ParseVocab(blob, n); err == nil {
			t.Errorf("n=%d parsed", n)
		}
	}
	if _, err := sdk.ParseVocab(blob[:len(blob)-1], v.Len()); err == nil {
		t.Error("a truncated vocabulary parsed")
	}
	if eot, ok := got.EndOfTurn(); !ok || eot != 8 {
		t.Errorf("EndOfTurn = %d, %v", eot, ok)
	}
}

func TestSpell(t *testing.T) {
	v := toy()
	if ids := v.Spell(nil, []byte("cab\xa9")); !slices.Equal(ids, []int32{2, 0, 1, 13}) {
		t.Errorf("byte spelling %v", ids)
	}
	if ids := v.Spell(nil, []byte("x")); ids != nil {
		t.Errorf("spelled x as %v", ids)
	}
	good := hostFunc(func(string) []int32 { return []int32{7, 4} })
	if ids := v.Spell(good, []byte("cabab")); !slices.Equal(ids, []int32{7, 4}) {
		t.Errorf("host spelling %v", ids)
	}
	bad := hostFunc(func(string) []int32 { return []int32{7} })
	if ids := v.Spell(bad, []byte("cabab")); len(ids) != 5 {
		t.Errorf("kept a tokenization that does not spell the text: %v", ids)
	}
}

// hostFunc is a Host that only tokenizes.
type hostFunc func(string) []int32

func (f hostFunc) Log(string)                   {}
func (f hostFunc) KVGet(string) ([]byte, bool)  { return nil, false }
func (f hostFunc) KVSet(string, []byte) bool    { return false }
func (f hostFunc) KVAppend(string, []byte) bool { return false }
func (f hostFunc) Tokenize(text string) []int32 { return f(text) }

func TestMask(t *testing.T) {
	m := sdk.NewMask(70)
	if len(m.Words()) != 3 || m.Count() != 0 {
		t.Fatalf("%d words, %d allowed", len(m.Words()), m.Count())
	}
	m.Allow(0)
	m.Allow(33)
	m.Allow(69)
	m.Allow(70) // outside: ignored
	m.Allow(-1)
	if m.Words()[1] != 1<<1 || !m.Allowed(69) || m.Allowed(70) || m.Count() != 3 {
		t.Fatalf("words %x", m.Words())
	}
	if ids := m.AppendIDs(nil); !slices.Equal(ids, []int32{0, 33, 69}) {
		t.Errorf("ids %v", ids)
	}
	m.Deny(33)
	m.AllowAll()
	if m.Count() != 70 || m.Words()[2] != 1<<6-1 {
		t.Errorf("AllowAll: %d, last word %x", m.Count(), m.Words()[2])
	}
	m.Clear()
	if m.Count() != 0 {
		t.Error("Clear left bits")
	}
}

func TestRecord(t *testing.T) {
	var r sdk.Result
	if r.Flags() != 0 {
		t.Fatal("empty result has flags")
	}
	r = sdk.Result{Mask: sdk.NewMask(8), Stop: true, Backtrack: 2, Force: []int32{5, 6}, Temperature: 0.5, SetTemperature: true}
	rec := r.AppendRecord(nil, 0x100, 0x200)
	le := binary.LittleEndian
	want := []uint32{sdk.FlagMask | sdk.FlagStop | sdk.FlagTemperature | sdk.FlagForce | sdk.FlagBacktrack, 0x100, 2, 0x200, 2, math.Float32bits(0.5)}
	if len(rec) != sdk.ResultSize {
		t.Fatalf("%d bytes", len(rec))
	}
	for i, w := range want {
		if got := le.Uint32(rec[4*i:]); got != w {
			t.Errorf("word %d = %#x, want %#x", i, got, w)
		}
	}
	if le.Uint32(rec[sdk.OffsetForceLen:]) != 2 || le.Uint32(rec[sdk.OffsetMask:]) != 0x100 {
		t.Error("offsets disagree with the layout")
	}
	r.Reset()
	if rec := r.AppendRecord(nil, 0x100, 0x200); le.Uint32(rec[sdk.OffsetMask:]) != 0 || le.Uint32(rec[sdk.OffsetForce:]) != 0 {
		t.Error("pointers written without their flags")
	}
}

func TestTrieWalk(t *testing.T) {
	v := toy()
	trie := sdk.NewTrie(v)
	var got []string
	var path []byte
	trie.Walk(func(depth int, b byte, ids []int32) bool {
		path = append(path[:depth], b)
		for _, id := range ids {
			got = append(got, string(path))
			if !bytes.Equal(v.Tokens[id], path) {
				t.Errorf("token %d %q found at %q", id, v.Tokens[id], path)
			}
		}
		return true
	})
	want := []string{" ", "a", "ab", "abc", "aé", "b", "ba", "bb", "c", "cab", "\xa9", "\xc3", "é"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("walk found %q, want %q (no specials, no empty tokens)", got, want)
	}
	// Pruning "a" skips every token that starts with it.
	got = got[:0]
	trie.Walk(func(depth int, b byte, ids []int32) bool {
		path = append(path[:depth], b)
		if string(path) == "a" {
			return false
		}
		if len(ids) > 0 {
			got = append(got, string(path))
		}
		return true
	})
	if slices.ContainsFunc(got, func(s string) bool { return s[0] == 'a' }) || len(got) != 9 {
		t.Errorf("pruned walk found %q", got)
	}
	if trie.Nodes() != 15 {
		t.Errorf("%d nodes", trie.Nodes())
	}
}
