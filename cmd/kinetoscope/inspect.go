package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"kinetoscope/ingest"
	"kinetoscope/render"
)

const inspectUsage = `usage: kinetoscope inspect PATH... [--json] [--quiet]

Reads each trace file, profile directory or archive and shows, per file:
rank, world size, bytes read, events by category, what was kept (kernels,
memcpy, memset, launches, annotations), the python_function events
dropped, and warnings. Progress goes to stderr on a terminal.
`

// inspectFile is one file in the inspect JSON output.
type inspectFile struct {
	Path              string           `json:"path"`
	Kind              string           `json:"kind"` // trace, capture, set_aside or error
	Rank              int              `json:"rank"`
	RankSource        string           `json:"rank_source,omitempty"`
	WorldSize         int              `json:"world_size"`
	Bytes             int64            `json:"bytes"`
	UncompressedBytes int64            `json:"uncompressed_bytes"`
	Events            map[string]int64 `json:"events"`
	Kernels           int64            `json:"kernels"`
	Memcpy            int64            `json:"memcpy"`
	Memset            int64            `json:"memset"`
	Launches          int64            `json:"launches"`
	Annotations       int64            `json:"annotations"`
	PythonKept        int64            `json:"python_functions_kept"` // step marks (execute_model) and nn.Module forwards
	PythonDropped     int64            `json:"python_functions_dropped"`
	Warnings          []string         `json:"warnings"`
	Error             string           `json:"error,omitempty"`
	// unread is why a file was set aside before any event was read (not
	// a trace): its figures are not zeros but unknown; "" otherwise.
	unread string
}

// inspectOutput is the inspect JSON document.
type inspectOutput struct {
	Files []inspectFile `json:"files"`
}

func runInspect(args []string, stdout, stderr io.Writer) error {
	paths, asJSON, quiet, err := parseInspectArgs(args, stderr)
	if err != nil {
		return err
	}
	var opt ingest.Options
	var progress *progressLine
	if !quiet {
		if progress = newProgressLine(stderr); progress != nil {
			opt.Progress = progress.update
		}
	}
	var out inspectOutput
	failed := 0
	for _, path := range paths {
		set, err := ingest.Open(path, opt)
		if err != nil {
			out.Files = append(out.Files, inspectFile{Path: path, Kind: "error", Rank: -1, Error: err.Error(),
				Events: map[string]int64{}, Warnings: []string{}})
			failed++
			continue
		}
		files := inspectSet(set)
		failed += len(set.Errors)
		out.Files = append(out.Files, files...)
	}
	if progress != nil {
		progress.clear()
	}
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(out); err != nil {
			return err
		}
	} else {
		writeInspectText(stdout, out.Files)
	}
	if failed > 0 {
		return fmt.Errorf("%d file(s) could not be read", failed)
	}
	return nil
}

