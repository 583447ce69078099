package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// SkipEither returns the index right after x or y, whichever stands at
// b[i:] with at least one byte after it, or -1 when neither does.
func SkipEither(b []byte, i int, x, y string) int {
	switch {
	case len(b)-i > len(x) && string(b[i:i+len(x)]) == x:
		return i + len(x)
	case len(b)-i > len(y) && string(b[i:i+len(y)]) == y:
		return i + len(y)
	}
	return -1
}

// MemberKey is a key, quoted, with the colon after it, at most eight
// bytes: its bytes as a little-endian word, the mask of those bytes, and
// their number.
type MemberKey struct {
	word, mask uint64
	n          int
}

// NewMemberKey returns the MemberKey of key, at most eight bytes.
func NewMemberKey(key string) MemberKey {
	var k [8]byte
	copy(k[:], key)
	return MemberKey{binary.LittleEndian.Uint64(k[:]), ^uint64(0) >> (64 - 8*len(key)), len(key)}
}

// Len returns the number of bytes of the key.
func (k MemberKey) Len() int { return k.n }

// At reports whether w, at least eight bytes, starts with the key,
// comparing words rather than bytes.
func (k MemberKey) At(w []byte) bool {
	return binary.LittleEndian.Uint64(w)&k.mask == k.word
}

// MemberStart returns the position of the value of the member with the
// given key after the comma at j, when the comma is followed by nothing, a
// space or Kineto's line break and four spaces, and the key's colon by
// nothing or a space; -1 otherwise (and near the end of b).
func MemberStart(b []byte, j int, key MemberKey) int {
	if j+16 > len(b) || b[j] != ',' {
		return -1
	}
	if j++; b[j] == ' ' {
		j++
	} else if b[j] == '\n' && binary.LittleEndian.Uint32(b[j+1:]) == 0x20202020 {
		j += 5
	} // else the key's quote, or a byte that is not the key's
	if !key.At(b[j:]) {
		return -1
	}
	if j += key.n; b[j] == ' ' {
		j++
	}
	return j
}

// UnsignedEnd returns the position after the unsigned decimal number at j,
// digits with, if fraction, a '.' and more digits or not, when a comma
// follows it; -1 otherwise (and near the end of b). The general parse
// reads such a number as one literal too.
func UnsignedEnd(b []byte, j int, fraction bool) int {
	e := DigitsEnd(b, j)
	if e <= j {
		return -1
	}
	if fraction && b[e] == '.' {
		f := DigitsEnd(b, e+1)
		if f <= e+1 {
			return -1
		}
		e = f
	}
	if b[e] != ',' {
		return -1
	}
	return e
}

// IntEnd is UnsignedEnd without a fraction, for a j that may be -1 (then
// it returns -1).
func IntEnd(b []byte, j int) int {
	if j < 0 {
		return -1
	}
	if e := DigitsEnd(b, j); e > j && b[e] == ',' {
		return e
	}
	return -1
}

// DigitsEnd returns the position after the run of ASCII digits at j, read
// eight bytes at a time, or -1 when b ends within eight bytes of its end.
func DigitsEnd(b []byte, j int) int {
	for j+8 <= len(b) {
		n := bits.TrailingZeros64(nonDigits(binary.LittleEndian.Uint64(b[j:]))) / 8
		if j += n; n < 8 {
			return j
		}
	}
	return -1
}
