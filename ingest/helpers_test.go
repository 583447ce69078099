package ingest

import (
	"path/filepath"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// publicDir returns the directory of the public traces.
func publicDir(t testing.TB) string {
	t.Helper()
	return testkit.PublicDir(t)
}

// publicTrace returns the path of the public trace name.
func publicTrace(t testing.TB, name string) string {
	t.Helper()
	return testkit.Public(t, name)
}

// publicTraces returns the paths of the public traces.
func publicTraces(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(publicDir(t), "*.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no public traces in %s: %v", publicDir(t), err)
	}
	return files
}

// realTraces returns the per-rank trace files of a sampletraces/real run.
func realTraces(t testing.TB, variant string) []string {
	t.Helper()
	dir, err := sampletraces.RealDir(variant)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json.gz"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no traces in %s: %v", dir, err)
	}
	return files
}

// gunzipFile returns the JSON text of a gzipped trace file.
func gunzipFile(t testing.TB, path string) []byte { return testkit.Gunzip(t, path) }

// bytesScanner returns a scanner of b alone.
func bytesScanner(b []byte) *scanner {
	s := &scanner{}
	s.InitBytes(b, 0)
	return s
}
