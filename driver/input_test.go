package driver

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// memReader is a file held in memory, as an object store's reader is.
type memReader struct{ *bytes.Reader }

func (memReader) Close() error { return nil }

// The input's name is the run's, whatever its sources are called: files
// held in memory under their local paths analyse to the report of the
// same files read from disk, but for the Source, which is the name.
func TestAnalyzeInputName(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*.pt.trace.json.gz"))
	if err != nil || len(files) != 2 {
		t.Fatalf("eager sample: %v, %v", files, err)
	}
	want, err := Analyze(ingest.FromPaths(files), Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := ingest.Input{Name: "my run"}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		in.Sources = append(in.Sources, ingest.Source{Name: f, Size: int64(len(b)),
			Open: func() (ingest.SourceReader, error) { return memReader{bytes.NewReader(b)}, nil }})
	}
	got, err := Analyze(in, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Report.Source != "my run" || want.Report.Source != strings.Join(files, " ") {
		t.Errorf("sources %q and %q, want the input's names", got.Report.Source, want.Report.Source)
	}
	got.Report.Source = want.Report.Source
	a, err := EncodeReport(got.Report)
	if err != nil {
		t.Fatal(err)
	}
	b, err := EncodeReport(want.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("the report of the files in memory differs from theirs on disk")
	}
	in.Sources = in.Sources[:0]
	if _, err := Read(in, Options{}); err == nil {
		t.Error("Read of an input without sources succeeded")
	}
}
