package pgzip

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"testing"
)

// Builders of gzip streams for the tests: trace-like text, compressed in
// the ways that make boundaries hard to find or easy to mistake.

// traceText returns about n bytes of trace-like JSON drawn from seed.
func traceText(seed uint64, n int) []byte {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	names := []string{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "void at::native::vectorized_elementwise_kernel<4>",
		"Marlin<256, 1, 8, 8, 4, 8>", "fused_moe_kernel", "execute_model", "cudaLaunchKernel", "Ünïcode ✓ name"}
	var b bytes.Buffer
	b.WriteString(`{"traceEvents":[` + "\n")
	ts := int64(1_700_000_000_000)
	for b.Len() < n {
		ts += int64(rng.IntN(5000))
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":%q,"pid":%d,"tid":%d,"ts":%d.%03d,"dur":%d,"args":{"correlation":%d,"stream":%d}},`+"\n",
			names[rng.IntN(len(names))], rng.IntN(8), rng.IntN(4)+7, ts, rng.IntN(1000), rng.IntN(20000), rng.IntN(1<<20), rng.IntN(32))
	}
	b.WriteString("{}]}\n")
	return b.Bytes()
}

// segment is one piece of a deflate stream: its text, compressed at
// level, with a sync flush every flush bytes (0: none).
type segment struct {
	text  []byte
	level int
	flush int
}

// deflateSegments returns one deflate stream of the segments in order
// (each a separate compressor: no reference crosses a segment), ended by
// a final block.
func deflateSegments(tb testing.TB, segs []segment) []byte {
	return append(openDeflate(tb, segs), 0x03, 0x00) // a final fixed block holding only its end
}

// openDeflate is deflateSegments without the final block: it ends at a
// byte boundary between blocks.
func openDeflate(tb testing.TB, segs []segment) []byte {
	var out bytes.Buffer
	writers := map[int]*flate.Writer{} // one per level, reset per segment
	for _, s := range segs {
		var b bytes.Buffer
		w := writers[s.level]
		if w == nil {
			var err error
			if w, err = flate.NewWriter(&b, s.level); err != nil {
				tb.Fatal(err)
			}
			writers[s.level] = w
		}
		w.Reset(&b)
		step := s.flush
		if step <= 0 {
			step = len(s.text) + 1
		}
		for t := s.text; len(t) > 0; {
			k := min(step, len(t))
			w.Write(t[:k])
			t = t[k:]
			if s.flush > 0 {
				w.Flush()
			}
		}
		w.Flush() // ends at a byte boundary, with a block that is not final
		out.Write(b.Bytes())
	}
	return out.Bytes()
}

// member wraps a deflate stream of text as a gzip member.
func member(deflated, text []byte) []byte {
	b := []byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255}
	b = append(b, deflated...)
	b = binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(text))
	return binary.LittleEndian.AppendUint32(b, uint32(len(text)))
}

// gzipOf returns a gzip member of the segments.
func gzipOf(tb testing.TB, segs ...segment) []byte {
	var text []byte
	for _, s := range segs {
		text = append(text, s.text...)
	}
	return member(deflateSegments(tb, segs), text)
}

// falseBoundaries returns segments of text with, between them, stored
// blocks holding deflate data of other text that ends between blocks: a
// decoding started there decodes text, and from the stored block's end on
// decodes as the true stream does, so only the boundary check tells it is
// false.
func falseBoundaries(tb testing.TB, text []byte, seed uint64, every int) []segment {
	var segs []segment
	for i := 0; len(text) > 0; i++ {
		k := min(every, len(text))
		segs = append(segs, segment{text: text[:k], level: 6})
		text = text[k:]
		fake := openDeflate(tb, []segment{{text: traceText(seed+uint64(i), 1500), level: 6}})
		segs = append(segs, segment{text: fake, level: flate.NoCompression})
	}
	return segs
}

// stream is a named gzip file for the tests.
type stream struct {
	name string
	in   []byte
	// inOrder: the stream holds a false boundary that a worker takes,
	// so some chunk must be decoded again in order.
	inOrder bool
}

