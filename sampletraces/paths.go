// Package sampletraces locates the sample traces that tests, benchmarks and
// the service use: the project's real GPU traces under sampletraces/real and
// the public traces copied into sampletraces/public.
package sampletraces

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// RealVariants returns the directories of sampletraces/real, one multi-rank
// run each.
func RealVariants() []string {
	return []string{"eager", "cudagraph", "p2p_disabled", "nccl_simple"}
}

// RealStyles returns the directories of sampletraces/real that each hold
// one trace shape of real vLLM traces (TP1 on one H200): the step marks,
// or none, of one vLLM version or profiler setting.
func RealStyles() []string {
	return []string{"withstack_execute_model", "annotated_execute_model", "vllm_new_annotations",
		"profilerstep", "profilerstep_vllm", "bare_eager", "bare_cudagraph", "moe", "moe_sync"}
}

// RealAccount returns the directories of sampletraces/real made for the
// step-time account (TP1 on one H200, execute_model marks, eager): a pair
// whose kernels are the same and whose host stalls differ, and a trace
// with a .item() and a host sleep inside every step.
func RealAccount() []string {
	return []string{"pair_eager", "pair_host_delay", "host_sync_item"}
}

// RealSweeps returns the directories of sampletraces/real made for the
// roofline and the per-step cost model (TP1 on one H200, eager,
// record_shapes on, vLLM execute_* marks): one decoder at batch sizes 1-64
// and contexts 512-4096 (bf16, cuBLAS), and at batch 1-64 with its MLP in
// Marlin INT4 (fp16); each with microbench.json, the same shapes timed
// alone with CUDA events.
func RealSweeps() []string {
	return []string{"batch_sweep", "marlin_sweep"}
}

// RealGraphCapture returns the directories of sampletraces/real made for
// graph replays' shapes (TP1 on one H200): a replay trace of 8 decode
// steps with the trace of its graph's capture under capture_traces/, as
// vLLM lays them out, and the same steps eager (graph_capture/truth.json
// says what they hold).
func RealGraphCapture() []string {
	return []string{"graph_capture", "graph_capture_eager"}
}

// RealAll returns every directory of sampletraces/real: the variants,
// the styles, the account samples, the sweeps and the graph capture.
func RealAll() []string {
	all := append(RealVariants(), RealStyles()...)
	all = append(all, RealAccount()...)
	all = append(all, RealSweeps()...)
	return append(all, RealGraphCapture()...)
}

// RepoRoot walks up from the working directory to the directory holding
// go.mod (the repository root).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// PublicDir returns sampletraces/public (real public traces of two other
// projects, with their SOURCES.md), and an error naming the path when it
// is missing.
func PublicDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return existing(filepath.Join(root, "sampletraces", "public"))
}

// Public returns the path of one public trace, e.g.
// "hta-nccl-allreduce-broadcast-rank0.json.gz".
func Public(name string) (string, error) {
	dir, err := PublicDir()
	if err != nil {
		return "", err
	}
	return existing(filepath.Join(dir, name))
}

// RealDir returns sampletraces/real/VARIANT, a directory of per-rank traces
// with its truth.json.
func RealDir(variant string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return existing(filepath.Join(root, "sampletraces", "real", variant))
}

func existing(path string) (string, error) {
	if _, err := os.Stat(path); err != nil {
		return "", fmt.Errorf("sample traces: %w", err)
	}
	return path, nil
}
