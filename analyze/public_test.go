package analyze

import (
	"path/filepath"
	"sync"
	"testing"

	"kinetoscope/ingest"
	"kinetoscope/internal/testkit"
)

// analyzePublic ingests and analyses one public trace.
func analyzePublic(t testing.TB, name string) *Report {
	t.Helper()
	_, r := analyzePath(t, testkit.Public(t, name))
	return r
}

// loaded is one path ingested and analysed with default options.
type loaded struct {
	once sync.Once
	set  *ingest.Set
	r    *Report
	err  error
}

// loads holds, per path, what this test binary ingested and analysed, so
// that tests sharing a trace read it once. Tests must not modify it.
var loads sync.Map // path -> *loaded

// analyzePath ingests and analyses a file, directory or archive with
// default options, once per test binary.
func analyzePath(t testing.TB, path string) (*ingest.Set, *Report) {
	t.Helper()
	v, _ := loads.LoadOrStore(path, &loaded{})
	l := v.(*loaded)
	l.once.Do(func() {
		if l.set, l.err = ingest.Open(path, ingest.Options{}); l.err == nil {
			l.r, l.err = Analyze(l.set, Options{})
		}
	})
	if l.err != nil {
		t.Fatalf("%s: %v", path, l.err)
	}
	return l.set, l.r
}

func TestPublicTracesAnalyze(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testkit.PublicDir(t), "*.json.gz"))
	if err != nil || len(files) < 10 {
		t.Fatalf("public traces: %v, %d files", err, len(files))
	}
	for _, f := range files {
		set, r := analyzePath(t, f)
		if len(r.Ranks) != len(set.Traces) {
			t.Errorf("%s: %d ranks for %d traces", f, len(r.Ranks), len(set.Traces))
		}
		for _, rk := range r.Ranks {
			var ev int
			for _, s := range rk.Steps {
				ev += s.Kernels
			}
			if ev+rk.Outside.Count == 0 {
				t.Errorf("%s rank %d: no GPU event analysed", f, rk.Rank)
			}
		}
	}
}

