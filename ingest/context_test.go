package ingest

import (
	"context"
	"errors"
	"io"
	"kinetoscope/internal/testkit"
	"strings"
	"testing"
)

// endlessEvents is a trace whose traceEvents never end; it cancels its
// context once it has produced after bytes.
type endlessEvents struct {
	head   io.Reader
	n      int64
	after  int64
	cancel context.CancelFunc
}

func (e *endlessEvents) Read(p []byte) (int, error) {
	if n, err := e.head.Read(p); n > 0 || err != io.EOF {
		return n, err
	}
	const ev = `{"ph": "X", "cat": "python_function", "name": "f", "pid": 1, "tid": 1, "ts": 1, "dur": 1}, `
	n := 0
	for n+len(ev) <= len(p) {
		n += copy(p[n:], ev)
	}
	e.n += int64(n)
	if e.n > e.after {
		e.cancel()
	}
	return n, nil
}

func TestReadStopsWhenContextDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	in := &endlessEvents{head: strings.NewReader(`{"traceEvents": [`), after: 8 << 20, cancel: cancel}
	_, err := Read(in, "endless.json", Options{Context: ctx})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Read = %v, want context.Canceled", err)
	}
	if in.n > 64<<20 {
		t.Errorf("read %d MB after the context was cancelled at 8 MB", in.n>>20)
	}
}

func TestOpenCancelled(t *testing.T) {
	dir := testkit.Real(t, "eager")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	set, err := Open(dir, Options{Context: ctx})
	if !errors.Is(err, context.Canceled) || set != nil {
		t.Fatalf("Open with a cancelled context = %v, %v; want context.Canceled", set, err)
	}
	if !strings.Contains(err.Error(), dir) {
		t.Errorf("error %q does not name %s", err, dir)
	}
}
