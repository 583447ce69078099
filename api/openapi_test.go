package api_test

import (
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/api"
	"kinetoscope/driver"
	"kinetoscope/internal/testkit"
)

// The OpenAPI document lists exactly the API routes echo serves.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	getJSON(t, s.URL+"/api/v1/openapi.json", &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi version %q", doc.OpenAPI)
	}
	param := regexp.MustCompile(`:([a-zA-Z_]+)`)
	served := map[string]bool{}
	for _, r := range s.Echo().Routes() {
		if api.WebRoute(r.Path) {
			continue
		}
		key := strings.ToLower(r.Method) + " " + param.ReplaceAllString(r.Path, "{$1}")
		served[key] = true
	}
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			if method != "parameters" {
				documented[method+" "+path] = true
			}
		}
	}
	if missing := diffKeys(served, documented); len(missing) > 0 {
		t.Errorf("routes served but not documented: %v", missing)
	}
	if extra := diffKeys(documented, served); len(extra) > 0 {
		t.Errorf("routes documented but not served: %v", extra)
	}
	if len(served) < 10 {
		t.Errorf("only %d API routes found: %v", len(served), served)
	}
}

// diffKeys returns the keys of a not in b, sorted.
func diffKeys(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// The OpenAPI document lists the query parameters the handlers read.
func TestOpenAPIQueryParams(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	getJSON(t, s.URL+"/api/v1/openapi.json", &doc)
	for _, tc := range []struct {
		path, method string
		params       []string
	}{
		{"/api/v1/runs/{id}/charts/{chart}", "get", []string{"rank", "step"}},
		{"/api/v1/runs", "get", []string{"limit", "offset", "label"}},
		{"/api/v1/diff", "get", []string{"base", "head", "rank", "phase", "format"}},
		{"/api/v1/diff/charts/{chart}", "get", []string{"base", "head", "rank", "phase"}},
	} {
		var names []string
		for _, raw := range []json.RawMessage{doc.Paths[tc.path]["parameters"], opParams(t, doc.Paths[tc.path][tc.method])} {
			names = append(names, paramNames(t, raw)...)
		}
		for _, p := range tc.params {
			if !slices.Contains(names, p) {
				t.Errorf("%s %s: parameter %q not documented (have %v)", tc.method, tc.path, p, names)
			}
		}
	}
}

// opParams returns an operation's parameters.
func opParams(t *testing.T, op json.RawMessage) json.RawMessage {
	var o struct {
		Parameters json.RawMessage `json:"parameters"`
	}
	if len(op) > 0 {
		testkit.Must(t, json.Unmarshal(op, &o))
	}
	return o.Parameters
}

// paramNames lists the names of a parameter list; a $ref to
// #/components/parameters/NAME counts as NAME.
func paramNames(t *testing.T, raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var ps []struct {
		Name string `json:"name"`
		Ref  string `json:"$ref"`
	}
	testkit.Must(t, json.Unmarshal(raw, &ps))
	var out []string
	for _, p := range ps {
		if p.Ref != "" {
			out = append(out, p.Ref[strings.LastIndex(p.Ref, "/")+1:])
		} else {
			out = append(out, p.Name)
		}
	}
	return out
}

// The report and diff schemas are generated from the Go types: every JSON
// field of analyze.Report and diff.Diff is a property, and every reference
// in the document names a schema it defines.
func TestOpenAPISchemas(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	_, body := do(t, "GET", s.URL+"/api/v1/openapi.json", "", nil)
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties map[string]json.RawMessage `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	testkit.Must(t, json.Unmarshal(body, &doc))
	for name, v := range map[string]any{"Report": analyze.Report{}, "Diff": diff.Diff{}} {
		props := doc.Components.Schemas[name].Properties
		for _, f := range jsonFields(reflect.TypeOf(v)) {
			if _, ok := props[f]; !ok {
				t.Errorf("schema %s lacks property %q (has %d)", name, f, len(props))
			}
		}
	}
	for _, m := range regexp.MustCompile(`"#/components/schemas/([A-Za-z0-9_]+)"`).FindAllSubmatch(body, -1) {
		if _, ok := doc.Components.Schemas[string(m[1])]; !ok {
			t.Errorf("reference to undefined schema %s", m[1])
		}
	}
	if len(doc.Components.Schemas["Rank"].Properties) == 0 || len(doc.Components.Schemas["DiffStep"].Properties) == 0 {
		t.Errorf("nested types not described: Rank %d, DiffStep %d properties",
			len(doc.Components.Schemas["Rank"].Properties), len(doc.Components.Schemas["DiffStep"].Properties))
	}
}

// jsonFields lists the JSON names of a struct type's fields.
func jsonFields(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			out = append(out, jsonFields(f.Type)...)
			continue
		}
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// The OpenAPI document's output formats and chart files are driver's one
// table of outputs, and every value it lists answers 200 with the table's
// content type: each report format and chart of an analysed run, each diff
// format and diff chart of that run against itself.
func TestOpenAPIOutputs(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	var doc map[string]any
	getJSON(t, s.URL+"/api/v1/openapi.json", &doc)
	// A real run with every output: two ranks, collectives, layers.
	ranks, err := filepath.Glob(filepath.Join(testkit.Real(t, "eager"), "*.pt.trace.json.gz"))
	testkit.Must(t, err)
	ct, body := multipartBody(t, "eager", "", ranks...)
	code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, resp)
	}
	var run created
	testkit.Must(t, json.Unmarshal(resp, &run))
	if r := waitRun(t, s.URL, run.ID); r.Status != "done" {
		t.Fatalf("run %s: %s", run.ID, r.Status)
	}
	diffQ := "?base=" + run.ID + "&head=" + run.ID
	for _, tc := range []struct {
		path, method, param string
		want                []string
		url                 func(v string) string
	}{
		{"/api/v1/runs/{id}/report", "get", "format", driver.ReportFormats(),
			func(v string) string { return "/api/v1/runs/" + run.ID + "/report?format=" + v }},
		{"/api/v1/diff", "get", "format", driver.DiffFormats(),
			func(v string) string { return "/api/v1/diff" + diffQ + "&format=" + v }},
		{"/api/v1/runs/{id}/charts/{chart}", "", "chart", chartFiles(driver.RunChartKinds()),
			func(v string) string { return "/api/v1/runs/" + run.ID + "/charts/" + v }},
		{"/api/v1/diff/charts/{chart}", "get", "chart", chartFiles(driver.DiffChartKinds()),
			func(v string) string { return "/api/v1/diff/charts/" + v + diffQ }},
	} {
		got := docEnum(t, doc, tc.path, tc.method, tc.param)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: enum %v, want the table's %v", tc.path, tc.param, got, tc.want)
		}
		for _, v := range got {
			resp, err := http.Get(s.URL + tc.url(v))
			testkit.Must(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			ext := v[strings.LastIndex(v, ".")+1:]
			want := driver.ContentType(v)
			if want == "" {
				want = driver.ContentType(ext)
			}
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != want {
				t.Errorf("GET %s: %d %q, want 200 %q", tc.url(v), resp.StatusCode, resp.Header.Get("Content-Type"), want)
			}
		}
	}
}

// A chart of what a run does not have (the bandwidth of a run without
// collectives) answers 404 saying so, not 500.
func TestChartNoData(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	run := uploadFile(t, s.URL, testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"), "")
	waitRun(t, s.URL, run.ID)
	code, body := do(t, "GET", s.URL+"/api/v1/runs/"+run.ID+"/charts/bandwidth.svg", "", nil)
	if code != http.StatusNotFound || !strings.Contains(string(body), "no collective kernels") {
		t.Errorf("bandwidth chart of a run without collectives: %d %s, want 404 saying why", code, body)
	}
}

// chartFiles lists KIND.EXT for every kind and image format.
func chartFiles(kinds []string) []string {
	var out []string
	for _, k := range kinds {
		for _, f := range driver.ImageFormats() {
			out = append(out, k+"."+string(f.Format))
		}
	}
	return out
}

// docEnum returns the enum of a parameter of an operation (method) or of
// its path (method "").
func docEnum(t *testing.T, doc map[string]any, path, method, name string) []string {
	t.Helper()
	node, _ := doc["paths"].(map[string]any)[path].(map[string]any)
	if method != "" {
		node, _ = node[method].(map[string]any)
	}
	params, _ := node["parameters"].([]any)
	for _, v := range params {
		p, _ := v.(map[string]any)
		if p["name"] != name {
			continue
		}
		schema, _ := p["schema"].(map[string]any)
		enum, _ := schema["enum"].([]any)
		var out []string
		for _, e := range enum {
			out = append(out, e.(string))
		}
		return out
	}
	t.Fatalf("%s: no parameter %s", path, name)
	return nil
}
