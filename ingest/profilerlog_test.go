package ingest

import (
	"fmt"
	"strings"
	"testing"
)

// TestProfilerLog: the top-level WARNING and ERROR arrays that Kineto
// writes into a trace are kept as "LEVEL: line", bounded in number and
// length; a value of another shape is left out; times ingest dropped are
// counted in Counts as well as warned about.
func TestProfilerLog(t *testing.T) {
	long := strings.Repeat("x", 2*maxProfilerLine)
	many := make([]string, 2*maxProfilerLog)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprint("w", i))
	}
	event := `{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2, "args": {"correlation": 1}}`
	cases := []struct {
		top  string
		want []string
		n    int
	}{
		{`"WARNING": ["Dropped 12 activity records", "GPU trace is empty!"], "ERROR": ["bad"]`,
			[]string{"WARNING: Dropped 12 activity records", "WARNING: GPU trace is empty!", "ERROR: bad"}, 3},
		{`"WARNING": [1, 2], "ERROR": "not an array"`, nil, 0},
		{`"WARNING": ["` + long + `"]`, []string{"WARNING: " + long[:maxProfilerLine]}, 1},
		{`"WARNING": [` + strings.Join(many, ",") + `]`, []string{"WARNING: w0", "WARNING: w1"}, maxProfilerLog},
	}
	for _, c := range cases {
		doc := `{"traceEvents": [` + event + `, {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 5, "dur": -3}], ` + c.top + `}`
		tr, err := Read(strings.NewReader(doc), "t.json", Options{})
		if err != nil {
			t.Fatalf("%.40s: %v", c.top, err)
		}
		log := tr.Meta.ProfilerLog
		if len(log) != c.n {
			t.Errorf("%.40s: %d lines, want %d", c.top, len(log), c.n)
		}
		for i, w := range c.want {
			if i >= len(log) || log[i] != w {
				t.Errorf("%.40s: line %d %.60q, want %.60q", c.top, i, log, w)
			}
		}
		if tr.Counts.NegativeDurs != 1 || tr.Counts.UnreadableTimes != 0 || tr.GPU.Len() != 1 {
			t.Errorf("%.40s: counts %+v, %d GPU events", c.top, tr.Counts, tr.GPU.Len())
		}
	}
}
