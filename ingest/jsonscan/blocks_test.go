package jsonscan

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// readAll reads the whole input of a Scanner made with o over r, by More,
// and returns it with the error More ended with (nil for io.EOF) and the
// bytes Count was told of.
func readAll(t *testing.T, r io.Reader, o Options) ([]byte, int64, error) {
	t.Helper()
	var counted int64
	if o.At != nil {
		o.Count = func(n int) { counted += int64(n) }
	}
	var s Scanner
	s.Init(r, o)
	defer s.Close()
	var got []byte
	for {
		err := s.More(len(s.Buf))
		if err == io.EOF {
			if s.Total() != int64(len(got)) {
				t.Errorf("Total %d, read %d", s.Total(), len(got))
			}
			return got, counted, nil
		}
		if err != nil {
			return got, counted, err
		}
		got = append(got, s.Buf...)
	}
}

// failingAt fails every read at or past off.
type failingAt struct {
	b   []byte
	off int64
}

var errDisk = errors.New("disk on fire")

func (f failingAt) ReadAt(p []byte, at int64) (int, error) {
	if at+int64(len(p)) > f.off {
		return 0, errDisk
	}
	return bytes.NewReader(f.b).ReadAt(p, at)
}

// TestReadAt checks the reading at offsets on several goroutines against
// the input: every byte in order, once, whether Size is the input's
// length, less (a file that grew after it was measured: the rest is read
// too) or more (one cut: it ends where the input does), in blocks of
// several sizes; counted as read; and a read error or the limit stops it
// with their error.
func TestReadAt(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 300_001)
	for i := range data {
		data[i] = byte('a' + r.IntN(26))
	}
	for _, bs := range []int{64, 1000, 4096, 1 << 20} {
		for _, size := range []int64{int64(len(data)), 0, 1, 12_345, int64(len(data)) + 77_777} {
			for _, readers := range []int{1, 3, 8} {
				o := Options{BlockSize: bs, FirstBlock: bs / 2, At: bytes.NewReader(data), Size: size, Readers: readers}
				got, counted, err := readAll(t, nil, o)
				if err != nil || !bytes.Equal(got, data) || counted != int64(len(data)) {
					t.Errorf("blocks of %d, size %d, %d readers: %d bytes (equal: %v), %d counted, %v; want the %d bytes",
						bs, size, readers, len(got), bytes.Equal(got, data), counted, err, len(data))
				}
			}
		}
	}
	o := Options{BlockSize: 1000, At: failingAt{data, 150_000}, Size: int64(len(data)), Readers: 4}
	if got, _, err := readAll(t, nil, o); !errors.Is(err, errDisk) || !bytes.Equal(got, data[:len(got)]) || len(got) > 150_000 {
		t.Errorf("failing read: %d bytes, %v; want at most 150000 in order, then %v", len(got), err, errDisk)
	}
	o = Options{BlockSize: 1000, At: bytes.NewReader(data), Size: int64(len(data)), Readers: 4, Limit: 100_000}
	if _, _, err := readAll(t, nil, o); !errors.Is(err, ErrTooLarge) {
		t.Errorf("past the limit: %v, want %v", err, ErrTooLarge)
	}
}
