package ingest

import (
	"bufio"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// OpenText opens the file at path and returns its JSON text: decompressed
// when the file is gzip (by its magic bytes), as it is otherwise. Reading
// a gzip stream to its end checks its trailer. Close closes the file.
func OpenText(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 256<<10)
	if head, _ := br.Peek(2); !isGzip(head) {
		return textReader{br, f, nil}, nil
	}
	zr, err := gzip.NewReader(br)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: gzip header: %w", path, err)
	}
	return textReader{zr, f, zr}, nil
}

// textReader reads a file's text and closes the decompressor and the file.
type textReader struct {
	io.Reader
	f  *os.File
	zr *gzip.Reader
}

// Close closes the decompressor, if any, and the file.
func (t textReader) Close() error {
	if t.zr != nil {
		t.zr.Close()
	}
	return t.f.Close()
}
