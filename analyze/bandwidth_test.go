package analyze

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
	"kinetoscope/sampletraces/synth"
)

// indepKey is one row of the independent bandwidth reading.
type indepKey struct {
	phase  string
	family BucketID
	bytes  int64 // 0: no size recorded
}

// indepCall is one collective kernel on one rank, in us on the first
// rank's time base.
type indepCall struct{ start, end float64 }

// indepRow is what the independent reading finds for one row.
type indepRow struct {
	calls, steps int
	kernelUS     float64 // summed over the calls of every rank
	instances    int
	transferUS   float64 // summed over the instances
	algBW, busBW float64 // from transfer time; 0 without sizes
	kernelAlg    float64 // from kernel time
}

// rawTrace is the part of a trace file the independent reading uses.
type rawTrace struct {
	BaseTimeNanoseconds int64 `json:"baseTimeNanoseconds"`
	TraceEvents         []struct {
		Cat  string         `json:"cat"`
		Name string         `json:"name"`
		Ts   float64        `json:"ts"`
		Dur  float64        `json:"dur"`
		Args map[string]any `json:"args"`
	} `json:"traceEvents"`
}

// independentCalls reads one rank's trace with encoding/json alone: steps
// start at the execute_context_* annotations (decode when they schedule no
// context request), a kernel belongs to the step its launch (same
// correlation) ran in, NCCL kernels are AllReduce or AllGather by name,
// and a message size is the larger of "In msg nelems" and "Out msg nelems"
// of the kernel's args, else of the record_param_comms op with its
// External id, times 2 bytes (every collective of these traces is bf16).
// Times are shifted by shiftUS. It also returns the steps per phase.
func independentCalls(t *testing.T, path string, shiftUS float64) (map[indepKey][]indepCall, map[string]int, int64) {
	var tr rawTrace
	if err := sampletraces.ReadJSON(path, &tr); err != nil {
		t.Fatal(err)
	}
	st := readSteps(&tr)
	opElems := map[float64]int64{}
	for _, e := range tr.TraceEvents {
		if id, ok := e.Args["External id"].(float64); ok && e.Name == "record_param_comms" {
			opElems[id] = msgElems(e.Args)
		}
	}
	calls := map[indepKey][]indepCall{}
	for _, e := range tr.TraceEvents {
		fam := ncclFamily(e.Name)
		if e.Cat != "kernel" || fam == "" {
			continue
		}
		i := st.stepOf(e.Ts, e.Args)
		if i < 0 {
			continue
		}
		elems := msgElems(e.Args)
		if id, ok := e.Args["External id"].(float64); ok && elems == 0 {
			elems = opElems[id]
		}
		k := indepKey{st.marks[i].phase, fam, 2 * elems}
		calls[k] = append(calls[k], indepCall{e.Ts + shiftUS, e.Ts + e.Dur + shiftUS})
	}
	return calls, st.count, tr.BaseTimeNanoseconds
}

// indepSteps are the steps of a trace read with encoding/json: the
// execute_context_* annotations in time order (decode when they schedule
// no context request) and the CPU launch time per correlation id.
type indepSteps struct {
	marks  []indepMark
	count  map[string]int // steps per phase
	launch map[float64]float64
}

// indepMark is the start of a step and its phase.
type indepMark struct {
	ts    float64
	phase string
}

// readSteps finds the steps of tr.
func readSteps(tr *rawTrace) *indepSteps {
	st := &indepSteps{count: map[string]int{}, launch: map[float64]float64{}}
	for _, e := range tr.TraceEvents {
		switch {
		case e.Cat == "user_annotation" && strings.HasPrefix(e.Name, "execute_context_"):
			ph := PhasePrefill
			if strings.HasPrefix(e.Name, "execute_context_0(") {
				ph = PhaseDecode
			}
			st.marks = append(st.marks, indepMark{e.Ts, ph})
			st.count[ph]++
		case e.Cat == "cuda_runtime" || e.Cat == "cuda_driver":
			if c, ok := e.Args["correlation"].(float64); ok {
				st.launch[c] = e.Ts
			}
		}
	}
	sort.Slice(st.marks, func(i, j int) bool { return st.marks[i].ts < st.marks[j].ts })
	return st
}

// stepOf returns the index of the step in which a GPU event starting at
// ts with args was launched (its launch's time when the trace has it),
// or -1 before the first step.
func (st *indepSteps) stepOf(ts float64, args map[string]any) int {
	if c, ok := args["correlation"].(float64); ok {
		if l, ok := st.launch[c]; ok {
			ts = l
		}
	}
	return sort.Search(len(st.marks), func(i int) bool { return st.marks[i].ts > ts }) - 1
}

