package watch

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"kinetoscope/ingest"
)

// State is what the watcher knows of one trace file.
type State string

// The states of a trace file, in the order a file normally passes them.
const (
	// Appeared: seen once, not yet seen to grow or stop.
	Appeared State = "appeared"
	// Growing: its size changed since the last look.
	Growing State = "growing"
	// Waiting: its size stopped changing but its content does not close
	// yet (a writer that pauses); it is not reported as truncated before
	// the settle time has passed.
	Waiting State = "waiting"
	// Complete: its content closes and ingest reads it without error.
	Complete State = "complete"
	// Truncated: it stopped growing for the settle time with content that
	// does not close.
	Truncated State = "truncated"
	// Unreadable: its content closes but ingest cannot read it, or it
	// holds no GPU events (vLLM's frontend trace).
	Unreadable State = "unreadable"
)

// File is the state of one trace file.
type File struct {
	// Path is the file's path.
	Path string `json:"path"`
	// Size is its size in bytes at the last look.
	Size int64 `json:"size"`
	// Rate is its growth in bytes per second between the last two looks.
	Rate float64 `json:"rate"`
	// State is what is known of it.
	State State `json:"state"`
	// Rank and WorldSize come from its distributedInfo once it is
	// complete; Rank is -1 and WorldSize 0 when unknown.
	Rank      int `json:"rank"`
	WorldSize int `json:"world_size"`
	// Problem says why a file is truncated or unreadable.
	Problem string `json:"problem,omitempty"`
}

// fileState is what the watcher keeps of one file between looks.
type fileState struct {
	File
	modTime    time.Time
	lastChange time.Time
	// checked is set once the content was checked at the current size.
	checked bool
}

// isTraceName reports whether a file name is one the profiler writes: a
// *.json or *.json.gz.
func isTraceName(name string) bool {
	n := strings.ToLower(name)
	return strings.HasSuffix(n, ".json") || strings.HasSuffix(n, ".json.gz")
}

// traceKey names the trace a file holds: the path without ".gz", so that a
// .json and its compressed copy are one trace.
func traceKey(path string) string {
	if strings.HasSuffix(strings.ToLower(path), ".gz") {
		return path[:len(path)-3]
	}
	return path
}

// observe updates f from a fresh stat at now; it reports whether the file
// changed.
func (f *fileState) observe(st os.FileInfo, now time.Time) bool {
	if st.Size() == f.Size && st.ModTime().Equal(f.modTime) {
		return false
	}
	if dt := now.Sub(f.lastChange).Seconds(); dt > 0 && st.Size() >= f.Size {
		f.Rate = float64(st.Size()-f.Size) / dt
	}
	f.Size, f.modTime, f.lastChange = st.Size(), st.ModTime(), now
	f.checked = false
	f.State, f.Problem = Growing, ""
	return true
}

// settle moves a file whose size stopped changing on: its content is
// checked once per size, and a file that stays incomplete for settle is
// truncated. It reports whether the state changed.
func (f *fileState) settle(now time.Time, settle time.Duration) bool {
	before := f.State
	if !f.checked {
		f.checked = true
		f.Rate = 0
		f.check()
	}
	if f.State == Waiting && now.Sub(f.lastChange) >= settle {
		f.State = Truncated
	}
	return f.State != before
}

// check decides from the content whether the file is complete, waiting
// for more, or unreadable. A complete file is read once: ingest rejects a
// document that does not close and a gzip stream without its trailer
// (both errors wrap io.ErrUnexpectedEOF). Only a file that fails to read
// otherwise is read again (closes), to tell one still being written from
// a broken one.
func (f *fileState) check() {
	set, err := ingest.Open(f.Path, ingest.Options{})
	if err == nil && len(set.Errors) > 0 {
		err = set.Errors[0]
	}
	if err != nil {
		// Cut short (a gzip stream without its trailer, a document that
		// does not close): still being written, as far as anyone can tell.
		if errors.Is(err, io.ErrUnexpectedEOF) {
			f.State, f.Problem = Waiting, err.Error()
			return
		}
		if cerr := closes(f.Path); cerr != nil {
			f.State, f.Problem = Waiting, cerr.Error()
			return
		}
		if st, serr := os.Stat(f.Path); serr != nil || st.Size() != f.Size || !st.ModTime().Equal(f.modTime) {
			f.State, f.Problem = Waiting, "changed while it was checked"
			return
		}
		f.State, f.Problem = Unreadable, err.Error()
		return
	}
	switch {
	case len(set.Traces) == 0:
		f.State, f.Problem = Unreadable, "holds no GPU events"
		if len(set.SetAside) > 0 {
			f.Problem = set.SetAside[0].Reason
		}
	default:
		t := set.Traces[0]
		f.State, f.Rank, f.WorldSize = Complete, t.Rank, t.WorldSize()
	}
}

// closes checks that the file at path holds a whole JSON document: a gzip
// stream read to its trailer (CRC and size checked), whose text, like a
// plain file's, ends in '}' or ']' after trailing whitespace.
func closes(path string) error {
	r, err := ingest.OpenText(path)
	if err != nil {
		return err
	}
	defer r.Close()
	last, err := lastByte(r)
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return errors.New("gzip stream ends before its trailer")
		}
		return fmt.Errorf("reading: %w", err)
	}
	if last != '}' && last != ']' {
		return fmt.Errorf("JSON does not close (last byte %q)", last)
	}
	return nil
}

// lastByte reads r to its end and returns the last non-whitespace byte.
func lastByte(r io.Reader) (byte, error) {
	buf := make([]byte, 1<<16)
	var last byte
	for {
		n, err := r.Read(buf)
		for i := n - 1; i >= 0; i-- {
			if c := buf[i]; c != ' ' && c != '\n' && c != '\r' && c != '\t' {
				last = c
				break
			}
		}
		if err == io.EOF {
			return last, nil
		}
		if err != nil {
			return last, err
		}
	}
}
