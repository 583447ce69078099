// Package synth writes synthetic, vLLM-style PyTorch profiler (Kineto) traces
// of a tensor-parallel MoE decode run, one file per rank, together with a
// truth file of everything known by construction: steps, kernels and
// collectives per step, time per bucket, and the arrival skew of every rank
// at every collective.
//
// Every output says it is synthetic: the top-level key
// "kinetoscope_synthetic": true, a traceName containing "synthetic", the
// default directory name, and "synthetic": true in truth.json.
package synth

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Config describes one synthetic run.
type Config struct {
	Model        string `json:"model"`         // model profile; only "kimi-k2.5" for now
	Ranks        int    `json:"ranks"`         // tensor-parallel ranks (= world size)
	Layers       int    `json:"layers"`        // decoder layers; the first is dense, the rest MoE
	PrefillSteps int    `json:"prefill_steps"` // prefill steps before decoding
	DecodeSteps  int    `json:"decode_steps"`  // decode steps; ignored when TargetSize > 0
	// TargetSize, when > 0, picks DecodeSteps so that each rank's
	// uncompressed trace is about this many bytes.
	TargetSize int64 `json:"target_size"`
	// AllReduceShare is the AllReduce transfer time as a fraction of decode
	// GPU time. See Truth.AllReduceShareDefinition for the exact meaning.
	AllReduceShare float64 `json:"allreduce_share"`
	// SkewUS is the largest extra compute time (µs) a rank can have before a
	// decode collective, and so the largest arrival skew; prefill uses 4x.
	SkewUS    float64 `json:"skew_us"`
	CUDAGraph bool    `json:"cuda_graph"` // decode replays one CUDA graph per step
	// CollectiveArgs writes collectives the way torch.distributed does:
	// record_param_comms ops and collective args on NCCL kernels. When
	// false they look like vLLM's pynccl path: a vllm::all_reduce op and
	// bare NCCL kernels, to be matched across ranks by order.
	CollectiveArgs bool `json:"collective_args"`
	// PythonFunctions is K, the depth of the python_function chain emitted
	// around each CPU launch (with_stack=True style).
	PythonFunctions int    `json:"python_functions"`
	Batch           int    `json:"batch"`      // decode batch (requests per step)
	PromptLen       int    `json:"prompt_len"` // prompt tokens per request (prefill)
	Seed            uint64 `json:"seed"`       // everything random derives from it
	Gzip            bool   `json:"gzip"`       // write .json.gz (else .json)
}

// DefaultConfig returns the defaults of the synth command.
func DefaultConfig() Config {
	return Config{
		Model:           "kimi-k2.5",
		Ranks:           8,
		Layers:          61,
		PrefillSteps:    1,
		DecodeSteps:     8,
		AllReduceShare:  0.5,
		SkewUS:          10,
		PythonFunctions: 8,
		CollectiveArgs:  true,
		Batch:           32,
		PromptLen:       128,
		Seed:            1,
		Gzip:            true,
	}
}

// Limits on Config fields, to keep output sizes and nesting sane.
const (
	maxRanks           = 64
	maxLayers          = 512
	maxPythonFunctions = 256
	maxSteps           = 10_000_000
)

// Validate reports the first invalid field.
func (c *Config) Validate() error {
	if _, err := modelByName(c.Model); err != nil {
		return err
	}
	checks := []struct {
		ok  bool
		msg string
	}{
		{c.Ranks >= 1 && c.Ranks <= maxRanks, fmt.Sprintf("ranks must be 1..%d, got %d", maxRanks, c.Ranks)},
		{c.Layers >= 1 && c.Layers <= maxLayers, fmt.Sprintf("layers must be 1..%d, got %d", maxLayers, c.Layers)},
		{c.PrefillSteps >= 0 && c.PrefillSteps <= maxSteps, fmt.Sprintf("prefill steps must be 0..%d, got %d", maxSteps, c.PrefillSteps)},
		{c.DecodeSteps >= 0 && c.DecodeSteps <= maxSteps, fmt.Sprintf("decode steps must be 0..%d, got %d", maxSteps, c.DecodeSteps)},
		{c.TargetSize >= 0, fmt.Sprintf("target size must not be negative, got %d", c.TargetSize)},
		{c.AllReduceShare > 0 && c.AllReduceShare <= 0.95, fmt.Sprintf("allreduce share must be in (0, 0.95], got %g", c.AllReduceShare)},
		{c.SkewUS >= 0 && c.SkewUS <= 10_000, fmt.Sprintf("skew must be 0..10000 µs, got %g", c.SkewUS)},
		{c.PythonFunctions >= 0 && c.PythonFunctions <= maxPythonFunctions, fmt.Sprintf("python functions must be 0..%d, got %d", maxPythonFunctions, c.PythonFunctions)},
		{c.Batch >= 1 && c.Batch <= 4096, fmt.Sprintf("batch must be 1..4096, got %d", c.Batch)},
		{c.PromptLen >= 1 && c.PromptLen <= 1<<20, fmt.Sprintf("prompt length must be 1..%d, got %d", 1<<20, c.PromptLen)},
	}
	for _, ch := range checks {
		if !ch.ok {
			return errors.New(ch.msg)
		}
	}
	if c.PrefillSteps+c.DecodeSteps == 0 && c.TargetSize == 0 {
		return errors.New("no steps: need prefill steps, decode steps or a target size")
	}
	return nil
}

// DefaultDir returns the default output directory name for c; it always
// contains "synthetic".
func (c *Config) DefaultDir() string {
	mode := "eager"
	if c.CUDAGraph {
		mode = "graph"
	}
	return fmt.Sprintf("synthetic-%s-tp%d-%s-seed%d", c.Model, c.Ranks, mode, c.Seed)
}

// ParseSize parses a byte size such as "1GB", "500MB", "2GiB", "64KiB" or
// "12345". KB/MB/GB/TB are powers of 1000, KiB/MiB/GiB/TiB powers of 1024.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1e3}, {"M", 1e6}, {"G", 1e9}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if len(t) > len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			mult, t = u.mult, strings.TrimSpace(t[:len(t)-len(u.suffix)])
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v < 0 || v*mult > 1<<50 {
		return 0, fmt.Errorf("bad size %q (want e.g. 1GB, 500MB, 2GiB)", s)
	}
	return int64(v * mult), nil
}
