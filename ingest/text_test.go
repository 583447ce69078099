package ingest

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/gzip"
)

func TestOpenText(t *testing.T) {
	text := []byte(`{"traceEvents": []}`)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(text)
	zw.Close()
	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content []byte
		wantErr bool
	}{
		{"plain.json", text, false},
		{"trace.json.gz", gz.Bytes(), false},
		{"cut.json.gz", gz.Bytes()[:gz.Len()-4], true}, // no trailer
	} {
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, tc.content, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := OpenText(p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got, err := io.ReadAll(r)
		r.Close()
		if (err != nil) != tc.wantErr || (!tc.wantErr && !bytes.Equal(got, text)) {
			t.Errorf("%s: %q, %v; want the text, error %v", tc.name, got, err, tc.wantErr)
		}
	}
}
