package chat

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// Part is a piece of a rendered prompt: one special token that the
// template itself emitted (Special), or text to encode as plain text.
type Part struct {
	Text    string
	Special bool
}

// RenderParts renders like Render, then splits the prompt at the special
// tokens the template emitted, given their texts in specials (the
// tokenizer's special tokens). Special-token text that came from the
// messages (contents, tool-call names and arguments) stays inside the
// plain parts: encoding plain parts as ordinary text and special parts as
// their ids gives transformers' ids with sanitize_special_tokens, so a
// user cannot inject control tokens. The texts of the parts concatenate
// to Render's output.
//
// Message strings are marked by inserting a Unicode noncharacter into
// each special-token occurrence before rendering, so templates that
// measure or slice message text containing special tokens may render
// differently. Specials shorter than two bytes cannot be marked and are
// always taken as emitted by the template.
func (t *Template) RenderParts(msgs []Message, opt Options, specials []string) ([]Part, error) {
	plain, err := t.render(msgs, opt, nil)
	if err != nil {
		return nil, err
	}
	marks, err := t.freeMarks(plain, 1)
	if err != nil {
		return nil, err
	}
	return t.renderMarked(msgs, opt, specials, marks[0])
}

// freeMarks picks n noncharacters that the prompt plain does not hold,
// to mark message text with.
func (t *Template) freeMarks(plain string, n int) ([]string, error) {
	var marks []string
	for r := '\uFDD0'; r <= '\uFDEF' && len(marks) < n; r++ {
		if !strings.ContainsRune(plain, r) {
			marks = append(marks, string(r))
		}
	}
	if len(marks) < n {
		return nil, fmt.Errorf("chat template %s: the prompt contains the noncharacters U+FDD0..U+FDEF that mark message text", t.name)
	}
	return marks, nil
}

// renderMarked is RenderParts with the marker chosen.
func (t *Template) renderMarked(msgs []Message, opt Options, specials []string, marker string) ([]Part, error) {
	sorted := append([]string(nil), specials...)
	sort.Slice(sorted, func(i, j int) bool { return len(sorted[i]) > len(sorted[j]) })
	sanitize := func(s string) string {
		for _, sp := range sorted {
			if len(sp) > 1 && strings.Contains(s, sp) {
				s = strings.ReplaceAll(s, sp, sp[:1]+marker+sp[1:])
			}
		}
		return s
	}
	marked, err := t.render(msgs, opt, sanitize)
	if err != nil {
		return nil, err
	}
	return splitSpecials(marked, sorted, marker), nil
}

// splitSpecials cuts s at the leftmost-longest occurrences of specials
// (sorted longest first) and removes marker from the text between them.
func splitSpecials(s string, specials []string, marker string) []Part {
	var parts []Part
	text := func(t string) {
		if t = strings.ReplaceAll(t, marker, ""); t != "" {
			parts = append(parts, Part{Text: t})
		}
	}
	var first [256]bool
	for _, sp := range specials {
		if sp != "" {
			first[sp[0]] = true
		}
	}
	start := 0
	for i := 0; i < len(s); i++ {
		if !first[s[i]] {
			continue
		}
		for _, sp := range specials {
			if sp != "" && strings.HasPrefix(s[i:], sp) {
				text(s[start:i])
				parts = append(parts, Part{Text: sp, Special: true})
				i += len(sp) - 1
				start = i + 1
				break
			}
		}
	}
	text(s[start:])
	return parts
}

