package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"kinetoscope/sampletraces"
)

// refOp is an op with shapes as an encoding/json decode of the trace
// reads it: the text of each input's dims, type and concrete value.
type refOp struct {
	ext            int64
	name           string
	dims, types    []string
	concrete       []string
	start, durNS   int64
	listLens       []int
	concreteParsed []string
}

// refShapedOps decodes the trace at path and returns its cpu_op X events
// of the names shapedOpKind keeps, in trace order.
func refShapedOps(t *testing.T, path string) []refOp {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(gunzipFile(t, path)))
	dec.UseNumber()
	var doc struct {
		TraceEvents []struct {
			Ph, Cat, Name string
			Ts, Dur       json.Number
			Args          map[string]json.RawMessage
		} `json:"traceEvents"`
	}
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	var ops []refOp
	for _, e := range doc.TraceEvents {
		if e.Cat != "cpu_op" || e.Ph != "X" || shapedOpKind([]byte(e.Name)) == 0 {
			continue
		}
		op := refOp{name: e.Name, start: refNS(e.Ts), durNS: refNS(e.Dur)}
		if raw, ok := e.Args["External id"]; ok {
			op.ext, _ = strconv.ParseInt(string(raw), 10, 64)
		}
		var dims []json.RawMessage
		_ = json.Unmarshal(e.Args["Input Dims"], &dims)
		_ = json.Unmarshal(e.Args["Input type"], &op.types)
		_ = json.Unmarshal(e.Args["Concrete Inputs"], &op.concrete)
		for _, d := range dims {
			var flat []int64
			var nested [][]int64
			switch {
			case json.Unmarshal(d, &flat) == nil:
				op.dims = append(op.dims, fmt.Sprint(flat))
				op.listLens = append(op.listLens, 0)
			case json.Unmarshal(d, &nested) == nil:
				op.dims = append(op.dims, "list")
				op.listLens = append(op.listLens, len(nested))
			default:
				t.Fatalf("%s: op %d: dims %s are neither ints nor lists of ints", path, op.ext, d)
			}
		}
		for _, c := range op.concrete {
			op.concreteParsed = append(op.concreteParsed, refConcrete(c))
		}
		ops = append(ops, op)
	}
	return ops
}

// refConcrete writes a concrete input's value as the model should hold it.
func refConcrete(c string) string {
	switch c {
	case "":
		return ""
	case "True":
		return "int 1"
	case "False":
		return "int 0"
	}
	if n, err := strconv.ParseInt(c, 10, 64); err == nil {
		return fmt.Sprintf("int %d", n)
	}
	if f, err := strconv.ParseFloat(c, 64); err == nil {
		return fmt.Sprintf("float %g", f)
	}
	return "other"
}

// modelConcrete writes the model's concrete value of in as refConcrete does.
func modelConcrete(in *OpInput) string {
	switch in.Value {
	case ConcreteNone:
		return ""
	case ConcreteOther:
		return "other"
	case ConcreteFloat:
		f, _ := in.Float()
		return fmt.Sprintf("float %g", f)
	}
	n, _ := in.Int()
	return fmt.Sprintf("int %d", n)
}

// shapeTraces returns every bundled real trace and public trace.
func shapeTraces(t *testing.T) []string {
	t.Helper()
	paths := publicTraces(t)
	for _, v := range sampletraces.RealVariants() {
		paths = append(paths, realTraces(t, v)...)
	}
	return paths
}

// TestShapesMatchReference compares every op with shapes the reader kept
// with an encoding/json decode of the same trace: names, External ids,
// times, each input's dims, type and concrete value, on every real and
// public trace.
func TestShapesMatchReference(t *testing.T) {
	withShapes := 0
	for _, path := range shapeTraces(t) {
		tr, err := ReadFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := refShapedOps(t, path)
		if tr.Shapes.Ops.Len() != len(want) {
			t.Fatalf("%s: %d ops with shapes kept, the reference decode finds %d", path, tr.Shapes.Ops.Len(), len(want))
		}
		for i, op := range tr.Shapes.Ops.All() {
			if err := sameOp(tr, op, &want[i]); err != nil {
				t.Fatalf("%s: op %d (%s, External id %d): %v", filepath.Base(path), i, want[i].name, want[i].ext, err)
			}
			if len(op.Inputs) > 0 {
				withShapes++
			}
		}
	}
	if withShapes == 0 {
		t.Fatal("no trace held an op with shapes")
	}
}

