package pgzip

// Huffman decoding tables of a deflate block (RFC 1951, section 3.2.2).
//
// A table is looked up with the next primary bits of the stream (least
// significant bit first, as deflate packs codes bit-reversed); a code longer
// than that is found in a subtable that the primary entry links to. Each
// entry says how many bits its code takes and what it decodes to, with the
// base and extra bits of a length or distance already looked up.

const (
	litPrimary  = 10 // bits of the literal/length primary table
	distPrimary = 8  // bits of the distance primary table
	maxCodeLen  = 15

	// Entry layout: bits 0-7 the code length (a link: the subtable's
	// index bits), 8-11 extra bits, 12-14 kind, 16-31 the value.
	kindLiteral = 0 << 12
	kindLength  = 1 << 12 // also a distance, in a distance table
	kindEnd     = 2 << 12 // end of block
	kindInvalid = 3 << 12 // a code no valid stream uses
	kindLink    = 4 << 12 // primary entry of codes longer than the primary bits
	kindMask    = 7 << 12
)

// entryInvalid decodes nothing; unassigned codes hold it.
const entryInvalid = uint32(kindInvalid)

// huffTable decodes one Huffman code.
type huffTable struct {
	primary uint // index bits of the primary table
	entries []uint32
}

// lengthBase and lengthExtra give the base length and extra bits of the
// length symbols 257-285; distBase and distExtra those of distance symbols.
var (
	lengthBase  = [29]uint16{3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258}
	lengthExtra = [29]uint8{0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0}
	distBase    = [30]uint16{1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577}
	distExtra   = [30]uint8{0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13}
)

// litEntry is what literal/length symbol sym decodes to, less its code
// length.
func litEntry(sym int) uint32 {
	switch {
	case sym < 256:
		return kindLiteral | uint32(sym)<<16
	case sym == 256:
		return kindEnd
	case sym <= 285:
		i := sym - 257
		return kindLength | uint32(lengthExtra[i])<<8 | uint32(lengthBase[i])<<16
	}
	return kindInvalid
}

// distEntry is what distance symbol sym decodes to, less its code length.
func distEntry(sym int) uint32 {
	if sym < 30 {
		return kindLength | uint32(distExtra[sym])<<8 | uint32(distBase[sym])<<16
	}
	return kindInvalid
}

// plainEntry is symbol sym itself (the code length code).
func plainEntry(sym int) uint32 { return uint32(sym) << 16 }

// reverse returns the low n bits of c in reverse order.
func reverse(c uint32, n uint) uint32 {
	var r uint32
	for range n {
		r = r<<1 | c&1
		c >>= 1
	}
	return r
}

// build makes t decode the canonical code of lengths (0: symbol unused),
// with entry(sym) giving what each symbol decodes to. It reports false
// where the code is over-subscribed, or incomplete other than as the
// decoders of zlib and Go accept (no code at all, or a single code of one
// bit): such a stream is corrupt. strict refuses every incomplete code (a
// block boundary candidate).
func (t *huffTable) build(lengths []uint8, primary uint, entry func(int) uint32, strict bool) bool {
	var count [maxCodeLen + 1]int
	maxLen := 0
	for _, l := range lengths {
		if l != 0 {
			count[l]++
			maxLen = max(maxLen, int(l))
		}
	}
	var next [maxCodeLen + 2]uint32
	code := uint32(0)
	left := 1 // codes of the current length still unassigned
	for l := 1; l <= maxCodeLen; l++ {
		code = (code + uint32(count[l-1])) << 1
		next[l] = code
		left = left<<1 - count[l]
		if left < 0 {
			return false
		}
	}
	if left != 0 {
		single := maxLen == 1 && count[1] == 1
		if strict || (maxLen != 0 && !single) {
			return false
		}
	}
	t.primary = primary
	size := 1 << primary
	sub := 0
	if maxLen > int(primary) {
		sub = 1 << (maxLen - int(primary))
	}
	// Subtables follow the primary table, one per primary prefix of the
	// long codes, allocated in order of first use.
	need := size
	if sub > 0 {
		for l := int(primary) + 1; l <= maxLen; l++ {
			need += count[l] * sub // at most one subtable per long code
		}
	}
	if cap(t.entries) < need {
		t.entries = make([]uint32, need)
	}
	t.entries = t.entries[:need]
	for i := range t.entries[:size] {
		t.entries[i] = entryInvalid
	}
	used := size
	for sym, l := range lengths {
		if l == 0 {
			continue
		}
		c := reverse(next[l], uint(l))
		next[l]++
		e := entry(sym) | uint32(l)
		if uint(l) <= primary {
			for i := c; i < uint32(size); i += 1 << l {
				t.entries[i] = e
			}
			continue
		}
		p := c & uint32(size-1)
		link := t.entries[p]
		if link&kindMask != kindLink {
			link = kindLink | uint32(maxLen-int(primary)) | uint32(used)<<16
			t.entries[p] = link
			for i := used; i < used+sub; i++ {
				t.entries[i] = entryInvalid
			}
			used += sub
		}
		base := int(link >> 16)
		rest := c >> primary
		for i := rest; i < uint32(sub); i += 1 << (uint(l) - primary) {
			t.entries[base+int(i)] = e
		}
	}
	t.entries = t.entries[:used]
	return true
}
