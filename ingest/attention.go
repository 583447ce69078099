package ingest

// Attention is the work of one attention op as its inputs' shapes give it
// (record_shapes): the query and key lengths, heads and head size. Lengths
// are per sequence for a padded batch; for packed (varlen) and paged ops,
// whose per-sequence lengths are in tensors the profiler does not record,
// Varlen is set, Tokens is the packed query total and QLen/KVLen are the
// maxima the op was given (0 when it was given none).
type Attention struct {
	Batch    int64 // sequences; 0 when unknown (packed or paged)
	Heads    int64 // query heads
	KVHeads  int64 // key/value heads (fewer than Heads under GQA); 0 when unknown
	QLen     int64 // query tokens per sequence (the maximum when Varlen)
	KVLen    int64 // key tokens per sequence (the maximum when Varlen); 0 when unknown
	HeadDim  int64 // of queries and keys
	HeadDimV int64 // of values; 0 when unknown
	Tokens   int64 // query tokens in all
	// Causal says the op masked causally; CausalKnown whether the op's
	// concrete inputs said so either way.
	Causal, CausalKnown bool
	Varlen              bool
	// Type and KVType are the dtypes of the query and of the keys.
	Type, KVType TypeID
}

// attnLayout is where an attention op keeps its shapes: the inputs of
// query, key and value, their dims' order, and the concrete inputs of the
// causal flag and the maximum lengths (-1: none).
type attnLayout struct {
	q, k, v           int
	bshd              bool // [B, S, H, D] (and [T, H, D] packed); else [B, H, S, D]
	causal            int
	causalIsMaskType  bool // the causal input is a mask type: causal when not 0
	maxQ, maxK        int
	kvFromInputs      bool // k and v hold the keys themselves (not a paged cache)
	packedWhenThreeD  bool // a 3-D query is packed [T, H, D]
	packed            bool // always packed [T, H, D]
	queryOnlyUnpacked bool // paged decode: query [num_seqs, H, D], one token a sequence
}

// attentionLayouts holds the input layout of each attention op of
// shapedOpKind, from the ops' schemas (PyTorch's native_functions.yaml,
// flash-attn's flash_attn_interface.py, vLLM's custom ops). Indices this
// table does not know are -1, so nothing is read from them. It is never
// written after initialization.
var attentionLayouts = map[string]attnLayout{
	// scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)
	"aten::scaled_dot_product_attention": {q: 0, k: 1, v: 2, causal: 5, maxQ: -1, maxK: -1, kvFromInputs: true},
	// _scaled_dot_product_flash_attention(query, key, value, dropout_p, is_causal, return_debug_mask, scale)
	"aten::_scaled_dot_product_flash_attention": {q: 0, k: 1, v: 2, causal: 4, maxQ: -1, maxK: -1, kvFromInputs: true},
	// _scaled_dot_product_efficient_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, scale)
	"aten::_scaled_dot_product_efficient_attention": {q: 0, k: 1, v: 2, causal: 6, maxQ: -1, maxK: -1, kvFromInputs: true},
	// _scaled_dot_product_cudnn_attention(query, key, value, attn_bias, compute_log_sumexp, dropout_p, is_causal, return_debug_mask, scale)
	"aten::_scaled_dot_product_cudnn_attention": {q: 0, k: 1, v: 2, causal: 6, maxQ: -1, maxK: -1, kvFromInputs: true},
	// _cudnn_attention_forward(query, key, value, attn_bias, cum_seq_q, cum_seq_k, max_q, max_k, compute_log_sumexp, dropout_p, is_causal, ...)
	"aten::_cudnn_attention_forward": {q: 0, k: 1, v: 2, causal: 10, maxQ: 6, maxK: 7, kvFromInputs: true},
	// _flash_attention_forward(query, key, value, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...), [B, S, H, D] or packed [T, H, D]
	"aten::_flash_attention_forward": {q: 0, k: 1, v: 2, bshd: true, causal: 8, maxQ: 5, maxK: 6, kvFromInputs: true, packedWhenThreeD: true},
	// _efficient_attention_forward(query, key, value, bias, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, custom_mask_type, ...)
	"aten::_efficient_attention_forward": {q: 0, k: 1, v: 2, bshd: true, causal: 9, causalIsMaskType: true, maxQ: 6, maxK: 7, kvFromInputs: true, packedWhenThreeD: true},
	// flash_attn: _flash_attn_forward(q, k, v, dropout_p, softmax_scale, causal, ...)
	"flash_attn::_flash_attn_forward": {q: 0, k: 1, v: 2, bshd: true, causal: 5, maxQ: -1, maxK: -1, kvFromInputs: true},
	// flash_attn: _flash_attn_varlen_forward(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k, dropout_p, softmax_scale, causal, ...)
	"flash_attn::_flash_attn_varlen_forward": {q: 0, k: 1, v: 2, bshd: true, causal: 9, maxQ: 5, maxK: 6, kvFromInputs: true, packed: true},
	// vLLM's flash-attention forks: q packed [T, H, D], k and v a paged cache
	"_vllm_fa2_C::varlen_fwd": {q: 0, k: -1, v: -1, bshd: true, causal: -1, maxQ: -1, maxK: -1, packed: true},
	"_vllm_fa3_C::fwd":        {q: 0, k: -1, v: -1, bshd: true, causal: -1, maxQ: -1, maxK: -1, packed: true},
	// vLLM's attention layer: query [T, H, D]; the KV cache and the lengths are the forward context's, not inputs
	"vllm::unified_attention":             {q: 0, k: -1, v: -1, bshd: true, causal: -1, maxQ: -1, maxK: -1, packed: true},
	"vllm::unified_attention_with_output": {q: 0, k: -1, v: -1, bshd: true, causal: -1, maxQ: -1, maxK: -1, packed: true},
	// paged_attention_v1(out, query, key_cache, value_cache, ...), v2(out, exp_sums, max_logits, tmp_out, query, ...): decode, query [num_seqs, H, D]
	"_C::paged_attention_v1": {q: 1, k: -1, v: -1, causal: -1, maxQ: -1, maxK: -1, queryOnlyUnpacked: true},
	"_C::paged_attention_v2": {q: 4, k: -1, v: -1, causal: -1, maxQ: -1, maxK: -1, queryOnlyUnpacked: true},
}

