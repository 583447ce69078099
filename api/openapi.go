package api

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"kinetoscope/analyze"
	"kinetoscope/analyze/diff"
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
	return json.Marshal(doc)
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