// parseInspectArgs parses flags given before or after the paths.
func parseInspectArgs(args []string, stderr io.Writer) (paths []string, asJSON, quiet bool, err error) {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, inspectUsage, "\nflags:\n")
		fs.PrintDefaults()
	}
	fs.BoolVar(&asJSON, "json", false, "write JSON: {\"files\":[...]}")
	fs.BoolVar(&quiet, "quiet", false, "no progress output")
	for {
		if err := fs.Parse(args); err != nil {
			return nil, false, false, err
		}
		if fs.NArg() == 0 {
			break
		}
		paths = append(paths, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(paths) == 0 {
		fs.Usage()
		return nil, false, false, errors.New("want at least one PATH")
	}
	return paths, asJSON, quiet, nil
}

// inspectSet lists every file of a set: traces, captures, set aside, errors,
// in path order.
func inspectSet(set *ingest.Set) []inspectFile {
	var files []inspectFile
	for _, t := range set.Traces {
		files = append(files, describeTrace(t, "trace"))
	}
	for _, t := range set.Captures {
		files = append(files, describeTrace(t, "capture"))
	}
	for _, a := range set.SetAside {
		f := inspectFile{Path: a.Path, Rank: -1, Events: map[string]int64{}, unread: a.Reason}
		if a.Trace != nil {
			f = describeTrace(a.Trace, "")
		}
		f.Kind = "set_aside"
		f.Warnings = append(f.Warnings, "set aside: "+a.Reason)

		files = append(files, f)
	}
	for _, e := range set.Errors {
		f := inspectFile{Path: e.Path, Rank: -1, Events: map[string]int64{}, Warnings: []string{}}
		if e.Trace != nil {
			f = describeTrace(e.Trace, "")
		}
		f.Kind, f.Error = "error", e.Err.Error()
		files = append(files, f)
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	return files
}

// describeTrace fills the inspect entry of one trace.
func describeTrace(t *ingest.Trace, kind string) inspectFile {
	f := inspectFile{
		Path: t.Path, Kind: kind, Rank: t.Rank, RankSource: t.RankSource, WorldSize: t.WorldSize(),
		Bytes: t.Counts.Bytes, UncompressedBytes: t.Counts.UncompressedBytes, Events: t.Counts.ByCategory,
		Launches: int64(t.Launches.Len()), Annotations: int64(t.Annotations.Len()),
		PythonKept: int64(t.PythonCalls.Len() + t.Modules.Len()), PythonDropped: t.Counts.PythonFunctions - int64(t.PythonCalls.Len()+t.Modules.Len()), Warnings: append([]string{}, t.Warnings...),
	}
	for _, g := range t.GPU.All() {
		switch g.Kind {
		case ingest.KindKernel:
			f.Kernels++
		case ingest.KindMemcpy:
			f.Memcpy++
		case ingest.KindMemset:
			f.Memset++
		}
	}
	return f
}

// writeInspectText writes the human-readable listing.
func writeInspectText(w io.Writer, files []inspectFile) {
	for i, f := range files {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintln(w, f.Path)
		if f.unread != "" {
			fmt.Fprintf(w, "  set aside, not read as a trace: %s\n", f.unread)
			continue
		}
		if f.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", f.Error)
			if f.UncompressedBytes == 0 {
				continue
			}
		}
		rank := "unknown"
		if f.Rank >= 0 {
			rank = fmt.Sprintf("%d (from %s)", f.Rank, f.RankSource)
		}
		world := "unknown"
		if f.WorldSize > 0 {
			world = fmt.Sprint(f.WorldSize)
		}
		label := strings.ReplaceAll(f.Kind, "_", " ")
		if f.Kind == "error" {
			label = "not used"
		}
		fmt.Fprintf(w, "  %s, rank %s, world size %s\n", label, rank, world)
		fmt.Fprintf(w, "  read %s bytes, %s bytes of JSON\n", render.Grouped(f.Bytes), render.Grouped(f.UncompressedBytes))
		fmt.Fprintf(w, "  events %s\n", categoryList(f.Events))
		fmt.Fprintf(w, "  kept %s kernels, %s memcpy, %s memset, %s launches, %s annotations, %s python_function step marks and modules; dropped %s python_function\n",
			render.Grouped(f.Kernels), render.Grouped(f.Memcpy), render.Grouped(f.Memset), render.Grouped(f.Launches), render.Grouped(f.Annotations), render.Grouped(f.PythonKept), render.Grouped(f.PythonDropped))
		for _, warn := range f.Warnings {
			fmt.Fprintf(w, "  warning: %s\n", warn)
		}
	}
}

// categoryList formats event counts, largest first, with the total.
func categoryList(events map[string]int64) string {
	type kv struct {
		k string
		n int64
	}
	var kvs []kv
	var total int64
	for k, n := range events {
		kvs = append(kvs, kv{k, n})
		total += n
	}
	sort.Slice(kvs, func(i, j int) bool {
		if kvs[i].n != kvs[j].n {
			return kvs[i].n > kvs[j].n
		}
		return kvs[i].k < kvs[j].k
	})
	parts := make([]string, len(kvs))
	for i, e := range kvs {
		name := e.k
		if name == "" {
			name = "(no category)"
		}
		parts[i] = fmt.Sprintf("%s %s", name, render.Grouped(e.n))
	}
	return fmt.Sprintf("%s: %s", render.Grouped(total), strings.Join(parts, ", "))
}

// progressLine shows read progress on one terminal line.
type progressLine struct {
	w     io.Writer
	mu    sync.Mutex
	last  time.Time
	start time.Time
	path  string
	shown bool
}

// newProgressLine returns a progress line on w, or nil when w is not a
// terminal.
func newProgressLine(w io.Writer) *progressLine {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &progressLine{w: w}
}

// update is the ingest progress callback; it redraws at most five times a
// second.
func (p *progressLine) update(pr ingest.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if pr.Path != p.path {
		p.path, p.start = pr.Path, now
	}
	if pr.Done || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last = now
	mbps := float64(pr.UncompressedBytes) / 1e6 / max(now.Sub(p.start).Seconds(), 1e-3)
	pct := ""
	if pr.TotalBytes > 0 {
		pct = fmt.Sprintf(" (%d%%)", 100*pr.Bytes/pr.TotalBytes)
	}
	fmt.Fprintf(p.w, "\r\x1b[Kreading %s: %.0f MB read%s, %.0f MB JSON, %s events, %.0f MB/s",
		shortPath(pr.Path), float64(pr.Bytes)/1e6, pct, float64(pr.UncompressedBytes)/1e6, render.Grouped(pr.Events), mbps)
	p.shown = true
}

// clear erases the progress line.
func (p *progressLine) clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// shortPath keeps the end of a long path.
func shortPath(p string) string {
	if len(p) > 50 {
		return "..." + p[len(p)-47:]
	}
	return p
}
