// Package analyze classifies the GPU events of PyTorch profiler traces into
// buckets, cuts each rank's trace into engine steps (prefill, decode), and
// reports where the time goes per step, per phase and per rank.
package analyze

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"

	"kinetoscope/analyze/crossrank"
	"kinetoscope/ingest"
)

// Options control an analysis.
type Options struct {
	// Rules are tried before RulesFile's rules, which are tried before the
	// built-in table.
	Rules     []Rule
	RulesFile string
	// StepRegex, when set, makes every CPU annotation whose name matches it
	// start a step; it overrides the built-in step annotations.
	StepRegex string
	// Rank, when set, analyses only that rank.
	Rank *int
	// TopKernels is the number of kernels listed per bucket (0: every
	// kernel, so that a diff of two reports, saved or not, finds every
	// kernel present in one run only); Unclassified the number of
	// unclassified kernels listed (default 30).
	TopKernels   int
	Unclassified int
	// Link names the link between the GPUs that collective bus bandwidth
	// is held against (Report.Bandwidth): nvlink3, nvlink4, nvlink5,
	// pcie4x16, pcie5x16, or a bandwidth in GB/s per GPU and direction
	// (nccl-tests' bus bandwidth convention: NVLink 4 is 450, half its
	// 900 GB/s both ways). Empty: the link the GPU name tells, if any.
	Link string
	// GPUPeak overrides the GPU's peaks that the roofline is held against
	// (Report.Roofline): comma-separated hbm=TB/s and dtype=TFLOP/s
	// figures (ParseGPUPeak), the GPU name's for any not given.
	GPUPeak string
	// LaunchGapUS is the longest gap after an early launch that the step
	// account calls a launch gap (0: DefaultLaunchGapUS, 30 us).
	LaunchGapUS float64
	// OtherThreshold is the share of decode kernel time (percent) left in
	// bucket Other above which the headline says the rules miss kernels;
	// 0: DefaultOtherThreshold.
	OtherThreshold float64
}

// Analyze classifies and measures every execution trace of set.
func Analyze(set *ingest.Set, opt Options) (*Report, error) {
	pr, err := Prepare(opt)
	if err != nil {
		return nil, err
	}
	return pr.Analyze(set)
}

// Prepared is an analysis's options checked and compiled: the classifier
// of its rules, its step regex, its link. It costs milliseconds (the
// rules' patterns), which Prepare spends before the traces are read, or
// while they are; it may analyse several sets, side by side or not.
type Prepared struct {
	opt  Options
	cls  *Classifier
	re   *regexp.Regexp
	link *LinkPeak
}

// Prepare checks and compiles opt for Prepared.Analyze.
func Prepare(opt Options) (*Prepared, error) {
	defer region("prepare")()
	cls, re, err := prepare(opt)
	if err != nil {
		return nil, err
	}
	link, err := ParseLink(opt.Link)
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	if _, err := ParseGPUPeak(opt.GPUPeak, nil); err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	return &Prepared{opt: opt, cls: cls, re: re, link: link}, nil
}

// Analyze classifies and measures every execution trace of set with the
// prepared options.
func (pr *Prepared) Analyze(set *ingest.Set) (*Report, error) {
	if set == nil {
		return nil, errors.New("analyze: no trace set")
	}
	opt, cls, re, link := pr.opt, pr.cls, pr.re, pr.link
	var traces []*ingest.Trace
	for _, t := range set.Traces {
		if opt.Rank == nil || t.Rank == *opt.Rank {
			traces = append(traces, t)
		}
	}
	if opt.Rank != nil && len(traces) == 0 {
		return nil, fmt.Errorf("analyze %s: no trace of rank %d", set.Path, *opt.Rank)
	}
	r := &Report{Source: set.Path, Buckets: Buckets(), Ranks: make([]Rank, len(traces))}
	passes := make([]*rankPass, len(traces))
	var cut, aligned, wg sync.WaitGroup
	cut.Add(len(traces))
	var a *crossrank.Alignment // matched once every rank's steps are cut, beside the rest of the ranks' passes
	var alignErr error
	aligned.Go(func() {
		cut.Wait()
		defer region("alignPasses")()
		a, alignErr = alignPasses(traces, passes)
	})
	for i, t := range traces {
		wg.Go(func() {
			r.Ranks[i], _ = analyzeTrace(t, set.Captures, cls, re, opt, func(p *rankPass) { passes[i] = p; cut.Done() })
		})
	}
	wg.Wait()
	aligned.Wait()
	r.Warnings = append(setWarnings(set), captureWarnings(passes, set.Captures)...)
	var rf *Roofline // the rows beside the cross-rank passes, which they do not read
	wg.Go(func() { defer region("rooflineOf")(); rf = rooflineOf(r, passes, opt.GPUPeak) })
	endAlign := region("alignRanks")
	a = alignRanks(r, passes, a, alignErr)
	endAlign()
	wg.Go(func() { // beside the accounts: each writes fields of its own
		defer region("collectiveBandwidth")()
		r.Bandwidth = collectiveBandwidth(r, passes, a, link)
	})
	endAccounts := region("addRankAccounts")
	addRankAccounts(r, passes, a, opt)
	endAccounts()
	wg.Wait()
	defer region("report")()
	if rf != nil {
		rf.SpeedOfLight = speedOfLight(r, rf) // reads the bandwidth
	}
	r.Roofline = rf
	for _, t := range traces {
		r.Synthetic = r.Synthetic || synthetic(t)
	}
	r.Headline = headline(r.Ranks)
	finishHeadline(r, traces)
	r.WhatIf = whatIfs(r)
	r.Checks = checkData(r, passes, a, opt)
	return r, nil
}

