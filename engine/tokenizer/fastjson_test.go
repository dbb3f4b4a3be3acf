package tokenizer

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// FuzzFastJSON checks the direct readers of the vocabulary and the merge
// list against encoding/json: wherever they take an input, they must read
// what encoding/json reads.
func FuzzFastJSON(f *testing.F) {
	for _, s := range []string{`{"a": 1, "ĠĠ": 2,"x":0}`, `{}`, `{"a\u00e9": 3}`, `{"a": 01}`, `{"a": 1e2}`, `{"a": 2147483648}`,
		`["a b", "Ġ t"]`, `[]`, `["a  b"]`, `[["a", "b"]]`, "{\"\xff\": 1}", `{"a": 1, "a": 2}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			return
		}
		if got, ok := scanVocab(data); ok {
			var want map[string]int32
			if err := json.Unmarshal(data, &want); err != nil || !maps.Equal(map[string]int32(got), want) {
				t.Fatalf("vocabulary %q: read %v, encoding/json %v (%v)", data, got, want, err)
			}
		}
		if got, ok := scanMerges(data); ok {
			var list []string
			var want mergesJSON
			if err := json.Unmarshal(data, &list); err != nil {
				t.Fatalf("merges %q: read %v, encoding/json: %v", data, got, err)
			}
			if err := want.fromStrings(list); err != nil || !slices.Equal(got, want) {
				t.Fatalf("merges %q: read %v, encoding/json %v (%v)", data, got, want, err)
			}
		}
	})
}
