package analyze

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"kinetoscope/analyze/crossrank"
	"kinetoscope/ingest"
)

// bwKey identifies one exact-size bandwidth row.
type bwKey struct {
	phase  string
	bucket BucketID
	coll   string // collective name, "" without args
	dtype  string
	group  int
	elems  int64 // the larger of In and Out msg nelems
	bytes  int64 // elems times the element size; 0 when unknown
}

// family is the key without the size: the rows that grouping may join.
func (k bwKey) family() bwKey {
	return bwKey{phase: k.phase, bucket: k.bucket, coll: k.coll, group: k.group}
}

// bwAcc accumulates the calls of one row.
type bwAcc struct {
	key     bwKey
	dtype   string // "mixed" when grouped over several
	grouped bool
	calls   int
	// kernelNS sums the calls' durations; transferNS and waitNS split
	// those matched across ranks, summed over the ranks.
	kernelNS, transferNS, waitNS int64
	callBytes                    int64 // bytes summed over the calls
	bytesMin, bytesMax           int64
	// inst holds each matched instance once with its transfer time;
	// instNS and instBytes sum them.
	inst              map[int]int64
	instNS, instBytes int64
	ranks             map[int]bool // indices into Report.Ranks
}

func newBWAcc(k bwKey) *bwAcc {
	return &bwAcc{key: k, dtype: k.dtype, bytesMin: k.bytes, bytesMax: k.bytes, inst: map[int]int64{}, ranks: map[int]bool{}}
}

// add counts one call of rank ri lasting durNS.
func (a *bwAcc) add(ri int, durNS, bytes int64) {
	a.calls++
	a.kernelNS += durNS
	a.callBytes += bytes
	a.ranks[ri] = true
}

// addMatched adds the split of a call matched across ranks as instance
// inst; the instance's transfer counts once, whichever rank comes first.
func (a *bwAcc) addMatched(inst int, s crossrank.Split, bytes int64) {
	a.transferNS += s.TransferNS
	a.waitNS += s.WaitNS
	if _, seen := a.inst[inst]; !seen {
		a.inst[inst] = s.TransferNS
		a.instNS += s.TransferNS
		a.instBytes += bytes
	}
}

// merge adds b's calls to a, as a grouped row.
func (a *bwAcc) merge(b *bwAcc) {
	a.grouped = true
	if a.dtype != b.dtype {
		a.dtype = "mixed"
	}
	a.calls += b.calls
	a.kernelNS += b.kernelNS
	a.transferNS += b.transferNS
	a.waitNS += b.waitNS
	a.callBytes += b.callBytes
	a.bytesMin, a.bytesMax = min(a.bytesMin, b.bytesMin), max(a.bytesMax, b.bytesMax)
	for id, ns := range b.inst {
		if _, seen := a.inst[id]; !seen {
			a.inst[id] = ns
			a.instNS += ns
		}
	}
	a.instBytes += b.instBytes
	for r := range b.ranks {
		a.ranks[r] = true
	}
}

// addRankBandwidth adds the communication kernels in the steps of rank
// ri (rk, p) to accs; rc is its cross-rank split, nil when there is none.
func addRankBandwidth(accs map[bwKey]*bwAcc, rk *Rank, ri int, p *rankPass, rc *crossrank.RankComm) {
	for gi, ev := range p.t.GPU.All() {
		st := p.stepOf[gi]
		if st < 0 || int(st) >= len(rk.Steps) || rk.Steps[st].Phase == PhaseEmpty || rk.Steps[st].Truncated {
			continue
		}
		if !p.tab.isComm(p.bucketOf[gi]) {
			continue
		}
		id := p.tab.ids[p.bucketOf[gi]]
		k := newBWKey(p.t, rk.Steps[st].Phase, id, p.ec.links.collArgs(ev, p.launch(gi)), rk.WorldSize)
		acc := accs[k]
		if acc == nil {
			acc = newBWAcc(k)
			accs[k] = acc
		}
		acc.add(ri, max(ev.Dur, 0), k.bytes)
		if rc == nil {
			continue
		}
		if s, ok := rc.Split(gi); ok {
			inst, _ := rc.Instance(gi)
			acc.addMatched(inst, s, k.bytes)
		}
	}
}

