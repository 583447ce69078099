package analyze

import (
	"fmt"

	"kinetoscope/ingest"
)

// Classifier assigns GPU events to buckets with an ordered rule table. It
// is immutable and safe for concurrent use.
type Classifier struct {
	rules []compiledRule
}

type compiledRule struct {
	Rule
	re       *namePattern
	coll     *namePattern // nil when the rule has no collective restriction
	kind     int          // -1: any category
	sampling bool
}

// NewClassifier returns a classifier that tries the user rules first, then
// the built-in ones.
func NewClassifier(user []Rule) (*Classifier, error) {
	def, err := DefaultRules()
	if err != nil {
		return nil, err
	}
	all := append(append([]Rule(nil), user...), def...)
	c := &Classifier{rules: make([]compiledRule, 0, len(all))}
	for i, r := range all {
		if err := checkRule(r); err != nil {
			return nil, fmt.Errorf("rule %d: %w", i+1, err)
		}
		cr := compiledRule{Rule: r, sampling: r.Phase == PhaseSampling}
		var err error
		if cr.re, err = compileNamePattern(r.Pattern); err != nil {
			return nil, fmt.Errorf("rule %d: pattern: %w", i+1, err)
		}
		if r.Collective != "" {
			if cr.coll, err = compileNamePattern(r.Collective); err != nil {
				return nil, fmt.Errorf("rule %d: collective: %w", i+1, err)
			}
		}
		cr.kind, _ = categoryKind(r.Category)
		c.rules = append(c.rules, cr)
	}
	return c, nil
}

// Rules returns the table in the order it is tried.
func (c *Classifier) Rules() []Rule {
	out := make([]Rule, len(c.rules))
	for i, r := range c.rules {
		out[i] = r.Rule
	}
	return out
}

// Match returns the bucket for an event of the given name and kind, with
// collective name coll ("" when unknown), in the sampling phase or not.
func (c *Classifier) Match(name string, kind ingest.GPUKind, coll string, sampling bool) BucketID {
	b, _, _ := c.match(name, kind, coll, sampling)
	return b
}

// match also says whether a collective name or the sampling phase could
// have changed the answer: a restricted rule ahead of the winner matched
// the name.
func (c *Classifier) match(name string, kind ingest.GPUKind, coll string, sampling bool) (b BucketID, collDep, phaseDep bool) {
	nt, ct := newNameText(name), newNameText(coll)
	for i := range c.rules {
		r := &c.rules[i]
		if r.kind >= 0 && r.kind != int(kind) {
			continue
		}
		if !r.re.match(nt) {
			continue
		}
		if r.coll != nil && (coll == "" || !r.coll.match(ct)) {
			collDep = true
			continue
		}
		if r.sampling && !sampling {
			phaseDep = true
			continue
		}
		return r.Bucket, collDep, phaseDep
	}
	return Other, collDep, phaseDep
}

// categoryKind maps a rule category to a GPU event kind; -1 means any.
func categoryKind(cat string) (int, bool) {
	switch cat {
	case "":
		return -1, true
	case "kernel":
		return int(ingest.KindKernel), true
	case "gpu_memcpy":
		return int(ingest.KindMemcpy), true
	case "gpu_memset":
		return int(ingest.KindMemset), true
	}
	return 0, false
}