// TestFullGraphDecodeStep: one decode step of batch 32 that holds every
// kernel of the graph replay, although they run after the CPU annotation.
func TestFullGraphDecodeStep(t *testing.T) {
	set, r := analyzePath(t, testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	tr := set.Traces[0]
	var graphCorr int64 = -1
	for _, l := range tr.Launches.All() {
		if tr.Name(l.Name) == "hipGraphLaunch" {
			graphCorr = l.Correlation
		}
	}
	replayed := 0
	for _, ev := range tr.GPU.All() {
		if ev.Correlation == graphCorr {
			replayed++
		}
	}
	if replayed < 400 {
		t.Fatalf("graph replay has %d kernels, want > 400", replayed)
	}
	rk := r.Ranks[0]
	if len(rk.Steps) != 1 || rk.Decode.Steps != 1 {
		t.Fatalf("steps %d, decode %d; want 1 decode step", len(rk.Steps), rk.Decode.Steps)
	}
	s := rk.Steps[0]
	if s.Phase != PhaseDecode || s.Batch != 32 || s.GraphLaunches != 1 || s.Kernels != tr.GPU.Len() || rk.Outside.Count != 0 {
		t.Errorf("step: %s batch %d graphs %d kernels %d of %d, outside %d", s.Phase, s.Batch, s.GraphLaunches, s.Kernels, tr.GPU.Len(), rk.Outside.Count)
	}
	if s.Kernels < replayed {
		t.Errorf("step holds %d events, fewer than the %d replayed", s.Kernels, replayed)
	}
}

// TestPiecewiseMixedStep: the piecewise trace's one annotation schedules 9
// prefill and 37 decode requests in one step of 8192 tokens and 25 graph
// launches.
func TestPiecewiseMixedStep(t *testing.T) {
	rk := analyzePublic(t, "tracelens-vllm-prefilldecode-piecewise.json.gz").Ranks[0]
	if len(rk.Steps) != 1 {
		t.Fatalf("%d steps, want 1", len(rk.Steps))
	}
	s := rk.Steps[0]
	if s.Phase != PhaseMixed || s.Batch != 46 || s.Tokens != 8192 || s.GraphLaunches != 25 {
		t.Errorf("step: %s batch %d tokens %d graphs %d; want mixed 46 8192 25", s.Phase, s.Batch, s.Tokens, s.GraphLaunches)
	}
}

// TestSGLangSteps: the SGLang traces' step[...] annotations give a DECODE
// step of batch 32 and an EXTEND (prefill) step; the vLLM-style annotation
// that TraceLens's SGLang also writes, tried first, agrees.
func TestSGLangSteps(t *testing.T) {
	tests := []struct {
		file         string
		phase        string
		batch, token int
	}{
		{"tracelens-sglang-qwen3-8b-decode.json.gz", PhaseDecode, 32, 0},
		{"tracelens-sglang-qwen3-8b-prefilldecode.json.gz", PhasePrefill, 15, 15360},
	}
	for _, tt := range tests {
		set, r := analyzePath(t, testkit.Public(t, tt.file))
		f := findSteps(set.Traces[0], []stepFinder{{source: SourceSGLang, parse: parseSGLang}})
		marks, src := f.marks, f.source
		if src != SourceSGLang || len(marks) != 1 || marks[0].phase != tt.phase || marks[0].batch != tt.batch || marks[0].tokens != tt.token {
			t.Errorf("%s: SGLang steps %+v", tt.file, marks)
		}
		rk := r.Ranks[0]
		if len(rk.Steps) != 1 || rk.Steps[0].Phase != tt.phase || rk.Steps[0].Batch != tt.batch {
			t.Errorf("%s: steps %+v", tt.file, rk.Steps)
		}
		if tt.phase == PhaseDecode && (rk.Decode.Steps != 1 || r.Headline.Phase != PhaseDecode) {
			t.Errorf("%s: decode %d steps, headline %+v", tt.file, rk.Decode.Steps, r.Headline)
		}
	}
}

// TestRCCLGenericNamed: RCCL's ncclDevKernel_Generic kernels take their
// collective from their args or record_param_comms op: 6 AllReduce and 6
// Broadcast. The 5 launched before the profiler started have neither, and
// stay comm_other.
func TestRCCLGenericNamed(t *testing.T) {
	set, r := analyzePath(t, testkit.Public(t, "tracelens-mi300-resnet-rccl.json.gz"))
	got := map[BucketID]int{}
	for _, s := range r.Ranks[0].Steps {
		for id, b := range s.Buckets {
			got[id] += b.Count
		}
	}
	if got[AllReduce] != 6 || got[Broadcast] != 6 || got[CommOther] != 5 {
		t.Errorf("collective buckets: %v; want 6 allreduce, 6 broadcast, 5 comm_other", got)
	}
	tr := set.Traces[0]
	li := newLaunchIndex(tr)
	buckets := eventBuckets(t, tr)
	for i, ev := range tr.GPU.All() {
		if tr.Name(ev.Name) != "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)" {
			continue
		}
		b := buckets[i]
		if linked := li.find(ev.Correlation) >= 0; linked != (b == AllReduce || b == Broadcast) {
			t.Errorf("Generic kernel at %d (launch in trace: %v) in %s", ev.Start, linked, b)
		}
	}
}

// TestOtherShareOnInference: on the public inference traces, less than 2%
// of the kernel time of the headline steps is unclassified.
func TestOtherShareOnInference(t *testing.T) {
	for _, f := range []string{
		"tracelens-vllm-decode-full-graph.json.gz",
		"tracelens-vllm-prefilldecode-piecewise.json.gz",
		"tracelens-sglang-qwen3-8b-decode.json.gz",
		"tracelens-sglang-qwen3-8b-prefilldecode.json.gz",
		"tracelens-h100-qwen1.5-0.5b.json.gz",
		"tracelens-mi300-qwen1.5-0.5b.json.gz",
	} {
		rk := analyzePublic(t, f).Ranks[0]
		ph := rk.Decode
		if ph.Steps == 0 {
			ph = Aggregate(rk.Steps, nil)
		}
		if o := ph.Buckets[Other].ShareOfKernel; o >= 2 {
			t.Errorf("%s: other is %.2f%% of kernel time; unclassified: %+v", f, o, rk.Unclassified)
		}
	}
}

// TestRankVersions: a rank's versions come from the trace's *_version keys
// and its distributedInfo.
func TestRankVersions(t *testing.T) {
	tests := []struct {
		file string
		want map[string]string
	}{
		{"tracelens-vllm-decode-full-graph.json.gz", map[string]string{"backend": "nccl", "nccl": "2.26.6", "hip_runtime_version": "70051831"}},
		{"tracelens-h100-qwen1.5-0.5b.json.gz", map[string]string{"cuda_runtime_version": "12040", "cupti_version": "22"}},
	}
	for _, tt := range tests {
		v := analyzePublic(t, tt.file).Ranks[0].Versions
		for k, w := range tt.want {
			if v[k] != w {
				t.Errorf("%s: version %s = %q, want %q (all: %v)", tt.file, k, v[k], w, v)
			}
		}
	}
}
