package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"kinetoscope/sampletraces/synth"
)

// runSynth is the synth command: it writes a synthetic vLLM-style
// multi-rank trace set and its truth.json.
func runSynth(args []string, stdout, stderr io.Writer) error {
	cfg, dir, force, err := parseSynthFlags(args, stderr)
	if err != nil {
		return err
	}
	start := time.Now()
	t, err := synth.Generate(dir, cfg, force)
	if err != nil {
		return err
	}
	var raw int64
	for _, r := range t.Ranks {
		raw += r.UncompressedBytes
	}
	fmt.Fprintf(stdout, "wrote %d synthetic rank files (%d steps: %d prefill, %d decode; %.1f MB uncompressed per rank) and %s to %s in %.1fs\n",
		len(t.Ranks), len(t.Steps), t.Config.PrefillSteps, t.Config.DecodeSteps,
		float64(raw)/float64(len(t.Ranks))/1e6, synth.TruthFile, dir, time.Since(start).Seconds())
	return nil
}

// synthUsage is the synth command's synopsis.
const synthUsage = `usage: kinetoscope synth [-o DIR] [flags]

Writes a SYNTHETIC vLLM-style trace set (one file per rank) of a Kimi-K2.5-like
INT4 MoE tensor-parallel run, plus truth.json with every value known by construction.
`

// parseSynthFlags parses the synth flags into a config, the output
// directory and whether a non-empty directory may be written into.
func parseSynthFlags(args []string, stderr io.Writer) (synth.Config, string, bool, error) {
	cfg := synth.DefaultConfig()
	fs := newFlagSet("synth", synthUsage, stderr)
	dir := fs.String("o", "", "output directory (default synthetic-<model>-tp<ranks>-<eager|graph>-seed<seed>)")
	fs.StringVar(&cfg.Model, "model", cfg.Model, "model profile (kimi-k2.5)")
	fs.IntVar(&cfg.Ranks, "ranks", cfg.Ranks, "tensor-parallel ranks, one file each")
	fs.IntVar(&cfg.Layers, "layers", cfg.Layers, "decoder layers (the first dense, the rest MoE)")
	fs.IntVar(&cfg.PrefillSteps, "prefill-steps", cfg.PrefillSteps, "prefill steps before decoding")
	fs.IntVar(&cfg.DecodeSteps, "decode-steps", cfg.DecodeSteps, "decode steps (set by --target-size when given)")
	fs.Float64Var(&cfg.AllReduceShare, "allreduce-share", cfg.AllReduceShare, "AllReduce transfer time / decode GPU time (see truth.json allreduce_share_definition)")
	fs.Float64Var(&cfg.SkewUS, "skew-us", cfg.SkewUS, "largest per-collective arrival skew in decode, µs (prefill: 4x)")
	fs.BoolVar(&cfg.CUDAGraph, "cuda-graph", cfg.CUDAGraph, "decode replays one CUDA graph per step")
	fs.BoolVar(&cfg.CollectiveArgs, "collective-args", cfg.CollectiveArgs, "NCCL kernels carry collective args and CPU record_param_comms ops (torch.distributed); false: vLLM pynccl style, bare kernels")
	fs.IntVar(&cfg.PythonFunctions, "python-functions", cfg.PythonFunctions, "python_function frames per CPU launch (0: no with_stack events)")
	fs.IntVar(&cfg.Batch, "batch", cfg.Batch, "decode batch (requests)")
	fs.IntVar(&cfg.PromptLen, "prompt-len", cfg.PromptLen, "prompt tokens per request (prefill)")
	fs.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "random seed; the same seed writes the same files")
	size := fs.String("target-size", "", "pick the decode steps so each rank's uncompressed trace is about this size (e.g. 1GB, 500MB, 2GiB)")
	noGzip := fs.Bool("no-gzip", false, "write .pt.trace.json instead of .pt.trace.json.gz")
	force := fs.Bool("force", false, "write into a non-empty output directory (files of the same names are replaced)")
	if err := fs.Parse(args); err != nil {
		return cfg, "", false, err
	}
	if fs.NArg() > 0 {
		return cfg, "", false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	cfg.Gzip = !*noGzip
	if *size != "" {
		n, err := synth.ParseSize(*size)
		if err != nil {
			return cfg, "", false, err
		}
		decodeSet := false
		fs.Visit(func(f *flag.Flag) { decodeSet = decodeSet || f.Name == "decode-steps" })
		if decodeSet {
			return cfg, "", false, fmt.Errorf("--target-size and --decode-steps are exclusive")
		}
		cfg.TargetSize = n
	}
	if *dir == "" {
		*dir = filepath.Clean(cfg.DefaultDir())
	}
	return cfg, *dir, *force, cfg.Validate()
}
