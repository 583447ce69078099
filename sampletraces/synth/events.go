package synth

import "strconv"

// category indexes the event counters.
type category int

// Event categories as written in "cat" ("" for metadata and instants).
const (
	catPython category = iota
	catCPUOp
	catUserAnnotation
	catGPUAnnotation
	catRuntime
	catDriver
	catKernel
	catMemcpy
	catFlow
	catTrace
	catNone
	numCategories
)

// String returns the "cat" value of the category.
func (c category) String() string {
	switch c {
	case catPython:
		return "python_function"
	case catCPUOp:
		return "cpu_op"
	case catUserAnnotation:
		return "user_annotation"
	case catGPUAnnotation:
		return "gpu_user_annotation"
	case catRuntime:
		return "cuda_runtime"
	case catDriver:
		return "cuda_driver"
	case catKernel:
		return "kernel"
	case catMemcpy:
		return "gpu_memcpy"
	case catFlow:
		return "ac2g"
	case catTrace:
		return "Trace"
	}
	return ""
}

// eventWriter formats Kineto-style events into a buffer and hands full
// buffers to a sink.
type eventWriter struct {
	b      []byte
	sink   sink
	err    error
	n      int // events written
	bytes  int64
	counts [numCategories]int64
}

// next starts a new event: the separator and the opening brace.
func (w *eventWriter) next(c category) {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.counts[c]++
	w.b = append(w.b, "\n  {\n    "...)
}

// end closes an event and flushes the buffer when it is full.
func (w *eventWriter) end() {
	w.b = append(w.b, "\n  }"...)
	if len(w.b) >= flushSize {
		w.flush()
	}
}

// flush hands the buffer to the sink.
func (w *eventWriter) flush() {
	if w.err != nil || len(w.b) == 0 {
		w.b = w.b[:0]
		return
	}
	w.bytes += int64(len(w.b))
	w.b, w.err = w.sink.flush(w.b)
}

// raw appends text outside events (header, footer).
func (w *eventWriter) raw(s string) {
	w.b = append(w.b, s...)
}

// complete writes the head of a complete ("X") event up to the opening of
// its args, which the caller appends before calling closeArgs.
func (w *eventWriter) complete(c category, name string, pid, tid int, ts, dur int64) {
	w.next(c)
	w.b = append(w.b, `"ph": "X", "cat": "`...)
	w.b = append(w.b, c.String()...)
	w.b = append(w.b, `", "name": `...)
	w.b = appendQuoted(w.b, name)
	w.b = append(w.b, `, "pid": `...)
	w.b = strconv.AppendInt(w.b, int64(pid), 10)
	w.b = append(w.b, `, "tid": `...)
	w.b = strconv.AppendInt(w.b, int64(tid), 10)
	w.b = append(w.b, ",\n    \"ts\": "...)
	w.b = appendUS(w.b, ts)
	w.b = append(w.b, `, "dur": `...)
	w.b = appendUS(w.b, dur)
	w.b = append(w.b, ",\n    \"args\": {\n      "...)
}

// closeArgs ends the args object and the event.
func (w *eventWriter) closeArgs() {
	w.b = append(w.b, "\n    }"...)
	w.end()
}

// arg appends `"key": value` with a leading separator unless first.
func (w *eventWriter) argInt(key string, v int64, first bool) {
	if !first {
		w.b = append(w.b, ", "...)
	}
	w.b = append(w.b, '"')
	w.b = append(w.b, key...)
	w.b = append(w.b, `": `...)
	w.b = strconv.AppendInt(w.b, v, 10)
}

// argStr appends `, "key": "value"`.
func (w *eventWriter) argStr(key, v string) {
	w.b = append(w.b, `, "`...)
	w.b = append(w.b, key...)
	w.b = append(w.b, `": `...)
	w.b = appendQuoted(w.b, v)
}

// flow writes an ac2g flow event: start ("s") on the CPU side, finish
// ("f") on the GPU side.
func (w *eventWriter) flow(start bool, id int64, pid, tid int, ts int64) {
	w.next(catFlow)
	ph := `"ph": "f", "id": `
	if start {
		ph = `"ph": "s", "id": `
	}
	w.b = append(w.b, ph...)
	w.b = strconv.AppendInt(w.b, id, 10)
	w.b = append(w.b, `, "pid": `...)
	w.b = strconv.AppendInt(w.b, int64(pid), 10)
	w.b = append(w.b, `, "tid": `...)
	w.b = strconv.AppendInt(w.b, int64(tid), 10)
	w.b = append(w.b, `, "ts": `...)
	w.b = appendUS(w.b, ts)
	w.b = append(w.b, ",\n    \"cat\": \"ac2g\", \"name\": \"ac2g\""...)
	if !start {
		w.b = append(w.b, `, "bp": "e"`...)
	}
	w.end()
}
