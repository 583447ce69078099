package analyze

import (
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// sameAsRegexp checks that namePattern answers as regexp does for pat on
// each name; it returns false, checking nothing, when regexp rejects pat.
func sameAsRegexp(tb testing.TB, pat string, names ...string) bool {
	tb.Helper()
	re, err := regexp.Compile(pat)
	if err != nil {
		return false
	}
	p, err := compileNamePattern(pat)
	if err != nil {
		tb.Fatalf("%q compiles with regexp but not here: %v", pat, err)
	}
	for _, n := range names {
		if got, want := p.MatchString(n), re.MatchString(n); got != want {
			tb.Fatalf("pattern %q, name %q: got %v, regexp says %v", pat, n, got, want)
		}
	}
	return true
}

// TestNamePatternCases compares namePattern with regexp on patterns of each
// shape it treats apart: literals, case folding, factored prefixes,
// anchors, classes, flags set midway, and names beyond ASCII.
func TestNamePatternCases(t *testing.T) {
	patterns := []string{
		"", ".", "marlin", "(?i)marlin|machete", "(?i)flash_?attn|flash_fwd|flash::",
		"ncclDevKernel_AllReduce|ncclKernel_AllReduce|ncclSymk\\w*AllReduce",
		"cross_device_reduce_(1|2)stage|one_shot|(?i)quickreduce|QuickAllReduce",
		"(?i)nvjet|(^|[^b])gemm|^Cijk_|bmm", "(?i)_mla\\b|::mla::", "(?i)k", "(?i)s", "K", "[a-c]x",
		"(?i)[a-c]x", "^reduce_segments$", "(?i)^(nccl:)?_?(send|recv)", "a(?i:b)c", "(?i)a(?-i:B)c",
		"\ufffd", "(?i)é", "x?y?z?", "(a|b)(c|d)(e|f)", "(?i)all_?reduce", "(?i)k\\w*x", "(?i)^_?k", "(ab)+c",
		"(?i)nccl\\w*Generic", "deep_ep::\\w+::(dispatch|combine)",
	}
	names := []string{
		"", "x", "marlin", "Marlin_gemm", "MARLIN", "machete", "flash_fwd_kernel", "FLASH_ATTN", "flashattn",
		"ncclDevKernel_AllReduce_Sum_f16", "ncclSymkAllReduce", "ncclSymk_x_AllReduce", "ncclkernel_allreduce",
		"cross_device_reduce_1stage", "cross_device_reduce_3stage", "QUICKREDUCE", "quickallreduce",
		"sm90_gemm", "bgemm", "gemm_x", "Cijk_Ailk", "xCijk_", "bmm", "foo_mla", "foo_mla_bar", "a::mla::b",
		"\u212a", "\u017f", "k", "S", "bx", "Bx", "reduce_segments", "reduce_segments_x", "nccl:send", "_recv",
		"xsend", "abc", "aBc", "ABC", "AbC", "aBC", "\xff", "a\xffb", "\ufffd", "É", "é", "e\u0301", "ace",
		"bdf", "acg", "All_Reduce", "ALLREDUCE", "all-reduce", "\u212a_x", "_\u212a", "ababc", "abc",
		"ncclDevKernel_Generic", "NCCLxGENERIC", "\u212aNCCL_Generic", "deep_ep::intranode::dispatch",
	}
	for _, pat := range patterns {
		if !sameAsRegexp(t, pat, names...) {
			t.Fatalf("%q does not compile", pat)
		}
	}
}

// TestNamePatternLiterals checks that the rules' big alternations become
// literals: the point of namePattern is that they skip the regexp engine.
func TestNamePatternLiterals(t *testing.T) {
	for _, c := range []struct {
		pattern      string
		exact, fold  int
		restExpected bool
	}{
		{"(?i)marlin|machete", 0, 2, false},
		{"cross_device_reduce_(1|2)stage|(?i)quickreduce", 2, 1, false},
		{"ncclDevKernel_AllReduce|ncclKernel_AllReduce|ncclSymk\\w*AllReduce", 2, 0, true},
		{"(?i)nvjet|(^|[^b])gemm|bmm", 0, 2, true},
		{"(?i)^x", 0, 0, true},
	} {
		p, err := compileNamePattern(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.exact) != c.exact || len(p.folded) != c.fold || (len(p.rest) > 0) != c.restExpected {
			t.Errorf("%q: %d exact %v, %d folded %v, rest %v; want %d, %d, rest %v",
				c.pattern, len(p.exact), p.exact, len(p.folded), p.folded, p.rest, c.exact, c.fold, c.restExpected)
		}
	}
}

// TestNamePatternRealNames compares namePattern with regexp for every rule
// pattern and collective restriction over every GPU event, annotation and
// collective name of the real samples and the public traces.
func TestNamePatternRealNames(t *testing.T) {
	rules, err := DefaultRules()
	if err != nil {
		t.Fatal(err)
	}
	var pats []string
	for _, r := range rules {
		pats = append(pats, r.Pattern, r.Collective)
	}
	pats = append(pats, trainingPattern, samplerPattern)
	names := map[string]bool{}
	paths, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range sampletraces.RealVariants() {
		paths = append(paths, testkit.Real(t, v))
	}
	for _, path := range paths {
		set, err := ingest.Open(path, ingest.Options{})
		if err != nil {
			if st, serr := os.Stat(path); serr == nil && !st.IsDir() {
				t.Fatal(err)
			}
			continue
		}
		for _, tr := range set.Traces {
			for _, e := range tr.GPU.All() {
				names[tr.Name(e.Name)] = true
			}
			for _, a := range tr.Annotations.All() {
				names[tr.Name(a.Name)] = true
			}
			for _, c := range tr.Collectives {
				names[tr.Name(c.Name)] = true
			}
		}
	}
	if len(names) < 500 {
		t.Fatalf("only %d names read from %d traces", len(names), len(paths))
	}
	list := slices.Collect(maps.Keys(names))
	for _, pat := range pats {
		if !sameAsRegexp(t, pat, list...) {
			t.Fatalf("%q does not compile", pat)
		}
	}
	t.Logf("%d patterns over %d names", len(pats), len(names))
}

// TestNamePatternRandom compares namePattern with regexp on patterns and
// names made at random from pieces that exercise its cases: literals,
// flags, anchors, classes, repetitions, and letters that fold beyond ASCII.
func TestNamePatternRandom(t *testing.T) {
	pieces := []string{"a", "b", "k", "K", "(?i)", "(?-i)", "|", "(", ")", "?", "*", "+", "\\w", "^", "$",
		"[a-c]", "[^b]", "{2,3}", "(?:", "\\b", ".", "_", "\u212a", "\u017f", "s", "é", "\xff"}
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(n int) string {
		var sb strings.Builder
		for range rng.IntN(n) {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return sb.String()
	}
	checked := 0
	for range 40000 {
		if sameAsRegexp(t, word(24), word(16), word(16), word(16), word(16)) {
			checked++
		}
	}
	if checked < 5000 {
		t.Fatalf("only %d random patterns compiled", checked)
	}
}

// FuzzNamePattern compares namePattern with regexp on any pattern and name.
func FuzzNamePattern(f *testing.F) {
	f.Add("(?i)marlin|machete", "Marlin")
	f.Add("cross_device_reduce_(1|2)stage|(?i)quick", "QUICK")
	f.Add("nccl(Dev|Sym)Kernel_(AllReduce|AllGather)|x\\w*", "ncclSymKernel_AllGather")
	f.Add("(?i)k", "\u212a")
	f.Add("a(?i:b)c|(?i)d(?-i:E)", "aBc")
	f.Add("(?i)k\\w*x|^Cijk_", "\u212a_x")
	f.Fuzz(func(t *testing.T, pat, name string) { sameAsRegexp(t, pat, name) })
}