// newBWKey describes a call from its collective args (nil when the trace
// has none for it); worldSize stands for the group size without them.
func newBWKey(t *ingest.Trace, phase string, bucket BucketID, args *ingest.CollectiveArgs, worldSize int) bwKey {
	k := bwKey{phase: phase, bucket: bucket, group: worldSize}
	if args == nil {
		return k
	}
	k.coll, k.dtype = t.Name(args.Name), t.Name(args.Dtype)
	if args.GroupSize > 0 {
		k.group = int(args.GroupSize)
	}
	k.elems = max(args.InNelems, args.OutNelems, 0)
	k.bytes = k.elems * dtypeSize(k.dtype)
	return k
}

// dtypeSize is the size in bytes of one element of a PyTorch dtype as
// record_param_comms names it (c10 ScalarType names); 0 when unknown.
func dtypeSize(dtype string) int64 {
	d := strings.ToLower(dtype)
	switch d {
	case "byte", "char", "bool", "qint8", "quint8", "int8", "uint8":
		return 1
	case "bfloat16", "half", "short", "uint16", "float16", "int16":
		return 2
	case "float", "int", "uint32", "qint32", "float32", "int32", "complexhalf":
		return 4
	case "double", "long", "uint64", "complexfloat", "float64", "int64":
		return 8
	case "complexdouble":
		return 16
	}
	if strings.HasPrefix(d, "float8") {
		return 1
	}
	return 0
}

// groupSizes returns the accumulators, those of a family with more than
// maxExactSizes distinct sizes joined into power-of-two ranges, and the
// names of the families joined.
func groupSizes(accs map[bwKey]*bwAcc) ([]*bwAcc, []string) {
	sizes := map[bwKey]map[int64]bool{}
	for k := range accs {
		if k.bytes > 0 {
			f := k.family()
			if sizes[f] == nil {
				sizes[f] = map[int64]bool{}
			}
			sizes[f][k.bytes] = true
		}
	}
	var out []*bwAcc
	bins := map[bwKey]*bwAcc{}
	names := map[string]bool{}
	for _, k := range sortedKeys(accs) {
		a := accs[k]
		f := k.family()
		if k.bytes == 0 || len(sizes[f]) <= maxExactSizes {
			out = append(out, a)
			continue
		}
		names[fmt.Sprintf("%s %s", k.phase, bucketLabel(k.bucket))] = true
		bk := f
		bk.bytes = pow2Floor(k.bytes)
		if g := bins[bk]; g != nil {
			g.merge(a)
			continue
		}
		a.grouped = true
		bins[bk] = a
		out = append(out, a)
	}
	grouped := make([]string, 0, len(names))
	for n := range names {
		grouped = append(grouped, n)
	}
	sort.Strings(grouped)
	return out, grouped
}

// sortedKeys returns the keys of accs in a fixed order, so that grouping
// is deterministic.
func sortedKeys(accs map[bwKey]*bwAcc) []bwKey {
	keys := make([]bwKey, 0, len(accs))
	for k := range accs {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b bwKey) int {
		return cmp.Or(cmp.Compare(a.phase, b.phase), cmp.Compare(a.bucket, b.bucket), cmp.Compare(a.coll, b.coll),
			cmp.Compare(a.group, b.group), cmp.Compare(a.dtype, b.dtype), cmp.Compare(a.bytes, b.bytes), cmp.Compare(a.elems, b.elems))
	})
	return keys
}

// pow2Floor returns the largest power of two not above n (n > 0).
func pow2Floor(n int64) int64 {
	p := int64(1)
	for p <= n/2 {
		p *= 2
	}
	return p
}

// collArgs returns the collective args of ev (launched by l, nil if
// unknown), from the sources collective reads in the same order: the
// kernel's own args, the record_param_comms op with its or its launch's
// External id, the one holding the launch on its thread. nil when none
// has them.
func (k *links) collArgs(ev *ingest.GPUEvent, l *ingest.Launch) *ingest.CollectiveArgs {
	t := k.t
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		return &t.Collectives[ev.Coll]
	}
	k.build()
	for _, ext := range []int64{ev.ExternalID, launchExt(l)} {
		if i, ok := k.commByExt[ext]; ok && ext != 0 {
			return &t.CommOps.At(int(i)).Args
		}
	}
	if l == nil {
		return nil
	}
	i := holding(k.commByThr[l.Thread], l.Start, func(j int32) (int64, int64) {
		c := t.CommOps.At(int(j))
		return c.Start, c.Dur
	})
	if i < 0 {
		return nil
	}
	return &t.CommOps.At(int(i)).Args
}
