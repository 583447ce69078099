package crossrank

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"kinetoscope/ingest"
)

// item is one collective GPU event on one rank.
type item struct {
	start, end int64 // absolute ns, the rank's own clock
	seq        int64 // NCCL sequence number, -1 if absent
	idx        int32 // index in Trace.GPU
	sig        int32 // signature id: kind, kernel name, sizes, dtype
}

func (it *item) dur() int64 { return it.end - it.start }

// group is a process group: the ranks that take part in its collectives.
type group struct {
	name    string
	members []int // ranks; nil when unknown
	known   bool  // members were declared, not guessed
}

// sequence is the collectives of one kind in one process group, per trace,
// ordered by end time.
type sequence struct {
	group int
	kind  string
	items [][]item // by trace index
}

// input is the collectives of every trace, grouped into sequences.
type input struct {
	ranks   []int
	bases   []int64
	windows []window // by trace, see traceWindow
	counts  []int    // collective events per trace
	groups  []group
	seqs    []*sequence
	sigs    []string // description of each signature id
}

type seqKey struct {
	group int
	kind  string
}

type sigKey struct {
	kind                string
	name, coll, dtype   ingest.StrID
	inNelems, outNelems int64
	hasArgs             bool
}

type groupKey struct{ name, ranks ingest.StrID }

// collector builds an input.
type collector struct {
	in      *input
	sigIDs  map[string]int32
	groupID map[string]int
	seqs    map[seqKey]*sequence
	n       int
	lastKey seqKey // the key of last, to skip the map for runs of one sequence
	last    *sequence
}

func collect(traces []*ingest.Trace, ranks []int, classify Classifier) *input {
	c := &collector{
		in: &input{
			ranks:   ranks,
			bases:   make([]int64, len(traces)),
			windows: make([]window, len(traces)),
			counts:  make([]int, len(traces)),
		},
		sigIDs:  map[string]int32{},
		groupID: map[string]int{},
		seqs:    map[seqKey]*sequence{},
		n:       len(traces),
	}
	c.in.groups = append(c.in.groups, defaultGroup(traces))
	c.groupID[c.in.groups[0].name] = 0
	for i, t := range traces {
		c.trace(i, t, classify)
	}
	c.finish()
	return c.in
}

// trace adds the collectives of trace i.
func (c *collector) trace(i int, t *ingest.Trace, classify Classifier) {
	base := TimeBaseNS(t)
	c.in.bases[i] = base
	c.in.windows[i] = traceWindow(t, base)
	sigs := map[sigKey]int32{}
	groups := map[groupKey]int{}
	comms := commOpsByExternalID(t)
	for idx, ev := range t.GPU.All() {
		kind, ok := classify(t, idx, ev)
		if !ok {
			continue
		}
		args := collectiveArgs(t, ev, comms)
		it := item{start: base + ev.Start, end: base + ev.Start + max(ev.Dur, 0), seq: -1, idx: int32(idx)}
		g := 0
		if args != nil {
			it.seq = args.SeqNum
			g = c.groupOf(t, args, groups)
		}
		it.sig = c.sigOf(t, ev, args, kind, sigs)
		s := c.sequence(seqKey{g, kind})
		s.items[i] = appendItem(s.items[i], it)
		c.in.counts[i]++
	}
}

// appendItem appends it to its, doubling the capacity when full: append
// grows large slices by a quarter, which copies them about five times over.
func appendItem(its []item, it item) []item {
	if len(its) == cap(its) {
		grown := make([]item, len(its), max(64, 2*cap(its)))
		copy(grown, its)
		its = grown
	}
	return append(its, it)
}

// commOpsByExternalID maps External id to record_param_comms args, for
// kernels that carry no collective args themselves.
func commOpsByExternalID(t *ingest.Trace) map[int64]*ingest.CollectiveArgs {
	if t.CommOps.Len() == 0 {
		return nil
	}
	m := make(map[int64]*ingest.CollectiveArgs, t.CommOps.Len())
	for _, op := range t.CommOps.All() {
		if op.ExternalID != 0 {
			m[op.ExternalID] = &op.Args
		}
	}
	return m
}

// collectiveArgs returns the event's collective args, from the kernel or
// from its record_param_comms op, or nil.
func collectiveArgs(t *ingest.Trace, ev *ingest.GPUEvent, comms map[int64]*ingest.CollectiveArgs) *ingest.CollectiveArgs {
	if ev.Coll >= 0 && int(ev.Coll) < len(t.Collectives) {
		return &t.Collectives[ev.Coll]
	}
	if ev.ExternalID != 0 {
		return comms[ev.ExternalID]
	}
	return nil
}

