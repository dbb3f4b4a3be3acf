package abi

import (
	"bytes"
	"slices"
)

// TrieBulk is the fewest tokens a subtree holds for BuildTrie to give its
// node a byte set (Below): under it, walking the subtree is as cheap as
// checking the set.
const TrieBulk = 4

// TrieOrder returns the tokens a trie holds, of the ids below n: those
// that are not special and have bytes (token gives an id's bytes), ordered
// by their bytes, then by id. It is the order BuildTrie takes.
func TrieOrder(n int, token func(id int32) []byte, special func(id int32) bool) []int32 {
	order := make([]int32, 0, n)
	for id := range int32(n) {
		if !special(id) && len(token(id)) > 0 {
			order = append(order, id)
		}
	}
	slices.SortFunc(order, func(a, b int32) int {
		if c := bytes.Compare(token(a), token(b)); c != 0 {
			return c
		}
		return int(a - b)
	})
	return order
}

// BuildTrie builds the trie of the tokens of order, which must be ordered
// by their bytes (as TrieOrder orders them); token gives an id's bytes. It
// returns the trie's sections as AppendTrie takes them: the nodes (the
// sentinel included), the byte sets (the first one empty) and the ids.
// With below, every node whose subtree holds TrieBulk tokens or more gets
// the set of the bytes below it, each distinct set stored once; without,
// every Below is 0 and the only set is the empty one.
func BuildTrie(order []int32, token func(id int32) []byte, below bool) (nodes []TrieNode, sets []ByteSet, ids []int32) {
	ids = make([]int32, 0, len(order))
	var path []uint32 // node index at each depth of the previous token
	var prev []byte
	for _, id := range order {
		tok := token(id)
		common := 0
		for common < len(prev) && common < len(tok) && prev[common] == tok[common] {
			common++
		}
		for _, n := range path[common:] {
			nodes[n].End = uint32(len(nodes))
		}
		path = path[:common]
		for d := common; d < len(tok); d++ {
			path = append(path, uint32(len(nodes)))
			nodes = append(nodes, TrieNode{First: uint32(len(ids)), Depth: uint16(d), Byte: tok[d]})
		}
		ids = append(ids, id)
		prev = tok
	}
	for _, n := range path {
		nodes[n].End = uint32(len(nodes))
	}
	nodes = append(nodes, TrieNode{End: uint32(len(nodes) + 1), First: uint32(len(ids))})
	sets = []ByteSet{{}}
	if below {
		sets = setBelow(nodes, sets)
	}
	return nodes, sets, ids
}

// setBelow fills the Below of the nodes (the sentinel last) whose
// subtree holds TrieBulk tokens or more, appending each distinct set to
// sets once, and returns sets.
func setBelow(nodes []TrieNode, sets []ByteSet) []ByteSet {
	n := len(nodes) - 1
	below := make([]ByteSet, n)
	for i := n - 1; i >= 0; i-- { // children come after their parent
		for j := i + 1; j < int(nodes[i].End); j = int(nodes[j].End) {
			below[i].Add(nodes[j].Byte)
			below[i].Union(&below[j])
		}
	}
	index := map[ByteSet]uint32{{}: 0}
	for i := range n {
		if nodes[nodes[i].End].First-nodes[i].First < TrieBulk {
			continue
		}
		k, ok := index[below[i]]
		if !ok {
			k = uint32(len(sets))
			index[below[i]] = k
			sets = append(sets, below[i])
		}
		nodes[i].Below = k
	}
	return sets
}
