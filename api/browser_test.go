package api_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
	"kinetoscope/sampletraces"
)

// chromeBinary finds headless Chromium: $KINETOSCOPE_CHROME, else the
// Debian package's chromium on PATH (or another Chrome). The browser test
// fails, never skips, without one.
func chromeBinary(t *testing.T) string {
	if p := os.Getenv("KINETOSCOPE_CHROME"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no Chromium found for the browser test: install it (apt-get install -y chromium) or set KINETOSCOPE_CHROME to its path")
	return ""
}

// screenshotDir is where the browser test leaves its screenshots.
func screenshotDir(t *testing.T) string {
	dir := os.Getenv("KINETOSCOPE_SCREENSHOTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "kinetoscope-screenshots")
	}
	testkit.Must(t, os.MkdirAll(dir, 0o755))
	return dir
}

// browser starts a headless Chromium and returns its context.
func browser(t *testing.T) context.Context {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromeBinary(t)), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000),
		chromedp.Flag("disable-gpu", true))
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); cancelA() })
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}

// step runs browser actions with a timeout.
func step(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	sctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(sctx, actions...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// evalJS evaluates a JavaScript expression.
func evalJS[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS waits until a JavaScript predicate holds, across page loads.
func waitJS(t *testing.T, ctx context.Context, what, expr string) {
	t.Helper()
	var last error
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return
		}
		last = err
	}
	t.Fatalf("waiting for %s: timed out (last error: %v)", what, last)
}

// screenshot saves a full-page screenshot.
func screenshot(t *testing.T, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	testkit.Must(t, os.WriteFile(p, png, 0o644))
	t.Logf("screenshot %s", p)
}

// imagesLoaded is a JavaScript predicate: every chart image on the page
// finished loading with a non-zero natural width.
const imagesLoaded = `(() => { const imgs = [...document.querySelectorAll("img.chart")];
	return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0); })()`

// The web page in a real browser: upload the two rank files of the real
// eager run through the form, wait for the run page and its charts, pick a
// step, go back, and diff it with the CUDA-graph run.
func TestBrowser(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	shots := screenshotDir(t)
	ctx := browser(t)
	otherID, _ := realRun(t, s.URL, "cudagraph")
	eager, err := sampletraces.RealDir("eager")
	testkit.Must(t, err)
	rankFiles, err := filepath.Glob(filepath.Join(eager, "*.pt.trace.json.gz"))
	testkit.Must(t, err)

	step(t, ctx, "open the run list",
		chromedp.Navigate(s.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#upload-form")),
		chromedp.SetUploadFiles(chromedp.CSS("#upload-file"), rankFiles),
		chromedp.SetValue(chromedp.CSS(`input[name="name"]`), "eager from the browser"),
		chromedp.SetValue(chromedp.CSS(`input[name="labels"]`), "mode=eager"),
		chromedp.Click(chromedp.CSS("#upload-submit")),
	)
	waitJS(t, ctx, "the run page", `location.pathname.startsWith("/runs/") && document.querySelector("#headline") !== null`)
	waitJS(t, ctx, "the run page's charts", imagesLoaded)
	runURL := evalJS[string](t, ctx, "location.href")
	width := evalJS[int](t, ctx, `document.querySelector("#chart-breakdown").naturalWidth`)
	headline := evalJS[string](t, ctx, `document.querySelector("#headline").textContent`)
	rows := evalJS[int](t, ctx, `document.querySelectorAll("#bucket-table tbody tr").length`)
	if width <= 0 || headline == "" || strings.HasPrefix(headline, "No headline") || rows == 0 {
		t.Fatalf("run page: chart width %d, headline %q, %d bucket rows", width, headline, rows)
	}
	t.Logf("run page %s: breakdown chart %d px wide, headline %q", runURL, width, headline)
	if st := evalJS[string](t, ctx, `(document.querySelector("#straggler") || {}).textContent || ""`); !strings.Contains(st, "Straggler: rank") {
		t.Errorf("run page of two ranks names no straggler: %q", st)
	}
	screenshot(t, ctx, shots, "run.png")

	// The step picker: a link puts the step in the URL and the timeline
	// follows it.
	evalJS[bool](t, ctx, `document.querySelector("a.steplink").click(), true`)
	waitJS(t, ctx, "the picked step's timeline", `new URLSearchParams(location.search).has("step") &&
		document.querySelector("#chart-timeline") !== null &&
		document.querySelector("#chart-timeline").src.includes("step=" + new URLSearchParams(location.search).get("step")) &&
		document.querySelector("#chart-timeline").complete && document.querySelector("#chart-timeline").naturalWidth > 0`)
	screenshot(t, ctx, shots, "run-step.png")

	// The back button: history.back() is what the browser's button does.
	evalJS[bool](t, ctx, "history.back(), true")
	waitJS(t, ctx, "the run page without a step after going back", `location.pathname.startsWith("/runs/") && !location.search.includes("step=")`)
	evalJS[bool](t, ctx, "history.back(), true")
	waitJS(t, ctx, "the run list with both runs after going back", `location.pathname === "/" &&
		document.querySelector("table.runs") !== null &&
		document.querySelector("table.runs").textContent.includes("eager from the browser") &&
		document.querySelector("table.runs").textContent.includes("cudagraph")`)
	screenshot(t, ctx, shots, "index.png")

	runID := runURL[strings.LastIndex(runURL, "/")+1:]
	diffURL := fmt.Sprintf("%s/diff?base=%s&head=%s", s.URL, runID, otherID)
	step(t, ctx, "open a shared diff link", chromedp.Navigate(diffURL))
	waitJS(t, ctx, "the diff chart", imagesLoaded)
	if h := evalJS[string](t, ctx, `document.querySelector("#diff-headline").textContent`); h == "" {
		t.Fatal("diff page without headline")
	}
	if sel := evalJS[string](t, ctx, `document.querySelector("#diff-head").value`); sel != otherID {
		t.Fatalf("diff picker shows head %q, want %q from the URL", sel, otherID)
	}
	screenshot(t, ctx, shots, "diff.png")
}
