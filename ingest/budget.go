package ingest

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"
)

// What one analysis costs at its peak, per count known while reading,
// measured with whole processes (kinetoscope analyze, peak RSS): a real
// vLLM decode trace repeated to 1.37 M kept events peaked at 182 MB (133
// bytes a kept event); 1 M kernel events of distinct names at 1,076 MB,
// 10 M at 11.5 GB (the report and its encoding keep every distinct
// name: about 940 bytes each beyond the event). A file being read holds
// its blocks in flight besides (jsonscan.BlocksInFlight+2 of
// jsonscan.BlockSize).
const (
	BudgetBytesPerEvent = 140
	BudgetBytesPerName  = 1000
	BudgetBytesPerFile  = 8 << 20
)

// Budget bounds the memory the analysis of one set of traces may take,
// estimated from what the readers have kept so far (events, distinct
// names, files: Estimate; an op with shapes counts as the events its
// record, inputs and dims would fill, see budgetEvents). The readers of a set share one Budget and
// check it after each block of input; once the estimate passes Limit,
// every read of the set fails with the same *BudgetError, so a run is
// refused before its memory is spent. A nil *Budget bounds nothing.
type Budget struct {
	// Limit is the most bytes the analysis may take.
	Limit int64
	// Flag names the setting of Limit in the error (for example
	// "--max-analysis-memory").
	Flag string

	mu            sync.Mutex
	events, names int64 // sums of the files' counts when last checked
	files         int
	err           *BudgetError
}

// BudgetError says that an analysis would pass its memory budget: the
// limit, the estimate and the counts it came from.
type BudgetError struct {
	Limit, Estimate      int64
	Events, Names, Files int64
	Flag                 string
}

// Error implements error.
func (e *BudgetError) Error() string {
	flag := ""
	if e.Flag != "" {
		flag = " (" + e.Flag + ")"
	}
	return fmt.Sprintf("the analysis would take more than its memory budget of %s%s: "+
		"%s events kept and %s distinct names in %d file(s) after reading part of the input, an estimated %s "+
		"(%d bytes per event, %d per distinct name): profile fewer steps or ranks, or raise the budget",
		formatBytes(e.Limit), flag, groupDigits(e.Events), groupDigits(e.Names), e.Files, formatBytes(e.Estimate),
		BudgetBytesPerEvent, BudgetBytesPerName)
}

// isBudgetError reports whether err is a *BudgetError.
func isBudgetError(err error) bool {
	var be *BudgetError
	return errors.As(err, &be)
}

// Estimate returns the estimated peak memory of an analysis of events
// kept events with names distinct names, read from files files.
func Estimate(events, names int64, files int) int64 {
	return events*BudgetBytesPerEvent + names*BudgetBytesPerName + int64(files)*BudgetBytesPerFile
}

// Err returns the error of the first read that passed the budget, or nil.
func (b *Budget) Err() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		return nil
	}
	return b.err
}

// meter returns the check one reader makes after each block of t: it
// adds what t kept since its last check to the budget's sums.
func (b *Budget) meter(t *Trace) func() error {
	b.mu.Lock()
	b.files++
	b.mu.Unlock()
	var events, names int64
	return func() error {
		e, n := t.budgetEvents(), int64(0)
		if t.Strings != nil {
			n = int64(t.Strings.Len())
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		b.events += e - events
		b.names += n - names
		events, names = e, n
		if b.err == nil {
			if est := Estimate(b.events, b.names, b.files); est > b.Limit {
				b.err = &BudgetError{Limit: b.Limit, Estimate: est, Events: b.events, Names: b.names, Files: int64(b.files), Flag: b.Flag}
			}
		}
		if b.err != nil {
			return b.err
		}
		return nil
	}
}

// budgetEvents returns the events the budget counts for t: the kept
// events, and the ops with shapes at their size in events (an op, its
// inputs and dims at BudgetBytesPerEvent bytes an event).
func (t *Trace) budgetEvents() int64 {
	s := &t.Shapes
	return t.KeptEvents() + int64(s.Ops.Len()) +
		(s.Inputs*int64(unsafe.Sizeof(OpInput{}))+s.Dims*8+BudgetBytesPerEvent-1)/BudgetBytesPerEvent
}

// formatBytes writes n in binary units (KiB to GiB).
func formatBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}

// groupDigits writes n with commas between groups of three digits.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
