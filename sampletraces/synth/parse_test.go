package synth

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
)

// parsed is a trace decoded with encoding/json into maps.
type parsed struct {
	top    map[string]any
	events []map[string]any
}

// parseTrace decodes a (possibly gzipped) trace file with encoding/json,
// keeping numbers as json.Number so times stay exact.
func parseTrace(t *testing.T, path string) *parsed {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			t.Fatal(err)
		}
		if raw, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	return parseJSON(t, raw)
}

// parseJSON decodes trace JSON text.
func parseJSON(t *testing.T, raw []byte) *parsed {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	p := &parsed{}
	if err := dec.Decode(&p.top); err != nil {
		t.Fatalf("trace is not valid JSON: %v", err)
	}
	evs, ok := p.top["traceEvents"].([]any)
	if !ok {
		t.Fatal("no traceEvents array")
	}
	for _, e := range evs {
		p.events = append(p.events, e.(map[string]any))
	}
	return p
}

// usNS converts a JSON microsecond number with up to three decimals to ns.
func usNS(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("time %v is not a number", v)
	}
	s := n.String()
	whole, frac, _ := strings.Cut(s, ".")
	frac = (frac + "000")[:3]
	w, err1 := strconv.ParseInt(whole, 10, 64)
	f, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("bad time %q", s)
	}
	return w*1000 + f
}

// num returns an integer JSON value.
func num(t *testing.T, v any) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is not a number", v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatal(err)
	}
	return i
}

// args returns an event's args.
func args(e map[string]any) map[string]any {
	a, _ := e["args"].(map[string]any)
	return a
}

// cat returns an event's category ("" when absent).
func cat(e map[string]any) string {
	c, _ := e["cat"].(string)
	return c
}
