package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/render"
	"kinetoscope/sampletraces"
)

func TestInspectJSON(t *testing.T) {
	names := []string{"hta-sampled-rank-0.json.gz", "tracelens-vllm-decode-full-graph.json.gz", "hta-rank-non-gpu.json.gz"}
	args := []string{"inspect", "--json"}
	for _, n := range names {
		args = append(args, testkit.Public(t, n))
	}
	var out, errb bytes.Buffer
	if code := run(args, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if errb.Len() != 0 {
		t.Errorf("progress written to a non-terminal: %q", errb.String())
	}
	var doc struct {
		Files []map[string]json.RawMessage `json:"files"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Files) != len(names) {
		t.Fatalf("%d files, want %d", len(doc.Files), len(names))
	}
	keys := []string{"path", "rank", "world_size", "bytes", "uncompressed_bytes", "events", "kernels", "memcpy",
		"memset", "launches", "annotations", "python_functions_dropped", "warnings"}
	for i, f := range doc.Files {
		for _, k := range keys {
			if _, ok := f[k]; !ok {
				t.Errorf("file %d lacks %q", i, k)
			}
		}
		var got inspectFile
		raw, _ := json.Marshal(f)
		json.Unmarshal(raw, &got)
		tr, err := ingest.ReadFile(testkit.Public(t, names[i]), ingest.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := describeTrace(tr, got.Kind)
		if got.Kernels != want.Kernels || got.Launches != want.Launches || got.PythonDropped != want.PythonDropped ||
			got.Bytes != want.Bytes || got.UncompressedBytes != want.UncompressedBytes || got.Rank != want.Rank ||
			got.Events["kernel"] != want.Events["kernel"] {
			t.Errorf("%s: got %+v, want %+v", names[i], got, want)
		}
	}
	var setAside struct {
		Kind     string   `json:"kind"`
		Warnings []string `json:"warnings"`
	}
	json.Unmarshal(mustJSON(t, doc.Files[2]), &setAside)
	if setAside.Kind != "set_aside" || len(setAside.Warnings) == 0 {
		t.Errorf("CPU-only trace: %+v", setAside)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInspectText: the text names the rank, counts the python_function
// events, and drops all but the nn.Module forwards and step marks, counted
// here with encoding/json over the raw trace.
func TestInspectText(t *testing.T) {
	path := testkit.Public(t, "tracelens-mi300-resnet-rccl.json.gz")
	code, out, errs := runCmd("inspect", path, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var raw struct {
		TraceEvents []struct {
			Cat, Name string
		} `json:"traceEvents"`
	}
	if err := sampletraces.ReadJSON(path, &raw); err != nil {
		t.Fatal(err)
	}
	python, kept := 0, 0
	for _, e := range raw.TraceEvents {
		if e.Cat == "python_function" {
			python++
			if strings.HasPrefix(e.Name, "nn.Module: ") || strings.HasSuffix(e.Name, "): execute_model") || strings.HasSuffix(e.Name, "): sample_tokens") {
				kept++
			}
		}
	}
	if kept == 0 {
		t.Fatal("the trace holds no nn.Module event: pick another")
	}
	for _, want := range []string{"rank 0 (from distributedInfo), world size 8", "python_function " + render.Grouped(int64(python)),
		"dropped " + render.Grouped(int64(python-kept)) + " python_function", "kept 2,995 kernels"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestInspectErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"traceEvents": [{"ph": "X",, }]}`), 0o644)
	code, out, errs := runCmd("inspect", bad)
	if code != 1 || !strings.Contains(out, "byte offset 28") || !strings.Contains(errs, "1 file(s) could not be read") {
		t.Errorf("exit %d, out %q, err %q", code, out, errs)
	}
	if code, _, _ := runCmd("inspect"); code != 1 {
		t.Errorf("no path: exit %d, want 1", code)
	}
	if code, _, errs := runCmd("inspect", filepath.Join(dir, "missing.json")); code != 1 || !strings.Contains(errs, "could not be read") {
		t.Errorf("missing file: exit %d %q", code, errs)
	}
}

// A file of a directory that is not a trace is said to be set aside
// unread, with why, not listed as a trace of 0 bytes; a CPU-only trace set
// aside after it was read keeps its figures.
func TestInspectSetAside(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{"notes.json": "hello", "meta.json": `{"model": "x"}`}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gz, err := os.ReadFile(testkit.Public(t, "hta-rank-non-gpu.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cpu.json.gz"), gz, 0o644)
	code, out, errs := runCmd("inspect", dir, "--quiet")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"notes.json\n  set aside, not read as a trace: not a trace: not JSON (starts with 'h')\n",
		"meta.json\n  set aside, not read as a trace: not a trace: no traceEvents key in the top-level object\n",
		"cpu.json.gz\n  set aside, rank",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "read 0 bytes") {
		t.Errorf("a file set aside unread is said to be read:\n%s", out)
	}
}
