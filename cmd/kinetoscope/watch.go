package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	neturl "net/url"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"kinetoscope/driver"
	"kinetoscope/render"
	"kinetoscope/watch"
)

// watchUsage is the watch command's synopsis.
const watchUsage = `usage: kinetoscope watch DIR [--once] [--format table|json|markdown] [--append FILE.md] [--settle D] [--server URL]

Follows a vLLM profile directory while the profiler writes it: shows each
rank file's state on a terminal (appeared, growing at N MB/s, complete),
and when every rank of a set is complete (or the directory has been quiet
for --settle, saying what is missing) analyses the set and prints its
headline. Later profiles in the same directory are new sets.
`

// watchArgs are the flags watch and capture share.
type watchArgs struct {
	dir      string
	once     bool
	format   string
	appendTo string
	server   string
	token    string
	opt      watch.Options
	// seen, when set, is called with every file state the watcher reports.
	seen func(watch.File)
	// source is the command that found the sets (watch, capture): the
	// uploaded runs' source label.
	source string
}

// watchFormats are the formats a finished set is printed in.
var watchFormats = []string{"table", "json", "markdown"}

// watchFlags adds the shared flags to fs.
func (a *watchArgs) flags(fs interface {
	BoolVar(*bool, string, bool, string)
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
}) {
	fs.BoolVar(&a.once, "once", false, "exit after the first set")
	fs.StringVar(&a.format, "format", "table", "output format of a finished set: "+strings.Join(watchFormats, ", "))
	fs.StringVar(&a.appendTo, "append", "", "append each set's report, in Markdown, to this results document")
	fs.StringVar(&a.server, "server", "", "upload each set as one run to this Kinetoscope service (http://host:port)")
	fs.StringVar(&a.token, "token", os.Getenv("KINETOSCOPE_TOKEN"), "the service's token (default $KINETOSCOPE_TOKEN)")
	fs.DurationVar(&a.opt.Settle, "settle", time.Minute, "analyse a set that lacks ranks, and call a stopped file truncated, after the directory has been quiet this long")
	fs.DurationVar(&a.opt.Interval, "interval", time.Second, "time between two looks at the directory")
}

// runWatch is the watch command.
func runWatch(args []string, stdout, stderr io.Writer) error {
	a := watchArgs{source: "watch"}
	fs := newFlagSet("watch", watchUsage, stderr)
	a.flags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		fs.Usage()
		return errors.New("want one DIR: the profile directory to follow")
	}
	a.dir = pos[0]
	if err := checkOneOf("format", a.format, watchFormats); err != nil {
		return err
	}
	if st, err := os.Stat(a.dir); err != nil || !st.IsDir() {
		return fmt.Errorf("%s: not a directory", a.dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return watchDir(ctx, a, stdout, stderr)
}

// watchDir follows a.dir until ctx is done, or after the first set with
// --once, printing, appending and uploading each set.
func watchDir(ctx context.Context, a watchArgs, stdout, stderr io.Writer) error {
	line := newStateLine(stderr)
	a.opt.OnFile = func(f watch.File) {
		line.update(f)
		if a.seen != nil {
			a.seen(f)
		}
	}
	w := watch.New(a.dir, a.opt)
	var failed error
	err := w.Run(ctx, func(s *watch.SetReport) bool {
		line.clear()
		if err := finishSet(ctx, a, s, stdout, stderr); err != nil {
			failed = err
			return false
		}
		return !a.once
	})
	line.clear()
	if failed != nil {
		return failed
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// finishSet prints a set, appends it to the results document and uploads
// it, as asked; where the upload went is said on stderr.
func finishSet(ctx context.Context, a watchArgs, s *watch.SetReport, stdout, stderr io.Writer) error {
	if s.Err != nil {
		fmt.Fprintf(stdout, "%s\n  error: %v\n", setSummary(s), s.Err)
		return nil
	}
	if err := printSet(stdout, s, a.format); err != nil {
		return err
	}
	if a.appendTo != "" {
		if err := appendSet(a.appendTo, a.dir, s); err != nil {
			return err
		}
	}
	if a.server != "" {
		id, err := uploadSet(ctx, a, s)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "set %d uploaded as run %s: %s/runs/%s\n", s.Index, id, strings.TrimRight(a.server, "/"), id)
	}
	return nil
}

// setSummary is a set's first line: ranks, files, what is missing.
func setSummary(s *watch.SetReport) string {
	var b strings.Builder
	fmt.Fprintf(&b, "set %d: %d of %d ranks", s.Index, s.WorldSize-len(s.Missing), s.WorldSize)
	if len(s.Missing) > 0 {
		fmt.Fprintf(&b, ", missing rank %s", joinInts(s.Missing))
	}
	for _, t := range s.Truncated {
		fmt.Fprintf(&b, "; %s is truncated (it stopped growing before its end), not analysed", t)
	}
	fmt.Fprintf(&b, " (%s)", strings.Join(s.Files, ", "))
	return b.String()
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

// printSet prints a finished set: its summary and headline (table), its
// report in Markdown, or one JSON object with the set and the report.
func printSet(w io.Writer, s *watch.SetReport, format string) error {
	switch format {
	case "json":
		rep, err := driver.EncodeReport(s.Run.Report)
		if err != nil {
			return err
		}
		return json.NewEncoder(w).Encode(struct {
			Set    *watch.SetReport `json:"set"`
			Report json.RawMessage  `json:"report"`
		}{s, rep})
	case "markdown":
		fmt.Fprintf(w, "%s\n\n", setSummary(s))
		return driver.WriteReport(w, s.Run.Report, "markdown")
	}
	_, err := fmt.Fprintf(w, "%s\n  %s\n", setSummary(s), render.HeadlineText(s.Run.Report))
	return err
}

// appendSet appends a set's Markdown report to the results document at
// path, under a heading that names the directory and the time.
func appendSet(path, dir string, s *watch.SetReport) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "\n## %s, set %d (%s)\n\n%s\n\n", dir, s.Index, time.Now().Format(time.RFC3339), setSummary(s))
	if err := driver.WriteReport(&b, s.Run.Report, "markdown"); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("append to results document: %w", err)
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("append to %s: %w", path, err)
	}
	return f.Close()
}

