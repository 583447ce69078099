package api_test

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"

	"kinetoscope/api"
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
