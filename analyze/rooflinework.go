package analyze

import (
	"fmt"

	"kinetoscope/ingest"
)

// opWork is the work one op with shapes does: the floating-point (or
// integer) operations of its math, the bytes it must move to and from
// memory at least (each input read once, the output written once: no
// cache reuse across ops, no re-reads inside one), and the dtype key of
// the tensor-core peak it runs at. When the shapes do not give the work,
// why says what is missing and the figures are 0.
type opWork struct {
	flops, bytes float64
	dtype        string // a GPUPeak.TFLOPS key
	why          string // "" when the work is known
}

// dtypeBytes returns the element size in bytes of a profiler input type
// ("c10::BFloat16", "float", "long int", ...), and whether it is a tensor
// dtype this table knows. Packed sub-byte types are per storage element
// (c10::quint4x2 and Float4_e2m1fn_x2 hold two 4-bit values a byte), so a
// tensor's numel times its element size is its bytes in memory.
func dtypeBytes(t string) (float64, bool) {
	switch t {
	case "double", "long int", "c10::complex<float>", "unsigned long int":
		return 8, true
	case "float", "int", "unsigned int", "c10::qint32":
		return 4, true
	case "c10::BFloat16", "c10::Half", "short int", "unsigned short int":
		return 2, true
	case "c10::Float8_e4m3fn", "c10::Float8_e5m2", "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz",
		"c10::Float8_e8m0fnu", "c10::Float4_e2m1fn_x2", "signed char", "unsigned char", "bool",
		"c10::qint8", "c10::quint8", "c10::quint4x2", "c10::quint2x4":
		return 1, true
	}
	return 0, false
}

// peakKeyOf returns the GPUPeak.TFLOPS key of the math of inputs of this
// dtype: FP8 types at the FP8 rate, 8-bit integers at INT8, float at FP32,
// BF16 and FP16 at theirs; "" for others.
func peakKeyOf(t string) string {
	switch t {
	case "c10::BFloat16":
		return PeakBF16
	case "c10::Half":
		return PeakFP16
	case "float":
		return PeakFP32
	case "c10::Float8_e4m3fn", "c10::Float8_e5m2", "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz":
		return PeakFP8
	case "signed char", "c10::qint8":
		return PeakINT8
	case "c10::Float4_e2m1fn_x2":
		return PeakFP4
	}
	return ""
}

// workOf returns the work of op of trace t by its kind.
func workOf(t *ingest.Trace, op *ingest.ShapedOp) opWork {
	if len(op.Inputs) == 0 {
		return opWork{why: whyNoShapes}
	}
	switch op.Kind {
	case ingest.OpGEMM:
		return gemmWork(t, op)
	case ingest.OpQuantGEMM:
		return quantGEMMWork(t, op)
	case ingest.OpAttention:
		return attentionWork(t, op)
	}
	return opWork{why: t.Name(op.Name) + ": the tokens routed to each expert are not recorded"}
}

// whyNoShapes is the reason of ops recorded without their inputs' dims.
const whyNoShapes = "op recorded without shapes"

// gemmLayout says where a dense GEMM op keeps its operands: A [M, K] (or
// [..., M, K], the leading dims M's too), B [K, N] or, when bNK, [N, K]
// (a weight, as aten::linear takes it); out, when not -1, is the input
// the result is written to. Every other tensor input (bias, scales) is
// read once. The output is written at A's dtype unless outBytes says
// otherwise (the FP8 GEMMs write BF16).
type gemmLayout struct {
	a, b, out int
	bNK       bool
	batched   bool    // A [b, M, K], B [b, K, N]: b products
	outBytes  float64 // 0: A's element size
}

