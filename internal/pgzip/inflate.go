package pgzip

import (
	"encoding/binary"
	"errors"
	"io"
)

// A deflate decoder (RFC 1951) that can start at any block boundary of a
// stream held in memory, with its 32 KiB window unknown: it decodes into
// uint16 symbols where a byte of the unknown window stands as a marker
// (markerBase + its index in the window), resolved once the window is
// known; or into bytes when the window is known.

const (
	windowSize = 32 << 10
	// markerBase+i stands for byte i of the unknown window; literals are
	// below 256.
	markerBase = 0x8000
	maxMatch   = 258
)

var (
	errCorrupt = errors.New("corrupt deflate data")
	// errTruncated is io.ErrUnexpectedEOF: the stream ends inside a block.
	errTruncated = io.ErrUnexpectedEOF
)

// inflater is the state of a decoding: where it is in the stream and in
// the current block. The output buffer is the caller's.
type inflater struct {
	in []byte
	// Bit reader: bits holds nb bits not yet used, the next at bit 0;
	// pos is the next byte of in to load; pad counts zero bytes loaded
	// past the end of in.
	bits uint64
	nb   uint
	pos  int
	pad  int

	inBlock bool
	final   bool // the current block is the last of its member
	stored  int  // bytes of a stored block still to copy; -1 in a Huffman block
	lit     huffTable
	dist    huffTable
	clen    huffTable
	lengths [286 + 30]uint8
	fixed   bool // lit and dist hold the fixed code
}

// reset places f at bit offset bit of in, between blocks.
func (f *inflater) reset(in []byte, bit int64) {
	f.in = in
	f.pos = int(bit >> 3)
	f.bits, f.nb, f.pad = 0, 0, 0
	f.inBlock, f.final, f.stored = false, false, -1
	f.fill()
	if n := uint(bit & 7); n > 0 {
		f.bits >>= n
		f.nb -= n
	}
}

// bitPos returns the offset in bits of the next unread bit.
func (f *inflater) bitPos() int64 { return int64(f.pos)*8 - int64(f.nb) }

// overrun reports whether more bits were used than in holds.
func (f *inflater) overrun() bool { return f.bitPos() > int64(len(f.in))*8 }

// fill loads bytes until at least 56 bits are held.
func (f *inflater) fill() {
	if f.pos+8 <= len(f.in) {
		f.bits |= binary.LittleEndian.Uint64(f.in[f.pos:]) << f.nb
		f.pos += int(63-f.nb) >> 3
		f.nb |= 56
		return
	}
	for f.nb <= 56 {
		if f.pos < len(f.in) {
			f.bits |= uint64(f.in[f.pos]) << f.nb
		} else {
			f.pad++
		}
		f.pos++
		f.nb += 8
	}
}

// take returns the next n (at most 32) bits.
func (f *inflater) take(n uint) uint32 {
	if f.nb < n {
		f.fill()
	}
	v := uint32(f.bits & (1<<n - 1))
	f.bits >>= n
	f.nb -= n
	return v
}

// sym decodes one symbol of t, or returns an invalid entry.
func (f *inflater) sym(t *huffTable) uint32 {
	if f.nb < 32 {
		f.fill()
	}
	e := t.entries[f.bits&(1<<t.primary-1)]
	if e&kindMask == kindLink {
		e = t.entries[int(e>>16)+int(f.bits>>t.primary)&(1<<(e&0xff)-1)]
	}
	if e&kindMask == kindInvalid {
		return entryInvalid
	}
	f.bits >>= e & 0xff
	f.nb -= uint(e & 0xff)
	return e
}

// alignByte drops the bits up to the next byte boundary.
func (f *inflater) alignByte() {
	n := f.nb & 7
	f.bits >>= n
	f.nb -= n
}

// bytePos returns the offset of the next unread byte; the reader must be
// at a byte boundary.
func (f *inflater) bytePos() int { return f.pos - int(f.nb>>3) }

// seekByte places the reader at byte offset p.
func (f *inflater) seekByte(p int) {
	f.pos, f.bits, f.nb, f.pad = p, 0, 0, 0
}

// peekHeader returns the next three bits (BFINAL, then BTYPE) without
// using them.
func (f *inflater) peekHeader() uint32 {
	if f.nb < 3 {
		f.fill()
	}
	return uint32(f.bits & 7)
}

// headerDynamic is the value of peekHeader for a dynamic block that is
// not the last: where chunks start.
const headerDynamic = 2 << 1

