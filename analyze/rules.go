package analyze

import (
	_ "embed"
	"fmt"
	"os"
	"regexp"

	"github.com/goccy/go-yaml"
)

//go:embed rules.yaml
var defaultRulesYAML []byte

// Rule is one line of the classification table: GPU events whose name
// matches Pattern (and the optional restrictions) go to Bucket. Rules are
// tried in order; the first that matches wins.
type Rule struct {
	Bucket BucketID `json:"bucket" yaml:"bucket"`
	// Pattern is an RE2 regular expression matched anywhere in the event
	// name; empty matches every name.
	Pattern string `json:"pattern" yaml:"pattern"`
	// Category restricts the rule to one event category: kernel,
	// gpu_memcpy or gpu_memset. Empty means any.
	Category string `json:"category,omitempty" yaml:"category,omitempty"`
	// Collective, an RE2 expression, restricts the rule to events whose
	// collective name (kernel args, else the linked record_param_comms op,
	// else the enclosing nccl:NAME annotation) matches. Events without a
	// collective name never match a rule that sets it.
	Collective string `json:"collective,omitempty" yaml:"collective,omitempty"`
	// Phase "sampling" restricts the rule to a step's sampling phase: events
	// that start after the step's last GEMM on their device, or that were
	// launched inside a sampler annotation. Empty means any.
	Phase string `json:"phase,omitempty" yaml:"phase,omitempty"`
}

// PhaseSampling is the only Rule.Phase restriction.
const PhaseSampling = "sampling"

type ruleFile struct {
	Rules []Rule `yaml:"rules"`
}

// DefaultRules returns the built-in rule table (analyze/rules.yaml).
func DefaultRules() ([]Rule, error) {
	return ParseRules(defaultRulesYAML, "default rules")
}

// LoadRules reads a rule table from a YAML (or JSON) file of the form
// {rules: [{bucket, pattern, category, collective, phase}, ...]}.
func LoadRules(path string) ([]Rule, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	return ParseRules(data, path)
}

// ParseRules parses and checks a rule table; name labels errors.
func ParseRules(data []byte, name string) ([]Rule, error) {
	var f ruleFile
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for i, r := range f.Rules {
		if err := checkRule(r); err != nil {
			return nil, fmt.Errorf("%s: rule %d: %w", name, i+1, err)
		}
	}
	return f.Rules, nil
}

func checkRule(r Rule) error {
	if _, ok := BucketByID(r.Bucket); !ok {
		return fmt.Errorf("unknown bucket %q", r.Bucket)
	}
	if _, err := regexp.Compile(r.Pattern); err != nil {
		return fmt.Errorf("pattern: %w", err)
	}
	if _, err := regexp.Compile(r.Collective); err != nil {
		return fmt.Errorf("collective: %w", err)
	}
	if _, ok := categoryKind(r.Category); !ok {
		return fmt.Errorf("unknown category %q (want kernel, gpu_memcpy or gpu_memset)", r.Category)
	}
	if r.Phase != "" && r.Phase != PhaseSampling {
		return fmt.Errorf("unknown phase %q (want %q)", r.Phase, PhaseSampling)
	}
	return nil
}