// msgElems is the larger of an args object's In and Out msg nelems.
func msgElems(args map[string]any) int64 {
	in, _ := args["In msg nelems"].(float64)
	out, _ := args["Out msg nelems"].(float64)
	return int64(max(in, out))
}

// ncclFamily names the collective of an NCCL kernel by its name.
func ncclFamily(name string) BucketID {
	switch {
	case strings.HasPrefix(name, "ncclDevKernel_AllReduce"):
		return AllReduce
	case strings.HasPrefix(name, "ncclDevKernel_AllGather"):
		return AllGather
	}
	return ""
}

// independentBandwidth reads every rank file of a run and pairs the k-th
// call of each row on every rank into one instance (the ranks share a
// clock): its transfer is the first end minus the last start. Bus
// bandwidth uses nccl-tests' factors for as many ranks as files:
// AllReduce 2(n-1)/n, AllGather (n-1)/n.
func independentBandwidth(t *testing.T, files []string) map[indepKey]*indepRow {
	var perRank []map[indepKey][]indepCall
	steps := map[string]int{}
	var base0 int64
	for i, f := range files {
		shift := 0.0
		if i > 0 {
			shift = float64(readBase(t, f)-base0) / 1e3
		}
		calls, st, base := independentCalls(t, f, shift)
		if i == 0 {
			base0 = base
		}
		perRank = append(perRank, calls)
		for ph, n := range st {
			steps[ph] += n
		}
	}
	n := float64(len(files))
	rows := map[indepKey]*indepRow{}
	for k := range perRank[0] {
		r := &indepRow{steps: steps[k.phase]}
		rows[k] = r
		for _, calls := range perRank {
			r.calls += len(calls[k])
			for _, c := range calls[k] {
				r.kernelUS += c.end - c.start
			}
		}
		r.instances = len(perRank[0][k])
		for j := 0; j < r.instances; j++ {
			last, first := math.Inf(-1), math.Inf(1)
			for _, calls := range perRank {
				if j >= len(calls[k]) {
					t.Fatalf("%v: rank files differ in calls", k)
				}
				last, first = max(last, calls[k][j].start), min(first, calls[k][j].end)
			}
			r.transferUS += max(first-last, 0)
		}
		factor := (n - 1) / n
		if k.family == AllReduce {
			factor *= 2
		}
		if k.bytes > 0 {
			r.algBW = float64(k.bytes) * float64(r.instances) / (r.transferUS * 1e3)
			r.busBW = r.algBW * factor
			r.kernelAlg = float64(k.bytes) * float64(r.calls) / (r.kernelUS * 1e3)
		}
	}
	return rows
}

// readBase returns a trace's baseTimeNanoseconds.
func readBase(t *testing.T, path string) int64 {
	var tr struct {
		BaseTimeNanoseconds int64 `json:"baseTimeNanoseconds"`
	}
	if err := sampletraces.ReadJSON(path, &tr); err != nil {
		t.Fatal(err)
	}
	return tr.BaseTimeNanoseconds
}

// rankFiles returns the trace files of a run directory.
func rankFiles(t *testing.T, dir string) []string {
	files, err := filepath.Glob(filepath.Join(dir, "*.pt.trace.json*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: trace files %v %v", dir, files, err)
	}
	sort.Strings(files)
	return files
}

// near says whether got is within 1% of want (or both are about 0).
func near(got, want float64) bool {
	return math.Abs(got-want) <= 0.01*math.Abs(want)+1e-9
}

