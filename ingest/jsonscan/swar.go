package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// Eight-bytes-at-a-time search ("SIMD within a register"): the hot loops
// look for a quote in runs of ordinary bytes, and most strings in a trace
// are too short for bytes.IndexByte's call to pay off.

// Lows is the word with the low bit of each byte set: Lows*c repeats the
// byte c in every byte of a word.
const Lows = 0x0101010101010101

// highs is the word with the high bit of each byte set.
const highs = 0x8080808080808080

// eq returns a word with the high bit set in the lowest byte of x equal to
// c (and possibly in higher bytes: callers use only the lowest).
func eq(x uint64, c byte) uint64 {
	v := x ^ (Lows * uint64(c))
	return (v - Lows) &^ v & highs
}

// ZeroBytes returns a word with the high bit set in exactly the bytes of x
// that are zero.
func ZeroBytes(x uint64) uint64 {
	const low7 = 0x7f7f7f7f7f7f7f7f
	return ^((x&low7 + low7) | x | low7)
}

// nonDigits returns a word whose bytes are zero exactly where the bytes of
// x are ASCII digits.
func nonDigits(x uint64) uint64 {
	const high, low = 0xf0f0f0f0f0f0f0f0, 0x0f0f0f0f0f0f0f0f
	// A digit has high nibble 3 and low nibble at most 9 (adding 6 does
	// not carry into bit 4).
	return (x&high ^ Lows*'0') | ((x&low + Lows*6) & (Lows * 0x10))
}

// IndexQuote returns the position of the first '"' in b at or after j, or
// -1. Most strings are short: the first 32 bytes are searched eight at a
// time, the rest with bytes.IndexByte.
func IndexQuote(b []byte, j int) int {
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
