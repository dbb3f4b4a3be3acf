package sdk

import (
	"reflect"
	"slices"
)

// TokenClasses is an optional interface of a Grammar that makes masks
// cheaper to compute. A class is a set of tokens that some states decide
// as a whole by a budget: inside a JSON string, every token made of
// plain characters is allowed as long as its length fits the string's
// limit. Such states skip the class's tokens in their trie walk.
type TokenClasses[S comparable] interface {
	TokenClassifier
	// StateClass returns a class that s decides as a whole, and the
	// budget: from s, the class's tokens that cost at most budget are
	// allowed and the others are not. It returns 0 when there is none.
	StateClass(s S) (class, budget int)
}

// TokenClassifier sorts tokens into the classes of TokenClasses.
type TokenClassifier interface {
	// TokenClass returns the class (1 or more) of the token whose bytes
	// are b and the token's cost, or 0 when it belongs to no class. It
	// must depend on b alone: the classes are computed once per
	// vocabulary and classifier type, and shared (see
	// Vocab.PrepareClasses).
	TokenClass(b []byte) (class, cost int)
}

// TrieWalker is an optional interface of a Grammar that walks a Trie
// itself, in a loop that can inline its transitions. WalkTrie must do
// what Constraint does otherwise: allow in m every token of t that s
// accepts (skipping the subtrees of the bytes it rejects), pass collect
// (when not nil) the state after each node that holds tokens, and report
// whether it allowed any and how many nodes it entered.
type TrieWalker[S comparable] interface {
	WalkTrie(t *Trie, s S, m *Mask, collect func(S)) (live bool, visited int)
}

// tokenClass is what the Constraint keeps of one class.
type tokenClass struct {
	trie  *Trie   // the ordinary tokens outside the class
	costs []int   // the distinct costs of its tokens, increasing
	masks []*Mask // masks[i]: its tokens that cost at most costs[i]
}

// walkTrie allows in m the tokens of t that s accepts, passing collect
// (when not nil) the state after each. It reports whether there was any
// and how many nodes it walked.
func (c *Constraint[S]) walkTrie(t *Trie, s S, m *Mask, collect func(S)) (live bool, visited int) {
	walk := c.walk
	walk[0] = s
	nodes := t.Nodes
	for i, n := 0, t.Len(); i < n; {
		nd := &nodes[i]
		next, ok := c.g.Next(walk[nd.Depth], nd.Byte)
		if !ok {
			i = int(nd.End)
			continue
		}
		walk[nd.Depth+1] = next
		if ids := t.IDs[nd.First:nodes[i+1].First]; len(ids) > 0 {
			for _, id := range ids {
				m.words[id>>5] |= 1 << (id & 31)
			}
			live = true
			if collect != nil {
				collect(next)
			}
		}
		i++
		visited++
	}
	return live, visited
}

// PrepareClasses computes the token classes of tc's type over v, which
// constraints whose grammar has this type then share. A controller calls
// it from Load (see Loader), so that the work is done before its Init.
func (v *Vocab) PrepareClasses(tc TokenClassifier) { v.tokenClasses(tc) }

// tokenClasses returns the classes of tc's type, computing them on first
// use.
func (v *Vocab) tokenClasses(tc TokenClassifier) []tokenClass {
	key := reflect.TypeOf(tc)
	if cl, ok := v.classes[key]; ok {
		return cl
	}
	type member struct {
		id   int32
		cost int
	}
	var members [][]member
	class := make([]int, v.Len())
	for id := range int32(v.Len()) {
		if !v.ordinary(id) {
			continue
		}
		k, cost := tc.TokenClass(v.Token(id))
		if k <= 0 {
			continue
		}
		for len(members) < k {
			members = append(members, nil)
		}
		class[id] = k
		members[k-1] = append(members[k-1], member{id, cost})
	}
	cl := make([]tokenClass, len(members))
	for i, ms := range members {
		k := i + 1
		c := &cl[i]
		c.trie = v.Trie().Without(v, func(id int32) bool { return class[id] == k })
		slices.SortFunc(ms, func(a, b member) int { return a.cost - b.cost })
		m := NewMask(v.Len())
		for j, mb := range ms {
			m.Allow(mb.id)
			if j == len(ms)-1 || ms[j+1].cost != mb.cost {
				c.costs = append(c.costs, mb.cost)
				c.masks = append(c.masks, &Mask{words: slices.Clone(m.words), n: m.n})
			}
		}
	}
	if v.classes == nil {
		v.classes = map[reflect.Type][]tokenClass{}
	}
	v.classes[key] = cl
	return cl
}
