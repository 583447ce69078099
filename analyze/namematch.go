package analyze

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode"
	"unicode/utf8"
)

// namePattern is an RE2 pattern matched unanchored against event names,
// answering exactly as regexp.MatchString does, but faster on the patterns
// the rules use: alternations of literals, many of them case-insensitive,
// over kernel names of kilobytes. On those, the regexp engine costs about a
// millisecond a name for the big alternations, more than reading the trace.
// The alternatives that are literals (or finite sets of them, such as
// "(1|2)stage") are found with strings.Contains, on the name lower-cased
// for the case-insensitive ones; only the other alternatives (anchors,
// repetitions, classes) go through a regexp of their own, and only for
// names that hold a literal they need ("nccl" for "(?i)nccl\w*Generic").
type namePattern struct {
	re     *regexp.Regexp // the whole pattern: names that are not ASCII
	exact  []string       // case-sensitive literals
	folded []string       // case-insensitive ASCII literals, lower-cased
	rest   []restAlt      // the other alternatives
	folds  bool           // some literal above is compared case-insensitively
}

// restAlt is an alternative that is not a set of literals, with a literal
// every match of it contains, when it has one: names without that literal
// are passed by with strings.Contains, without running the regexp.
type restAlt struct {
	need string // "" when none; lower-cased when fold
	fold bool
	re   *regexp.Regexp
}

// maxLiterals bounds the literals one alternative may expand to.
const maxLiterals = 64

// compileNamePattern compiles pattern.
func compileNamePattern(pattern string) (*namePattern, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, err
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	p := &namePattern{re: re}
	subs := alternatives(tree)
	var rest []*syntax.Regexp
	for _, s := range subs {
		lits, m, ok := literals(s)
		if !ok || (m == foldCase && !allASCII(lits)) {
			rest = append(rest, s)
			continue
		}
		for _, l := range lits {
			if m == foldCase {
				p.folded = append(p.folded, asciiLower(l))
			} else {
				p.exact = append(p.exact, l)
			}
		}
	}
	for _, s := range rest {
		a := restAlt{re: re}
		if len(subs) > 1 {
			if a.re, err = regexp.Compile(s.String()); err != nil {
				return nil, fmt.Errorf("alternative %s of %q: %w", s, pattern, err)
			}
		}
		if need, m := requiredLiteral(s); need != "" && (m != foldCase || isASCII(need)) {
			a.need, a.fold = need, m == foldCase
			if a.fold {
				a.need = asciiLower(need)
			}
		}
		p.rest = append(p.rest, a)
		p.folds = p.folds || a.fold
	}
	p.folds = p.folds || len(p.folded) > 0
	return p, nil
}

// requiredLiteral returns the longest literal that every match of re
// contains, among the literals it is a concatenation of, with its case
// mode; "" when there is none.
func requiredLiteral(re *syntax.Regexp) (string, caseMode) {
	switch re.Op {
	case syntax.OpLiteral:
		lits, m, _ := literals(re)
		return lits[0], m
	case syntax.OpCapture:
		return requiredLiteral(re.Sub[0])
	case syntax.OpPlus:
		return requiredLiteral(re.Sub[0])
	case syntax.OpConcat:
		best, bm := "", anyCase
		for _, s := range re.Sub {
			if l, m := requiredLiteral(s); len(l) > len(best) {
				best, bm = l, m
			}
		}
		return best, bm
	}
	return "", anyCase
}

// mustNamePattern compiles a pattern of the program's own.
func mustNamePattern(pattern string) *namePattern {
	p, err := compileNamePattern(pattern)
	if err != nil {
		panic(err)
	}
	return p
}

// alternatives returns subexpressions whose alternation is re: the
// branches of a top-level alternation, with a factored common prefix
// ("nccl(?:DevKernel_X|Kernel_X)", as the parser writes
// "ncclDevKernel_X|ncclKernel_X") distributed over the branches again, so
// that each branch can be a literal on its own.
func alternatives(re *syntax.Regexp) []*syntax.Regexp {
	switch re.Op {
	case syntax.OpAlternate:
		var out []*syntax.Regexp
		for _, s := range re.Sub {
			out = append(out, alternatives(s)...)
		}
		return out
	case syntax.OpConcat:
		n := len(re.Sub)
		if n < 2 || re.Sub[n-1].Op != syntax.OpAlternate {
			break
		}
		var out []*syntax.Regexp
		for _, a := range alternatives(re.Sub[n-1]) {
			sub := append(append([]*syntax.Regexp(nil), re.Sub[:n-1]...), a)
			out = append(out, &syntax.Regexp{Op: syntax.OpConcat, Sub: sub})
		}
		return out
	}
	return []*syntax.Regexp{re}
}