// gemmLayouts are the dense GEMM ops of ingest's list by name, from their
// schemas (PyTorch's native_functions.yaml, fbgemm_gpu, vLLM and aiter's
// custom ops). It is never written after initialization.
var gemmLayouts = map[string]gemmLayout{
	"aten::mm":                    {a: 0, b: 1, out: -1},                // mm(self [M,K], mat2 [K,N])
	"aten::matmul":                {a: 0, b: 1, out: -1},                // matmul(a [...,M,K], b [K,N])
	"aten::addmm":                 {a: 1, b: 2, out: -1},                // addmm(bias, mat1, mat2, beta, alpha)
	"aten::bmm":                   {a: 0, b: 1, out: -1, batched: true}, // bmm(self [b,M,K], mat2 [b,K,N])
	"aten::baddbmm":               {a: 1, b: 2, out: -1, batched: true}, // baddbmm(self, batch1, batch2, ...)
	"aten::linear":                {a: 0, b: 1, out: -1, bNK: true},     // linear(input [...,K], weight [N,K], bias)
	"vllm::rocm_unquantized_gemm": {a: 0, b: 1, out: -1, bNK: true},     // (x [...,K], weight [N,K], bias)
	"aiter::gemm_a16w16":          {a: 0, b: 1, out: -1, bNK: true},     // (A [M,K], B [N,K], ...)
	// _scaled_mm(self [M,K], mat2 [K,N], scale_a, scale_b, bias, scale_result, out_dtype, ...): BF16 out
	"aten::_scaled_mm":    {a: 0, b: 1, out: -1, outBytes: 2},
	"aten::_scaled_mm_v2": {a: 0, b: 1, out: -1, outBytes: 2},
	// fbgemm f8f8bf16(XQ [M,K], WQ [N,K], scales...): BF16 out
	"fbgemm::f8f8bf16_rowwise":    {a: 0, b: 1, out: -1, bNK: true, outBytes: 2},
	"fbgemm::f8f8bf16_tensorwise": {a: 0, b: 1, out: -1, bNK: true, outBytes: 2},
	"aiter::gemm_a8w8":            {a: 0, b: 1, out: -1, bNK: true, outBytes: 2},
	// vLLM's cutlass_scaled_mm(out [M,N], a [M,K], b [K,N], a_scales, b_scales, bias)
	"_C::cutlass_scaled_mm": {a: 1, b: 2, out: 0},
}

// gemmWork is the work of a dense GEMM:
//
//	FLOPs = 2·M·N·K (batched: 2·b·M·N·K; a bias add's M·N is not counted)
//	bytes = A + B + C + every other tensor input (bias, scales)
//
// each tensor at its numel times its dtype's element size, C = M·N (b·M·N)
// at A's dtype (BF16 for the FP8 GEMMs). The peak is A's dtype's.
func gemmWork(t *ingest.Trace, op *ingest.ShapedOp) opWork {
	name := t.Name(op.Name)
	l, ok := gemmLayouts[name]
	a, b := op.Input(l.a), op.Input(l.b)
	if !ok || !isTensor(a) || !isTensor(b) {
		return opWork{why: name + ": operand shapes not recorded"}
	}
	batch, m, k, n, ok := gemmDims(a.Dims, b.Dims, l)
	if !ok {
		return opWork{why: fmt.Sprintf("%s: operands %v × %v do not multiply", name, a.Dims, b.Dims)}
	}
	return matmulWork(t, op, 2*batch*m*n*k, batch*m*n, l.out, l.outBytes, a)
}

// gemmDims returns batch, M, K and N of a GEMM's operands.
func gemmDims(ad, bd []int64, l gemmLayout) (batch, m, k, n int64, ok bool) {
	if len(ad) < 1 || len(bd) < 1 {
		return 0, 0, 0, 0, false
	}
	batch, k = 1, ad[len(ad)-1]
	m = 1
	for _, d := range ad[:len(ad)-1] {
		m *= d
	}
	switch {
	case l.batched && len(ad) == 3 && len(bd) == 3:
		batch, m = ad[0], ad[1]
		if bd[0] != batch || bd[1] != k {
			return 0, 0, 0, 0, false
		}
		n = bd[2]
	case l.bNK && len(bd) == 2:
		n = bd[0]
		if bd[1] != k {
			return 0, 0, 0, 0, false
		}
	case len(bd) == 2:
		n = bd[1]
		if bd[0] != k {
			return 0, 0, 0, 0, false
		}
	case len(bd) == 1: // matrix × vector
		n = 1
		if bd[0] != k {
			return 0, 0, 0, 0, false
		}
	case len(bd) >= 3 && len(ad) == len(bd): // matmul of batched operands
		m = ad[len(ad)-2]
		batch = 1
		for _, d := range ad[:len(ad)-2] {
			batch *= d
		}
		n = bd[len(bd)-1]
		if bd[len(bd)-2] != k {
			return 0, 0, 0, 0, false
		}
	default:
		return 0, 0, 0, 0, false
	}
	return batch, m, k, n, m > 0 && n > 0 && k > 0
}

