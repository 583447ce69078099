package ingest

import (
	"fmt"
	"io"
	"kinetoscope/internal/testkit"
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
		{"kernel names of 1 MB", func() io.Reader {
			var rs []io.Reader
			for i := range 20 { // distinct names, each cut to 64 KiB: 20 names, 1.3 MB kept
				rs = append(rs, strings.NewReader(`{"ph": "X", "cat": "kernel", "name": "`), &repeated{1 << 20, 'a' + byte(i)},
					strings.NewReader(`", "ts": 1, "dur": 1}, `))
			}
			rs = append(rs, strings.NewReader(kernelEvent+`]`))
			return io.MultiReader(append([]io.Reader{strings.NewReader(`[`)}, rs...)...)
		}, "", "20 names longer than 64 KiB were cut to that length", 21},
		{"a million distinct categories", func() io.Reader {
			var b strings.Builder
			b.WriteString("[")
			for i := range 1_000_000 {
				fmt.Fprintf(&b, `{"cat": "c%d"}, `, i)
			}
			b.WriteString(kernelEvent + "]")
			return strings.NewReader(b.String())
		}, "", `more than 1024 distinct categories: the events of the others are counted under "(other categories)"`, 1},
		{"traceEvents twice", text(`{"traceEvents": [` + kernelEvent + `], "traceEvents": []}`),
			fmt.Sprintf("invalid JSON at byte offset %d: traceEvents", 35+len(kernelEvent)), "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := tt.in() // built first: only the read's allocations count
			runtime.GC()
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			tr, err := Read(in, "bad.json", Options{})
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

// gz returns s gzip-compressed.
func gz(s string) string { return string(testkit.Gzip([]byte(s))) }

// withDist returns a trace with one kernel and the distributedInfo di.
func withDist(di string) func() io.Reader {
	return text(`{"distributedInfo": ` + di + `, "traceEvents": [` + kernelEvent + `]}`)
}

// kernelAt returns a bare-array trace of one kernel with the given ts and
// dur texts.
func kernelAt(ts, dur string) func() io.Reader {
	return text(`[{"ph": "X", "cat": "kernel", "name": "k", "ts": ` + ts + `, "dur": ` + dur + `}]`)
}

// TestReadOddInputs reads small inputs that are odd in one way each.
func TestReadOddInputs(t *testing.T) {
	doc := `{"traceEvents": [` + kernelEvent + `]}`
	deep := strings.Repeat("[", 1e6)
	rank := func(r int) func(*Trace) (string, string) {
		return func(tr *Trace) (string, string) { return fmt.Sprint(tr.Rank), fmt.Sprint(r) }
	}
	tests := []struct {
		name    string
		in      func() io.Reader
		err     string
		warning string
		gpu     int
		check   func(*Trace) (got, want string)
	}{
		{"empty", text(""), "not a trace: empty input", "", 0, nil},
		{"gzip of nothing", text(gz("")), "not a trace: empty input", "", 0, nil},
		{"gzip header only", text(gz("")[:10]), "truncated gzip stream after 10 compressed bytes", "", 0, nil},
		{"gzip members concatenated", text(gz(`{"traceEvents": [`+kernelEvent) + gz(", "+kernelEvent+"]}")), "", "", 2, nil},
		{"byte order mark", text("\xef\xbb\xbf" + doc), "", "", 1, nil},
		{"traceEvents an object", text(`{"traceEvents": {"a": 1}}`), "not a trace: traceEvents is not an array (it starts with '{' at byte offset 16)", "", 0, nil},
		{"traceEvents a string", text(`{"traceEvents": "[]"}`), "not a trace: traceEvents is not an array", "", 0, nil},
		{"traceEvents a number", text(`{"traceEvents": 5}`), "not a trace: traceEvents is not an array", "", 0, nil},
		{"traceEvents null", text(`{"traceEvents": null}`), "not a trace: traceEvents is not an array (it starts with 'n' at byte offset 16)", "", 0, nil},
		{"event a string", text(`{"traceEvents": ["x"]}`), `byte offset 17: expected an event object, found '"'`, "", 0, nil},
		{"ts past int64 ns", kernelAt("1e300", "1"), "", "1 events of kept categories had an unreadable ts or dur", 0, nil},
		{"dur past int64 ns", kernelAt("1", "99999999999999999999999"), "", "1 events of kept categories had an unreadable ts or dur", 0, nil},
		{"ts + dur past int64 ns", kernelAt("9000000000000000", "9000000000000000"), "", "an end past the int64 nanosecond range", 0, nil},
		{"negative dur", kernelAt("1", "-5"), "", "1 events of kept categories had a negative dur and were dropped", 0, nil},
		{"ts with exponent", kernelAt("1.5e3", "1"), "", "", 1, func(tr *Trace) (string, string) { return fmt.Sprint(tr.GPU.At(0).Start), "1500000" }},
		{"ts a quoted number", kernelAt(`"12.5"`, "1"), "", "", 1, func(tr *Trace) (string, string) { return fmt.Sprint(tr.GPU.At(0).Start), "12500" }},
		{"dur a word", kernelAt("1", `"x"`), "", "unreadable ts or dur", 0, nil},
		{"NaN and Infinity", kernelAt("NaN", "-Infinity"), "", "unreadable ts or dur", 0, nil},
		{"duplicate keys", text(`[{"ph": "X", "cat": "kernel", "name": "a", "name": "b", "ts": 1, "dur": 1, "ts": 3}]`), "", "", 1,
			func(tr *Trace) (string, string) {
				g := tr.GPU.At(0)
				return fmt.Sprint(tr.Name(g.Name), g.Start), "b3000"
			}},
		{"trailing garbage", text(doc + " garbage"), fmt.Sprintf("byte offset %d: data after the end", len(doc)+1), "", 0, nil},
		{"second top-level value", text(doc + doc), fmt.Sprintf("byte offset %d: data after the end", len(doc)), "", 0, nil},
		{"distributedInfo a string", withDist(`"x"`), "", `distributedInfo is not an object: "x"`, 1, nil},
		{"rank a quoted number", withDist(`{"rank": "3", "world_size": "8"}`), "", "", 1,
			func(tr *Trace) (string, string) { return fmt.Sprint(tr.Rank, tr.WorldSize()), "3 8" }},
		{"rank a word", withDist(`{"rank": "x"}`), "", `distributedInfo.rank "x" is not a rank number`, 1, rank(-1)},
		{"rank and world size out of range", withDist(`{"rank": 99999999999, "world_size": -3}`), "",
			`distributedInfo.rank 99999999999 is not a rank number`, 1, rank(-1)},
		{"pg_config a string", withDist(`{"rank": 1, "pg_config": "zz"}`), "", `pg_config is not an array of objects: "zz"`, 1, rank(1)},
		{"backend a number, ranks malformed", withDist(`{"rank": 2, "backend": 5, "pg_config": [{"ranks": {"a": 1}}, {"ranks": "[0, x]"}]}`),
			"", `bad rank "x" in [0, x]`, 1, rank(2)},
		{"distributedInfo twice", text(`{"distributedInfo": {"rank": 1, "pg_config": [{"ranks": [0]}]}, ` +
			`"distributedInfo": {"rank": 2, "pg_config": [{"ranks": [0]}]}, "traceEvents": [` + kernelEvent + `]}`), "", "", 1,
			func(tr *Trace) (string, string) { return fmt.Sprint(tr.Rank, len(tr.Meta.Distributed.Groups)), "2 1" }},
		{"deviceProperties an object", text(`{"deviceProperties": {"a": 1}, "traceEvents": []}`), "", `deviceProperties is not an array of objects: {"a": 1}`, 0, nil},
		{"control characters and invalid UTF-8 in a name", kernelAt("1", "1, \"name\": \"a\x01\x1b[2J\xff\\u0007\tb\""), "", "1 names held control characters", 1,
			func(tr *Trace) (string, string) {
				return tr.Name(tr.GPU.At(0).Name), "a\ufffd\ufffd[2J\ufffd\ufffd\ufffdb"
			}},
		{"args nested a million deep", text(`[{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"a": ` +
			deep + strings.Repeat("]", 1e6) + `}}]`), "", "", 1, nil},
		{"args nested a million deep, unclosed", text(`[{"ph": "X", "cat": "kernel", "name": "k", "args": {"a": ` + deep + `}}]`),
			"unexpected end of input", "", 0, nil},
		{"distributedInfo nested a million deep", text(`{"distributedInfo": ` + deep + strings.Repeat("]", 1e6) + `, "traceEvents": []}`),
			"", `distributedInfo is not an object: [[[[`, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr, err := Read(tt.in(), "bad.json", Options{})
			checkOutcome(t, tr, err, tt.err, tt.warning, tt.gpu)
			if err == nil && tt.check != nil {
				if got, want := tt.check(tr); got != want {
					t.Errorf("got %q, want %q", got, want)
				}
			}
		})
	}
}