// uploadSet posts the set's files as one multipart run to the service at
// a.server, named and labelled as setRun says, and returns the new run's
// id.
func uploadSet(ctx context.Context, a watchArgs, s *watch.SetReport) (string, error) {
	body, ctype, err := multipartFiles(s.Files)
	if err != nil {
		return "", err
	}
	name, labels := setRun(a.dir, a.source, s)
	q := neturl.Values{"name": {name}, "label": labels}
	url := strings.TrimRight(a.server, "/") + "/api/v1/runs"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"?"+q.Encode(), body)
	if err != nil {
		return "", fmt.Errorf("upload to %s: %w", url, err)
	}
	req.Header.Set("Content-Type", ctype)
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("upload to %s: %w", url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("upload to %s: %s: %s", url, resp.Status, bytes.TrimSpace(out))
	}
	var run struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(out, &run); err != nil || run.ID == "" {
		return "", fmt.Errorf("upload to %s: no run id in the answer %q", url, out)
	}
	return run.ID, nil
}

// setRun names the run of a set after its directory and the time its
// profile began ("vllm-profile 2026-12-01 20:14:05 UTC", else "set 2" of
// the directory), and labels it with its world size and the command that
// found it.
func setRun(dir, source string, s *watch.SetReport) (name string, labels []string) {
	base := dir
	if abs, err := filepath.Abs(dir); err == nil {
		base = abs
	}
	base = filepath.Base(base)
	name = fmt.Sprintf("%s set %d", base, s.Index)
	if !s.Start.IsZero() {
		name = base + " " + s.Start.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	labels = []string{fmt.Sprintf("world_size=%d", s.WorldSize), "source=" + source}
	return name, labels
}

// multipartFiles builds a multipart body with one file part per path. It
// holds the files in memory: rank files are read whole by the analysis
// anyway, and this keeps the upload's length known.
func multipartFiles(paths []string) (io.Reader, string, error) {
	var b bytes.Buffer
	mw := multipart.NewWriter(&b)
	for _, p := range paths {
		part, err := mw.CreateFormFile("file", filepath.Base(p))
		if err != nil {
			return nil, "", err
		}
		f, err := os.Open(p)
		if err != nil {
			return nil, "", fmt.Errorf("upload: %w", err)
		}
		_, err = io.Copy(part, f)
		f.Close()
		if err != nil {
			return nil, "", fmt.Errorf("upload %s: %w", p, err)
		}
	}
	if err := mw.Close(); err != nil {
		return nil, "", err
	}
	return &b, mw.FormDataContentType(), nil
}

// stateLine shows the files' states on one terminal line; nil (quiet)
// when the output is not a terminal.
type stateLine struct {
	w     io.Writer
	mu    sync.Mutex
	files map[string]watch.File
	shown bool
}

// newStateLine returns a state line on w, or nil when w is not a terminal.
func newStateLine(w io.Writer) *stateLine {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	return &stateLine{w: w, files: map[string]watch.File{}}
}

// update is the watcher's OnFile callback.
func (l *stateLine) update(f watch.File) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.files[f.Path] = f
	var parts []string
	for _, f := range l.files {
		parts = append(parts, fileText(f))
	}
	sort.Strings(parts)
	fmt.Fprintf(l.w, "\r\x1b[K%s", strings.Join(parts, "; "))
	l.shown = true
}

// fileText is one file's state in a few words.
func fileText(f watch.File) string {
	s := fmt.Sprintf("%s %s", shortPath(filepath.Base(f.Path)), f.State)
	switch f.State {
	case watch.Growing:
		s += fmt.Sprintf(" at %.1f MB/s (%.0f MB)", f.Rate/1e6, float64(f.Size)/1e6)
	case watch.Complete:
		s += fmt.Sprintf(" (rank %d of %d)", f.Rank, f.WorldSize)
	}
	return s
}

// clear erases the state line and forgets the files shown.
func (l *stateLine) clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\x1b[K")
	}
	l.files, l.shown = map[string]watch.File{}, false
}
