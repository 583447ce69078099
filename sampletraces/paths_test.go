package sampletraces

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPaths(t *testing.T) {
	pub, err := PublicDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(pub, "SOURCES.md")); err != nil {
		t.Errorf("public dir %s has no SOURCES.md: %v", pub, err)
	}
	if _, err := Public("no-such-trace.json.gz"); err == nil {
		t.Error("Public found a trace that does not exist")
	}
	for _, v := range RealVariants() {
		dir, err := RealDir(v)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "truth.json")); err != nil {
			t.Errorf("%s: no truth.json: %v", v, err)
		}
	}
}