// checkAgainstIndependent compares every row of b with the independent
// reading, and the rows present.
func checkAgainstIndependent(t *testing.T, name string, b *Bandwidth, want map[indepKey]*indepRow) {
	t.Helper()
	if b == nil {
		t.Fatalf("%s: no bandwidth", name)
	}
	if len(b.Rows) != len(want) {
		t.Errorf("%s: %d rows, independent reading %d", name, len(b.Rows), len(want))
	}
	for _, r := range b.Rows {
		w := want[indepKey{r.Phase, r.Bucket, r.Bytes}]
		if w == nil {
			t.Errorf("%s: row %s %s %d B not in the independent reading", name, r.Phase, r.Bucket, r.Bytes)
			continue
		}
		t.Logf("%s %s %s %s: %.1f calls/step, kernel %.2f us, transfer %.2f us, algbw %.2f busbw %.2f GB/s (%.2f%% of peak), independent %.2f / %.2f; %s",
			name, r.Phase, r.Label, FormatBytes(r.Bytes), r.CallsPerStep, r.KernelUSPerCall, r.TransferUSPerCall, r.AlgBW, r.BusBW, r.ShareOfPeak, w.algBW, w.busBW, r.Note)
		checks := []struct {
			what      string
			got, want float64
		}{
			{"calls", float64(r.Calls), float64(w.calls)},
			{"calls/step", r.CallsPerStep, float64(w.calls) / float64(w.steps)},
			{"instances", float64(r.Instances), float64(w.instances)},
			{"kernel us/call", r.KernelUSPerCall, w.kernelUS / float64(w.calls)},
			{"transfer us/call", r.TransferUSPerCall, w.transferUS / float64(w.instances)},
			{"algbw", r.AlgBW, w.algBW},
			{"busbw", r.BusBW, w.busBW},
		}
		if b.Peak != nil {
			checks = append(checks, struct {
				what      string
				got, want float64
			}{"share of peak", r.ShareOfPeak, 100 * w.busBW / b.Peak.GBPerS})
		}
		for _, c := range checks {
			if !near(c.got, c.want) {
				t.Errorf("%s %s %s %d B: %s %.4g, independent %.4g", name, r.Phase, r.Bucket, r.Bytes, c.what, c.got, c.want)
			}
		}
		if (r.Bytes == 0) != (r.Note == NoSizes) || (r.Bytes > 0) != (r.Basis == BasisTransfer) {
			t.Errorf("%s %s %s %d B: basis %q, note %q", name, r.Phase, r.Bucket, r.Bytes, r.Basis, r.Note)
		}
	}
}

// TestRealBandwidth checks every bandwidth figure of the real TP-2 runs
// against an independent reading of the trace files, and the link peak
// the device name gives.
func TestRealBandwidth(t *testing.T) {
	for _, variant := range sampletraces.RealVariants() {
		dir := testkit.Real(t, variant)
		_, r := analyzePath(t, dir)
		checkAgainstIndependent(t, variant, r.Bandwidth, independentBandwidth(t, rankFiles(t, dir)))
		if p := r.Bandwidth.Peak; p == nil || p.Name != "NVLink 4" || p.GBPerS != 450 || !strings.Contains(p.Source, "H200") {
			t.Errorf("%s: peak %+v, want NVLink 4 at 450 GB/s from the H200 device name", variant, p)
		}
		if !strings.Contains(r.Bandwidth.PeakNote, "NCCL_P2P_DISABLE") {
			t.Errorf("%s: peak note %q does not say that P2P may be disabled", variant, r.Bandwidth.PeakNote)
		}
	}
}

// TestRealBandwidthHardware: the 4 MiB prefill AllReduce over NVLink is
// 3-8x faster than through host memory (the sample notes about 5x), and
// only the NVLink runs exceed what one PCIe Gen5 x16 link could carry;
// CUDA-graph decode AllReduces have no recorded size.
func TestRealBandwidthHardware(t *testing.T) {
	prefillAR := func(variant string) *BandwidthRow {
		_, r := analyzePath(t, testkit.Real(t, variant))
		for i, row := range r.Bandwidth.Rows {
			if row.Phase == PhasePrefill && row.Bucket == AllReduce && row.Bytes == 4<<20 {
				return &r.Bandwidth.Rows[i]
			}
		}
		t.Fatalf("%s: no 4 MiB prefill AllReduce row", variant)
		return nil
	}
	host := prefillAR("p2p_disabled")
	pcie, _ := namedLink("pcie5x16")
	if host.BusBW >= pcie.GBPerS {
		t.Errorf("p2p_disabled: 4 MiB AllReduce at %.1f GB/s, not below PCIe Gen5 x16's %.0f", host.BusBW, pcie.GBPerS)
	}
	for _, v := range []string{"eager", "cudagraph", "nccl_simple"} {
		nv := prefillAR(v)
		ratio := nv.BusBW / host.BusBW
		t.Logf("4 MiB prefill AllReduce: %s %.1f GB/s, p2p_disabled %.1f GB/s: %.1fx", v, nv.BusBW, host.BusBW, ratio)
		if ratio < 3 || ratio > 8 || nv.BusBW <= pcie.GBPerS {
			t.Errorf("%s: 4 MiB AllReduce %.1f GB/s vs %.1f through host memory (%.1fx)", v, nv.BusBW, host.BusBW, ratio)
		}
	}
	_, r := analyzePath(t, testkit.Real(t, "cudagraph"))
	if l := r.Bandwidth.Lead(PhaseDecode, AllReduce); l != nil {
		t.Errorf("cudagraph: decode AllReduce lead %+v, want none (no sizes)", l)
	}
	if l := r.Bandwidth.Lead(PhasePrefill, AllReduce); l == nil || l.Bytes != 4<<20 {
		t.Errorf("cudagraph: prefill AllReduce lead %+v, want the 4 MiB row", l)
	}
	for _, row := range r.Bandwidth.Rows {
		if row.Phase == PhaseDecode && row.Bucket == AllReduce && (row.Note != NoSizes || row.BusBW != 0 || row.Calls != 512) {
			t.Errorf("cudagraph decode AllReduce: %+v, want %q and no figure", row, NoSizes)
		}
	}
}

