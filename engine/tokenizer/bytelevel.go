package tokenizer

import "unicode/utf8"

// byteToRune is GPT-2's bytes_to_unicode table: the printable bytes
// '!'..'~', '¡'..'¬' and '®'..'ÿ' stand for themselves and the other 68
// bytes (controls, space, DEL, NBSP, soft hyphen) are shifted to U+0100 and
// up, in byte order. Vocabulary strings of byte-level BPE files use it.
var byteToRune [256]rune

// runeToByte inverts byteToRune: runeToByte[r] is r's byte plus one, 0
// for a rune that stands for no byte. An array, not a map: a load reads
// every token of the vocabulary through it (128,256 for Llama 3), and a
// map lookup per character was a quarter of building the vocabulary.
var runeToByte [256 + 68]int16

func init() {
	n := rune(0)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = 256 + n
			n++
		}
		runeToByte[byteToRune[b]] = int16(b) + 1
	}
}

// byteLevelDecode turns a vocabulary string into the raw bytes it stands
// for. As in Hugging Face's ByteLevel decoder, a string holding any rune
// outside the byte table is taken as its own UTF-8 bytes instead.
func byteLevelDecode(s string) []byte { return appendByteLevel(make([]byte, 0, len(s)), s) }

// appendByteLevel appends byteLevelDecode(s) to dst: never more than
// len(s) bytes.
func appendByteLevel(dst []byte, s string) []byte {
	start := len(dst)
	for _, r := range s {
		if r < 0 || int(r) >= len(runeToByte) || runeToByte[r] == 0 {
			return append(dst[:start], s...)
		}
		dst = append(dst, byte(runeToByte[r]-1))
	}
	return dst
}

// invalidPrefixLen reports how many bytes at the start of b form one
// ill-formed UTF-8 unit (the "maximal subpart" of Unicode §3.9, as Rust's
// String::from_utf8_lossy and Hugging Face use): a lead byte followed by as
// many continuation bytes as could still belong to a valid sequence. It
// returns 0 when b starts with a valid rune. Such a unit becomes one U+FFFD.
func invalidPrefixLen(b []byte) int {
	if r, size := utf8.DecodeRune(b); r != utf8.RuneError || size != 1 {
		return 0
	}
	return 1 + validContinuations(b)
}

// validContinuations counts the continuation bytes after the lead byte b[0]
// that keep the sequence a prefix of some valid UTF-8 encoding.
func validContinuations(b []byte) int {
	need, lo, hi := seqInfo(b[0])
	n := 0
	for i := 1; i < len(b) && n < need-1; i++ {
		c := b[i]
		if i == 1 {
			if c < lo || c > hi {
				break
			}
		} else if c < 0x80 || c > 0xBF {
			break
		}
		n++
	}
	return n
}

// seqInfo gives the encoded length announced by a lead byte and the range
// allowed for the byte after it (0 length for bytes that cannot start one).
func seqInfo(lead byte) (need int, lo, hi byte) {
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		return 2, 0x80, 0xBF
	case lead == 0xE0:
		return 3, 0xA0, 0xBF
	case lead == 0xED:
		return 3, 0x80, 0x9F
	case lead >= 0xE1 && lead <= 0xEF:
		return 3, 0x80, 0xBF
	case lead == 0xF0:
		return 4, 0x90, 0xBF
	case lead == 0xF4:
		return 4, 0x80, 0x8F
	case lead >= 0xF1 && lead <= 0xF3:
		return 4, 0x80, 0xBF
	}
	return 0, 0, 0
}

// incompleteTail returns the length of a trailing sequence of b that is
// not yet a whole rune but may become one when more bytes arrive.
func incompleteTail(b []byte) int {
	for back := 1; back <= 3 && back <= len(b); back++ {
		c := b[len(b)-back]
		if c < 0x80 {
			return 0
		}
		if c >= 0xC0 {
			need, _, _ := seqInfo(c)
			if need > back && validContinuations(b[len(b)-back:]) == back-1 {
				return back
			}
			return 0
		}
	}
	return 0
}

// appendLossy appends b to dst, replacing each ill-formed unit by U+FFFD.
func appendLossy(dst, b []byte) []byte {
	if utf8.Valid(b) {
		return append(dst, b...)
	}
	for i := 0; i < len(b); {
		if n := invalidPrefixLen(b[i:]); n > 0 {
			dst = append(dst, "\uFFFD"...)
			i += n
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		dst = append(dst, b[i:i+size]...)
		i += size
	}
	return dst
}
