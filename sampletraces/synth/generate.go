package synth

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// TruthFile is the name of the truth file written next to the traces.
const TruthFile = "truth.json"

// FileName returns the vLLM-style trace file name of rank r: the worker
// name, a time stamp (as torch.profiler.tensorboard_trace_handler writes
// it) and .pt.trace.json(.gz).
func FileName(cfg *Config, r int) string {
	stamp := int64(baseTimeNS) + startNS + int64(r)*7_919_311
	name := fmt.Sprintf("dp0_pp0_tp%d_dcp0_ep0_rank%d.%d.pt.trace.json", r, r, stamp)
	if cfg.Gzip {
		name += ".gz"
	}
	return name
}

// WriteRank writes rank r's trace, uncompressed, to out and returns its
// truth. cfg must be valid and its steps resolved (see Resolve).
func WriteRank(out io.Writer, cfg Config, r int) (RankTruth, error) {
	if r < 0 || r >= cfg.Ranks {
		return RankTruth{}, fmt.Errorf("rank %d out of range 0..%d", r, cfg.Ranks-1)
	}
	return writeRank(syncSink{w: out}, &cfg, newModel(&cfg), r, FileName(&cfg, r))
}

// writeRank writes one rank's trace to s.
func writeRank(s sink, cfg *Config, m *model, r int, name string) (RankTruth, error) {
	w := newRankWriter(cfg, m, planSteps(cfg), r, s)
	w.header()
	first, last := int64(-1), int64(0)
	for i := range w.sim.steps {
		w.writeStep(i)
		if first < 0 {
			first = w.sim.t.outerStart - 5_000_000
		}
		last = w.sim.t.outerEnd + 1_000_000
		if w.err != nil {
			return RankTruth{}, fmt.Errorf("rank %d: %w", r, w.err)
		}
	}
	w.footer("synthetic/"+cfg.DefaultDir()+"/"+name, first, last)
	w.flush()
	if w.err != nil {
		return RankTruth{}, fmt.Errorf("rank %d: %w", r, w.err)
	}
	rt := w.acc.truth()
	rt.Rank, rt.File, rt.PID, rt.Slowness = r, name, w.cpuPID, w.sim.bias[r]
	rt.UncompressedBytes, rt.Events = w.bytes, int64(w.n)
	rt.EventsByCategory = map[string]int64{}
	for c, n := range w.counts {
		if n > 0 {
			rt.EventsByCategory[category(c).String()] = n
		}
	}
	return rt, nil
}

// Resolve validates cfg and, when TargetSize is set, sets DecodeSteps so
// that each rank's uncompressed trace is about TargetSize bytes.
func Resolve(cfg Config) (Config, error) {
	if err := cfg.Validate(); err != nil {
		return cfg, err
	}
	if cfg.TargetSize == 0 {
		return cfg, nil
	}
	m := newModel(&cfg)
	size := func(decode int) (int64, error) {
		c := cfg
		c.DecodeSteps = decode
		cs := &countSink{}
		_, err := writeRank(cs, &c, m, 0, FileName(&c, 0))
		return cs.n, err
	}
	one, err := size(1)
	if err != nil {
		return cfg, err
	}
	three, err := size(3)
	if err != nil {
		return cfg, err
	}
	per := max((three-one)/2, 1)
	fixed := one - per
	cfg.DecodeSteps = int(min(max((cfg.TargetSize-fixed+per/2)/per, 1), maxSteps))
	return cfg, nil
}

// Generate writes every rank's trace and truth.json into dir (created if
// needed; it must be empty unless overwrite is set) and returns the truth.
func Generate(dir string, cfg Config, overwrite bool) (*Truth, error) {
	cfg, err := Resolve(cfg)
	if err != nil {
		return nil, err
	}
	if err := prepareDir(dir, overwrite); err != nil {
		return nil, err
	}
	m := newModel(&cfg)
	ranks := make([]RankTruth, cfg.Ranks)
	errs := make([]error, cfg.Ranks)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(cfg.Ranks, runtime.GOMAXPROCS(0)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range next {
				ranks[r], errs[r] = writeFile(dir, &cfg, m, r)
			}
		}()
	}
	for r := range cfg.Ranks {
		next <- r
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	t := newTruth(&cfg, m, ranks)
	if err := writeTruth(filepath.Join(dir, TruthFile), t); err != nil {
		return nil, err
	}
	return t, nil
}

// prepareDir creates dir, refusing a non-empty one unless overwrite.
func prepareDir(dir string, overwrite bool) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create output directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("read output directory: %w", err)
	}
	if len(ents) > 0 && !overwrite {
		return fmt.Errorf("output directory %s is not empty (use --force to write into it)", dir)
	}
	return nil
}

