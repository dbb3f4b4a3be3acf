package tokenizer

// StreamDecoder turns ids into text one at a time, for streaming output:
// it holds back the bytes of a UTF-8 sequence split across tokens until
// the sequence is complete, so no chunk ever ends in a partial character.
// For SentencePiece-style files it holds back a whole run of byte-fallback
// tokens until a token of another kind (or Flush) ends it, because the
// decoder judges a run as a whole, and it strips the leading space as
// Decode does: the chunks plus Flush always equal Decode of the ids added.
// A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t     *Tokenizer
	buf   []byte // bytes not yet returned: an incomplete sequence or run
	out   []byte // scratch for replacing ill-formed bytes
	strip int    // SentencePiece: leading spaces still to strip
}

// NewStreamDecoder returns a decoder with nothing pending.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	d := &StreamDecoder{t: t, buf: make([]byte, 0, 64)}
	d.Reset()
	return d
}

// Add appends the bytes of one token and returns the text now complete,
// possibly "". Bytes that can no longer form a valid character come out as
// U+FFFD. Unknown ids add nothing.
func (d *StreamDecoder) Add(id int32) string {
	if d.t.sp != nil {
		return d.addSentencePiece(id)
	}
	d.buf = append(d.buf, d.t.TokenBytes(id)...)
	n := len(d.buf) - incompleteTail(d.buf)
	if n == 0 {
		return ""
	}
	d.out = appendLossy(d.out[:0], d.buf[:n])
	s := string(d.out)
	d.buf = d.buf[:copy(d.buf, d.buf[n:])]
	return s
}

func (d *StreamDecoder) addSentencePiece(id int32) string {
	b := d.t.TokenBytes(id)
	switch {
	case b == nil:
		return ""
	case d.t.sp.fallback[id]:
		d.buf = append(d.buf, b[0])
		return ""
	}
	d.out = append(appendRun(d.out[:0], d.buf), b...)
	d.buf = d.buf[:0]
	return d.text(d.out)
}

// text returns b as a string after the leading-space strip still due.
func (d *StreamDecoder) text(b []byte) string {
	for d.strip > 0 && len(b) > 0 {
		if b[0] != ' ' {
			d.strip = 0
			break
		}
		b = b[1:]
		d.strip--
	}
	return string(b)
}

// Flush returns whatever is pending (an incomplete sequence, as U+FFFD)
// and leaves the decoder empty.
func (d *StreamDecoder) Flush() string {
	if len(d.buf) == 0 {
		return ""
	}
	if d.t.sp != nil {
		d.out = appendRun(d.out[:0], d.buf)
		d.buf = d.buf[:0]
		return d.text(d.out)
	}
	d.out = appendLossy(d.out[:0], d.buf)
	d.buf = d.buf[:0]
	return string(d.out)
}

// Reset drops anything pending and starts a new text (for
// SentencePiece-style files, whose leading space is stripped again).
func (d *StreamDecoder) Reset() {
	d.buf = d.buf[:0]
	if d.t.sp != nil {
		d.strip = d.t.sp.strip
	}
}