// sameOp says how op differs from the reference decode of it.
func sameOp(tr *Trace, op *ShapedOp, w *refOp) error {
	if tr.Name(op.Name) != w.name || op.ExternalID != w.ext || op.Start != w.start || op.Dur != w.durNS {
		return fmt.Errorf("got %s ext %d at %d+%d, want %s ext %d at %d+%d",
			tr.Name(op.Name), op.ExternalID, op.Start, op.Dur, w.name, w.ext, w.start, w.durNS)
	}
	if op.Kind != shapedOpKind([]byte(w.name)) {
		return fmt.Errorf("kind %v", op.Kind)
	}
	n := max(len(w.dims), len(w.types), len(w.concrete))
	if len(op.Inputs) != n {
		return fmt.Errorf("%d inputs, want %d", len(op.Inputs), n)
	}
	for j := range op.Inputs {
		in := &op.Inputs[j]
		if j < len(w.dims) {
			if err := sameDims(in, w.dims[j], w.listLens[j]); err != nil {
				return fmt.Errorf("input %d: %v", j, err)
			}
		}
		if j < len(w.types) && tr.Shapes.Type(in.Type) != w.types[j] {
			return fmt.Errorf("input %d: type %q, want %q", j, tr.Shapes.Type(in.Type), w.types[j])
		}
		if j < len(w.concrete) && modelConcrete(in) != w.concreteParsed[j] {
			return fmt.Errorf("input %d: concrete %q, want %q (%q)", j, modelConcrete(in), w.concreteParsed[j], w.concrete[j])
		}
	}
	return nil
}

// sameDims says how an input's dims differ from the reference's text.
func sameDims(in *OpInput, want string, listLen int) error {
	switch {
	case want == "list":
		if in.Kind != InputList || int(in.ListLen) != listLen {
			return fmt.Errorf("kind %d list of %d, want a list of %d", in.Kind, in.ListLen, listLen)
		}
	case want == "[]":
		if in.Kind != InputNone || in.Dims != nil {
			return fmt.Errorf("dims %v, want none", in.Dims)
		}
	default:
		if in.Kind != InputTensor || fmt.Sprint(in.Dims) != want {
			return fmt.Errorf("dims %v, want %s", in.Dims, want)
		}
		if p := product(want); in.Numel() != p {
			return fmt.Errorf("numel %d, want %d", in.Numel(), p)
		}
	}
	return nil
}

// product multiplies the ints of a "[a b c]" text.
func product(s string) int64 {
	p := int64(1)
	for _, f := range strings.Fields(strings.Trim(s, "[]")) {
		v, _ := strconv.ParseInt(f, 10, 64)
		p *= v
	}
	return p
}

// TestAttentionShapes reads each attention layout from an op written as
// a profiler writes it, and the real traces' attention ops against their
// query and key dims read again here.
func TestAttentionShapes(t *testing.T) {
	cases := []struct {
		name, dims, concrete string
		want                 Attention
	}{
		{"aten::scaled_dot_product_attention", `[[4, 32, 128, 128], [4, 8, 128, 128], [4, 8, 128, 128], [], [], [], [], []]`,
			`["", "", "", "", "0.", "True", "", "True"]`,
			Attention{Batch: 4, Heads: 32, KVHeads: 8, QLen: 128, KVLen: 128, HeadDim: 128, HeadDimV: 128, Tokens: 512, Causal: true, CausalKnown: true}},
		{"aten::_cudnn_attention_forward", `[[4, 8, 4, 128], [4, 8, 256, 128], [4, 8, 256, 128], [4, 1, 1, 256], [], [], [], [], [], [], [], [], []]`,
			`["", "", "", "", "", "", "4", "256", "False", "0.", "False", "False", ""]`,
			Attention{Batch: 4, Heads: 8, KVHeads: 8, QLen: 4, KVLen: 256, HeadDim: 128, HeadDimV: 128, Tokens: 16, CausalKnown: true}},
		{"aten::_flash_attention_forward", `[[16, 559, 16, 64], [16, 559, 2, 64], [16, 559, 2, 64], [], [], [], [], [], [], [], [], [], [], [], []]`,
			`["", "", "", "", "", "559", "559", "0.", "True", "False", "0.125", "", "", "", ""]`,
			Attention{Batch: 16, Heads: 16, KVHeads: 2, QLen: 559, KVLen: 559, HeadDim: 64, HeadDimV: 64, Tokens: 8944, Causal: true, CausalKnown: true}},
		{"aten::_flash_attention_forward", `[[300, 16, 64], [300, 16, 64], [300, 16, 64], [3], [3], [], [], [], [], [], [], [], [], [], []]`,
			`["", "", "", "", "", "200", "200", "0.", "True", "False", "0.125", "", "", "", ""]`,
			Attention{Heads: 16, KVHeads: 16, QLen: 200, KVLen: 200, HeadDim: 64, HeadDimV: 64, Tokens: 300, Causal: true, CausalKnown: true, Varlen: true}},
		{"aten::_efficient_attention_forward", `[[2, 10, 8, 64], [2, 30, 8, 64], [2, 30, 8, 64], [], [], [], [], [], [], [], [], []]`,
			`["", "", "", "", "", "", "", "", "0.", "1", "False", ""]`,
			Attention{Batch: 2, Heads: 8, KVHeads: 8, QLen: 10, KVLen: 30, HeadDim: 64, HeadDimV: 64, Tokens: 20, Causal: true, CausalKnown: true}},
		{"vllm::unified_attention_with_output", `[[8192, 64, 64], [8192, 8, 64], [8192, 8, 64], [8192, 64, 64], [], [], [], [0]]`,
			`["", "", "", "", "", "", "", ""]`,
			Attention{Heads: 64, HeadDim: 64, Tokens: 8192, Varlen: true}},
		{"_C::paged_attention_v1", `[[8, 32, 128], [8, 32, 128], [100, 8, 16, 16, 8], [100, 8, 128, 16], [], [], [8, 64], [8], [], [], []]`,
			`["", "", "", "", "8", "0.088", "", "", "16", "1024", ""]`,
			Attention{Batch: 8, Heads: 32, QLen: 1, HeadDim: 128, Tokens: 8, Varlen: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Trace{Strings: NewStrings()}
			op := ShapedOp{Name: tr.Strings.Intern(tc.name), Kind: OpAttention}
			tr.Shapes.add(op, []byte(tc.dims), nil, []byte(tc.concrete))
			got, ok := tr.Attention(tr.Shapes.Ops.At(0))
			if !ok || got != tc.want {
				t.Errorf("got %+v (%v)\nwant %+v", got, ok, tc.want)
			}
		})
	}
}