// writeFile writes rank r's file into dir through a temporary name.
func writeFile(dir string, cfg *Config, m *model, r int) (RankTruth, error) {
	name := FileName(cfg, r)
	path := filepath.Join(dir, name)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return RankTruth{}, fmt.Errorf("create trace file: %w", err)
	}
	rt, err := writeTo(f, cfg, m, r, name)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		os.Remove(path + ".tmp")
		return RankTruth{}, fmt.Errorf("write %s: %w", path, err)
	}
	return rt, nil
}

// writeTo writes rank r's trace to f, gzip-compressed from a second
// goroutine when cfg.Gzip is set.
func writeTo(f io.Writer, cfg *Config, m *model, r int, name string) (RankTruth, error) {
	bw := bufio.NewWriterSize(f, 1<<20)
	if !cfg.Gzip {
		rt, err := writeRank(syncSink{w: bw}, cfg, m, r, name)
		if err == nil {
			err = bw.Flush()
		}
		return rt, err
	}
	gz, err := gzip.NewWriterLevel(bw, gzip.BestSpeed)
	if err != nil {
		return RankTruth{}, err
	}
	as := newAsyncSink(gz)
	rt, err := writeRank(as, cfg, m, r, name)
	for _, e := range []error{as.close(), gz.Close(), bw.Flush()} {
		if err == nil {
			err = e
		}
	}
	return rt, err
}

// newTruth assembles the run's truth from the ranks' parts.
func newTruth(cfg *Config, m *model, ranks []RankTruth) *Truth {
	t := &Truth{
		Synthetic: true,
		Note: "Synthetic trace set written by kinetoscope synth: every value is known by construction. " +
			"Not a real profile.",
		Generator:                "kinetoscope synth",
		Config:                   *cfg,
		AllReduceShareDefinition: ShareDefinition,
		TimeUnit:                 "ns",
		BaseTimeNS:               baseTimeNS,
		PerStep:                  map[string]PhaseCounts{},
		KernelBuckets:            map[string]string{},
		BucketOrder:              bucketOrder(),
		Ranks:                    ranks,
	}
	for _, k := range m.cat.all() {
		t.KernelBuckets[k.name] = k.bucket
	}
	steps := planSteps(cfg)
	sim := newSimulator(cfg, m, steps)
	for i, s := range steps {
		st := sim.step(i)
		t.Steps = append(t.Steps, StepInfo{Index: i, Name: s.name(), Phase: s.ph.String(), Tokens: s.tokens,
			Batch: s.batch, StartNS: st.annStart, EndNS: st.annEnd})
	}
	for _, pp := range sim.plans {
		t.PerStep[pp.ph.String()] = phaseCounts(cfg, pp, steps)
	}
	return t
}

// phaseCounts counts the per-step structure of one phase.
func phaseCounts(cfg *Config, pp *phasePlan, steps []stepInfo) PhaseCounts {
	pc := PhaseCounts{ByBucket: map[string]int{}, ByName: map[string]int{}, Collective: map[string]int{}}
	for _, s := range steps {
		if s.ph == pp.ph {
			pc.Steps++
		}
	}
	k := cfg.PythonFunctions
	for _, u := range pp.units {
		pc.Launches += len(u.ops)
		if u.launch < 0 {
			pc.GraphLaunches++
			pc.GraphKernels += len(u.ops)
			pc.Launches -= len(u.ops) - 1
		} else {
			pc.CPUOps++
			if pp.launches[u.launch].kernels[0].coll != nil && cfg.CollectiveArgs {
				pc.CPUOps++
				pc.CommOps++
			}
		}
		pc.PythonFunctions += k
	}
	for _, op := range pp.ops {
		pc.GPUEvents++
		if op.k.kind == kindMemcpy {
			pc.Memcpys++
		} else {
			pc.Kernels++
		}
		pc.ByBucket[op.k.bucket]++
		pc.ByName[op.k.name]++
		if op.k.coll != nil {
			pc.Collective[op.k.coll.name]++
		}
	}
	if k > 0 {
		pc.PythonFunctions += len(stepFrames()) + 1 + cfg.Layers*k + k // step frames, forward, prep, sync
		for _, lu := range pp.layerUnits {
			if lu[0] >= 0 {
				pc.PythonFunctions++
			}
		}
	}
	return pc
}

// writeTruth writes t as indented JSON.
func writeTruth(path string, t *Truth) error {
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return fmt.Errorf("encode truth: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write truth: %w", err)
	}
	return nil
}