// TestRealBandwidthOneRank: rank 0 of the eager run alone has no
// transfer time, so the bandwidth comes from kernel time and says so; it
// equals bytes / mean kernel duration read independently.
func TestRealBandwidthOneRank(t *testing.T) {
	file := rankFiles(t, testkit.Real(t, "eager"))[0]
	_, r := analyzePath(t, file)
	want := independentBandwidth(t, []string{file})
	for _, row := range r.Bandwidth.Rows {
		w := want[indepKey{row.Phase, row.Bucket, row.Bytes}]
		if row.Basis != BasisKernel || row.Instances != 0 || w == nil || !near(row.AlgBW, w.kernelAlg) {
			t.Errorf("rank 0 alone, %s %s %d B: basis %q, algbw %.3g, independent %+v", row.Phase, row.Bucket, row.Bytes, row.Basis, row.AlgBW, w)
		}
		if f := map[BucketID]float64{AllReduce: 1, AllGather: 0.5}[row.Bucket]; row.BusFactor != f {
			t.Errorf("rank 0 alone, %s: bus factor %g, want %g for a group of 2", row.Bucket, row.BusFactor, f)
		}
	}
}

// TestSynthBandwidth8 analyses an 8-rank synthetic run: every figure
// equals the independent reading (with the factors for 8 ranks: AllReduce
// 1.75, AllGather 0.875), and the bus bandwidth follows the generator's
// own model of a ring, 15 µs plus the bus bytes at 14 GB/s (see
// sampletraces/synth/sim.go and ringTime), which a wrong factor would miss
// by 2x. Decode AllReduces are left out of the model check: the generator
// sizes their transfer to --allreduce-share of the step instead.
func TestSynthBandwidth8(t *testing.T) {
	cfg := synth.DefaultConfig()
	cfg.Ranks, cfg.Layers, cfg.DecodeSteps, cfg.PythonFunctions, cfg.Gzip = 8, 3, 3, 0, false
	dir := t.TempDir()
	if _, err := synth.Generate(dir, cfg, false); err != nil {
		t.Fatal(err)
	}
	_, r := analyzePath(t, dir)
	checkAgainstIndependent(t, "synth-8", r.Bandwidth, independentBandwidth(t, rankFiles(t, dir)))
	for _, row := range r.Bandwidth.Rows {
		want := map[BucketID]float64{AllReduce: 1.75, AllGather: 0.875}[row.Bucket]
		busBytes := float64(row.Bytes) * want
		model := busBytes / (15e3 + busBytes/14)
		ringModel := row.Phase != PhaseDecode || row.Bucket != AllReduce
		if row.GroupSize != 8 || row.BusFactor != want || (ringModel && math.Abs(row.BusBW/model-1) > 0.05) {
			t.Errorf("synth-8 %s %s %s: group %d, factor %g (want %g), busbw %.2f GB/s, model %.2f",
				row.Phase, row.Label, FormatBytes(row.Bytes), row.GroupSize, row.BusFactor, want, row.BusBW, model)
		}
	}
	if p := r.Bandwidth.Peak; p == nil || p.Name != "PCIe Gen5 x16" {
		t.Errorf("synth-8 (H200 NVL): peak %+v, want PCIe Gen5 x16", p)
	}
}

// TestParseLink covers every link name, numbers and bad values.
func TestParseLink(t *testing.T) {
	cases := []struct {
		in   string
		want float64 // 0: nil; -1: error
	}{
		{"", 0}, {"nvlink3", 300}, {"NVLink4", 450}, {"nvlink5", 900}, {"pcie4x16", 32}, {"pcie5x16", 64},
		{"120", 120}, {"12.5GB/s", 12.5}, {" 7 gbps", 7}, {"nvlink9", -1}, {"-3", -1}, {"0", -1}, {"fast", -1},
	}
	for _, c := range cases {
		p, err := ParseLink(c.in)
		switch {
		case c.want < 0 && err == nil, c.want >= 0 && err != nil:
			t.Errorf("ParseLink(%q): %+v, %v", c.in, p, err)
		case c.want == 0 && p != nil, c.want > 0 && (p == nil || p.GBPerS != c.want):
			t.Errorf("ParseLink(%q) = %+v, want %g GB/s", c.in, p, c.want)
		}
	}
}