// TestAttentionOnRealTraces checks that every attention op of the real
// and public traces whose layout is [B, H, S, D] or [B, S, H, D] gives the
// query and key lengths its dims say, read here from the reference decode.
func TestAttentionOnRealTraces(t *testing.T) {
	seen := 0
	for _, path := range shapeTraces(t) {
		tr, err := ReadFile(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := refShapedOps(t, path)
		for i, op := range tr.Shapes.Ops.All() {
			if op.Kind != OpAttention || len(want[i].dims) < 2 {
				continue
			}
			q, k := refDims(want[i].dims[0]), refDims(want[i].dims[1])
			a, ok := tr.Attention(op)
			if len(q) != 4 || len(k) != 4 {
				continue
			}
			sq, sk := q[2], k[2] // [B, H, S, D]
			if strings.HasPrefix(want[i].name, "aten::_flash") || strings.HasPrefix(want[i].name, "aten::_efficient") ||
				strings.HasPrefix(want[i].name, "flash_attn::") {
				sq, sk = q[1], k[1] // [B, S, H, D]
			}
			if !ok || a.Batch != q[0] || a.QLen != sq || a.KVLen != sk || a.HeadDim != q[3] || a.Tokens != q[0]*sq {
				t.Fatalf("%s: %s dims %v %v: got %+v", filepath.Base(path), want[i].name, q, k, a)
			}
			seen++
		}
	}
	if seen == 0 {
		t.Fatal("no attention op with 4-D shapes in the traces")
	}
}

// refDims parses "[a b c]".
func refDims(s string) []int64 {
	var d []int64
	for _, f := range strings.Fields(strings.Trim(s, "[]")) {
		v, _ := strconv.ParseInt(f, 10, 64)
		d = append(d, v)
	}
	return d
}

// TestShapesCountInBudget checks that the budget counts ops with shapes:
// a trace read with the limit its events and names alone need, but not
// its shapes, is refused.
func TestShapesCountInBudget(t *testing.T) {
	path := realTraces(t, "bare_eager")[0]
	full, err := ReadFile(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if full.Shapes.Ops.Len() == 0 || full.budgetEvents() <= full.KeptEvents()+int64(full.Shapes.Ops.Len()) {
		t.Fatalf("budget events %d for %d kept events and %d ops with %d inputs", full.budgetEvents(),
			full.KeptEvents(), full.Shapes.Ops.Len(), full.Shapes.Inputs)
	}
	limit := Estimate(full.KeptEvents(), int64(full.Strings.Len()), 1)
	_, err = ReadFile(path, Options{Budget: &Budget{Limit: limit}})
	if !isBudgetError(err) {
		t.Fatalf("read under a limit of %d (the events and names without the shapes): %v, want a budget error", limit, err)
	}
	if got := slices.Collect(func(yield func(string) bool) {
		for _, o := range full.Shapes.Ops.All() {
			if !yield(full.Name(o.Name)) {
				return
			}
		}
	}); !slices.Contains(got, "aten::mm") || !slices.Contains(got, "aten::_cudnn_attention_forward") {
		t.Fatalf("ops kept: %v", got[:min(len(got), 10)])
	}
}
