// Package web serves Kinetoscope's web page: server-rendered HTML
// (html/template) with embedded assets and nothing loaded from the internet.
// Every page keeps its state in the URL query, so the back button and
// shared links work.
package web

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/api/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Backend is what the pages show: the server's runs, reports and diffs.
type Backend interface {
	ListRuns(ctx context.Context, opt store.ListOptions) ([]*store.Run, int, error)
	Run(ctx context.Context, id string) (*store.Run, error)
	Report(ctx context.Context, id string) (*analyze.Report, error)
	// Diff compares the runs named by the query's base and head (with its
	// rank and phase).
	Diff(ctx context.Context, q url.Values) (*diff.Diff, error)
	// Outputs lists the formats and charts the service offers.
	Outputs() Outputs
	// Watched lists the profile directories the server follows.
	Watched() []WatchedDir
}

// Output is one format or chart the service offers: its name and what it
// is.
type Output struct {
	Name    string
	Summary string
}

// Outputs are the formats and charts the service offers, from the one
// table of outputs (driver.Formats, driver.ChartKinds), main ones first;
// the pages' menus and chart sections read them.
type Outputs struct {
	ReportFormats []Output
	DiffFormats   []Output
	RunCharts     []Output
	DiffCharts    []Output
}

// Pages serves the web page.
type Pages struct {
	b         Backend
	needToken bool
	tmpl      map[string]*template.Template
	sums      summaries
}

// New parses the templates. needToken shows a token field on the upload
// form.
func New(b Backend, needToken bool) (*Pages, error) {
	p := &Pages{b: b, needToken: needToken, tmpl: map[string]*template.Template{}}
	// Each page template is parsed with layout.html.
	for _, name := range []string{"index", "run", "diff", "error"} {
		t, err := template.New("layout.html").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("web template %s: %w", name, err)
		}
		p.tmpl[name] = t
	}
	return p, nil
}

// Register adds the page routes to e.
func (p *Pages) Register(e *echo.Echo) {
	static, _ := fs.Sub(staticFS, "static")
	e.GET("/", p.index)
	e.GET("/runs/:id", p.run)
	e.GET("/diff", p.diff)
	e.GET("/static/*", echo.WrapHandler(http.StripPrefix("/static/", noListing(static))))
}

// render executes a page template into the response.
func (p *Pages) render(c echo.Context, code int, name string, data map[string]any) error {
	data["NeedToken"] = p.needToken
	// Pages show live state: never serve them from a cache.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-cache")
	var buf bytes.Buffer
	if err := p.tmpl[name].Execute(&buf, data); err != nil {
		return fmt.Errorf("page %s: %w", name, err)
	}
	return c.HTMLBlob(code, buf.Bytes())
}

// index shows the run list, the upload form and the diff picker.
func (p *Pages) index(c echo.Context) error {
	q := c.QueryParams()
	opt := store.ListOptions{Limit: 25, Labels: map[string]string{}}
	if off, err := strconv.Atoi(q.Get("offset")); err == nil && off > 0 {
		opt.Offset = off
	}
	label := strings.TrimSpace(q.Get("label"))
	if k, v, ok := strings.Cut(label, "="); ok && strings.TrimSpace(k) != "" {
		opt.Labels[strings.TrimSpace(k)] = strings.TrimSpace(v)
	} else if label != "" {
		return echo.NewHTTPError(http.StatusBadRequest, fmt.Sprintf("bad label filter %q: want key=value", label))
	}
	runs, total, err := p.b.ListRuns(c.Request().Context(), opt)
	if err != nil {
		return err
	}
	data := map[string]any{"Title": "Runs", "Runs": runs, "Total": total, "Label": label,
		"Summary": p.sums.of(c.Request().Context(), p.b, runs), "Watched": p.b.Watched()}
	if opt.Offset > 0 {
		data["Prev"] = pageLink(label, max(0, opt.Offset-opt.Limit))
	}
	if opt.Offset+len(runs) < total {
		data["Next"] = pageLink(label, opt.Offset+len(runs))
	}
	data["From"], data["To"] = opt.Offset+1, opt.Offset+len(runs)
	return p.render(c, http.StatusOK, "index", data)
}

