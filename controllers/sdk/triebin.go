package sdk

import "github.com/driftwoodlabs/driftwood/controllers/abi"

// AppendABI appends t in the ABI's trie format (abi.AppendTrie).
func (t *Trie) AppendABI(b []byte) []byte { return abi.AppendTrie(b, t.Nodes, t.Sets, t.IDs) }

// TrieFromBytes returns the trie that b holds in the ABI's trie format,
// reading b in place (b must stay unchanged while the trie is used; see
// abi.ReadTrie for what it must be).
func TrieFromBytes(b []byte) (*Trie, error) {
	nodes, sets, ids, err := abi.ReadTrie(b)
	if err != nil {
		return nil, err
	}
	return &Trie{Nodes: nodes, Sets: sets, IDs: ids}, nil
}
