package ingest

import (
	"math"
	"strconv"
	"unsafe"
)

// OpKind says what work an op with shapes does, decided once from its name
// (shapedOps).
type OpKind uint8

// The kinds of ops kept with their shapes.
const (
	OpGEMM      OpKind = iota + 1 // a dense matrix product: aten::mm, addmm, bmm, linear, matmul, _scaled_mm, ...
	OpQuantGEMM                   // a weight-only quantised matrix product: Marlin, AWQ, _weight_int4pack_mm
	OpAttention                   // scaled dot-product attention, flash or paged
	OpMoE                         // a grouped (mixture-of-experts) matrix product
)

// String names the kind.
func (k OpKind) String() string {
	switch k {
	case OpGEMM:
		return "gemm"
	case OpQuantGEMM:
		return "quant-gemm"
	case OpAttention:
		return "attention"
	case OpMoE:
		return "moe"
	}
	return "unknown"
}

// InputKind says what one input of an op is, from its "Input Dims" entry.
type InputKind uint8

// The input kinds.
const (
	InputNone   InputKind = iota // no dims: a scalar, None or an argument of no tensor type
	InputTensor                  // a tensor: Dims holds its shape ([] for a 0-d tensor is InputNone)
	InputList                    // a list of tensors (nested dims): ListLen tensors, Dims empty
)

// ConcreteKind says what the "Concrete Inputs" entry of an input held.
type ConcreteKind uint8

// The concrete value kinds.
const (
	ConcreteNone  ConcreteKind = iota // empty or absent: a tensor, or a value the profiler did not write
	ConcreteInt                       // an integer, e.g. "128"
	ConcreteBool                      // "True" or "False" (Int 1 or 0)
	ConcreteFloat                     // a decimal, e.g. "0.125"
	ConcreteOther                     // anything else (a list such as "[4, 128]"), not kept
)

// OpInput is one input of an op with shapes: its dims (record_shapes'
// "Input Dims"), its type ("Input type": a dtype such as c10::BFloat16 for
// a tensor, "Scalar", "ScalarList", "" for None) and its concrete value
// ("Concrete Inputs", PyTorch 2.1+: scalars only).
type OpInput struct {
	// Dims is the tensor's shape; nil unless Kind is InputTensor. It
	// shares storage with the other inputs of the trace: do not append.
	Dims    []int64
	Type    TypeID // into Trace.OpTypes
	Kind    InputKind
	Value   ConcreteKind
	ListLen int32 // tensors in an InputList
	raw     int64 // the concrete value: an int, a bool as 0/1, or float64 bits
}

// Int returns the concrete integer (a bool as 0 or 1) and whether the
// input held one.
func (in *OpInput) Int() (int64, bool) {
	if in.Value == ConcreteInt || in.Value == ConcreteBool {
		return in.raw, true
	}
	return 0, false
}

// Float returns the concrete number (an integer too) and whether the input
// held one.
func (in *OpInput) Float() (float64, bool) {
	switch in.Value {
	case ConcreteFloat:
		return math.Float64frombits(uint64(in.raw)), true
	case ConcreteInt:
		return float64(in.raw), true
	}
	return 0, false
}

// Numel returns the number of elements of a tensor input (1 for a 0-d
// tensor with no dims), 0 for other inputs.
func (in *OpInput) Numel() int64 {
	if in.Kind != InputTensor {
		return 0
	}
	n := int64(1)
	for _, d := range in.Dims {
		n *= d
	}
	return n
}

// TypeID names an input type in Trace.OpTypes; 0 is the empty type.
type TypeID uint16

// maxOpTypes bounds the distinct input types kept; further ones are read
// as the empty type.
const maxOpTypes = 1 << 12

// ShapedOp is a CPU op (cpu_op event) kept with its inputs' shapes, types
// and concrete values, when the trace was recorded with record_shapes=True.
// Only ops analysis computes work from are kept: GEMMs, weight-only
// quantised GEMMs, attention and MoE grouped GEMMs (shapedOps names them).
//
// An op is linked to the kernels it launched by its External id: a kernel
// (GPUEvent.ExternalID) and its runtime launch (Launch.ExternalID) carry
// the External id of the innermost op open when it was launched. Nested
// ops (aten::linear > aten::matmul > aten::mm) are all kept; the kernels
// link to the innermost one. Traces of the old format (PyTorch 1.x, where a
// kernel's External id is its correlation) link nothing this way.
type ShapedOp struct {
	Start      int64 // ns
	Dur        int64 // ns
	ExternalID int64
	Name       StrID
	Thread     int32
	Kind       OpKind
	// Inputs are the op's inputs in order. They share storage with the
	// other ops of the trace: do not append.
	Inputs []OpInput
}

