package diff

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"kinetoscope/analyze"
)

// kernelTotal is one kernel name's time and calls per step in one run.
type kernelTotal struct {
	name      string
	bucket    analyze.BucketID
	usPerStep float64
	calls     float64
}

// kernelTotals pools the ranks' TopKernels lists (which cover the decode
// steps when there are any, else all steps) into per step figures: summed
// over ranks and buckets, divided by the steps summed over ranks. complete
// reports whether the lists account for all kernel time of those steps (the
// analysis lists only the top kernels of each bucket unless asked for more).
func kernelTotals(ranks []*analyze.Rank) (totals map[string]*kernelTotal, complete bool) {
	us := map[string]*kernelTotal{}
	top := map[string]float64{} // the time of the bucket named in us
	steps, listed, all := 0, 0.0, 0.0
	for _, rk := range ranks {
		covered := coveredSteps(rk)
		steps += len(covered)
		for _, st := range covered {
			for _, b := range st.Buckets {
				all += b.US
			}
		}
		for _, bk := range analyze.Buckets() {
			for _, ks := range rk.TopKernels[bk.ID] {
				addKernel(us, top, ks)
				listed += ks.US
			}
		}
	}
	if steps > 0 {
		for _, t := range us {
			t.usPerStep /= float64(steps)
			t.calls /= float64(steps)
		}
	}
	return us, all == 0 || listed >= 0.999*all
}

// addKernel adds a kernel stat to its name's total; a name found in several
// buckets is named by the bucket with most time.
func addKernel(us map[string]*kernelTotal, top map[string]float64, ks analyze.KernelStat) {
	t := us[ks.Name]
	if t == nil {
		t = &kernelTotal{name: ks.Name}
		us[ks.Name] = t
	}
	if ks.US > top[ks.Name] || t.bucket == "" {
		t.bucket, top[ks.Name] = ks.Bucket, ks.US
	}
	t.usPerStep += ks.US
	t.calls += float64(ks.Count)
}

// coveredSteps returns the steps a rank's kernel lists cover: decode steps
// when there are any, else all steps.
func coveredSteps(rk *analyze.Rank) []*analyze.Step {
	if st := phaseSteps(rk, phaseDecode); len(st) > 0 {
		return st
	}
	return phaseSteps(rk, phaseAll)
}

// matchKernels pairs kernels by exact name, then the rest by normalised
// name; what remains is added (head only) or removed (base only).
func matchKernels(base, head map[string]*kernelTotal) Kernels {
	k := Kernels{Added: []KernelUse{}, Removed: []KernelUse{}, Changed: []KernelChange{}}
	restB, restH := map[string][]*kernelTotal{}, map[string][]*kernelTotal{}
	for name, b := range base {
		if h, ok := head[name]; ok {
			k.Changed = append(k.Changed, change(name, "exact", []*kernelTotal{b}, []*kernelTotal{h}))
			continue
		}
		n := NormalizeKernel(name)
		restB[n] = append(restB[n], b)
	}
	for name, h := range head {
		if _, ok := base[name]; !ok {
			n := NormalizeKernel(name)
			restH[n] = append(restH[n], h)
		}
	}
	for n, bs := range restB {
		if hs, ok := restH[n]; ok {
			k.Changed = append(k.Changed, change(n, "normalized", bs, hs))
			delete(restH, n)
			continue
		}
		k.Removed = append(k.Removed, uses(bs)...)
	}
	for _, hs := range restH {
		k.Added = append(k.Added, uses(hs)...)
	}
	sortKernels(&k)
	return k
}

// change builds the comparison of matched kernels. The kernels are summed
// in name order, so that the sums do not depend on map order.
func change(name, match string, bs, hs []*kernelTotal) KernelChange {
	byName := func(a, b *kernelTotal) int { return strings.Compare(a.name, b.name) }
	slices.SortFunc(bs, byName)
	slices.SortFunc(hs, byName)
	c := KernelChange{Name: name, Match: match, Bucket: largest(bs).bucket}
	for _, b := range bs {
		c.BaseUSPerStep += b.usPerStep
		c.BaseCallsPerStep += b.calls
	}
	for _, h := range hs {
		c.HeadUSPerStep += h.usPerStep
		c.HeadCallsPerStep += h.calls
	}
	if match != "exact" {
		c.BaseNames, c.HeadNames = names(bs), names(hs)
	}
	c.DeltaUS = c.HeadUSPerStep - c.BaseUSPerStep
	c.DeltaPct = pct(c.DeltaUS, c.BaseUSPerStep)
	return c
}

// largest returns the kernel with the most time.
func largest(ks []*kernelTotal) *kernelTotal {
	return slices.MaxFunc(ks, func(a, b *kernelTotal) int { return cmp.Compare(a.usPerStep, b.usPerStep) })
}

// names lists the kernels' names, sorted.
func names(ks []*kernelTotal) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = k.name
	}
	slices.Sort(out)
	return out
}

// uses converts kernel totals to KernelUse entries.
func uses(ks []*kernelTotal) []KernelUse {
	out := make([]KernelUse, len(ks))
	for i, k := range ks {
		out[i] = KernelUse{Name: k.name, Bucket: k.bucket, USPerStep: k.usPerStep, CallsPerStep: k.calls}
	}
	return out
}

// sortKernels orders added and removed by time, changed by |delta|, ties by
// name, so the output is deterministic.
func sortKernels(k *Kernels) {
	byUse := func(a, b KernelUse) int {
		return cmp.Or(cmp.Compare(b.USPerStep, a.USPerStep), strings.Compare(a.Name, b.Name))
	}
	slices.SortFunc(k.Added, byUse)
	slices.SortFunc(k.Removed, byUse)
	slices.SortFunc(k.Changed, func(a, b KernelChange) int {
		return cmp.Or(cmp.Compare(math.Abs(b.DeltaUS), math.Abs(a.DeltaUS)), strings.Compare(a.Name, b.Name))
	})
}
