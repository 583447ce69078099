package synth

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// failWriter fails every write after the first n bytes.
type failWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failWriter) Write(p []byte) (int, error) {
	if f.n < len(p) {
		return 0, errDiskFull
	}
	f.n -= len(p)
	return len(p), nil
}

func TestWriteErrors(t *testing.T) {
	cfg := smallConfig(false, 2)
	cfg.DecodeSteps = 20
	m := newModel(&cfg)
	for _, gz := range []bool{false, true} {
		c := cfg
		c.Gzip = gz
		if _, err := writeTo(&failWriter{n: 100_000}, &c, m, 0, "x"); !errors.Is(err, errDiskFull) {
			t.Errorf("gzip=%v: write error not reported: %v", gz, err)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(file, cfg, false); err == nil || !strings.Contains(err.Error(), "output directory") {
		t.Errorf("Generate into a file: %v", err)
	}
	if _, err := Generate(filepath.Dir(file), cfg, false); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Generate into a non-empty directory: %v", err)
	}
	bad := cfg
	bad.Ranks = -1
	if _, err := Generate(t.TempDir(), bad, false); err == nil {
		t.Error("invalid config accepted")
	}
	if _, err := WriteRank(&failWriter{}, cfg, 5); err == nil {
		t.Error("rank out of range accepted")
	}
}
