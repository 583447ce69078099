package analyze

import (
	"sort"
	"strings"

	"kinetoscope/ingest"
)

// nameInfo caches the classification of one event name and kind.
type nameInfo struct {
	done     bool
	collDep  bool // a collective-restricted rule ahead of the winner matched
	phaseDep bool // a sampling-phase rule ahead of the winner matched
	plain    uint8
	sampling uint8
}

type collKey struct {
	name ingest.StrID
	kind ingest.GPUKind
	coll string
}

// eventClassifier classifies the GPU events of one trace with caches keyed
// by name id, so the rule table runs once per distinct name.
type eventClassifier struct {
	cls   *Classifier
	tab   bucketTab
	t     *ingest.Trace
	links *links
	names [3][]nameInfo // by kind, then name id
	colls map[collKey]uint8
}

func newEventClassifier(c *Classifier, tab bucketTab, t *ingest.Trace) *eventClassifier {
	ec := &eventClassifier{cls: c, tab: tab, t: t, links: newLinks(t), colls: make(map[collKey]uint8)}
	for k := range ec.names {
		ec.names[k] = make([]nameInfo, t.Strings.Len())
	}
	return ec
}

// info returns the cached classification of ev's name.
func (ec *eventClassifier) info(ev *ingest.GPUEvent) *nameInfo {
	k := int(ev.Kind)
	if k >= len(ec.names) {
		k = 0
	}
	ni := &ec.names[k][ev.Name]
	if !ni.done {
		name := ec.t.Name(ev.Name)
		b, cd, pd := ec.cls.match(name, ev.Kind, "", false)
		s := b // no sampling rule ahead of b matched: the same answer
		if pd {
			s = ec.cls.Match(name, ev.Kind, "", true)
		}
		*ni = nameInfo{done: true, collDep: cd, phaseDep: pd, plain: ec.tab.index[b], sampling: ec.tab.index[s]}
	}
	return ni
}

// bucket returns ev's bucket outside the sampling phase; l is its launch.
func (ec *eventClassifier) bucket(ev *ingest.GPUEvent, l *ingest.Launch) uint8 {
	ni := ec.info(ev)
	if !ni.collDep {
		return ni.plain
	}
	coll := ec.links.collective(ev, l)
	if coll == "" {
		return ni.plain
	}
	key := collKey{ev.Name, ev.Kind, coll}
	b, ok := ec.colls[key]
	if !ok {
		b = ec.tab.index[ec.cls.Match(ec.t.Name(ev.Name), ev.Kind, coll, false)]
		ec.colls[key] = b
	}
	return b
}

// samplerPattern names CPU annotations that mark sampling.
const samplerPattern = `(?i)sampl`

// samplerNames matches samplerPattern.
var samplerNames = mustNamePattern(samplerPattern)

// samplerSpans are the CPU annotations that mark sampling, per thread,
// sorted by start.
type samplerSpans map[int32][]*ingest.Annotation

func findSamplerSpans(t *ingest.Trace) samplerSpans {
	ids := make(map[ingest.StrID]bool)
	sp := samplerSpans{}
	for _, a := range t.Annotations.All() {
		if a.GPU {
			continue
		}
		is, ok := ids[a.Name]
		if !ok {
			n := t.Name(a.Name)
			is = samplerNames.MatchString(n) && !strings.HasPrefix(n, "execute_")
			ids[a.Name] = is
		}
		if is {
			sp[a.Thread] = append(sp[a.Thread], a)
		}
	}
	for _, as := range sp {
		sort.Slice(as, func(i, j int) bool { return as[i].Start < as[j].Start })
	}
	return sp
}

// holds says whether l was issued inside a sampler annotation.
func (sp samplerSpans) holds(l *ingest.Launch) bool {
	as := sp[l.Thread]
	n := sort.Search(len(as), func(i int) bool { return as[i].Start > l.Start })
	for i := n - 1; i >= 0 && i >= n-4; i-- {
		if l.Start <= as[i].Start+as[i].Dur {
			return true
		}
	}
	return false
}