// matmulWork sums the bytes of a matrix product: every tensor input once,
// and the output of outElems elements unless input out holds it; at the
// peak of a's dtype.
func matmulWork(t *ingest.Trace, op *ingest.ShapedOp, flops, outElems int64, out int, outBytes float64, a *ingest.OpInput) opWork {
	in, why := inputBytes(t, op)
	if why != "" {
		return opWork{why: why}
	}
	if out < 0 {
		e := outBytes
		if e == 0 {
			e, _ = dtypeBytes(t.Shapes.Type(a.Type))
		}
		in += float64(outElems) * e
	}
	key := peakKeyOf(t.Shapes.Type(a.Type))
	return opWork{flops: float64(flops), bytes: in, dtype: key}
}

// inputBytes sums numel times element size over op's tensor inputs; why
// names an input of a dtype the table does not know.
func inputBytes(t *ingest.Trace, op *ingest.ShapedOp) (float64, string) {
	sum := 0.0
	for i := range op.Inputs {
		in := &op.Inputs[i]
		if in.Kind != ingest.InputTensor {
			continue
		}
		e, ok := dtypeBytes(t.Shapes.Type(in.Type))
		if !ok {
			return 0, fmt.Sprintf("%s: input %d of unknown dtype %q", t.Name(op.Name), i, t.Shapes.Type(in.Type))
		}
		sum += float64(in.Numel()) * e
	}
	return sum, ""
}

// isTensor says whether in is a tensor input with dims.
func isTensor(in *ingest.OpInput) bool {
	return in != nil && in.Kind == ingest.InputTensor && len(in.Dims) > 0
}

// opMNK returns M, N and K of a GEMM or weight-only quantised GEMM op
// from its recorded shapes (a batched product's M counts every batch's
// rows), and whether they are known.
func opMNK(t *ingest.Trace, op *ingest.ShapedOp) (m, n, k int64, ok bool) {
	name := t.Name(op.Name)
	switch op.Kind {
	case ingest.OpGEMM:
		l, known := gemmLayouts[name]
		a, b := op.Input(l.a), op.Input(l.b)
		if !known || !isTensor(a) || !isTensor(b) {
			return 0, 0, 0, false
		}
		batch, m, k, n, ok := gemmDims(a.Dims, b.Dims, l)
		return batch * m, n, k, ok
	case ingest.OpQuantGEMM:
		a := op.Input(0)
		if !isTensor(a) || len(a.Dims) < 2 {
			return 0, 0, 0, false
		}
		k, m = a.Dims[len(a.Dims)-1], 1
		for _, d := range a.Dims[:len(a.Dims)-1] {
			m *= d
		}
		n = quantGEMMN(op, quantNs[name], m, k)
		return m, n, k, n > 0
	}
	return 0, 0, 0, false
}

// quantN says where a weight-only quantised GEMM keeps N: input in's dim
// dim, times mul (the columns a packed int32 holds); in -1 when only the
// concrete size_m, size_n, size_k inputs tell it.
type quantN struct {
	in, dim int
	mul     int64
}

// quantNs are the weight-only quantised GEMM ops by name, from their
// schemas (vLLM's csrc/torch_bindings.cpp, PyTorch's native_functions.yaml):
// A [M, K] is input 0 of each. It is never written after initialization.
var quantNs = map[string]quantN{
	// kts::marlin_gemm(A [M,K], B_packed, C [M,N], scales [K/g,N], workspace)
	"kts::marlin_gemm": {in: 2, dim: 1, mul: 1},
	// gptq_marlin_gemm(a, ..., size_m, size_n, size_k, ...), marlin_gemm(a, b_q_weight, b_scales, workspace, size_m, size_n, size_k)
	"_C::gptq_marlin_gemm": {in: -1},
	"_C::marlin_gemm":      {in: -1},
	"_C::awq_marlin_gemm":  {in: -1},
	"_C::machete_mm":       {in: -1},
	// awq_gemm(input [M,K], qweight [K, N/8], scales [K/g, N], qzeros, split_k_iters)
	"_C::awq_gemm": {in: 2, dim: 1, mul: 1},
	// gptq_gemm(a, b_q_weight [K/8, N], b_gptq_qzeros, b_gptq_scales, b_g_idx, use_exllama, bit)
	"_C::gptq_gemm": {in: 1, dim: 1, mul: 1},
	// _weight_int4pack_mm(self [M,K], mat2, qGroupSize, qScaleAndZeros [K/g, N, 2])
	"aten::_weight_int4pack_mm":         {in: 3, dim: 1, mul: 1},
	"aten::_weight_int4pack_mm_for_cpu": {in: 3, dim: 1, mul: 1},
	// _weight_int8pack_mm(self [M,K], mat2 [N,K], scales [N])
	"aten::_weight_int8pack_mm": {in: 1, dim: 0, mul: 1},
}

