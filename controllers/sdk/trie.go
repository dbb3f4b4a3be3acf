package sdk

import (
	"bytes"
	"slices"
)

// Trie holds the vocabulary's ordinary (non-special, non-empty) tokens
// in a byte trie, for walking many tokens at once: a constraint that
// rejects a prefix prunes every token that starts with it.
//
// The nodes are stored in depth-first order, so that a walk is a linear
// scan that jumps over the subtrees it prunes.
type Trie struct {
	nodes []trieNode
	ids   []int32 // token ids, grouped by node
}

type trieNode struct {
	end    int32  // index just past this node's subtree
	lo, hi int32  // ids[lo:hi] are the tokens ending at this node
	depth  uint16 // length of the path above this node
	b      byte   // byte on the edge into this node
}

// NewTrie builds the trie of v's ordinary tokens.
func NewTrie(v *Vocab) *Trie { return buildTrie(v, sortedTokens(v)) }

// sortedTokens returns v's ordinary tokens ordered by their bytes.
func sortedTokens(v *Vocab) []int32 {
	order := make([]int32, 0, len(v.Tokens))
	for id, tok := range v.Tokens {
		if len(tok) > 0 && !v.Special[id] {
			order = append(order, int32(id))
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(v.Tokens[a], v.Tokens[b]); c != 0 {
			return c
		}
		return int(a - b)
	})
	return order
}

// buildTrie builds the trie of the tokens of order, which sortedTokens
// ordered.
func buildTrie(v *Vocab, order []int32) *Trie {
	t := &Trie{ids: make([]int32, 0, len(order))}
	var path []int32 // node index at each depth of the previous token
	var prev []byte
	for _, id := range order {
		tok := v.Tokens[id]
		common := 0
		for common < len(prev) && common < len(tok) && prev[common] == tok[common] {
			common++
		}
		for _, n := range path[common:] {
			t.nodes[n].end = int32(len(t.nodes))
		}
		path = path[:common]
		for d := common; d < len(tok); d++ {
			path = append(path, int32(len(t.nodes)))
			lo := int32(len(t.ids))
			t.nodes = append(t.nodes, trieNode{lo: lo, hi: lo, depth: uint16(d), b: tok[d]})
		}
		last := &t.nodes[path[len(path)-1]]
		t.ids = append(t.ids, id)
		last.hi = int32(len(t.ids))
		prev = tok
	}
	for _, n := range path {
		t.nodes[n].end = int32(len(t.nodes))
	}
	return t
}

// Nodes returns the number of nodes (bytes of distinct token prefixes).
func (t *Trie) Nodes() int { return len(t.nodes) }

// Node returns node i of the depth-first order: its depth (0 for a
// token's first byte), the byte on the edge into it, the index just past
// its subtree (where a walk that prunes it goes on), and the ids of the
// tokens that end there. With it a grammar can walk the trie in a loop
// of its own (see TrieWalker).
func (t *Trie) Node(i int) (depth int, b byte, end int, ids []int32) {
	n := &t.nodes[i]
	return int(n.depth), n.b, int(n.end), t.ids[n.lo:n.hi]
}

// Walk visits the trie depth first. For every node it calls visit with
// the node's depth (0 for a token's first byte), the byte on the edge
// into it and the ids of the tokens that end there (often none). When
// visit returns false the node's subtree is skipped. A caller keeps its
// own state per depth: the state at depth d+1 follows from the state at
// depth d and b.
func (t *Trie) Walk(visit func(depth int, b byte, ids []int32) bool) {
	nodes := t.nodes
	for i := 0; i < len(nodes); {
		n := &nodes[i]
		if visit(int(n.depth), n.b, t.ids[n.lo:n.hi]) {
			i++
		} else {
			i = int(n.end)
		}
	}
}
