package bench

import (
	"bytes"
	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"os"
	"path/filepath"
	"testing"
)

func TestPeakRSS(t *testing.T) {
	resetPeakRSS()
	before := peakRSS()
	buf := make([]byte, 64<<20)
	for i := range buf {
		buf[i] = 1
	}
	after := peakRSS()
	if before <= 0 || after-before < 60<<20 {
		t.Errorf("peak RSS %d before, %d after touching 64 MiB", before, after)
	}
}

// TestBuildTrace builds traces of a real one repeated three times in both
// layouts and checks that each holds three times its events, with the
// copies' launches and kernels still joined by distinct correlation ids,
// and that both layouts read the same.
func TestBuildTrace(t *testing.T) {
	src := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	one, err := ingest.ReadFile(src, ingest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var reads []*ingest.Trace
	for _, layout := range []string{LayoutKineto, LayoutCompact} {
		out := filepath.Join(t.TempDir(), layout+".json.gz")
		if err := buildTrace(src, out, layout, 3); err != nil {
			t.Fatal(err)
		}
		tr, err := ingest.ReadFile(out, ingest.Options{})
		if err != nil {
			t.Fatalf("%s: %v", layout, err)
		}
		if tr.Counts.Events != 3*one.Counts.Events || tr.GPU.Len() != 3*one.GPU.Len() || tr.Launches.Len() != 3*one.Launches.Len() {
			t.Errorf("%s: %d events, %d GPU, %d launches; want 3 x %d, %d, %d", layout, tr.Counts.Events, tr.GPU.Len(),
				tr.Launches.Len(), one.Counts.Events, one.GPU.Len(), one.Launches.Len())
		}
		corr := map[int64]bool{}
		for _, l := range tr.Launches.All() {
			corr[l.Correlation] = true
		}
		if len(corr) < 3*one.Launches.Len()*9/10 {
			t.Errorf("%s: %d distinct correlation ids among %d launches: the copies collide", layout, len(corr), tr.Launches.Len())
		}
		last := tr.GPU.At(tr.GPU.Len() - 1)
		if first := tr.GPU.At(0); last.Start-first.Start < 2*(one.GPU.At(one.GPU.Len()-1).Start-one.GPU.At(0).Start) {
			t.Errorf("%s: the copies' timestamps are not shifted past each other", layout)
		}
		reads = append(reads, tr)
	}
	if a, b := reads[0], reads[1]; a.Counts.Events != b.Counts.Events || a.GPU.Len() != b.GPU.Len() || *a.GPU.At(7) != *b.GPU.At(7) {
		t.Errorf("the Kineto and compact layouts read differently")
	}
}

// TestBenchDirectory checks the phases on a profile directory: gunzip and
// ingest cover every trace file in it, analyze runs the whole pipeline.
func TestBenchDirectory(t *testing.T) {
	dir := t.TempDir()
	var one Result // the sums over the files one by one
	for _, name := range []string{"hta-sampled-rank-0.json.gz", "hta-sampled-rank-1.json.gz"} {
		src := testkit.Public(t, name)
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		var r Result
		if err := gunzipAll(src, &r); err != nil {
			t.Fatal(err)
		}
		if err := ingestOnce(src, &r); err != nil {
			t.Fatal(err)
		}
		one.UncompressedBytes += r.UncompressedBytes
		one.Bytes += r.Bytes
		one.Events += r.Events
	}
	var all Result
	if err := gunzipAll(dir, &all); err != nil {
		t.Fatal(err)
	}
	if err := ingestOnce(dir, &all); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		what      string
		got, want int64
	}{
		{"uncompressed bytes", all.UncompressedBytes, one.UncompressedBytes},
		{"compressed bytes", all.Bytes, one.Bytes},
		{"events", all.Events, one.Events},
	}
	for _, tc := range tests {
		if tc.got != tc.want || tc.want == 0 {
			t.Errorf("%s of the directory: %d, want %d", tc.what, tc.got, tc.want)
		}
	}
	for _, phase := range []string{"analyze", "ingest", "gunzip"} {
		if err := runPhase(phase, dir, "", "", 2, 2); err != nil {
			t.Errorf("--phase %s on a directory: %v", phase, err)
		}
	}
	if err := runPhase("nope", dir, "", "", 2, 2); err == nil {
		t.Error("--phase nope: no error")
	}
}

// TestAnalyzeWithReaders checks that the bench phases that time the
// readers do the same work: the JSON report read with the parallel gzip
// reader, and with the events parsed in chunks, is byte for byte the one
// read with klauspost's and parsed in order.
func TestAnalyzeWithReaders(t *testing.T) {
	for _, name := range []string{"hta-diff-control-a100.json.gz", "tracelens-mi300-resnet-rccl.json.gz"} {
		path := testkit.Public(t, name)
		var seq bytes.Buffer
		if err := analyzeWith(path, ingest.Options{GzipWorkers: 1, ParseWorkers: 1}, &seq); err != nil {
			t.Fatal(err)
		}
		for what, opt := range map[string]ingest.Options{"parallel gzip": gzipOptions(3), "parse in chunks": parseOptions(3)} {
			var par bytes.Buffer
			if err := analyzeWith(path, opt, &par); err != nil {
				t.Fatal(err)
			}
			if seq.Len() == 0 || !bytes.Equal(seq.Bytes(), par.Bytes()) {
				t.Errorf("%s, %s: reports of %d and %d bytes differ", name, what, seq.Len(), par.Len())
			}
		}
	}
}
