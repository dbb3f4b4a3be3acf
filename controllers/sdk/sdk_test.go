package sdk_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"
	"unsafe"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
	"github.com/driftwoodlabs/driftwood/controllers/sdk"
)

// toyTexts are the tokens of toy: single bytes, a few words, specials.
var toyTexts = []string{"a", "b", "c", " ", "ab", "abc", "ba", "cab", "<|eot_id|>", "", "bb", "<|other|>", "\xc3", "\xa9", "é", "aé"}

// toyTokens returns toyTexts as bytes and which are special.
func toyTokens() ([][]byte, []bool) {
	tokens, special := make([][]byte, len(toyTexts)), make([]bool, len(toyTexts))
	for i, s := range toyTexts {
		tokens[i] = []byte(s)
		special[i] = s == "<|eot_id|>" || s == "<|other|>"
	}
	return tokens, special
}

// toy is a small vocabulary.
func toy() *sdk.Vocab { return sdk.NewVocab(toyTokens()) }

func TestVocabRoundTrip(t *testing.T) {
	tokens, special := toyTokens()
	blob := abi.AppendVocab(nil, tokens, special)
	// The layout: u8 flags, u16 length, bytes.
	if blob[0] != 0 || binary.LittleEndian.Uint16(blob[1:]) != 1 || blob[3] != 'a' {
		t.Fatalf("first entry % x", blob[:4])
	}
	got, err := sdk.ParseVocab(blob, len(tokens))
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != len(tokens) || got.Longest() != len("<|eot_id|>") {
		t.Errorf("Len %d, Longest %d", got.Len(), got.Longest())
	}
	for id := range int32(len(tokens)) {
		if !bytes.Equal(got.Token(id), tokens[id]) || got.IsSpecial(id) != special[id] {
			t.Errorf("token %d: %q %v, want %q %v", id, got.Token(id), got.IsSpecial(id), tokens[id], special[id])
		}
	}
	if got.Token(-1) != nil || got.Token(int32(len(tokens))) != nil || got.IsSpecial(99) {
		t.Error("ids outside the vocabulary have bytes")
	}
	for _, n := range []int{len(tokens) - 1, len(tokens) + 1, -1} {
		if _, err := sdk.ParseVocab(blob, n); err == nil {
			t.Errorf("n=%d parsed", n)
		}
	}
	if _, err := sdk.ParseVocab(blob[:len(blob)-1], len(tokens)); err == nil {
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

// TestRecord checks the record a Result makes: every flag from its
// field, and each pointer written only with its flag (ABI.md lets a
// guest leave them, but the SDK's records say exactly what they mean).
func TestRecord(t *testing.T) {
	var r sdk.Result
	if r.Flags() != 0 {
		t.Fatal("empty result has flags")
	}
	r = sdk.Result{Mask: sdk.NewMask(8), Stop: true, Backtrack: 2, Force: []int32{5, 6}, Temperature: 0.5, SetTemperature: true, Fail: true}
	want := abi.Record{Flags: abi.KnownFlags, MaskPtr: 0x100, Backtrack: 2, ForcePtr: 0x200, ForceLen: 2, Temperature: 0.5}
	if got := r.Record(0x100, 0x200); got != want {
		t.Errorf("record %+v, want %+v", got, want)
	}
	r = sdk.Result{Backtrack: -3, Temperature: 0.5}
	if got := r.Record(0x100, 0x200); got != (abi.Record{Temperature: 0.5}) {
		t.Errorf("a result with no flags: record %+v, want no pointers, no take-back", got)
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
			if !bytes.Equal(v.Token(id), path) {
				t.Errorf("token %d %q found at %q", id, v.Token(id), path)
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
	if trie.Len() != 15 {
		t.Errorf("%d nodes", trie.Len())
	}
}

func TestTrieABIRoundTrip(t *testing.T) {
	trie := toy().Trie()
	blob := trie.AppendABI(nil)
	words := make([]uint64, (len(blob)+7)/8) // 8-byte aligned
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(blob))
	copy(buf, blob)
	got, err := sdk.TrieFromBytes(buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Nodes, trie.Nodes) || !slices.Equal(got.IDs, trie.IDs) || !slices.Equal(got.Sets, trie.Sets) {
		t.Error("the trie read in place differs from the one written")
	}
	for _, bad := range [][]byte{buf[:len(buf)-4], append([]byte("DWT0"), buf[4:]...), buf[:8]} {
		words := make([]uint64, (len(bad)+7)/8)
		b := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(bad))
		copy(b, bad)
		if _, err := sdk.TrieFromBytes(b); err == nil {
			t.Errorf("a damaged trie of %d bytes was read", len(bad))
		}
	}
	if _, err := sdk.TrieFromBytes(unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(blob)+1)[1:]); err == nil {
		t.Error("an unaligned buffer was read in place")
	}
}

// TestTrieBelow checks every node's subtree ids and byte set against
// the tokens themselves.
func TestTrieBelow(t *testing.T) {
	v := toy()
	trie := v.Trie()
	var path []byte
	sets := 0
	for i := range trie.Len() {
		nd := trie.Nodes[i]
		path = append(path[:nd.Depth], nd.Byte)
		if nd.Below != 0 {
			sets++
		}
		var want []int32
		var bytesBelow sdk.ByteSet
		for id := range int32(v.Len()) {
			if tok := v.Token(id); !v.IsSpecial(id) && bytes.HasPrefix(tok, path) {
				want = append(want, id)
				for _, b := range tok[len(path):] {
					bytesBelow.Add(b)
				}
			}
		}
		got := slices.Sorted(slices.Values(trie.Subtree(i)))
		if !slices.Equal(got, want) {
			t.Errorf("node %q: subtree %v, want %v", path, got, want)
		}
		if set := trie.Sets[nd.Below]; nd.Below != 0 && set != bytesBelow {
			t.Errorf("node %q: bytes below %v, want %v", path, set, bytesBelow)
		}
	}
	if sets == 0 {
		t.Error("no node has a byte set")
	}
}
