package main

import (
	"io"
	"os"

	"github.com/charmbracelet/x/term"

	"github.com/driftwoodlabs/driftwood/engine"
	"github.com/driftwoodlabs/driftwood/engine/tokenizer"
)

// replyText is a reply's text as its tokens come and go: the stream
// decoding of the tokens kept, with where each token's text ends. After
// a take-back the kept tokens are decoded again from the start, so the
// text is always what a decoder given only the kept tokens returns (a
// character split across a kept and a dropped token is held back again,
// not lost).
type replyText struct {
	stream *tokenizer.StreamDecoder
	ids    []int32
	text   []byte
	ends   []int // ends[i]: len(text) once ids[:i+1] were added
}

func newReplyText(tok *tokenizer.Tokenizer) *replyText {
	return &replyText{stream: tok.NewStreamDecoder()}
}

// apply applies e and returns the text its token added ("" for a
// take-back alone, or a token that ends inside a character).
func (r *replyText) apply(e engine.Event) string {
	if e.Backtrack > 0 {
		keep := r.ids[:len(r.ids)-e.Backtrack]
		r.stream.Reset()
		r.ids, r.text, r.ends = r.ids[:0], r.text[:0], r.ends[:0]
		for _, id := range keep { // keep aliases r.ids: each id is rewritten in place
			r.add(id)
		}
	}
	if e.Token < 0 {
		return ""
	}
	return r.add(e.Token)
}

func (r *replyText) add(id int32) string {
	s := r.stream.Add(id)
	r.ids = append(r.ids, id)
	r.text = append(r.text, s...)
	r.ends = append(r.ends, len(r.text))
	return s
}

// final is how many bytes of the text can no longer change when a
// controller may still take back the last revocable tokens: the text
// of the tokens before them (a token's text depends only on the tokens
// up to it).
func (r *replyText) final(revocable int) int {
	if n := len(r.ids) - revocable; n > 0 {
		return r.ends[n-1]
	}
	return 0
}

// finish ends the text: what the decoder still holds (a character cut
// short, as U+FFFD) is added, and returned.
func (r *replyText) finish() string {
	tail := r.stream.Flush()
	r.text = append(r.text, tail...)
	return tail
}

// replyPrinter prints a reply as it is produced, so that what stays
// printed is the final reply, tokens a controller took back excluded:
//
//   - not on a terminal, it prints only the text that no controller can
//     take back any more (Driver.Revocable): all of it as it comes when
//     no controller runs, else what is left of the reply's take-back
//     budget is held back, in practice until the reply ends or the
//     controller is switched off;
//   - on a terminal, it streams every token and erases what is taken
//     back (screen), and holds the controller's log lines until the
//     reply ends when they go to the same terminal, so that they never
//     land inside the text it may have to erase.
type replyPrinter struct {
	out       io.Writer
	text      *replyText
	revocable func() int // nil: nothing can be taken back
	screen    *screen    // nil: not a terminal
	printed   int        // bytes of text written, when not a terminal
	release   func()     // prints the held log lines; nil when none are held
}

// newReplyPrinter prints to out the reply that tok decodes, as the
// decode loop's events (Event) change it, until Finish. cs is the
// controller host of the reply, nil when there is none.
func newReplyPrinter(out io.Writer, tok *tokenizer.Tokenizer, cs *controllerSet) *replyPrinter {
	p := &replyPrinter{out: out, text: newReplyText(tok)}
	if cs != nil {
		p.revocable = cs.Revocable
	}
	if width, height, ok := terminalSize(out); ok {
		p.screen = &screen{width: width, height: height}
		if cs != nil {
			p.release = cs.holdLogs()
		}
	}
	return p
}

// terminalSize returns the size of the terminal w writes to, if it is
// one.
func terminalSize(w io.Writer) (width, height int, ok bool) {
	f, isFile := w.(*os.File)
	if !isFile || !term.IsTerminal(f.Fd()) {
		return 0, 0, false
	}
	width, height, err := term.GetSize(f.Fd())
	return width, height, err == nil && width > 0 && height > 0
}

// Event applies one event of the decode loop and prints what it allows.
func (p *replyPrinter) Event(e engine.Event) error {
	p.text.apply(e)
	if p.screen != nil {
		return p.screen.show(p.out, p.text.text)
	}
	n := len(p.text.text)
	if p.revocable != nil {
		n = p.text.final(p.revocable())
	}
	return p.print(n)
}

// print writes the text up to byte n, past what is printed already.
func (p *replyPrinter) print(n int) error {
	if n <= p.printed {
		return nil
	}
	_, err := p.out.Write(p.text.text[p.printed:n])
	p.printed = n
	return err
}

// Finish prints the rest of the reply, now final, and a newline, then
// the log lines held meanwhile.
func (p *replyPrinter) Finish() error {
	p.text.finish()
	var err error
	if p.screen != nil {
		err = p.screen.show(p.out, p.text.text)
	} else {
		err = p.print(len(p.text.text))
	}
	if _, werr := io.WriteString(p.out, "\n"); err == nil {
		err = werr
	}
	if p.release != nil {
		p.release()
	}
	return err
}

// Text is the reply's text so far (after Finish, the final reply).
func (p *replyPrinter) Text() string { return string(p.text.text) }

// commonPrefix is the length of the longest common prefix of a and b.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