// TestDevicePeak maps GPU names to links, PCIe cards before the SXM parts
// whose names they contain.
func TestDevicePeak(t *testing.T) {
	cases := map[string]string{
		"NVIDIA H200": "NVLink 4", "NVIDIA H100 80GB HBM3": "NVLink 4", "NVIDIA H20": "NVLink 4",
		"NVIDIA H200 NVL": "PCIe Gen5 x16", "NVIDIA H100 PCIe": "PCIe Gen5 x16", "NVIDIA H100 NVL": "PCIe Gen5 x16",
		"NVIDIA B200": "NVLink 5", "NVIDIA GB200": "NVLink 5", "NVIDIA A100-SXM4-80GB": "NVLink 3",
		"NVIDIA A100-PCIE-40GB": "PCIe Gen4 x16", "NVIDIA L40S": "PCIe Gen4 x16", "NVIDIA L4": "PCIe Gen4 x16",
		"AMD Instinct MI300X": "Infinity Fabric (MI300X), 7 links", "AMD Instinct MI325X": "Infinity Fabric (MI325X), 7 links",
		"AMD Instinct MI355X": "Infinity Fabric (MI355X), 7 links", "Tesla V100-SXM2-16GB": "", "": "",
	}
	for dev, want := range cases {
		p, note := devicePeak(dev, 0)
		got := ""
		if p != nil {
			got = p.Name
		}
		if got != want || note == "" {
			t.Errorf("devicePeak(%q) = %q (note %q), want %q", dev, got, note, want)
		}
	}
	if p, note := choosePeak(nil, []Rank{{Device: "NVIDIA H200"}, {Device: "NVIDIA L4"}}); p != nil || !strings.Contains(note, "different GPUs") {
		t.Errorf("mixed GPUs: %+v, %q", p, note)
	}
}

// TestMeshPeak: an AMD GPU's peak per GPU and direction is half AMD's
// per-link Infinity Fabric figure (128 GB/s MI300X and MI325X, 153.6 GB/s
// MI355X, both directions) times the links a group of n GPUs uses, n-1 of
// the 7 to the other GPUs of the platform.
func TestMeshPeak(t *testing.T) {
	perLinkBoth := map[string]float64{"AMD Instinct MI300X": 128, "AMD Instinct MI325X": 128, "AMD Instinct MI355X": 153.6}
	for dev, both := range perLinkBoth {
		for _, n := range []int{0, 2, 4, 8, 16} {
			links := 7
			if n >= 2 && n < 8 {
				links = n - 1
			}
			want := both / 2 * float64(links)
			p, note := choosePeak(nil, []Rank{{Device: dev, WorldSize: n}, {Device: dev, WorldSize: n}})
			if p == nil || math.Abs(p.GBPerS-want) > 1e-9 || !strings.Contains(note, "mesh") {
				t.Errorf("%s, %d GPUs: %+v (%q), want %g GB/s", dev, n, p, note, want)
			}
		}
	}
}

// TestBandwidthGrouping: a phase with more sizes than maxExactSizes gets
// power-of-two ranges that keep every call and the instance transfer.
func TestBandwidthGrouping(t *testing.T) {
	accs := map[bwKey]*bwAcc{}
	for i := 1; i <= 2*maxExactSizes; i++ {
		k := bwKey{phase: PhasePrefill, bucket: AllReduce, coll: "allreduce", dtype: "BFloat16", group: 2, elems: int64(i * 1000), bytes: int64(i * 2000)}
		a := newBWAcc(k)
		a.add(0, 1000, k.bytes)
		accs[k] = a
	}
	out, names := groupSizes(accs)
	calls := 0
	for _, a := range out {
		calls += a.calls
		if !a.grouped || pow2Floor(a.bytesMin) != pow2Floor(a.bytesMax) {
			t.Errorf("group %d-%d B: grouped %v", a.bytesMin, a.bytesMax, a.grouped)
		}
	}
	if calls != 2*maxExactSizes || len(out) >= maxExactSizes || fmt.Sprint(names) != "[prefill AllReduce]" {
		t.Errorf("%d groups, %d calls, names %v", len(out), calls, names)
	}
}
