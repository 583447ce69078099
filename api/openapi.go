package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
	"kinetoscope/driver"
)

// openAPIDocument returns the OpenAPI document: openapi.json with the
// schemas of the report and diff JSON contracts generated from their Go
// types (analyze.Report, diff.Diff), so that they cannot fall behind.
func openAPIDocument() ([]byte, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	comps, _ := doc["components"].(map[string]any)
	schemas, _ := comps["schemas"].(map[string]any)
	if schemas == nil {
		return nil, fmt.Errorf("openapi.json: no components.schemas")
	}
	for name, v := range map[string]any{"Report": &analyze.Report{}, "Diff": &diff.Diff{}} {
		if err := addSchema(schemas, name, v); err != nil {
			return nil, err
		}
	}
	if err := addOutputs(doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %w", err)
	}
	return json.Marshal(doc)
}

// addOutputs writes the output formats and chart kinds of driver's one
// table of outputs into the parameters and responses that take them: the
// report and diff formats, and the chart files of a run and of a diff.
func addOutputs(doc map[string]any) error {
	outputs := []struct {
		path, method, param string
		values              []string
		lines               []string
	}{
		{"/api/v1/runs/{id}/report", "get", "format", driver.ReportFormats(),
			formatLines(driver.ReportFormats(), "as kinetoscope analyze --format writes it; json is the stored report, the schema below")},
		{"/api/v1/diff", "get", "format", driver.DiffFormats(),
			formatLines(driver.DiffFormats(), "as kinetoscope diff --format writes it; json is the schema below")},
		{"/api/v1/runs/{id}/charts/{chart}", "", "chart", chartFileNames(driver.RunChartKinds()), chartLines(driver.RunChartKinds())},
		{"/api/v1/diff/charts/{chart}", "get", "chart", chartFileNames(driver.DiffChartKinds()), chartLines(driver.DiffChartKinds())},
	}
	for _, o := range outputs {
		p, err := openAPIParam(doc, o.path, o.method, o.param)
		if err != nil {
			return err
		}
		schema, _ := p["schema"].(map[string]any)
		if schema == nil {
			return fmt.Errorf("%s parameter %s: no schema", o.path, o.param)
		}
		schema["enum"] = o.values
		p["description"] = strings.Join(o.lines, "; ")
	}
	for path, names := range map[string][]string{
		"/api/v1/runs/{id}/report": driver.ReportFormats(), "/api/v1/diff": driver.DiffFormats()} {
		content, err := okContent(doc, path)
		if err != nil {
			return err
		}
		for _, n := range names {
			ct, _, _ := strings.Cut(driver.ContentType(n), ";")
			if _, ok := content[ct]; !ok {
				content[ct] = map[string]any{}
			}
		}
	}
	return nil
}

// formatLines describes each format: "name: summary", the last with tail.
func formatLines(names []string, tail string) []string {
	var out []string
	for _, f := range driver.Formats() {
		if slices.Contains(names, f.Name) {
			out = append(out, f.Name+": "+f.Summary)
		}
	}
	return append(out, tail)
}

// chartLines describes each chart kind: "KIND.svg or KIND.png: summary".
func chartLines(kinds []string) []string {
	var out []string
	for _, k := range driver.ChartKinds() {
		if slices.Contains(kinds, k.Name) {
			out = append(out, k.Name+"."+strings.Join(imageExts(), " or "+k.Name+".")+": "+k.Summary)
		}
	}
	return out
}

// chartFileNames lists the file names of the chart kinds: "a.svg",
// "a.png", ...
func chartFileNames(kinds []string) []string { return strings.Split(chartFiles(kinds), ", ") }

// openAPIParam returns the parameter named name of an operation (method)
// or of the path itself (method "").
func openAPIParam(doc map[string]any, path, method, name string) (map[string]any, error) {
	paths, _ := doc["paths"].(map[string]any)
	node, _ := paths[path].(map[string]any)
	if method != "" {
		node, _ = node[method].(map[string]any)
	}
	params, _ := node["parameters"].([]any)
	for _, v := range params {
		if p, ok := v.(map[string]any); ok && p["name"] == name {
			return p, nil
		}
	}
	return nil, fmt.Errorf("%s %s: no parameter %s", method, path, name)
}

// okContent returns the content map of the 200 response of GET path.
func okContent(doc map[string]any, path string) (map[string]any, error) {
	paths, _ := doc["paths"].(map[string]any)
	node, _ := paths[path].(map[string]any)
	get, _ := node["get"].(map[string]any)
	resp, _ := get["responses"].(map[string]any)
	ok, _ := resp["200"].(map[string]any)
	content, _ := ok["content"].(map[string]any)
	if content == nil {
		return nil, fmt.Errorf("GET %s: no 200 content", path)
	}
	return content, nil
}

// addSchema reflects v's JSON schema into schemas under name, with every
// type it uses under its own name, referenced as OpenAPI references them.
func addSchema(schemas map[string]any, name string, v any) error {
	r := jsonschema.Reflector{Anonymous: true, AllowAdditionalProperties: true, Namer: schemaName}
	s := r.Reflect(v)
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	b = []byte(strings.ReplaceAll(string(b), `"#/$defs/`, `"#/components/schemas/`))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("schema %s: %w", name, err)
	}
	defs, _ := m["$defs"].(map[string]any)
	for k, d := range defs {
		if _, taken := schemas[k]; !taken {
			schemas[k] = d
		}
	}
	delete(m, "$defs")
	delete(m, "$schema")
	if ref, ok := m["$ref"].(string); ok && len(m) == 1 {
		// The root is a reference to its own definition: name it.
		key := strings.TrimPrefix(ref, "#/components/schemas/")
		if key != name {
			schemas[name] = map[string]any{"$ref": ref}
		}
		return nil
	}
	schemas[name] = m
	return nil
}

// schemaName names a Go type's schema: its name, with the diff package's
// types prefixed "Diff" (diff.Step is not analyze.Step).
func schemaName(t reflect.Type) string {
	if strings.HasSuffix(t.PkgPath(), "/diff") && !strings.HasPrefix(t.Name(), "Diff") {
		return "Diff" + t.Name()
	}
	return t.Name()
}
