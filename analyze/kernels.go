package analyze

import (
	"sort"

	"kinetoscope/ingest"
)

// kstat accumulates one kernel name in one bucket.
type kstat struct {
	name   ingest.StrID
	bucket uint8
	count  int
	ns     int64
}

// kernelTable gathers kstats for the events that keep selects.
type kernelTable struct {
	stats []kstat
	first []int32 // per name id: index of its first stat + 1, 0 if none
	more  map[[2]int64]int32
}

func collectKernels(p *rankPass, keep func(i int) bool) *kernelTable {
	kt := &kernelTable{first: make([]int32, p.t.Strings.Len()), more: make(map[[2]int64]int32)}
	for i, ev := range p.t.GPU.All() {
		if !keep(i) {
			continue
		}
		j := kt.index(ev.Name, p.bucketOf[i])
		kt.stats[j].count++
		kt.stats[j].ns += ev.Dur
	}
	return kt
}

// index returns the stat of (name, bucket), adding it if new.
func (kt *kernelTable) index(name ingest.StrID, b uint8) int32 {
	if j := kt.lookup(name, b); j >= 0 {
		return j
	}
	kt.stats = append(kt.stats, kstat{name: name, bucket: b})
	j := int32(len(kt.stats) - 1)
	if kt.first[name] == 0 {
		kt.first[name] = j + 1
	} else {
		kt.more[[2]int64{int64(name), int64(b)}] = j
	}
	return j
}

// lookup returns the stat index of (name, bucket) or -1.
func (kt *kernelTable) lookup(name ingest.StrID, b uint8) int32 {
	f := kt.first[name]
	switch {
	case f == 0:
		return -1
	case kt.stats[f-1].bucket == b:
		return f - 1
	}
	if j, ok := kt.more[[2]int64{int64(name), int64(b)}]; ok {
		return j
	}
	return -1
}

// top returns the indexes of the n stats with most time among those ok
// accepts, most time first.
func (kt *kernelTable) top(n int, ok func(*kstat) bool) []int32 {
	var ix []int32
	for j := range kt.stats {
		if ok(&kt.stats[j]) {
			ix = append(ix, int32(j))
		}
	}
	sort.Slice(ix, func(a, b int) bool {
		sa, sb := &kt.stats[ix[a]], &kt.stats[ix[b]]
		if sa.ns != sb.ns {
			return sa.ns > sb.ns
		}
		return sa.name < sb.name
	})
	if len(ix) > n {
		ix = ix[:n]
	}
	return ix
}

// describe turns the chosen stats into KernelStats with p50 and p99, from a
// second pass over the kept events.
func (kt *kernelTable) describe(p *rankPass, keep func(i int) bool, chosen []int32) []KernelStat {
	slot := make([]int32, len(kt.stats))
	for j := range slot {
		slot[j] = -1
	}
	off := make([]int, len(chosen)+1)
	for k, j := range chosen {
		slot[j] = int32(k)
		off[k+1] = off[k] + kt.stats[j].count
	}
	durs := make([]int64, off[len(chosen)])
	fill := append([]int(nil), off[:len(chosen)]...)
	for i, ev := range p.t.GPU.All() {
		if !keep(i) {
			continue
		}
		if j := kt.lookup(ev.Name, p.bucketOf[i]); j >= 0 && slot[j] >= 0 {
			k := slot[j]
			durs[fill[k]] = ev.Dur
			fill[k]++
		}
	}
	out := make([]KernelStat, len(chosen))
	for k, j := range chosen {
		s := &kt.stats[j]
		d := durs[off[k]:off[k+1]]
		out[k] = KernelStat{Name: p.t.Name(s.name), Bucket: p.tab.ids[s.bucket], Count: s.count,
			US: us(s.ns), MeanUS: us(s.ns) / float64(max(1, s.count)),
			P50US: us(quantile(d, 0.5)), P99US: us(quantile(d, 0.99))}
	}
	return out
}
