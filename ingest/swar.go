package ingest

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Eight-bytes-at-a-time search ("SIMD within a register"): the hot loops
// look for a quote in runs of ordinary bytes, and most strings in a trace
// are too short for bytes.IndexByte's call to pay off.

const (
	lows  = 0x0101010101010101
	highs = 0x8080808080808080
)

// eq returns a word with the high bit set in the lowest byte of x equal to
// c (and possibly in higher bytes: callers use only the lowest).
func eq(x uint64, c byte) uint64 {
	v := x ^ (lows * uint64(c))
	return (v - lows) &^ v & highs
}

// zeroBytes returns a word with the high bit set in exactly the bytes of x
// that are zero.
func zeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// nonDigits returns a word whose bytes are zero exactly where the bytes of
// x are ASCII digits.
func nonDigits(x uint64) uint64 {
	const high, low = 0xf0f0f0f0f0f0f0f0, 0x0f0f0f0f0f0f0f0f
	// A digit has high nibble 3 and low nibble at most 9 (adding 6 does
	// not carry into bit 4).
	return (x&high ^ lows*'0') | ((x&low + lows*6) & (lows * 0x10))
}

// indexQuote returns the position of the first '"' in b at or after j, or
// -1. Most strings are short: the first 32 bytes are searched eight at a
// time, the rest with bytes.IndexByte.
func indexQuote(b []byte, j int) int {
	for end := j + 32; j+8 <= len(b); j += 8 {
		if m := eq(binary.LittleEndian.Uint64(b[j:]), '"'); m != 0 {
			return j + bits.TrailingZeros64(m)/8
		}
		if j+8 >= end {
			if k := bytes.IndexByte(b[j+8:], '"'); k >= 0 {
				return j + 8 + k
			}
			return -1
		}
	}
	for ; j < len(b); j++ {
		if b[j] == '"' {
			return j
		}
	}
	return -1
}
