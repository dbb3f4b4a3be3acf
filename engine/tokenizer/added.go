package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is one entry of added_tokens.
type addedToken struct {
	content        string
	id             int32
	special        bool
	lstrip, rstrip bool
}

// addedMatcher finds added tokens written literally in text.
type addedMatcher struct {
	tokens  []addedToken
	byText  map[string]int32
	byFirst [256][]int // first byte → indexes into tokens, longest first
}

func newAddedMatcher(tokens []addedToken) addedMatcher {
	m := addedMatcher{tokens: tokens, byText: make(map[string]int32, len(tokens))}
	for i, a := range tokens {
		m.byText[a.content] = a.id
		c := a.content[0]
		list := append(m.byFirst[c], i)
		for j := len(list) - 1; j > 0 && len(tokens[list[j]].content) > len(tokens[list[j-1]].content); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
		m.byFirst[c] = list
	}
	return m
}

// find returns the leftmost-longest added token in text as the byte range
// [start, end) it covers and its id, or start -1. Tokens marked special are
// considered only when special is true. The range includes the whitespace
// an lstrip or rstrip token absorbs on its left or right.
func (m *addedMatcher) find(text string, special bool) (start, end int, id int32) {
	if len(m.tokens) == 0 {
		return -1, -1, 0
	}
	for i := 0; i < len(text); i++ {
		for _, k := range m.byFirst[text[i]] {
			a := &m.tokens[k]
			if (a.special && !special) || !strings.HasPrefix(text[i:], a.content) {
				continue
			}
			start, end = i, i+len(a.content)
			if a.lstrip {
				for start > 0 {
					r, n := utf8.DecodeLastRuneInString(text[:start])
					if !unicode.IsSpace(r) {
						break
					}
					start -= n
				}
			}
			if a.rstrip {
				for end < len(text) {
					r, n := utf8.DecodeRuneInString(text[end:])
					if !unicode.IsSpace(r) {
						break
					}
					end += n
				}
			}
			return start, end, a.id
		}
	}
	return -1, -1, 0
}
