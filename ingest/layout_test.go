package ingest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"kinetoscope/ingest/jsonscan"
)

// model is everything a Trace holds, columns as slices and names resolved,
// less what depends on the layout of the text (its byte counts) and the
// path: two reads of the same events in different layouts give equal
// models.
type model struct {
	Rank        int
	RankSource  string
	Meta        Meta
	Strings     []string
	Threads     []Thread
	Processes   map[string]string
	GPU         []GPUEvent
	Launches    []Launch
	Annotations []Annotation
	PythonCalls []Annotation
	CommOps     []CommOp
	Collectives []CollectiveArgs
	Counts      Counts
	Warnings    []string
}

// column returns the records of c as a slice.
func column[T any](c *Chunks[T]) []T {
	var out []T
	for _, v := range c.All() {
		out = append(out, *v)
	}
	return out
}

// modelOf returns the model of tr.
func modelOf(tr *Trace) model {
	m := model{Rank: tr.Rank, RankSource: tr.RankSource, Meta: tr.Meta, Threads: tr.Threads,
		Processes: tr.ProcessNames, GPU: column(&tr.GPU), Launches: column(&tr.Launches),
		Annotations: column(&tr.Annotations), PythonCalls: column(&tr.PythonCalls),
		CommOps: column(&tr.CommOps), Collectives: tr.Collectives, Counts: tr.Counts, Warnings: tr.Warnings}
	m.Counts.Bytes, m.Counts.UncompressedBytes = 0, 0
	for id := range tr.Strings.Len() {
		m.Strings = append(m.Strings, tr.Strings.Get(StrID(id)))
	}
	return m
}

// relayout rewrites the JSON text doc token by token, its strings and
// literals as they are, with space(depth, c) written after each
// structural byte c (at nesting depth after it) in place of the
// whitespace doc has there.
func relayout(doc []byte, space func(depth int, c byte) string) []byte {
	out := make([]byte, 0, len(doc))
	depth := 0
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			j := jsonscan.ClosingQuote(doc, i+1)
			out = append(out, doc[i:j+1]...)
			i = j
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
		case ',', ':':
		default:
			out = append(out, c)
			continue
		}
		out = append(out, c)
		out = append(out, space(depth, c)...)
	}
	return out
}

// compactLayout writes doc as compact JSON with one event per line, as
// tools that rewrite traces save them.
func compactLayout(doc []byte) []byte {
	return relayout(doc, func(depth int, c byte) string {
		if depth == 2 && (c == '[' || c == ',') {
			return "\n"
		}
		return ""
	})
}

// randomLayout writes doc with random valid whitespace between tokens:
// none, one space, two spaces after a colon, tabs, line breaks.
func randomLayout(doc []byte, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	spaces := []string{"", "", " ", " ", "  ", "\n", "\t", "\r\n  ", " \n    ", "      "}
	return relayout(doc, func(int, byte) string { return spaces[r.IntN(len(spaces))] })
}

// reorderedLayout writes doc with the members of every event and of its
// args in reverse key order: no fast path applies, every event goes
// through the general key parse.
func reorderedLayout(t *testing.T, doc []byte) []byte {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(doc, &top); err != nil {
		t.Fatal(err)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(top["traceEvents"], &events); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	b.WriteString("[")
	for i, e := range events {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteString(reordered(t, string(e)))
	}
	b.WriteString("]")
	top["traceEvents"] = b.Bytes()
	out, err := json.Marshal(top)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// readText reads a trace from its JSON text, named name, in blocks of bs
// bytes.
func readText(t *testing.T, text []byte, name string, bs int) *Trace {
	t.Helper()
	tr, err := readTrace(bytes.NewReader(text), name, 0, Options{}, bs)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return tr
}

// TestLayoutsSameModel reads real traces in Kineto's own layout, as
// compact JSON, with random whitespace, and with every event's members
// reordered (the general parse), and checks that the full models are equal.
func TestLayoutsSameModel(t *testing.T) {
	paths := []string{realTraces(t, "eager")[0], realTraces(t, "cudagraph")[0],
		publicTrace(t, "hta-diff-control-a100.json.gz"), publicTrace(t, "tracelens-mi300-resnet-rccl.json.gz"),
		publicTrace(t, "tracelens-sglang-qwen3-8b-decode.json.gz")}
	for _, p := range paths {
		text := gunzipFile(t, p)
		name := "trace_rank0.json" // the same name: the rank may come from it
		want := modelOf(readText(t, text, name, blockSize))
		if len(want.GPU) == 0 || len(want.Launches) == 0 {
			t.Fatalf("%s: nothing kept", p)
		}
		layouts := map[string][]byte{
			"compact":   compactLayout(text),
			"random":    randomLayout(text, uint64(len(text))),
			"reordered": reorderedLayout(t, text),
		}
		for lname, lt := range layouts {
			for _, bs := range []int{blockSize, 4096} {
				got := modelOf(readText(t, lt, name, bs))
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, %s layout, %d-byte blocks: the model differs from the Kineto layout's%s",
						p, lname, bs, firstDiff(got, want))
				}
			}
		}
	}
}

