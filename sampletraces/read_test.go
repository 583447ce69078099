package sampletraces

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

func TestReadJSON(t *testing.T) {
	dir := t.TempDir()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(`{"n": 2}`))
	zw.Close()
	files := map[string][]byte{
		"plain.json":   []byte(`{"n": 1}`),
		"packed.gz":    gz.Bytes(),
		"bad.json":     []byte(`{"n": `),
		"badgzip.json": {0x1f, 0x8b, 0},
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		file    string
		want    int
		wantErr bool
	}{
		{"plain.json", 1, false},
		{"packed.gz", 2, false},
		{"bad.json", 0, true},
		{"badgzip.json", 0, true},
		{"missing.json", 0, true},
	}
	for _, tt := range tests {
		var v struct{ N int }
		err := ReadJSON(filepath.Join(dir, tt.file), &v)
		if (err != nil) != tt.wantErr || v.N != tt.want {
			t.Errorf("%s: got %d, err %v; want %d, error %v", tt.file, v.N, err, tt.want, tt.wantErr)
		}
	}
}
