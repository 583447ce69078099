package ingest

// embeddingOp is the CPU op of the model's token lookup, kept for its
// input shapes (Trace.Embeddings).
const embeddingOp = "aten::embedding"

// keptCPUOp says whether a cpu_op event of this raw name is kept: the
// record_param_comms ops (the CPU side of collectives) and the embedding
// lookups. Every other cpu_op is skipped once its name is read.
func keptCPUOp(name []byte) bool {
	return string(name) == "record_param_comms" || string(name) == embeddingOp
}

// embeddingTokens reads the token count from the raw "Input Dims" of an
// aten::embedding op, e.g. [[128256, 4096], [512], [], [], []]: the
// product of the second input's dims (the indices; the first is the weight
// table). 0 when the dims are absent or not of that form.
func embeddingTokens(raw []byte) int64 {
	depth, input := 0, -1
	var prod, v int64
	digits, any := false, false
	for _, c := range raw {
		switch {
		case c == '[':
			depth++
			if depth == 2 {
				input++
				if input == 1 {
					prod, any = 1, false
				}
			}
		case c >= '0' && c <= '9':
			if depth == 2 && input == 1 {
				v, digits = v*10+int64(c-'0'), true
			}
		case c == ',' || c == ']':
			if depth == 2 && input == 1 && digits {
				prod, any = prod*v, true
			}
			v, digits = 0, false
			if c == ']' {
				if depth == 2 && input == 1 {
					if !any {
						return 0
					}
					return prod
				}
				depth--
			}
		}
	}
	return 0
}