// EncodeParts encodes rendered parts: special parts as their token ids,
// the rest as plain text, so special-token text typed in a message never
// acts as a control token.
func EncodeParts(tok *tokenizer.Tokenizer, parts []Part) ([]int32, error) {
	var ids []int32
	for _, p := range parts {
		if !p.Special {
			ids = append(ids, tok.Encode(p.Text)...)
			continue
		}
		id, ok := tok.TokenID(p.Text)
		if !ok {
			return nil, fmt.Errorf("chat template emitted %q, which is not a token of the tokenizer", p.Text)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// specialTexts lists the texts of the tokenizer's special tokens. Added
// tokens not marked special (Qwen's <think>, <tool_call>) are left out:
// plain text encodes them as tokens anyway, as in transformers, and
// marking them would hide them from templates that look for them in
// message text.
func specialTexts(tok *tokenizer.Tokenizer) []string {
	var out []string
	for _, s := range tok.AddedTokens() {
		if id, ok := tok.TokenID(s); ok && tok.IsSpecial(id) {
			out = append(out, s)
		}
	}
	return out
}

// EncodeReplies is Encode, except that the content of msgs[i] is encoded
// as replies[i] where that is not nil: the token ids the model generated
// it as. Encoding a reply's text again need not give those ids back (a
// character split across tokens, bytes that are not UTF-8, text that
// tokenizes another way), and a conversation's KV cache holds the ids
// generated. A content the template does not render as it is (a
// reasoning block dropped from an earlier turn) is encoded as text.
func (t *Template) EncodeReplies(tok *tokenizer.Tokenizer, msgs []Message, opt Options, replies [][]int32) ([]int32, error) {
	if !slices.ContainsFunc(replies, func(ids []int32) bool { return ids != nil }) {
		return t.Encode(tok, msgs, opt)
	}
	plain, err := t.render(msgs, opt, nil)
	if err != nil {
		return nil, err
	}
	marks, err := t.freeMarks(plain, 4)
	if err != nil {
		return nil, err
	}
	open, sep, end := marks[1], marks[2], marks[3]
	wrapped := slices.Clone(msgs)
	for i, ids := range replies {
		if ids != nil && i < len(wrapped) {
			wrapped[i].Content = open + strconv.Itoa(i) + sep + wrapped[i].Content + end
		}
	}
	parts, err := t.renderMarked(wrapped, opt, specialTexts(tok), marks[0])
	if err != nil {
		return nil, err
	}
	s := splicer{tok: tok, msgs: msgs, replies: replies, open: open, sep: sep, end: end}
	var out []int32
	for _, p := range parts {
		if p.Special {
			id, ok := tok.TokenID(p.Text)
			if !ok {
				return nil, fmt.Errorf("chat template emitted %q, which is not a token of the tokenizer", p.Text)
			}
			out = append(out, id)
			continue
		}
		out = s.encode(out, p.Text)
	}
	return out, nil
}

// splicer encodes a rendered text whose reply contents are marked
// open INDEX sep CONTENT end.
type splicer struct {
	tok            *tokenizer.Tokenizer
	msgs           []Message
	replies        [][]int32
	open, sep, end string
}

// encode appends text's ids to ids: a marked content rendered as it is
// by its reply's ids, the rest (and markers the template cut apart) as
// text.
func (s splicer) encode(ids []int32, text string) []int32 {
	for {
		i := strings.Index(text, s.open)
		if i < 0 {
			break
		}
		ids = append(ids, s.tok.Encode(s.strip(text[:i]))...)
		text = text[i+len(s.open):]
		head, rest, okSep := strings.Cut(text, s.sep)
		content, after, okEnd := strings.Cut(rest, s.end)
		n, err := strconv.Atoi(head)
		if !okSep || !okEnd || err != nil || n < 0 || n >= len(s.replies) || strings.Contains(content, s.open) {
			// Not a whole marked content (the template cut it apart):
			// what follows is text, without the index.
			text = strings.TrimLeft(text, "0123456789")
			continue
		}
		if content == s.msgs[n].Content && s.replies[n] != nil {
			ids = append(ids, s.replies[n]...)
		} else {
			ids = append(ids, s.tok.Encode(s.strip(content))...)
		}
		text = after
	}
	return append(ids, s.tok.Encode(s.strip(text))...)
}

// strip removes the markers (and the indices after open) from text.
func (s splicer) strip(text string) string {
	for {
		i := strings.Index(text, s.open)
		if i < 0 {
			break
		}
		j := i + len(s.open)
		for j < len(text) && text[j] >= '0' && text[j] <= '9' {
			j++
		}
		text = text[:i] + text[j:]
	}
	return strings.NewReplacer(s.sep, "", s.end, "").Replace(text)
}

// Encode renders msgs and encodes the prompt with EncodeParts: the ids a
// model sees for a conversation.
func (t *Template) Encode(tok *tokenizer.Tokenizer, msgs []Message, opt Options) ([]int32, error) {
	parts, err := t.RenderParts(msgs, opt, specialTexts(tok))
	if err != nil {
		return nil, err
	}
	return EncodeParts(tok, parts)
}

// SharedPrefix is the token ids that every conversation starting with
// head (a system message, or nothing) and then a user message begins
// with: the rendering up to where the user's text goes, found as the
// common start of two renderings whose user texts differ. A prefix cache
// keys the KV state of these tokens, which every new chat with the same
// system prompt (and the same day, for templates that print the date)
// shares.
func (t *Template) SharedPrefix(tok *tokenizer.Tokenizer, head []Message, opt Options) ([]int32, error) {
	opt.AddGenerationPrompt = true
	a, err := t.Encode(tok, append(slices.Clip(head), Message{Role: "user", Content: "a"}), opt)
	if err != nil {
		return nil, err
	}
	b, err := t.Encode(tok, append(slices.Clip(head), Message{Role: "user", Content: "b"}), opt)
	if err != nil {
		return nil, err
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return a[:n], nil
}
