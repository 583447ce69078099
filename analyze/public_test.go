package analyze

import (
	"os"
	"path/filepath"
	"testing"

	"kinetoscope/ingest"
)

// repoRoot walks up from the test directory to go.mod.
func repoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("go.mod not found")
		}
		dir = up
	}
}

func publicTrace(t testing.TB, name string) string {
	return filepath.Join(repoRoot(t), "..", "shared", "traces", "public", name)
}

// analyzePublic ingests and analyses one public trace.
func analyzePublic(t testing.TB, name string, opt Options) *Report {
	t.Helper()
	set, err := ingest.Open(publicTrace(t, name), ingest.Options{})
	if err != nil {
		t.Fatalf("open %s: %v", name, err)
	}
	r, err := Analyze(set, opt)
	if err != nil {
		t.Fatalf("analyze %s: %v", name, err)
	}
	return r
}