// blockHeader reads the header of the next block. strict refuses what a
// block boundary candidate would not have: a final block, one that is not
// dynamic, an incomplete code.
func (f *inflater) blockHeader(strict bool) error {
	h := f.take(3)
	if strict && h != headerDynamic {
		return errCorrupt
	}
	f.final = h&1 != 0
	switch h >> 1 {
	case 0:
		f.alignByte()
		n := f.take(16)
		if f.take(16) != ^n&0xffff {
			return errCorrupt
		}
		f.stored = int(n)
	case 1:
		f.stored = -1
		if !f.fixed {
			f.buildFixed()
		}
	case 2:
		f.stored = -1
		f.fixed = false
		if err := f.dynamicTables(strict); err != nil {
			return err
		}
	default:
		return errCorrupt
	}
	if f.overrun() {
		return errTruncated
	}
	f.inBlock = true
	return nil
}

// buildFixed makes lit and dist the fixed code of RFC 1951 3.2.6.
func (f *inflater) buildFixed() {
	var lit [288]uint8
	for i := range lit {
		switch {
		case i < 144:
			lit[i] = 8
		case i < 256:
			lit[i] = 9
		case i < 280:
			lit[i] = 7
		default:
			lit[i] = 8
		}
	}
	var dist [32]uint8
	for i := range dist {
		dist[i] = 5
	}
	f.lit.build(lit[:], litPrimary, litEntry, false)
	f.dist.build(dist[:], distPrimary, distEntry, false)
	f.fixed = true
}

// codeOrder is the order of the code length code lengths.
var codeOrder = [19]uint8{16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15}

// dynamicTables reads the code of a dynamic block.
func (f *inflater) dynamicTables(strict bool) error {
	nlit := int(f.take(5)) + 257
	ndist := int(f.take(5)) + 1
	nclen := int(f.take(4)) + 4
	if nlit > 286 || ndist > 30 {
		return errCorrupt
	}
	var cl [19]uint8
	for i := range nclen {
		cl[codeOrder[i]] = uint8(f.take(3))
	}
	if !f.clen.build(cl[:], 7, plainEntry, strict) {
		return errCorrupt
	}
	lengths := f.lengths[:nlit+ndist]
	for i := 0; i < len(lengths); {
		e := f.sym(&f.clen)
		if e&kindMask == kindInvalid {
			return errCorrupt
		}
		x := e >> 16
		if x < 16 {
			lengths[i] = uint8(x)
			i++
			continue
		}
		var rep int
		var v uint8
		switch x {
		case 16:
			if i == 0 {
				return errCorrupt
			}
			rep, v = 3+int(f.take(2)), lengths[i-1]
		case 17:
			rep = 3 + int(f.take(3))
		default:
			rep = 11 + int(f.take(7))
		}
		if i+rep > len(lengths) {
			return errCorrupt
		}
		for range rep {
			lengths[i] = v
			i++
		}
	}
	if strict && lengths[256] == 0 {
		return errCorrupt
	}
	if !f.lit.build(lengths[:nlit], litPrimary, litEntry, strict) ||
		!f.dist.build(lengths[nlit:], distPrimary, distEntry, false) {
		return errCorrupt
	}
	return nil
}

// symbol is the output type of a decoding: uint16 with markers, or byte.
type symbol interface{ ~uint16 | ~byte }

