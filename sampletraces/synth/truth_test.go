package synth

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"

	"kinetoscope/analyze"
)

func TestAllReduceShare(t *testing.T) {
	for _, tc := range []struct {
		share float64
		graph bool
	}{{0.3, false}, {0.515, true}, {0.8, false}} {
		cfg := smallConfig(tc.graph, 1)
		cfg.Ranks, cfg.Layers, cfg.AllReduceShare, cfg.SkewUS = 4, 5, tc.share, 25
		tr := newTruthFromRun(t, cfg)
		var waits, last int64
		for _, rt := range tr.Ranks {
			for i, st := range rt.Steps {
				if tr.Steps[i].Phase != "decode" {
					continue
				}
				if st.GPUNS != tr.Ranks[0].Steps[i].GPUNS {
					t.Errorf("share %g: step %d GPU time differs between ranks: %d vs %d", tc.share, i, st.GPUNS, tr.Ranks[0].Steps[i].GPUNS)
				}
				ar := st.BucketNS[0]
				transfer := ar - st.AllReduceWaitNS
				if got := float64(transfer) / float64(st.GPUNS); math.Abs(got-tc.share) > 1e-6 {
					t.Errorf("share %g: rank %d step %d transfer share %.8f", tc.share, rt.Rank, i, got)
				}
			}
			c := rt.Collectives["allreduce"]
			if c.KernelNS != c.WaitNS+c.TransferNS {
				t.Errorf("rank %d: kernel %d != wait %d + transfer %d", rt.Rank, c.KernelNS, c.WaitNS, c.TransferNS)
			}
			waits += c.WaitNS
			last += int64(c.LastArrivals)
		}
		if waits == 0 || last < int64(tr.Ranks[0].Collectives["allreduce"].Count) {
			t.Errorf("share %g: no skew (wait %d) or missing last arrivals (%d)", tc.share, waits, last)
		}
	}
}

// newTruthFromRun generates cfg into a temporary directory.
func newTruthFromRun(t *testing.T, cfg Config) *Truth {
	t.Helper()
	tr, err := Generate(t.TempDir(), cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestDeterministic(t *testing.T) {
	cfg := smallConfig(false, 2)
	write := func(c Config, r int) []byte {
		var b bytes.Buffer
		if _, err := WriteRank(&b, c, r); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := write(cfg, 1), write(cfg, 1)
	if !bytes.Equal(a, b) {
		t.Fatal("same seed wrote different traces")
	}
	other := cfg
	other.Seed++
	if bytes.Equal(a, write(other, 1)) {
		t.Error("different seeds wrote the same trace")
	}
	if bytes.Equal(a, write(cfg, 2)) {
		t.Error("different ranks wrote the same trace")
	}
	d1, d2 := t.TempDir(), t.TempDir()
	for _, d := range []string{d1, d2} {
		if _, err := Generate(d, cfg, false); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{FileName(&cfg, 0), TruthFile} {
		x, _ := os.ReadFile(filepath.Join(d1, name))
		y, _ := os.ReadFile(filepath.Join(d2, name))
		if len(x) == 0 || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two runs with the same seed", name)
		}
	}
}

func TestResolveTargetSize(t *testing.T) {
	cfg := smallConfig(false, 4)
	cfg.TargetSize = 6_000_000
	got, err := Resolve(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got.DecodeSteps < 2 {
		t.Fatalf("resolved %d decode steps", got.DecodeSteps)
	}
	var n countWriter
	if _, err := WriteRank(&n, got, 0); err != nil {
		t.Fatal(err)
	}
	if d := math.Abs(float64(n)-6e6) / 6e6; d > 0.05 {
		t.Errorf("target 6 MB, wrote %d bytes (%.1f%% off)", n, d*100)
	}
}

// countWriter counts bytes.
type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) {
	*c += countWriter(len(p))
	return len(p), nil
}

func TestValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("default config invalid: %v", err)
	}
	for name, mut := range map[string]func(*Config){
		"model":   func(c *Config) { c.Model = "llama" },
		"ranks":   func(c *Config) { c.Ranks = 0 },
		"layers":  func(c *Config) { c.Layers = 0 },
		"share0":  func(c *Config) { c.AllReduceShare = 0 },
		"share1":  func(c *Config) { c.AllReduceShare = 1 },
		"python":  func(c *Config) { c.PythonFunctions = -1 },
		"batch":   func(c *Config) { c.Batch = 0 },
		"steps":   func(c *Config) { c.PrefillSteps, c.DecodeSteps = 0, 0 },
		"skew":    func(c *Config) { c.SkewUS = -1 },
		"target":  func(c *Config) { c.TargetSize = -5 },
		"prompt":  func(c *Config) { c.PromptLen = 0 },
		"decode-": func(c *Config) { c.DecodeSteps = -1 },
	} {
		c := DefaultConfig()
		mut(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: invalid config accepted", name)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1GB", 1e9, true}, {"500MB", 5e8, true}, {"2GiB", 2 << 30, true}, {"64kib", 64 << 10, true},
		{"12345", 12345, true}, {"1.5G", 1.5e9, true}, {" 3 MB ", 3e6, true},
		{"", 0, false}, {"GB", 0, false}, {"-1MB", 0, false}, {"1XB", 0, false}, {"1e30", 0, false},
	} {
		got, err := ParseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestCatalog(t *testing.T) {
	c := newCatalog()
	seen := map[string]bool{}
	for _, k := range c.all() {
		if !jsonSafe(k.name) {
			t.Errorf("kernel name needs escaping: %q", k.name)
		}
		if _, ok := analyze.BucketByID(analyze.BucketID(k.bucket)); !ok {
			t.Errorf("%s: unknown bucket %q", k.name, k.bucket)
		}
		seen[k.bucket] = true
	}
	for _, b := range bucketOrder() {
		if !seen[b] {
			t.Errorf("bucket %s in bucketOrder but used by no kernel", b)
		}
	}
	m := newModel(&Config{Model: "kimi-k2.5", Layers: 4, PythonFunctions: 3})
	for _, p := range []phase{phasePrefill, phaseDecode} {
		for _, l := range m.launches(p) {
			for _, f := range append(l.stack, l.cpuOp) {
				if !jsonSafe(f) {
					t.Errorf("frame needs escaping: %q", f)
				}
			}
		}
	}
}

func TestCutChain(t *testing.T) {
	stack := []string{"a", "nn.Module: B_12", "c"}
	for _, tc := range []struct {
		k     int
		first string
	}{{0, ""}, {2, "nn.Module: B_12"}, {3, "a"}, {6, "torch/nn/modules/module.py(1773): _wrapped_call_impl"}} {
		got := cutChain(stack, tc.k)
		if len(got) != tc.k || tc.k > 0 && (got[0].name != tc.first || got[tc.k-1].name != "c") {
			t.Errorf("cutChain(k=%d) = %v", tc.k, got)
		}
	}
	if moduleID("nn.Module: B_12") != 12 || moduleID("c") != -1 {
		t.Error("moduleID")
	}
}