// groupOf returns the id of the process group named by args, the default
// group when args name none.
func (c *collector) groupOf(t *ingest.Trace, args *ingest.CollectiveArgs, cache map[groupKey]int) int {
	k := groupKey{args.PGName, args.PGRanks}
	if k == (groupKey{}) {
		return 0
	}
	if g, ok := cache[k]; ok {
		return g
	}
	ranksText := t.Name(args.PGRanks)
	name := strings.TrimSpace("pg " + t.Name(args.PGName) + " " + ranksText)
	g, ok := c.groupID[name]
	if !ok {
		members := parseRanks(ranksText)
		g = len(c.in.groups)
		c.in.groups = append(c.in.groups, group{name: name, members: members, known: members != nil})
		c.groupID[name] = g
	}
	cache[k] = g
	return g
}

// sigOf returns the signature id of a collective: what must agree across
// ranks for two events to be one collective.
func (c *collector) sigOf(t *ingest.Trace, ev *ingest.GPUEvent, args *ingest.CollectiveArgs, kind string, cache map[sigKey]int32) int32 {
	k := sigKey{kind: kind, name: ev.Name}
	if args != nil {
		k.coll, k.dtype, k.inNelems, k.outNelems, k.hasArgs = args.Name, args.Dtype, args.InNelems, args.OutNelems, true
	}
	if id, ok := cache[k]; ok {
		return id
	}
	text := kind + " " + shorten(t.Name(ev.Name), 60)
	if k.hasArgs {
		text += fmt.Sprintf(" %s in=%d out=%d %s", t.Name(args.Name), args.InNelems, args.OutNelems, t.Name(args.Dtype))
	}
	id, ok := c.sigIDs[text]
	if !ok {
		id = int32(len(c.in.sigs))
		c.in.sigs = append(c.in.sigs, text)
		c.sigIDs[text] = id
	}
	cache[k] = id
	return id
}

func (c *collector) sequence(k seqKey) *sequence {
	if c.last != nil && c.lastKey == k {
		return c.last
	}
	s, ok := c.seqs[k]
	if !ok {
		s = &sequence{group: k.group, kind: k.kind, items: make([][]item, c.n)}
		c.seqs[k] = s
	}
	c.lastKey, c.last = k, s
	return s
}

// finish orders each rank's items by end and the sequences by group name
// and kind.
func (c *collector) finish() {
	for _, s := range c.seqs {
		for _, its := range s.items {
			sortItems(its)
		}
		c.in.seqs = append(c.in.seqs, s)
	}
	g := c.in.groups
	sort.Slice(c.in.seqs, func(i, j int) bool {
		a, b := c.in.seqs[i], c.in.seqs[j]
		if a.group != b.group {
			return g[a.group].name < g[b.group].name
		}
		return a.kind < b.kind
	})
}

func sortItems(its []item) {
	less := func(i, j int) bool {
		a, b := &its[i], &its[j]
		if a.end != b.end {
			return a.end < b.end
		}
		if a.start != b.start {
			return a.start < b.start
		}
		return a.idx < b.idx
	}
	if !sort.SliceIsSorted(its, less) {
		sort.Slice(its, less)
	}
}

// defaultGroup is the group of collectives without process group args: the
// default process group of distributedInfo.pg_config when a trace has one,
// else ranks 0..world_size-1, else every rank given.
func defaultGroup(traces []*ingest.Trace) group {
	ws := 0
	for _, t := range traces {
		for _, g := range t.Meta.Distributed.Groups {
			if g.Name == "0" || g.Desc == "default_pg" {
				return group{name: "default group", members: g.Ranks, known: true}
			}
		}
		ws = max(ws, t.WorldSize())
	}
	if ws == 0 {
		return group{name: "default group"}
	}
	members := make([]int, ws)
	for i := range members {
		members[i] = i
	}
	return group{name: "default group", members: members, known: true}
}

// parseRanks parses a "Process Group Ranks" text such as "[0, 1, 2]"; nil
// when it is not such a list.
func parseRanks(s string) []int {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	ranks := make([]int, 0, len(parts))
	for _, p := range parts {
		r, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || r < 0 {
			return nil
		}
		ranks = append(ranks, r)
	}
	return ranks
}

func shorten(s string, n int) string {
	if i := strings.IndexByte(s, '('); i > 0 {
		s = s[:i]
	}
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