// Attention reads the shape of an attention op (Kind OpAttention) of the
// trace from its inputs; Shapes.Type names its dtypes. It returns false when op is not an attention op or its
// query's shape was not recorded.
func (t *Trace) Attention(op *ShapedOp) (Attention, bool) {
	l, ok := attentionLayouts[t.Name(op.Name)]
	if !ok || op.Kind != OpAttention {
		return Attention{}, false
	}
	q := op.Input(l.q)
	if q == nil || q.Kind != InputTensor || len(q.Dims) < 3 || len(q.Dims) > 4 {
		return Attention{}, false
	}
	a := Attention{Type: q.Type}
	switch {
	case l.queryOnlyUnpacked && len(q.Dims) == 3: // [num_seqs, H, D], one token each
		a.Batch, a.Heads, a.HeadDim, a.QLen, a.Varlen = q.Dims[0], q.Dims[1], q.Dims[2], 1, true
		a.Tokens = a.Batch
	case len(q.Dims) == 3 && (l.packed || l.packedWhenThreeD): // [T, H, D]
		a.Tokens, a.Heads, a.HeadDim, a.Varlen = q.Dims[0], q.Dims[1], q.Dims[2], true
	case len(q.Dims) == 4 && !l.packed && !l.queryOnlyUnpacked:
		a.Batch, a.QLen, a.Heads, a.HeadDim = dims4(q.Dims, l.bshd)
		a.Tokens = a.Batch * a.QLen
	default:
		return Attention{}, false
	}
	if l.kvFromInputs {
		a.readKV(op, l)
	}
	if v, ok := concreteInt(op, l.maxQ); ok && a.Varlen {
		a.QLen = v
	}
	if v, ok := concreteInt(op, l.maxK); ok && a.Varlen {
		a.KVLen = v
	}
	if v, ok := concreteInt(op, l.causal); ok {
		a.Causal, a.CausalKnown = v != 0, true
	}
	return a, true
}

// readKV reads the key and value shapes of an op whose k and v inputs are
// the keys themselves.
func (a *Attention) readKV(op *ShapedOp, l attnLayout) {
	k, v := op.Input(l.k), op.Input(l.v)
	if k == nil || k.Kind != InputTensor || len(k.Dims) != len(op.Inputs[l.q].Dims) {
		return
	}
	a.KVType = k.Type
	if len(k.Dims) == 4 {
		_, a.KVLen, a.KVHeads, _ = dims4(k.Dims, l.bshd)
	} else { // packed [T, H, D]: the key total, not a length
		a.KVHeads = k.Dims[1]
	}
	if v != nil && v.Kind == InputTensor && len(v.Dims) == len(k.Dims) {
		a.HeadDimV = v.Dims[len(v.Dims)-1]
	}
}

// dims4 returns batch, sequence, heads and head size of a 4-D shape in
// [B, S, H, D] (bshd) or [B, H, S, D] order.
func dims4(d []int64, bshd bool) (b, s, h, dim int64) {
	if bshd {
		return d[0], d[1], d[2], d[3]
	}
	return d[0], d[2], d[1], d[3]
}

// concreteInt returns the integer (or bool) concrete value of input i.
func concreteInt(op *ShapedOp, i int) (int64, bool) {
	in := op.Input(i)
	if in == nil {
		return 0, false
	}
	return in.Int()
}