// testStreams returns the adversarial streams, from seed.
func testStreams(tb testing.TB, seed uint64, n int) []stream {
	text := traceText(seed, n)
	other := traceText(seed+1, n/2)
	corrupt := gzipOf(tb, segment{text: text, level: 6})
	corrupt[len(corrupt)-6] ^= 1 // the CRC
	short := gzipOf(tb, segment{text: text, level: 6})
	short[len(short)-3]++ // the length
	one := gzipOf(tb, segment{text: text, level: 6})
	return []stream{
		{name: "default", in: gzipOf(tb, segment{text: text, level: 6})},
		{name: "best", in: gzipOf(tb, segment{text: text, level: 9})},
		{name: "fast", in: gzipOf(tb, segment{text: text, level: 1})},
		{name: "huffman only", in: gzipOf(tb, segment{text: text, level: flate.HuffmanOnly})},
		{name: "stored", in: gzipOf(tb, segment{text: text, level: flate.NoCompression})},
		{name: "tiny blocks", in: gzipOf(tb, segment{text: text, level: 6, flush: 700})},
		{name: "tiny fixed blocks", in: gzipOf(tb, segment{text: text, level: 6, flush: 40})},
		{name: "stored deflate between text", inOrder: true, in: gzipOf(tb, falseBoundaries(tb, text, seed, 20000)...)},
		{name: "bomb", inOrder: true, in: gzipOf(tb, segment{text: bytes.Repeat([]byte(`{"ph":"X"},`+"\n"), n), level: 9})},
		{name: "multi-member", in: append(append(gzipOf(tb, segment{text: text, level: 6}), gzipOf(tb, segment{text: other, level: 1})...),
			gzipOf(tb, segment{text: text[:100], level: 9})...)},
		{name: "many members", in: manyMembers(tb, text, 5000)},
		{name: "empty member first", in: append(gzipOf(tb, segment{text: nil, level: 6}), one...)},
		{name: "wrong CRC", in: corrupt},
		{name: "wrong length", in: short},
		{name: "truncated", in: one[:len(one)*2/3]},
		{name: "trailer cut", in: one[:len(one)-3]},
		{name: "trailing garbage", in: append(append([]byte(nil), one...), "garbage"...)},
		{name: "trailing zeros", in: append(append([]byte(nil), one...), make([]byte, 20)...)},
		{name: "bit flip", in: flipped(one, 3*len(one)/4)},
	}
}

// manyMembers cuts text into members of about size bytes.
func manyMembers(tb testing.TB, text []byte, size int) []byte {
	var b []byte
	var buf bytes.Buffer
	w, err := flate.NewWriter(&buf, 6)
	if err != nil {
		tb.Fatal(err)
	}
	for len(text) > 0 {
		k := min(size, len(text))
		buf.Reset()
		w.Reset(&buf)
		w.Write(text[:k])
		w.Close()
		b = append(b, member(buf.Bytes(), text[:k])...)
		text = text[k:]
	}
	return b
}

// flipped returns in with one bit at byte i flipped.
func flipped(in []byte, i int) []byte {
	b := append([]byte(nil), in...)
	b[i] ^= 0x10
	return b
}

// checkSame decompresses in with the Reader of opt and with klauspost:
// the same output where klauspost succeeds, an error where it fails.
func checkSame(tb testing.TB, name string, in []byte, opt Options) Stats {
	want, werr := sequentialGunzip(in)
	got, st, gerr := parallelStats(in, opt)
	switch {
	case werr == nil && gerr != nil:
		tb.Errorf("%s %+v: %v; klauspost reads it (%d bytes)", name, opt, gerr, len(want))
	case werr == nil && !bytes.Equal(got, want):
		tb.Errorf("%s %+v: %d bytes, want %d (first difference at %d)", name, opt, len(got), len(want), firstDiff(got, want))
	case werr != nil && gerr == nil:
		tb.Errorf("%s %+v: read %d bytes without error; klauspost fails with %v", name, opt, len(got), werr)
	}
	return st
}

// TestStreams reads the adversarial streams with chunks of many sizes.
func TestStreams(t *testing.T) {
	for _, s := range testStreams(t, 1, 400<<10) {
		inOrder := 0
		for _, opt := range []Options{{Workers: 1, ChunkSize: 1000}, {Workers: 2, ChunkSize: 4093}, {Workers: 3, ChunkSize: 20000}, {Workers: 4, ChunkSize: 1 << 20}} {
			st := checkSame(t, s.name, s.in, opt)
			inOrder += st.InOrder
			t.Logf("%s %+v: %+v", s.name, opt, st)
		}
		if s.inOrder && inOrder == 0 {
			t.Errorf("%s: no chunk decoded in order: the false boundaries were not taken, the test tests nothing", s.name)
		}
	}
}