// firstDiff names the first field of model that differs.
func firstDiff(a, b model) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			return ": " + va.Type().Field(i).Name
		}
	}
	return ""
}

// TestWhitespace checks that events in any valid whitespace, two spaces
// after a colon among them, read as the compact event does.
func TestWhitespace(t *testing.T) {
	events := []string{
		`{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2,"args":{"External id":3,"device":0,"stream":7,"correlation":9,"grid":[1,2,3],"block":[4,1,1]}}`,
		`{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"External id":3,"cbid":211,"correlation":9}}`,
		`{"ph":"X","cat":"python_function","name":"vllm/worker.py(263): execute_model","pid":1,"tid":1,"ts":1,"dur":2,"args":{"Python id":1}}`,
		`{"ph":"X","cat":"python_function","name":"torch/nn.py(1): forward","pid":1,"tid":1,"ts":1,"dur":2,"args":{"Python id":2}}`,
		`{"ph":"f","id":9,"pid":1,"tid":1,"ts":1,"cat":"ac2g","name":"ac2g","bp":"e"}`,
		`{"ph":"M","name":"thread_name","pid":1,"tid":1,"args":{"name":"main"}}`,
		`{"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":1,"dur":2,"args":{"Collective name":"allreduce","Seq":3}}`,
	}
	spaces := map[string]func(int, byte) string{
		"two spaces after a colon": func(_ int, c byte) string {
			if c == ':' {
				return "  "
			}
			return ""
		},
		"Kineto's spacing": func(_ int, c byte) string {
			if c == ':' || c == ',' {
				return " "
			}
			return ""
		},
		"a line break after every token": func(int, byte) string { return "\n" },
		"tabs and carriage returns":      func(int, byte) string { return "\t\r\n" },
		"spaces before a colon": func(_ int, c byte) string {
			return " "
		},
	}
	for _, ev := range events {
		doc := `{"traceEvents":[` + ev + `]}`
		want := modelOf(readText(t, []byte(doc), "ws.json", blockSize))
		for name, sp := range spaces {
			text := relayout([]byte(doc), sp)
			if name == "spaces before a colon" {
				text = []byte(strings.ReplaceAll(string(text), `":`, `" :`))
			}
			got := modelOf(readText(t, text, "ws.json", blockSize))
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s:\n%s\ngot  %+v\nwant %+v", ev, name, text, got, want)
			}
		}
	}
}

// TestReadFilesAtOnce checks that reading a directory's files several at a
// time gives what reading them one after another gives, in the same order:
// the public traces, a JSON file that is not a trace, and a broken one.
func TestReadFilesAtOnce(t *testing.T) {
	dir := t.TempDir()
	for _, p := range publicTraces(t) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(p)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for name, text := range map[string]string{"config.json": `{"a": 1}`, "broken.json": `{"traceEvents": [{"ph": `} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var sets []*Set
	for _, workers := range []int{1, 4} {
		var found []dirEntry
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			found = append(found, dirEntry{path: p, read: true, open: localSource(p, 0).Open})
		}
		c := &collector{set: &Set{Path: dir}, many: true}
		c.readFiles(found, workers)
		for _, e := range found {
			c.put(e.path, e.trace, e.err)
		}
		c.finish()
		sets = append(sets, c.set)
	}
	a, b := sets[0], sets[1]
	if len(a.Traces) < 3 || len(a.SetAside) == 0 || len(a.Errors) == 0 {
		t.Fatalf("%d traces, %d set aside, %d errors: the directory lacks a case", len(a.Traces), len(a.SetAside), len(a.Errors))
	}
	if len(a.Traces) != len(b.Traces) || len(a.SetAside) != len(b.SetAside) || len(a.Errors) != len(b.Errors) {
		t.Fatalf("one at a time: %d/%d/%d; four at a time: %d/%d/%d", len(a.Traces), len(a.SetAside), len(a.Errors),
			len(b.Traces), len(b.SetAside), len(b.Errors))
	}
	for i := range a.Traces {
		if a.Traces[i].Path != b.Traces[i].Path || !reflect.DeepEqual(modelOf(a.Traces[i]), modelOf(b.Traces[i])) {
			t.Errorf("trace %d: %s one at a time, %s four at a time, or their models differ", i, a.Traces[i].Path, b.Traces[i].Path)
		}
	}
	for i := range a.SetAside {
		if a.SetAside[i].Path != b.SetAside[i].Path || a.SetAside[i].Reason != b.SetAside[i].Reason {
			t.Errorf("set aside %d: %+v vs %+v", i, a.SetAside[i], b.SetAside[i])
		}
	}
	for i := range a.Errors {
		if a.Errors[i].Error() != b.Errors[i].Error() {
			t.Errorf("error %d: %v vs %v", i, a.Errors[i], b.Errors[i])
		}
	}
}