// caseMode says how a set of literals compares with a name.
type caseMode uint8

const (
	anyCase   caseMode = iota // no letters: either way
	exactCase                 // case-sensitive
	foldCase                  // case-insensitive
)

// join combines two modes; ok is false when one is exact and the other
// folded.
func join(a, b caseMode) (caseMode, bool) {
	switch {
	case a == anyCase:
		return b, true
	case b == anyCase || a == b:
		return a, true
	}
	return a, false
}

// literals returns the finite set of strings re matches, when it matches
// only those (and at most maxLiterals of them), with their case mode.
func literals(re *syntax.Regexp) ([]string, caseMode, bool) {
	switch re.Op {
	case syntax.OpEmptyMatch:
		return []string{""}, anyCase, true
	case syntax.OpLiteral:
		s := string(re.Rune)
		if re.Flags&syntax.FoldCase != 0 && hasLetter(s) {
			return []string{s}, foldCase, true
		}
		if hasLetter(s) {
			return []string{s}, exactCase, true
		}
		return []string{s}, anyCase, true
	case syntax.OpCharClass:
		var out []string
		m := anyCase
		for i := 0; i+1 < len(re.Rune); i += 2 {
			for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
				if len(out) == maxLiterals {
					return nil, 0, false
				}
				if unicode.IsLetter(r) {
					m = exactCase
				}
				out = append(out, string(r))
			}
		}
		return out, m, len(out) > 0
	case syntax.OpCapture:
		return literals(re.Sub[0])
	case syntax.OpQuest:
		sub, m, ok := literals(re.Sub[0])
		return append([]string{""}, sub...), m, ok && len(sub) < maxLiterals
	case syntax.OpAlternate:
		var out []string
		m := anyCase
		for _, s := range re.Sub {
			sub, sm, ok := literals(s)
			if !ok {
				return nil, 0, false
			}
			if m, ok = join(m, sm); !ok || len(out)+len(sub) > maxLiterals {
				return nil, 0, false
			}
			out = append(out, sub...)
		}
		return out, m, true
	case syntax.OpConcat:
		out := []string{""}
		m := anyCase
		for _, s := range re.Sub {
			sub, sm, ok := literals(s)
			if !ok {
				return nil, 0, false
			}
			if m, ok = join(m, sm); !ok || len(out)*len(sub) > maxLiterals {
				return nil, 0, false
			}
			next := make([]string, 0, len(out)*len(sub))
			for _, a := range out {
				for _, b := range sub {
					next = append(next, a+b)
				}
			}
			out = next
		}
		return out, m, true
	}
	return nil, 0, false
}

// nameText is a name prepared once for matching against every pattern:
// its lower-cased copy, and what decides whether the literal comparisons
// answer as the regexp engine would.
type nameText struct {
	s, lower string
	ascii    bool // only ASCII bytes
	valid    bool // valid UTF-8
}

// newNameText prepares name.
func newNameText(name string) nameText {
	t := nameText{s: name, lower: asciiLower(name), ascii: isASCII(name)}
	t.valid = t.ascii || utf8.ValidString(name)
	return t
}

// match reports whether the pattern matches the name.
func (p *namePattern) match(t nameText) bool {
	if !t.ascii && (p.folds || !t.valid) {
		// Folding beyond ASCII (k also matches the Kelvin sign), or bytes
		// that the regexp engine reads as U+FFFD: the engine decides.
		return p.re.MatchString(t.s)
	}
	for _, l := range p.exact {
		if strings.Contains(t.s, l) {
			return true
		}
	}
	for _, l := range p.folded {
		if strings.Contains(t.lower, l) {
			return true
		}
	}
	for _, a := range p.rest {
		switch {
		case a.need != "" && a.fold && !strings.Contains(t.lower, a.need):
		case a.need != "" && !a.fold && !strings.Contains(t.s, a.need):
		case a.re.MatchString(t.s):
			return true
		}
	}
	return false
}

// MatchString reports whether the pattern matches name.
func (p *namePattern) MatchString(name string) bool { return p.match(newNameText(name)) }

// asciiLower lower-cases the ASCII letters of s.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; 'A' <= c && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func allASCII(ss []string) bool {
	for _, s := range ss {
		if !isASCII(s) {
			return false
		}
	}
	return true
}

func hasLetter(s string) bool {
	for _, r := range s {
		if unicode.IsLetter(r) {
			return true
		}
	}
	return false
}
