package ingest

import (
	"os"
	"path/filepath"
	"testing"
)

// publicDir returns ../shared/traces/public relative to the repository root.
func publicDir(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "traces", "public")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test directory")
		}
		dir = parent
	}
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
