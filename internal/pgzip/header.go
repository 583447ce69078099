package pgzip

import (
	"encoding/binary"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/gzip"
)

// gzip member framing (RFC 1952), read as klauspost/compress/gzip reads
// it, so that both accept and refuse the same files.

const (
	flagHdrCrc  = 1 << 1
	flagExtra   = 1 << 2
	flagName    = 1 << 3
	flagComment = 1 << 4
	// maxHeaderString is the longest name or comment, with its NUL,
	// that klauspost's reader accepts.
	maxHeaderString = 512
)

// headerLen returns the length of the member header at the start of b:
// io.EOF where b is empty (no further member), io.ErrUnexpectedEOF where
// it ends inside the header, gzip.ErrHeader where it is not one.
func headerLen(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, io.EOF
	}
	if len(b) < 10 {
		return 0, io.ErrUnexpectedEOF
	}
	if b[0] != 0x1f || b[1] != 0x8b || b[2] != 8 {
		return 0, gzip.ErrHeader
	}
	flg := b[3]
	n := 10
	if flg&flagExtra != 0 {
		if len(b) < n+2 {
			return 0, io.ErrUnexpectedEOF
		}
		n += 2 + int(binary.LittleEndian.Uint16(b[n:]))
		if len(b) < n {
			return 0, io.ErrUnexpectedEOF
		}
	}
	for _, f := range []byte{flagName, flagComment} {
		if flg&f == 0 {
			continue
		}
		i := 0
		for ; ; i++ {
			if i >= maxHeaderString {
				return 0, gzip.ErrHeader
			}
			if n+i >= len(b) {
				return 0, io.ErrUnexpectedEOF
			}
			if b[n+i] == 0 {
				break
			}
		}
		n += i + 1
	}
	if flg&flagHdrCrc != 0 {
		if len(b) < n+2 {
			return 0, io.ErrUnexpectedEOF
		}
		if binary.LittleEndian.Uint16(b[n:]) != uint16(crc32.ChecksumIEEE(b[:n])) {
			return 0, gzip.ErrHeader
		}
		n += 2
	}
	if flg>>5 != 0 {
		return 0, gzip.ErrHeader
	}
	return n, nil
}

// memberEnd is where a member ends in a decoding's output, with its
// trailer: the CRC-32 and length (mod 2^32) of its uncompressed data.
type memberEnd struct {
	at   int64 // output offset
	crc  uint32
	size uint32
}

// event is why a decoding returned.
type event int

const (
	evFull event = iota // out has no room for the next symbol
	evStop              // at the stop boundary
	evEOF               // the last member ended at the end of the file
)

// decoding is one decoding run's context besides the inflater: the
// output's history start, the stop rule and the member ends found.
type decoding struct {
	// hist is the first output index a back-reference may reach (the
	// start of the current member's history).
	hist int
	// stopBit: stop at the first boundary at or past it of a block that
	// is dynamic and not final (-1: never).
	stopBit int64
	// base is the output offset of buffer index 0.
	base int64
	ends []memberEnd
}

// run decodes into out from index o until out is full, the stop
// boundary, or the end of the file, crossing member boundaries. It
// returns the new output index.
func run[T symbol](f *inflater, d *decoding, out []T, o int) (int, event, error) {
	for {
		if !f.inBlock {
			if d.stopBit >= 0 && f.bitPos() >= d.stopBit && f.peekHeader() == headerDynamic {
				return o, evStop, nil
			}
			if err := f.blockHeader(false); err != nil {
				return o, evFull, err
			}
		}
		var err error
		if o, err = decodeBlock(f, out, o, d.hist, false); err != nil {
			return o, evFull, err
		}
		if f.inBlock {
			return o, evFull, nil
		}
		if f.final {
			eof, err := memberDone(f, d, o)
			if err != nil || eof {
				return o, evEOF, err
			}
			d.hist = o
		}
	}
}

// memberDone reads the trailer of the member just ended at output index
// o and the header of the next; eof reports that there is none.
func memberDone(f *inflater, d *decoding, o int) (eof bool, err error) {
	f.alignByte()
	p := f.bytePos()
	if p+8 > len(f.in) {
		return false, io.ErrUnexpectedEOF
	}
	d.ends = append(d.ends, memberEnd{at: d.base + int64(o),
		crc: binary.LittleEndian.Uint32(f.in[p:]), size: binary.LittleEndian.Uint32(f.in[p+4:])})
	p += 8
	n, err := headerLen(f.in[p:])
	if err == io.EOF {
		f.seekByte(p)
		return true, nil
	}
	if err != nil {
		return false, err
	}
	f.seekByte(p + n)
	f.final = false
	return false, nil
}
