package tokenizer

// StreamDecoder turns ids into text one at a time, for streaming output:
// it holds back the bytes of a UTF-8 sequence split across tokens until
// the sequence is complete, so no chunk ever ends in a partial character.
// A StreamDecoder is not safe for concurrent use.
type StreamDecoder struct {
	t   *Tokenizer
	buf []byte // bytes not yet returned: at most an incomplete sequence
	out []byte // scratch for replacing ill-formed bytes
}

// NewStreamDecoder returns a decoder with nothing pending.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder {
	return &StreamDecoder{t: t, buf: make([]byte, 0, 64)}
}

// Add appends the bytes of one token and returns the text now complete,
// possibly "". Bytes that can no longer form a valid character come out as
// U+FFFD. Unknown ids add nothing.
func (d *StreamDecoder) Add(id int32) string {
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

// Flush returns whatever is pending (an incomplete sequence, as U+FFFD)
// and leaves the decoder empty.
func (d *StreamDecoder) Flush() string {
	if len(d.buf) == 0 {
		return ""
	}
	d.out = appendLossy(d.out[:0], d.buf)
	d.buf = d.buf[:0]
	return string(d.out)
}

// Reset drops anything pending.
func (d *StreamDecoder) Reset() { d.buf = d.buf[:0] }
