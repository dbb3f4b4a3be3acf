package sdk

import (
	"bytes"
	"slices"

	"github.com/driftwoodlabs/driftwood/controllers/abi"
)

// Trie holds the vocabulary's ordinary (non-special, non-empty) tokens
// in a byte trie, for walking many tokens at once: a constraint that
// rejects a prefix prunes every token that starts with it.
//
// The nodes are stored in depth-first order with children in byte
// order, so a walk is a linear scan that jumps over the subtrees it
// prunes, and the tokens of a subtree are one stretch of IDs. Its layout
// is the ABI's trie format (controllers/ABI.md): the host builds it once
// per vocabulary and a guest reads it in place.
type Trie struct {
	// Nodes holds the nodes in depth-first order, then a sentinel whose
	// First is len(IDs).
	Nodes []TrieNode
	// IDs holds the token ids in node order (so in byte order).
	IDs []int32
	// Sets holds the distinct byte sets of TrieNode.Below; Sets[0] is
	// the empty set.
	Sets []ByteSet
}

// TrieNode is one node of a Trie: the byte on the edge into it, and
// where its tokens and its subtree are (see abi.TrieNode). Its Below is
// 0 for a subtree of fewer than bulkTokens tokens, where walking is as
// cheap as checking the set.
type TrieNode = abi.TrieNode

// ByteSet is a set of bytes (see abi.ByteSet).
type ByteSet = abi.ByteSet

// NewTrie builds the trie of v's ordinary tokens.
func NewTrie(v *Vocab) *Trie {
	t := buildTrie(v, sortedTokens(v))
	t.setBelow()
	return t
}

// sortedTokens returns v's ordinary tokens ordered by their bytes.
func sortedTokens(v *Vocab) []int32 {
	order := make([]int32, 0, v.Len())
	for id := range int32(v.Len()) {
		if v.ordinary(id) {
			order = append(order, id)
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(v.Token(a), v.Token(b)); c != 0 {
			return c
		}
		return int(a - b)
	})
	return order
}

// Without returns the trie of t's tokens for which drop is false, without
// byte sets (every Below is 0).
func (t *Trie) Without(v *Vocab, drop func(id int32) bool) *Trie {
	return buildTrie(v, slices.DeleteFunc(slices.Clone(t.IDs), drop))
}

// buildTrie builds the trie of the tokens of order, which must be
// ordered by their bytes (as sortedTokens orders them).
func buildTrie(v *Vocab, order []int32) *Trie {
	t := &Trie{IDs: make([]int32, 0, len(order))}
	var path []uint32 // node index at each depth of the previous token
	var prev []byte
	for _, id := range order {
		tok := v.Token(id)
		common := 0
		for common < len(prev) && common < len(tok) && prev[common] == tok[common] {
			common++
		}
		for _, n := range path[common:] {
			t.Nodes[n].End = uint32(len(t.Nodes))
		}
		path = path[:common]
		for d := common; d < len(tok); d++ {
			path = append(path, uint32(len(t.Nodes)))
			t.Nodes = append(t.Nodes, TrieNode{First: uint32(len(t.IDs)), Depth: uint16(d), Byte: tok[d]})
		}
		t.IDs = append(t.IDs, id)
		prev = tok
	}
	for _, n := range path {
		t.Nodes[n].End = uint32(len(t.Nodes))
	}
	t.Nodes = append(t.Nodes, TrieNode{End: uint32(len(t.Nodes) + 1), First: uint32(len(t.IDs))})
	t.Sets = []ByteSet{{}}
	return t
}

// bulkTokens is the size of the smallest subtree given a Below set.
const bulkTokens = 4

// setBelow fills the nodes' Below, interning the distinct sets.
func (t *Trie) setBelow() {
	n := t.Len()
	below := make([]ByteSet, n)
	for i := n - 1; i >= 0; i-- { // children come after their parent
		for j := i + 1; j < int(t.Nodes[i].End); j = int(t.Nodes[j].End) {
			below[i].Add(t.Nodes[j].Byte)
			below[i].Union(&below[j])
		}
	}
	index := map[ByteSet]uint32{{}: 0}
	for i := range n {
		if len(t.Subtree(i)) < bulkTokens {
			continue
		}
		k, ok := index[below[i]]
		if !ok {
			k = uint32(len(t.Sets))
			index[below[i]] = k
			t.Sets = append(t.Sets, below[i])
		}
		t.Nodes[i].Below = k
	}
}

// Len returns the number of nodes (bytes of distinct token prefixes).
func (t *Trie) Len() int { return len(t.Nodes) - 1 }

// Tokens returns the ids of the tokens that end at node i.
func (t *Trie) Tokens(i int) []int32 { return t.IDs[t.Nodes[i].First:t.Nodes[i+1].First] }

// Subtree returns the ids of the tokens of node i's subtree (its own
// included).
func (t *Trie) Subtree(i int) []int32 {
	return t.IDs[t.Nodes[i].First:t.Nodes[t.Nodes[i].End].First]
}

// Walk visits the trie depth first. For every node it calls visit with
// the node's depth (0 for a token's first byte), the byte on the edge
// into it and the ids of the tokens that end there (often none). When
// visit returns false the node's subtree is skipped. A caller keeps its
// own state per depth: the state at depth d+1 follows from the state at
// depth d and b.
func (t *Trie) Walk(visit func(depth int, b byte, ids []int32) bool) {
	for i, n := 0, t.Len(); i < n; {
		nd := &t.Nodes[i]
		if visit(int(nd.Depth), nd.Byte, t.Tokens(i)) {
			i++
		} else {
			i = int(nd.End)
		}
	}
}