// decodeBlock decodes symbols of the current block into out from index o,
// until the block ends (then f.inBlock is false) or out has less than
// maxMatch free (more is needed). A back-reference may reach back to index
// hist; text refuses a literal that is not text (a boundary candidate's
// check). It returns the new output index.
func decodeBlock[T symbol](f *inflater, out []T, o, hist int, text bool) (int, error) {
	if f.stored >= 0 {
		return copyStored(f, out, o)
	}
	limit := len(out) - maxMatch
	lit, dist := f.lit.entries, f.dist.entries
	litBits, distBits := f.lit.primary, f.dist.primary
	litMask := uint64(1)<<litBits - 1
	distMask := uint64(1)<<distBits - 1
	// The bit reader in locals, written back before every return and
	// every call that uses it.
	in := f.in
	bits, nb, pos := f.bits, f.nb, f.pos
	for o <= limit {
		if nb < 48 {
			if pos+8 <= len(in) {
				bits |= binary.LittleEndian.Uint64(in[pos:]) << nb
				pos += int(63-nb) >> 3
				nb |= 56
			} else {
				f.bits, f.nb, f.pos = bits, nb, pos
				f.fill()
				bits, nb, pos = f.bits, f.nb, f.pos
				if f.pad > 16 {
					return o, errTruncated
				}
			}
		}
		e := lit[bits&litMask]
		if e&kindMask == kindLink {
			e = lit[int(e>>16)+int(bits>>litBits)&(1<<(e&0xff)-1)]
		}
		kind := e & kindMask
		if kind == kindLiteral {
			bits >>= e & 0xff
			nb -= uint(e & 0xff)
			if f.pad > 0 {
				f.bits, f.nb, f.pos = bits, nb, pos
				if f.overrun() { // a code of the zeros past the end
					return o, errTruncated
				}
			}
			if text && !isText(byte(e>>16)) {
				f.bits, f.nb, f.pos = bits, nb, pos
				return o, errCorrupt
			}
			out[o] = T(e >> 16)
			o++
			continue
		}
		if kind != kindLength {
			if kind == kindEnd {
				bits >>= e & 0xff
				nb -= uint(e & 0xff)
				f.bits, f.nb, f.pos = bits, nb, pos
				f.inBlock = false
				if f.overrun() {
					return o, errTruncated
				}
				return o, nil
			}
			f.bits, f.nb, f.pos = bits, nb, pos
			return o, f.corrupt()
		}
		bits >>= e & 0xff
		nb -= uint(e & 0xff)
		extra := (e >> 8) & 15
		n := int(e>>16) + int(bits&(1<<extra-1))
		bits >>= extra
		nb -= uint(extra)
		d := dist[bits&distMask]
		if d&kindMask == kindLink {
			d = dist[int(d>>16)+int(bits>>distBits)&(1<<(d&0xff)-1)]
		}
		if d&kindMask != kindLength {
			f.bits, f.nb, f.pos = bits, nb, pos
			return o, f.corrupt()
		}
		bits >>= d & 0xff
		nb -= uint(d & 0xff)
		extra = (d >> 8) & 15
		back := int(d>>16) + int(bits&(1<<extra-1))
		bits >>= extra
		nb -= uint(extra)
		if f.pad > 0 {
			f.bits, f.nb, f.pos = bits, nb, pos
			if f.overrun() {
				return o, errTruncated
			}
		}
		if back > o-hist {
			f.bits, f.nb, f.pos = bits, nb, pos
			return o, f.corrupt()
		}
		src := o - back
		switch {
		case back >= n && n <= 16:
			s, t := out[src:src+16], out[o:o+16] // room: o+16 <= limit+maxMatch
			for i := range n {
				t[i] = s[i]
			}
		case back >= n:
			copy(out[o:o+n], out[src:src+n])
		default:
			for i := range n {
				out[o+i] = out[src+i]
			}
		}
		o += n
	}
	f.bits, f.nb, f.pos = bits, nb, pos
	return o, nil
}

// corrupt is the error for an invalid code: truncation where the stream
// has already ended.
func (f *inflater) corrupt() error {
	if f.overrun() {
		return errTruncated
	}
	return errCorrupt
}

// copyStored copies what fits of a stored block into out.
func copyStored[T symbol](f *inflater, out []T, o int) (int, error) {
	// The reader is byte aligned here: use the held bytes first.
	for f.stored > 0 && f.nb >= 8 && o < len(out) {
		out[o] = T(f.bits & 0xff)
		f.bits >>= 8
		f.nb -= 8
		f.stored--
		o++
	}
	if f.stored > 0 && f.nb == 0 {
		f.bits = 0 // it may hold the bytes about to be copied
		n := min(f.stored, len(out)-o, len(f.in)-f.pos)
		if n < 0 {
			n = 0
		}
		for i, b := range f.in[f.pos : f.pos+n] {
			out[o+i] = T(b)
		}
		f.pos += n
		f.stored -= n
		o += n
		if f.stored > 0 && f.pos >= len(f.in) {
			return o, errTruncated
		}
	}
	if f.overrun() {
		return o, errTruncated
	}
	if f.stored == 0 {
		f.inBlock = false
		f.stored = -1
	}
	return o, nil
}

// isText reports whether b can be a byte of trace JSON: printable ASCII,
// tab, newline, carriage return, or a byte of a UTF-8 sequence.
func isText(b byte) bool {
	return b >= 0x20 && b != 0x7f || b == '\n' || b == '\r' || b == '\t'
}