// Input returns input i, or nil when the op has fewer inputs.
func (o *ShapedOp) Input(i int) *OpInput {
	if i < 0 || i >= len(o.Inputs) {
		return nil
	}
	return &o.Inputs[i]
}

// Shapes are a trace's ops with shapes and the storage they share.
type Shapes struct {
	// Ops are the kept ops in trace order.
	Ops Chunks[ShapedOp]
	// Types are the distinct input type names: Types.Get(TypeID(id)).
	Types *Strings
	// Stored counts the inputs and dims stored, for the memory budget.
	Inputs, Dims int64

	inputs arena[OpInput]
	dims   arena[int64]
}

// Type returns the name of an input type ("c10::BFloat16", "float",
// "Scalar", ...).
func (s *Shapes) Type(id TypeID) string {
	if s.Types == nil || int(id) >= s.Types.Len() {
		return ""
	}
	return s.Types.Get(StrID(id))
}

// ByExternalID returns the index in Ops of each op by its External id.
// Ops without one (0) are left out; when two ops share an id, the later
// one is kept.
func (s *Shapes) ByExternalID() map[int64]int {
	m := make(map[int64]int, s.Ops.Len())
	for i, o := range s.Ops.All() {
		if o.ExternalID != 0 {
			m[o.ExternalID] = i
		}
	}
	return m
}

// arenaChunk is the number of values per arena chunk.
const arenaChunk = 1 << 12

// arena hands out short slices of chunks allocated arenaChunk values at a
// time, so that the many small slices of ops' inputs and dims cost no
// allocation each; a slice never crosses chunks.
type arena[T any] struct {
	cur    []T
	chunks int
}

// alloc returns a zeroed slice of n values whose capacity is n.
func (a *arena[T]) alloc(n int) []T {
	if n == 0 {
		return nil
	}
	if n > arenaChunk {
		a.chunks++
		return make([]T, n)
	}
	if len(a.cur)+n > cap(a.cur) {
		a.cur = make([]T, 0, arenaChunk)
		a.chunks++
	}
	s := a.cur[len(a.cur) : len(a.cur)+n : len(a.cur)+n]
	a.cur = a.cur[:len(a.cur)+n]
	return s
}

// add stores one op with its raw "Input Dims", "Input type" and "Concrete
// Inputs" values (each the JSON text of an array, nil when absent).
func (s *Shapes) add(op ShapedOp, dims, types, concrete []byte) {
	if s.Types == nil {
		s.Types = NewStrings()
	}
	op.Inputs = readInputs(&s.inputs, &s.dims, dims, types, concrete, s.typeID)
	s.addOp(op)
}

// addOp stores one op whose inputs are read (their types interned).
func (s *Shapes) addOp(op ShapedOp) {
	s.Inputs += int64(len(op.Inputs))
	for i := range op.Inputs {
		s.Dims += int64(len(op.Inputs[i].Dims))
	}
	s.Ops.Append(op)
}

// readInputs reads an op's inputs from its raw "Input Dims", "Input type"
// and "Concrete Inputs" values into memory of inputs and dims, each type
// named by typeID: the one reader of an op's inputs, on the goroutine that
// builds the trace (Shapes.add) or ahead on a chunk's worker (readAhead).
func readInputs(inputs *arena[OpInput], dimStore *arena[int64], dims, types, concrete []byte, typeID func([]byte) TypeID) []OpInput {
	n := countItems(dims) // the types and concrete values list as many inputs
	if n == 0 {
		n = max(countItems(types), countItems(concrete))
	}
	ins := inputs.alloc(n)
	inputDims(dims, func(item int, vals []int64, listLen int) bool {
		if item >= len(ins) {
			return false
		}
		in := &ins[item]
		in.ListLen += int32(listLen)
		switch {
		case listLen > 0:
			in.Kind = InputList
		case len(vals) > 0:
			in.Kind = InputTensor
			in.Dims = dimStore.alloc(len(vals))
			copy(in.Dims, vals)
		}
		return true
	})
	eachString(types, func(i int, v []byte) {
		if i < n {
			ins[i].Type = typeID(v)
		}
	})
	eachString(concrete, func(i int, v []byte) {
		if i < n {
			readConcrete(&ins[i], v)
		}
	})
	return ins
}

