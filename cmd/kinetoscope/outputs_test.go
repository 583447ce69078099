package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/driver"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// updateOutputs rewrites the expected outputs (testdata/outputs/ and
// testdata/outputs.sha256) from the outputs of the code as it is: run it
// after a change, and `git diff cmd/kinetoscope/testdata` shows every
// output the change altered, line by line.
var updateOutputs = flag.Bool("update-outputs", false, "rewrite testdata/outputs/ and testdata/outputs.sha256")

// The expected outputs: text outputs (reports, diffs) as files of their own
// in outputsDir, so that a change shows as a text diff; images (charts),
// whose bytes do not read as text, as SHA-256 sums in imagesFile.
const (
	outputsDir = "testdata/outputs"
	imagesFile = "testdata/outputs.sha256"
)

// outputCase is one command whose standard output is compared.
type outputCase struct {
	name string
	args []string
	// image says the output is a chart, compared by its SHA-256.
	image bool
}

// file is the name of the case's expected-output file in outputsDir.
func (c outputCase) file() string { return strings.ReplaceAll(c.name, " ", "_") + ".txt" }

// outputCases lists every report format, chart kind and diff of every
// real sample and every public trace with GPU events.
func outputCases(t *testing.T) []outputCase {
	var runs []string
	for _, v := range sampletraces.RealAll() {
		runs = append(runs, testkit.Real(t, v))
	}
	pub := testkit.PublicDir(t)
	files, err := filepath.Glob(filepath.Join(pub, "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.Contains(f, "non-gpu") && !strings.Contains(f, "no-distributed-info") {
			runs = append(runs, f)
		}
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range runs { // relative, so that the outputs name the same paths in any clone
		if runs[i], err = filepath.Rel(wd, p); err != nil {
			t.Fatal(err)
		}
	}
	pub, err = filepath.Rel(wd, pub)
	if err != nil {
		t.Fatal(err)
	}
	var cs []outputCase
	for _, p := range runs {
		id := filepath.Base(p)
		for _, f := range driver.ReportFormats() {
			cs = append(cs, outputCase{id + " analyze " + f, []string{"analyze", "--format", f, p}, false})
		}
		for _, k := range driver.RunChartKinds() {
			cs = append(cs, outputCase{id + " chart " + k, []string{"chart", "--kind", k, p}, true})
		}
	}
	pairs := [][2]string{
		{runs[0], runs[1]}, {runs[0], runs[3]}, {runs[0], runs[2]},
		{filepath.Join(pub, "tracelens-h100-qwen1.5-0.5b.json.gz"), filepath.Join(pub, "tracelens-mi300-qwen1.5-0.5b.json.gz")},
		{filepath.Join(pub, "hta-diff-control-a100.json.gz"), filepath.Join(pub, "hta-diff-test-v100.json.gz")},
	}
	for _, pr := range pairs {
		id := filepath.Base(pr[0]) + " vs " + filepath.Base(pr[1])
		for _, f := range driver.DiffFormats() {
			cs = append(cs, outputCase{id + " diff " + f, []string{"diff", "--format", f, pr[0], pr[1]}, false})
		}
		for _, k := range driver.DiffChartKinds() {
			cs = append(cs, outputCase{id + " chart " + k, []string{"chart", "--kind", k, pr[0], pr[1]}, true})
		}
	}
	// The cost model's estimate (--predict, an extrapolation beside an
	// interpolation) and the diff of two runs' fits, on the sweeps.
	sweep, marlin := runOf(runs, "batch_sweep"), runOf(runs, "marlin_sweep")
	for _, w := range []string{"batch=48,context=3000", "batch=128,context=8192"} {
		cs = append(cs, outputCase{"batch_sweep analyze csv-costmodel predict " + w, []string{"analyze", "--format", "csv-costmodel", "--predict", w, sweep}, false})
	}
	cs = append(cs, outputCase{"batch_sweep vs marlin_sweep diff table", []string{"diff", "--format", "table", sweep, marlin}, false})
	return cs
}

// runOf returns the run of runs whose base name is name.
func runOf(runs []string, name string) string {
	for _, r := range runs {
		if filepath.Base(r) == name {
			return r
		}
	}
	return name
}

// TestOutputsUnchanged runs every output of outputCases and compares it with
// the expected one: text outputs with their files in outputsDir, charts
// with their SHA-256 in imagesFile, written by the code before the change.
// The outputs are byte-identical, or the difference is a fix that the
// commit updating the expected outputs names (-update-outputs rewrites
// them; git diff then shows what changed).
func TestOutputsUnchanged(t *testing.T) {
	texts, sums := map[string]string{}, map[string]string{}
	for _, c := range outputCases(t) {
		code, out, errs := runCmd(c.args...)
		if code != 0 {
			out = fmt.Sprintf("exit %d: %s", code, errs)
		}
		if c.image {
			sum := sha256.Sum256([]byte(out))
			sums[c.name] = hex.EncodeToString(sum[:])
		} else {
			texts[c.file()] = out
		}
	}
	if *updateOutputs {
		writeOutputs(t, texts, sums)
		return
	}
	changed := changedTexts(t, texts)
	want := readImageSums(t)
	for name, sum := range sums {
		if w, ok := want[name]; !ok || w != sum {
			changed = append(changed, name+": image differs")
		}
	}
	for name := range want {
		if _, ok := sums[name]; !ok {
			changed = append(changed, name+" (no longer produced)")
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Errorf("%d of %d outputs differ from %s and %s (go test ./cmd/kinetoscope -run TestOutputsUnchanged -update-outputs rewrites them; git diff shows what changed):\n%s",
			len(changed), len(texts)+len(sums), outputsDir, imagesFile, strings.Join(changed, "\n"))
	}
}

// changedTexts compares the text outputs with their files in outputsDir and
// describes each that differs by its first differing line.
func changedTexts(t *testing.T, texts map[string]string) []string {
	var changed []string
	for file, got := range texts {
		b, err := os.ReadFile(filepath.Join(outputsDir, file))
		if err != nil {
			changed = append(changed, file+": no expected output")
			continue
		}
		if want := string(b); want != got {
			changed = append(changed, file+": "+firstDifference(want, got))
		}
	}
	files, err := os.ReadDir(outputsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, ok := texts[f.Name()]; !ok {
			changed = append(changed, f.Name()+" (no longer produced)")
		}
	}
	return changed
}

// firstDifference says where two texts first differ: the line number and
// the two lines.
func firstDifference(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := range max(len(w), len(g)) {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl || i >= len(w) || i >= len(g) {
			return fmt.Sprintf("line %d: want %.200q, got %.200q (%d lines, want %d)", i+1, wl, gl, len(g), len(w))
		}
	}
	return "differs"
}

// writeOutputs rewrites outputsDir (every file of it, stale ones removed)
// and imagesFile.
func writeOutputs(t *testing.T, texts, sums map[string]string) {
	if err := os.RemoveAll(outputsDir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(outputsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for file, out := range texts {
		if err := os.WriteFile(filepath.Join(outputsDir, file), []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	if err := os.WriteFile(imagesFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readImageSums reads imagesFile: a SHA-256 and a case name a line.
func readImageSums(t *testing.T) map[string]string {
	f, err := os.Open(imagesFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if ok {
			sums[name] = sum
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return sums
}