// quantGEMMWork is the work of a weight-only quantised GEMM (A in BF16 or
// FP16, the weight packed to 4 or 8 bits):
//
//	FLOPs = 2·M·N·K, at A's dtype's tensor peak (the weight is dequantised
//	        to it in registers)
//	bytes = A + the packed weight + scales + zeros + C + every other tensor
//	        input (g_idx, perm, workspace)
//
// each at its recorded numel and dtype: a 4-bit weight packed eight to an
// int32 is K·N/2 bytes, its 4 bits exactly. N is read where the op keeps
// it (quantNs), else from its concrete size_m, size_n, size_k (three ints
// in a row, the first M and the last K); C is M·N at A's dtype unless an
// input of that shape and dtype is the output.
func quantGEMMWork(t *ingest.Trace, op *ingest.ShapedOp) opWork {
	name := t.Name(op.Name)
	a := op.Input(0)
	if !isTensor(a) || len(a.Dims) < 2 {
		return opWork{why: name + ": A's shape not recorded"}
	}
	k := a.Dims[len(a.Dims)-1]
	m := int64(1)
	for _, d := range a.Dims[:len(a.Dims)-1] {
		m *= d
	}
	n := quantGEMMN(op, quantNs[name], m, k)
	if n <= 0 {
		return opWork{why: name + ": N not found in the recorded inputs"}
	}
	out := -1
	for i := 1; i < len(op.Inputs); i++ {
		in := &op.Inputs[i]
		if isTensor(in) && len(in.Dims) == 2 && in.Dims[0] == m && in.Dims[1] == n && in.Type == a.Type {
			out = i
		}
	}
	return matmulWork(t, op, 2*m*n*k, m*n, out, 0, a)
}

// quantGEMMN returns N of a quantised GEMM, 0 when not found.
func quantGEMMN(op *ingest.ShapedOp, q quantN, m, k int64) int64 {
	if q.in >= 0 && q.mul > 0 {
		if in := op.Input(q.in); isTensor(in) && q.dim < len(in.Dims) {
			return in.Dims[q.dim] * q.mul
		}
		return 0
	}
	for i := 0; i+2 < len(op.Inputs); i++ {
		a, okA := op.Inputs[i].Int()
		n, okN := op.Inputs[i+1].Int()
		c, okC := op.Inputs[i+2].Int()
		if okA && okN && okC && op.Inputs[i].Value == ingest.ConcreteInt && a == m && c == k && n > 0 {
			return n
		}
	}
	return 0
}

// attentionWork is the work of an attention op with a padded batch
// (ingest.Attention):
//
//	FLOPs = 2·B·H·P·(D + Dv), P the query-key pairs: Sq·Sk, or under a
//	        causal mask with Sq = Sk, Sq·(Sq+1)/2 (about half): Q·Kᵀ is
//	        2·B·H·P·D and P·V 2·B·H·P·Dv, 4·B·H·Sq·Sk·D when Dv = D
//	bytes = Q + K + V + O + every other tensor input (a mask), O being
//	        B·H·Sq·Dv at Q's dtype
//
// at Q's dtype's peak. Packed (varlen) and paged ops record no
// per-sequence lengths and give no figure; nor does a causal mask with Sq
// ≠ Sk (its alignment differs between kernels).
func attentionWork(t *ingest.Trace, op *ingest.ShapedOp) opWork {
	name := t.Name(op.Name)
	at, ok := t.Attention(op)
	switch {
	case !ok:
		return opWork{why: name + ": query shape not recorded"}
	case at.Varlen:
		return opWork{why: name + ": packed or paged sequences, whose key lengths are not recorded"}
	case at.KVLen == 0 || at.HeadDimV == 0:
		return opWork{why: name + ": key and value shapes not recorded"}
	case at.Causal && at.QLen != at.KVLen:
		return opWork{why: fmt.Sprintf("%s: causal with %d queries and %d keys", name, at.QLen, at.KVLen)}
	}
	pairs := at.QLen * at.KVLen
	if at.Causal {
		pairs = at.QLen * (at.QLen + 1) / 2
	}
	flops := 2 * at.Batch * at.Heads * pairs * (at.HeadDim + at.HeadDimV)
	q := op.Input(0)
	return matmulWork(t, op, flops, at.Batch*at.Heads*at.QLen*at.HeadDimV, -1, 0, q)
}