// prepare builds the classifier and step regex of opt.
func prepare(opt Options) (*Classifier, *regexp.Regexp, error) {
	rules := append([]Rule(nil), opt.Rules...)
	if opt.RulesFile != "" {
		fr, err := LoadRules(opt.RulesFile)
		if err != nil {
			return nil, nil, err
		}
		rules = append(rules, fr...)
	}
	cls, err := NewClassifier(rules)
	if err != nil {
		return nil, nil, fmt.Errorf("analyze: %w", err)
	}
	var re *regexp.Regexp
	if opt.StepRegex != "" {
		if re, err = regexp.Compile(opt.StepRegex); err != nil {
			return nil, nil, fmt.Errorf("analyze: step regex: %w", err)
		}
	}
	return cls, re, nil
}

// analyzeTrace analyses one rank, whose CUDA-graph capture trace is among
// captures (captureFor). Once its steps are cut, the passes over them that
// only read them run side by side: the kernel lists, the launch delays and
// then the checks; the cost model; the roofline's links of kernels to ops,
// and then the layer fold beside the ops' work.
func analyzeTrace(t *ingest.Trace, captures []*ingest.Trace, cls *Classifier, re *regexp.Regexp, opt Options, cut func(*rankPass)) (Rank, *rankPass) {
	rk := Rank{Rank: t.Rank, File: t.Path, WorldSize: t.WorldSize(), Versions: versions(t.Meta),
		Warnings: append([]string(nil), t.Warnings...)}
	if len(t.Meta.Devices) > 0 {
		rk.Device = t.Meta.Devices[0].Name
	}
	var byExt map[int64]int // the ops by External id, beside the first pass
	var indexed sync.WaitGroup
	indexed.Go(func() { defer region("ByExternalID")(); byExt = t.Shapes.ByExternalID() })
	p := stepPass(t, cls, re)
	if cut != nil {
		cut(p)
	}
	endSteps := region("steps")
	rk.StepSource, rk.StepEvidence = p.source, p.evidence
	if re != nil && p.source != SourceRegex {
		rk.Warnings = append(rk.Warnings, fmt.Sprintf("no CPU annotation matches --step-regex %q", opt.StepRegex))
	}
	rk.Steps = p.buildSteps()
	inferPhases(rk.Steps, p.training())
	if p.source == SourceInferred {
		if w := periodicPhases(rk.Steps); w != "" {
			rk.Warnings = append(rk.Warnings, w)
		}
	}
	markCutStep(rk.Steps)
	rk.Decode = Aggregate(rk.Steps, isPhase(PhaseDecode))
	if pre := Aggregate(rk.Steps, isPhase(PhasePrefill)); pre.Steps > 0 {
		rk.Prefill = &pre
	}
	if mixed := Aggregate(rk.Steps, isPhase(PhaseMixed)); mixed.Steps > 0 {
		rk.Mixed = &mixed
	}
	rk.Outside = BucketStat{US: us(p.outside.kernelNS), Count: p.outside.events}
	rk.TraceKernelUS, rk.TraceCommKernels = p.traceTotals()
	p.capture = captureFor(t, captures)
	endSteps()
	var wg sync.WaitGroup
	wg.Go(func() {
		end := region("kernelLists")
		rk.TopKernels, rk.Unclassified = p.kernelLists(rk.Steps, opt)
		end()
		end = region("launchDelay")
		rk.LaunchDelay = launchDelay(p.delays) // reorders them
		rk.GraphLaunchDelay = launchDelay(p.graphDelays())
		end()
		defer region("checkRank")()
		p.checks = checkRank(p, &rk) // reads the kernel lists and the delays
	})
	wg.Go(func() { defer region("costModels")(); rk.CostModel = costModels(rk.Steps) })
	wg.Go(func() {
		indexed.Wait()
		endLink := region("linkOps")
		p.opOf, p.opNS = linkOps(p, rk.Steps, byExt) // what the fold's slots and the roofline read
		endLink()
		var folded sync.WaitGroup
		folded.Go(func() { defer region("layerFolds")(); rk.Layers = p.layerFolds(rk.Steps) })
		folded.Go(func() { defer region("opWorks")(); p.works = opWorks(p) })
		endLinks := region("kernelLinks")
		p.links, p.linkWhy = kernelLinks(p, rk.Steps)
		endLinks()
		folded.Wait()
	})
	wg.Wait()
	setOverlaps(p, &rk)
	if p.noLaunch > 0 {
		rk.Warnings = append(rk.Warnings, fmt.Sprintf("%d of %d GPU events have no CPU launch in the trace; placed in steps by GPU start time", p.noLaunch, t.GPU.Len()))
	}
	return rk, p
}