// typeID interns an input type name.
func (s *Shapes) typeID(raw []byte) TypeID {
	if id, ok := s.Types.ids[string(raw)]; ok {
		return TypeID(id)
	}
	if s.Types.Len() >= maxOpTypes {
		return 0
	}
	return TypeID(s.Types.InternBytes(raw))
}

// inputDims walks a raw "Input Dims" array (record_shapes: one array per
// input, of ints for a tensor's shape, of arrays for a tensor list, empty
// for a scalar or None) and calls fn with each input in order: its index,
// its dims (the first 16; nil for a list or none), and for a list the
// number of tensors in it. fn returns false to stop. The one reader of
// Input Dims: the shaped ops' and the embedding's tokens.
func inputDims(raw []byte, fn func(item int, dims []int64, listLen int) bool) {
	item, depth, listLen := -1, 0, 0
	var vals [16]int64
	nv, v, digits := 0, int64(0), false
	for _, c := range raw {
		switch {
		case c == '[':
			depth++
			if depth == 2 {
				item++
				nv, listLen = 0, 0
			}
			if depth == 3 {
				listLen++
			}
		case c >= '0' && c <= '9':
			if v < math.MaxInt64/10 {
				v = v*10 + int64(c-'0')
			}
			digits = true
		case c == ',' || c == ']':
			if depth == 2 && digits && nv < len(vals) {
				vals[nv] = v
				nv++
			}
			v, digits = 0, false
			if c == ']' {
				if depth == 2 && !fn(item, vals[:nv], listLen) {
					return
				}
				depth--
			}
		}
	}
}

// readConcrete reads one "Concrete Inputs" string.
func readConcrete(in *OpInput, v []byte) {
	switch string(v) {
	case "":
		return
	case "True":
		in.Value, in.raw = ConcreteBool, 1
		return
	case "False":
		in.Value, in.raw = ConcreteBool, 0
		return
	}
	if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
		in.Value, in.raw = ConcreteInt, n
		return
	}
	if f, err := strconv.ParseFloat(string(v), 64); err == nil {
		in.Value, in.raw = ConcreteFloat, int64(math.Float64bits(f))
		return
	}
	in.Value = ConcreteOther
}

// countItems returns the number of top-level items of a raw JSON array.
func countItems(raw []byte) int {
	n, depth, inStr, esc, any := 0, 0, false, false, false
	for _, c := range raw {
		switch {
		case esc:
			esc = false
		case inStr:
			if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			any = any || depth == 1
		case c == '[':
			depth++
			any = any || depth == 2
		case c == ']':
			depth--
		case c == ',' && depth == 1:
			n++
		case c > ' ' && depth == 1:
			any = true
		}
	}
	if any {
		n++
	}
	return n
}

// eachString calls f with the index and raw content of each string of a
// raw JSON array of strings.
func eachString(raw []byte, f func(int, []byte)) {
	i, start, inStr, esc := 0, 0, false, false
	for j, c := range raw {
		switch {
		case esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case inStr && c == '"':
			f(i, raw[start:j])
			inStr = false
		case inStr:
		case c == '"':
			inStr, start = true, j+1
		case c == ',':
			i++
		}
	}
}

// RetainedBytes estimates the memory the shapes hold.
func (s *Shapes) RetainedBytes() int64 {
	n := s.Ops.RetainedBytes(int(unsafe.Sizeof(ShapedOp{}))) +
		int64(s.inputs.chunks)*arenaChunk*int64(unsafe.Sizeof(OpInput{})) + int64(s.dims.chunks)*arenaChunk*8
	if s.Types != nil {
		n += s.Types.Bytes() + int64(s.Types.Len())*(16+32)
	}
	return n
}
