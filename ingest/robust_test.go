package ingest

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"testing"
)

// repeated is a reader of n copies of the byte c: a huge input generated,
// not stored.
type repeated struct {
	n int64
	c byte
}

// Read implements io.Reader.
func (r *repeated) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	k := int(min(int64(len(p)), r.n))
	p[0] = r.c
	for j := 1; j < k; j *= 2 {
		copy(p[j:k], p[:j])
	}
	r.n -= int64(k)
	return k, nil
}

// around returns a reader of before, n copies of c, and after.
func around(before string, n int64, c byte, after string) func() io.Reader {
	return func() io.Reader {
		return io.MultiReader(strings.NewReader(before), &repeated{n, c}, strings.NewReader(after))
	}
}

// text returns a reader of s.
func text(s string) func() io.Reader {
	return func() io.Reader { return strings.NewReader(s) }
}

// kernelEvent is a kept kernel event.
const kernelEvent = `{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}}`

// TestReadPathological reads inputs made to break a reader: each must give
// a clear error naming the file, or a trace (with a warning where
// something was skipped), in bounded memory.
func TestReadPathological(t *testing.T) {
	const huge = 300 << 20
	tests := []struct {
		name    string
		in      func() io.Reader
		err     string // substring of the error; "" for none
		warning string // substring of a warning, when no error
		gpu     int    // kept GPU events, when no error
	}{
		{"kernel name of 300 MB", around(`{"traceEvents": [`+kernelEvent+`, {"ph": "X", "cat": "kernel", "name": "`, huge, 'a',
			`", "ts": 1, "dur": 2}, `+kernelEvent+`]}`), "", fmt.Sprintf("1 events longer than 16 MiB were skipped unread (the first at byte offset %d)", 19+len(kernelEvent)), 2},
		{"python_function args string of 300 MB", around(`[{"ph": "X", "cat": "python_function", "name": "f", "args": {"a": "`, huge, 'b',
			`"}}, `+kernelEvent+`]`), "", "1 events longer than 16 MiB", 1},
		{"escaped quotes in a long string", around(`[{"ph": "X", "cat": "kernel", "name": "`, 40<<20, '\\',
			`\"}", "x": 1}, `+kernelEvent+`]`), "", "1 events longer than 16 MiB", 1},
		{"top-level string of 300 MB", around(`{"vllm_version": "`, huge, 'v', `", "traceEvents": [`+kernelEvent+`]}`),
			"", `the value of top-level key "vllm_version" is longer than 16 MiB`, 1},
		{"top-level number of 300 MB", around(`{"baseTimeNanoseconds": `, huge, '7', `, "traceEvents": [`+kernelEvent+`]}`),
			"", `"baseTimeNanoseconds" is longer than 16 MiB`, 1},
		{"whitespace of 300 MB between events", around(`{"traceEvents": [`+kernelEvent+`,`, huge, ' ', kernelEvent+`]}`), "", "", 2},
		{"top-level key of 300 MB", around(`{"`, huge, 'k', `": 1, "traceEvents": []}`),
			"JSON value too long to hold: more than 16 MiB at byte offset 1", "", 0},
		{"unterminated string of 300 MB", around(`[{"ph": "X", "cat": "kernel", "name": "`, huge, 'a', ``),
			"unexpected end of input", "", 0},
		{"traceEvents twice", text(`{"traceEvents": [` + kernelEvent + `], "traceEvents": []}`),
			fmt.Sprintf("invalid JSON at byte offset %d: traceEvents", 35+len(kernelEvent)), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			tr, err := Read(tt.in(), "bad.json", Options{})
			runtime.ReadMemStats(&m1)
			if alloc := m1.TotalAlloc - m0.TotalAlloc; alloc > 128<<20 {
				t.Errorf("allocated %d MB", alloc>>20)
			}
			checkOutcome(t, tr, err, tt.err, tt.warning, tt.gpu)
		})
	}
}

// checkOutcome checks a read's error, or its warnings and kept GPU events.
func checkOutcome(t *testing.T, tr *Trace, err error, wantErr, warning string, gpu int) {
	t.Helper()
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || !strings.HasPrefix(err.Error(), "bad.json: ") {
			t.Errorf("error %v, want one naming the file and saying %q", err, wantErr)
		}
		return
	}
	if err != nil {
		t.Fatalf("error %v", err)
	}
	if tr.GPU.Len() != gpu {
		t.Errorf("%d GPU events, want %d", tr.GPU.Len(), gpu)
	}
	if warning != "" && !strings.Contains(strings.Join(tr.Warnings, "\n"), warning) {
		t.Errorf("warnings %q, want one saying %q", tr.Warnings, warning)
	}
}

var _ = errors.New