// stepPass cuts t into steps and runs every per-event pass over them: the
// one code path behind Analyze and StepEvents. Step marks are tried in
// order (stepFinders, then vLLM's runner marks); without any, steps
// are inferred from the trace's repetition.
func stepPass(t *ingest.Trace, cls *Classifier, re *regexp.Regexp) *rankPass {
	var li launchIndex
	var indexed sync.WaitGroup // beside the finding of the steps
	indexed.Go(func() { defer region("newLaunchIndex")(); li = newLaunchIndex(t) })
	endFind := region("findSteps")
	pa := runnerMarks(t)
	found := findSteps(t, stepFinders(re))
	if found.source == "" {
		found = findRunnerMarks(pa)
	}
	marks, cutoff, evidence := found.marks, int64(1<<63-1), ""
	if found.source != "" {
		evidence = stepEvidence(found, re)
		if e := runnerMarkEvidence(marks, pa); e != "" {
			evidence += "; " + e
		}
	}
	endFind()
	indexed.Wait()
	if found.source == "" {
		marks, cutoff, evidence = inferSteps(t, &li)
		found.source = SourceInferred
	}
	p := newRankPass(t, newBucketTab(), cls, li, marks, cutoff)
	p.source, p.evidence = found.source, evidence
	p.run()
	return p
}

// kernelLists returns the top kernels per bucket over the decode steps (all
// steps when there are none) and the unclassified kernels over the whole
// trace.
func (p *rankPass) kernelLists(steps []Step, opt Options) (map[BucketID][]KernelStat, []KernelStat) {
	nTop, nOther := opt.TopKernels, opt.Unclassified
	if nTop <= 0 {
		nTop = 1 << 30
	}
	if nOther <= 0 {
		nOther = 30
	}
	sel := make([]bool, len(steps))
	decode := false
	for i := range steps {
		decode = decode || steps[i].Phase == PhaseDecode
	}
	for i := range steps {
		sel[i] = !decode || steps[i].Phase == PhaseDecode
	}
	keep := func(i int) bool { s := p.stepOf[i]; return s >= 0 && sel[s] }
	kt := collectKernels(p, keep)
	var chosen []int32
	for b := range p.tab.ids {
		chosen = append(chosen, kt.top(nTop, func(s *kstat) bool { return int(s.bucket) == b })...)
	}
	top := make(map[BucketID][]KernelStat)
	for _, k := range kt.describe(p, keep, chosen) {
		top[k.Bucket] = append(top[k.Bucket], k)
	}
	other := p.tab.index[Other]
	all := func(i int) bool { return p.bucketOf[i] == other }
	ot := collectKernels(p, all)
	unc := ot.describe(p, all, ot.top(nOther, func(*kstat) bool { return true }))
	return top, unc
}

// versions gathers the software versions of m (Rank.Versions); nil when
// there are none.
func versions(m ingest.Meta) map[string]string {
	var v map[string]string
	add := func(k, val string) {
		if val == "" {
			return
		}
		if v == nil {
			v = make(map[string]string)
		}
		v[k] = val
	}
	for k, val := range m.Versions {
		add(k, val)
	}
	add("nccl", m.Distributed.NCCLVersion)
	add("backend", m.Distributed.Backend)
	return v
}

// synthetic says whether the trace declares itself generated.
func synthetic(t *ingest.Trace) bool {
	for k, v := range t.Meta.Other {
		if strings.Contains(strings.ToLower(k), "synthetic") && v != "" && v != "false" && v != "0" {
			return true
		}
	}
	return false
}

// setWarnings reports the files of set that were not analysed.
func setWarnings(set *ingest.Set) []string {
	var w []string
	for _, s := range set.SetAside {
		w = append(w, fmt.Sprintf("%s: set aside: %s", s.Path, s.Reason))
	}
	for _, e := range set.Errors {
		w = append(w, e.Error())
	}
	if n := len(set.Captures); n > 0 {
		w = append(w, fmt.Sprintf("%d CUDA-graph capture trace(s) read for the shapes of graph replays, not analysed as steps", n))
	}
	sort.Strings(w)
	return w
}

// launchDelay summarises launch delays in ns.
func launchDelay(ns []int64) LaunchDelay {
	return LaunchDelay{Count: len(ns), P50US: us(quantile(ns, 0.5)), P99US: us(quantile(ns, 0.99))}
}
