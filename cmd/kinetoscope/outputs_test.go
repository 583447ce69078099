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

// updateOutputs rewrites testdata/outputs.sha256 from the outputs of the
// code as it is: run it before a change that must keep every output, and
// the test then holds the change to them.
var updateOutputs = flag.Bool("update-outputs", false, "rewrite testdata/outputs.sha256")

const outputsFile = "testdata/outputs.sha256"

// outputCase is one command whose standard output is hashed.
type outputCase struct {
	name string
	args []string
}

// outputCases lists every report format, chart kind and diff of every
// real sample and every public trace with GPU events.
func outputCases(t *testing.T) []outputCase {
	var runs []string
	for _, v := range append(sampletraces.RealVariants(), sampletraces.RealStyles()...) {
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
			cs = append(cs, outputCase{id + " analyze " + f, []string{"analyze", "--format", f, p}})
		}
		for _, k := range driver.RunChartKinds() {
			cs = append(cs, outputCase{id + " chart " + k, []string{"chart", "--kind", k, p}})
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
			cs = append(cs, outputCase{id + " diff " + f, []string{"diff", "--format", f, pr[0], pr[1]}})
		}
		for _, k := range driver.DiffChartKinds() {
			cs = append(cs, outputCase{id + " chart " + k, []string{"chart", "--kind", k, pr[0], pr[1]}})
		}
	}
	return cs
}

// TestOutputsUnchanged runs every output of outputCases and compares each
// one's SHA-256 with testdata/outputs.sha256, written by the code before a
// refactoring: the outputs are byte-identical, or the difference is a fix
// that the commit updating the file names.
func TestOutputsUnchanged(t *testing.T) {
	got := map[string]string{}
	for _, c := range outputCases(t) {
		code, out, errs := runCmd(c.args...)
		if code != 0 {
			out = fmt.Sprintf("exit %d: %s", code, errs)
		}
		sum := sha256.Sum256([]byte(out))
		got[c.name] = hex.EncodeToString(sum[:])
	}
	if *updateOutputs {
		writeOutputSums(t, got)
		return
	}
	want := readOutputSums(t)
	var changed []string
	for name, sum := range got {
		if w, ok := want[name]; !ok || w != sum {
			changed = append(changed, name)
		}
	}
	for name := range want {
		if _, ok := got[name]; !ok {
			changed = append(changed, name+" (no longer produced)")
		}
	}
	sort.Strings(changed)
	if len(changed) > 0 {
		t.Errorf("%d of %d outputs differ from %s (go test ./cmd/kinetoscope -run TestOutputsUnchanged -update-outputs rewrites it):\n%s",
			len(changed), len(got), outputsFile, strings.Join(changed, "\n"))
	}
}

func writeOutputSums(t *testing.T, sums map[string]string) {
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "%s  %s\n", sums[n], n)
	}
	if err := os.WriteFile(outputsFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readOutputSums(t *testing.T) map[string]string {
	f, err := os.Open(outputsFile)
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
