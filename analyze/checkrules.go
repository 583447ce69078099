package analyze

import (
	"strings"

	"kinetoscope/ingest"
)

// commFragments are the name fragments of communication kernels, each with
// the bucket a rule for such a kernel would most likely name. Fragments
// with underscores are looked for in the lower-cased name; the others in
// the lower-cased name without underscores too (all_reduce, AllReduce).
var commFragments = []struct {
	frag   string
	bucket BucketID
}{
	{"allreduce", AllReduce},
	{"allgather", AllGather},
	{"reducescatter", ReduceScatter},
	{"alltoall", AllToAll},
	{"nccl", CommOther},
	{"rccl", CommOther},
	{"mscclpp", CommOther},
	{"cross_device", AllReduce},
	{"custom_ar", AllReduce},
	{"deep_ep", AllToAll},
}

// commFragment returns the communication fragment name holds, if any.
func commFragment(name string) (BucketID, bool) {
	lower := strings.ToLower(name)
	folded := strings.ReplaceAll(lower, "_", "")
	for _, f := range commFragments {
		if strings.Contains(lower, f.frag) || (!strings.Contains(f.frag, "_") && strings.Contains(folded, f.frag)) {
			return f.bucket, true
		}
	}
	return "", false
}

// commBucketGuess names the bucket a rule for a communication-looking
// kernel would most likely give it.
func commBucketGuess(name string) BucketID {
	if b, ok := commFragment(name); ok {
		return b
	}
	return CommOther
}

// checkRules measures bucket Other over the steps of Rank.TopKernels and
// lists the communication-looking kernels no communication rule matched.
func (p *rankPass) checkRules(rk *Rank) RulesCheck {
	ph, name := rk.Decode, PhaseDecode
	if ph.Steps == 0 {
		ph, name = Aggregate(rk.Steps, isPhase("all")), "all"
	}
	rc := RulesCheck{Phase: name, Steps: ph.Steps, OtherUS: ph.Buckets[Other].US, OtherShare: pctOf(ph.Buckets[Other].US, ph.KernelUS)}
	top := rk.TopKernels[Other]
	rc.Top = append([]KernelStat(nil), top[:min(len(top), maxListed)]...)
	rc.CommLike = p.commLike()
	rc.UnnamedCollectives = p.unnamedCollectives()
	return rc
}

// commLike lists the GPU events of the trace whose names look like
// communication but whose bucket is not a communication bucket, by name
// and bucket, most time first. The names are tested once each.
func (p *rankPass) commLike() []KernelStat {
	look := make([]bool, p.t.Strings.Len())
	found := false
	for k := range p.ec.names {
		for id, ni := range p.ec.names[k] {
			// A name whose rules always give a communication bucket needs
			// no look at its events.
			if !ni.done || look[id] || (p.tab.isComm(ni.plain) && p.tab.isComm(ni.sampling) && !ni.collDep) {
				continue
			}
			if _, ok := commFragment(p.t.Name(ingest.StrID(id))); ok {
				look[id], found = true, true
			}
		}
	}
	if !found {
		return nil
	}
	type key struct {
		name ingest.StrID
		b    uint8
	}
	at := make(map[key]int)
	var out []KernelStat
	for i, ev := range p.t.GPU.All() {
		if !look[ev.Name] {
			continue
		}
		b := p.bucketOf[i]
		if p.tab.isComm(b) {
			continue
		}
		id := p.tab.ids[b]
		k := key{ev.Name, b}
		j, ok := at[k]
		if !ok {
			j = len(out)
			at[k] = j
			out = append(out, KernelStat{Name: p.t.Name(ev.Name), Bucket: id})
		}
		out[j].Count++
		out[j].US += us(ev.Dur)
	}
	for j := range out {
		out[j].MeanUS = out[j].US / float64(out[j].Count)
	}
	sortKernelStats(out)
	return out
}
