package sdk

import (
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
// 0 for a subtree of fewer than abi.TrieBulk tokens, where walking is as
// cheap as checking the set.
type TrieNode = abi.TrieNode

// ByteSet is a set of bytes (see abi.ByteSet).
type ByteSet = abi.ByteSet

// NewTrie builds the trie of v's ordinary tokens (abi.BuildTrie, as the
// host builds the one it hands over).
func NewTrie(v *Vocab) *Trie {
	return buildTrie(v, abi.TrieOrder(v.Len(), v.Token, v.IsSpecial), true)
}

// Without returns the trie of t's tokens for which drop is false, without
// byte sets (every Below is 0).
func (t *Trie) Without(v *Vocab, drop func(id int32) bool) *Trie {
	return buildTrie(v, slices.DeleteFunc(slices.Clone(t.IDs), drop), false)
}

// buildTrie builds the trie of the tokens of order, which must be
// ordered by their bytes (as abi.TrieOrder orders them), with byte sets
// when below.
func buildTrie(v *Vocab, order []int32, below bool) *Trie {
	nodes, sets, ids := abi.BuildTrie(order, v.Token, below)
	return &Trie{Nodes: nodes, Sets: sets, IDs: ids}
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
