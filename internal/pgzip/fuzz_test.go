package pgzip

import (
	"compress/flate"
	"testing"
)

// FuzzReader compares the Reader with klauspost's on gzip files built
// from the fuzzer's input (see fuzzStream) and on the input itself as a
// gzip file, with small chunks: the same output, or an error for both.
func FuzzReader(f *testing.F) {
	for i, s := range testStreams(f, 7, 6000) {
		f.Add(uint8(0), uint16(100+i*37), s.in)
	}
	f.Add(uint8(1), uint16(64), []byte("seed text"))
	f.Add(uint8(4), uint16(300), []byte("another seed, with a flush"))
	f.Fuzz(func(t *testing.T, mode uint8, chunk uint16, data []byte) {
		in := fuzzStream(t, mode, data)
		opt := Options{Workers: 1 + int(mode>>4)%3, ChunkSize: 16 + int(chunk)%4096}
		checkSame(t, "fuzz", in, opt)
	})
}

// fuzzStream builds a gzip file from data as mode says: data itself, or
// trace-like text drawn from data compressed in one of the adversarial
// ways of testStreams, or such a stream with one byte of data changed.
func fuzzStream(tb testing.TB, mode uint8, data []byte) []byte {
	var seed uint64
	for _, b := range data {
		seed = seed*131 + uint64(b)
	}
	n := min(1000+len(data)*16, 24<<10)
	text := traceText(seed, n)
	switch mode & 15 {
	case 0:
		return data
	case 1:
		return gzipOf(tb, segment{text: text, level: 1 + int(seed%9)})
	case 2:
		return gzipOf(tb, segment{text: text, level: 6, flush: 1 + int(seed%2000)})
	case 3:
		return gzipOf(tb, falseBoundaries(tb, text, seed, 500+int(seed%5000))...)
	case 4:
		return manyMembers(tb, text, 100+int(seed%3000))
	case 5:
		return gzipOf(tb, segment{text: text, level: flate.NoCompression}, segment{text: text, level: flate.HuffmanOnly})
	}
	// A stream with a byte changed, or cut.
	in := gzipOf(tb, segment{text: text, level: 6, flush: int(seed % 3000)})
	if len(data) == 0 {
		return in
	}
	i := int(seed % uint64(len(in)))
	if mode&15 == 15 {
		return in[:i]
	}
	in[i] ^= data[0] | 1
	return in
}