// pageLink returns the run list URL of a page.
func pageLink(label string, offset int) string {
	v := url.Values{}
	if label != "" {
		v.Set("label", label)
	}
	if offset > 0 {
		v.Set("offset", strconv.Itoa(offset))
	}
	if len(v) == 0 {
		return "/"
	}
	return "/?" + v.Encode()
}

// run shows one run: its status while it is analysed, then its report.
func (p *Pages) run(c echo.Context) error {
	ctx := c.Request().Context()
	run, err := p.b.Run(ctx, c.Param("id"))
	if err != nil {
		return err
	}
	data := map[string]any{"Title": run.Name, "Run": run}
	if run.Status != store.StatusDone {
		return p.render(c, http.StatusOK, "run", data)
	}
	rep, err := p.b.Report(ctx, run.ID)
	if err != nil {
		return err
	}
	predict, predictErr := c.QueryParam("predict"), ""
	if predict != "" {
		if w, err := analyze.ParseWorkload(predict); err != nil {
			predictErr = err.Error()
		} else {
			rep = analyze.WithPrediction(rep, w)
		}
	}
	view := newRunView(rep, c.QueryParam("rank"), c.QueryParam("step"))
	view.Predict, view.PredictError = predict, predictErr
	outs := p.b.Outputs()
	hasKind := map[string]bool{}
	for _, k := range outs.RunCharts {
		hasKind[k.Name] = true
	}
	data["Report"], data["View"], data["HasKind"], data["Formats"] = rep, view, hasKind, outs.ReportFormats
	return p.render(c, http.StatusOK, "run", data)
}

// diff shows the diff picker and, with base and head, their diff.
func (p *Pages) diff(c echo.Context) error {
	ctx := c.Request().Context()
	runs, _, err := p.b.ListRuns(ctx, store.ListOptions{Limit: 200})
	if err != nil {
		return err
	}
	var done []*store.Run
	for _, r := range runs {
		if r.Status == store.StatusDone {
			done = append(done, r)
		}
	}
	q := c.QueryParams()
	data := map[string]any{"Title": "Diff", "Runs": done, "Base": q.Get("base"), "Head": q.Get("head"),
		"Rank": q.Get("rank"), "Phase": q.Get("phase"), "Phases": diff.Phases()}
	if q.Get("base") != "" && q.Get("head") != "" {
		d, err := p.b.Diff(ctx, q)
		if err != nil {
			data["Error"] = errorText(err)
		} else {
			data["Diff"] = d
			data["View"] = newDiffView(d, q.Get("phase"))
			data["Phase"] = d.Phase // the steps compared, which the menu shows
			data["Query"] = template.URL(diffQuery(q).Encode())
			outs := p.b.Outputs()
			data["Formats"], data["Charts"] = outs.DiffFormats, outs.DiffCharts
		}
	}
	return p.render(c, http.StatusOK, "diff", data)
}

// diffQuery keeps the diff parameters of q that are set.
func diffQuery(q url.Values) url.Values {
	out := url.Values{}
	for _, k := range []string{"base", "head", "rank", "phase"} {
		if v := q.Get(k); v != "" {
			out.Set(k, v)
		}
	}
	return out
}

// errorText returns an error's message, without echo's "code=..." prefix.
func errorText(err error) string {
	if he, ok := err.(*echo.HTTPError); ok {
		return fmt.Sprint(he.Message)
	}
	return err.Error()
}

// WantsHTML reports whether a request comes from a browser page.
func WantsHTML(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/html")
}

// ErrorPage answers with an HTML error page.
func ErrorPage(c echo.Context, code int, msg string) {
	var buf bytes.Buffer
	t, _ := template.New("layout.html").Funcs(funcs()).ParseFS(templateFS, "templates/layout.html", "templates/error.html")
	if t == nil || t.Execute(&buf, map[string]any{"Title": http.StatusText(code), "Code": code, "Message": msg}) != nil {
		c.String(code, msg)
		return
	}
	c.HTMLBlob(code, buf.Bytes())
}
