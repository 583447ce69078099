package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/ingest"
)

// A large trace of a real shape is built from a real trace by repeating its
// events: each copy has its timestamps shifted past the end of the one
// before, and its correlation, External id and flow ids shifted past the
// largest id of the source, so that the copies do not collide. The top-level
// metadata is written once.

// Layouts of a built trace.
const (
	// LayoutKineto keeps the source's own text: every event as the source
	// writes it (Kineto's writer, for a profiler trace).
	LayoutKineto = "kineto"
	// LayoutCompact re-saves every value as compact JSON (`","` and
	// `":"`), one event per line, as tools that rewrite traces save them.
	LayoutCompact = "compact"
)

// traceSource is a trace split for repeating: the text before the first
// event, the events (one text holding them all, the separator between
// two), and the text after the last event.
type traceSource struct {
	head, body, sep, tail []byte
	patches               []patch
	span                  int64 // µs between copies: the events' extent and a gap
	idSpan                int64 // added to the ids of each further copy
}

// patch is a number in body that changes from copy to copy: an integer
// text at [start, end), a timestamp's whole microseconds or an id.
type patch struct {
	start, end int
	id         bool
}

// shiftedNumber finds the numbers that a copy shifts: "ts" (whole
// microseconds), flow "id", and args "correlation" and "External id", in any
// whitespace layout.
var shiftedNumber = regexp.MustCompile(`"(ts|id|correlation|External id)"\s*:\s*"?(\d+)`)

// readSource reads and decompresses the trace at path and splits it in the
// given layout.
func readSource(path, layout string) (*traceSource, error) {
	data, err := readAllMaybeGzip(path)
	if err != nil {
		return nil, err
	}
	doc, err := splitTrace(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var src *traceSource
	switch layout {
	case LayoutKineto:
		src = doc.kinetoSource(data)
	case LayoutCompact:
		if src, err = doc.compactSource(data); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	default:
		return nil, fmt.Errorf("layout %q: want %s or %s", layout, LayoutKineto, LayoutCompact)
	}
	src.findPatches()
	return src, nil
}

// readAllMaybeGzip returns the content of path, decompressed if it is gzip.
func readAllMaybeGzip(path string) ([]byte, error) {
	var data []byte
	err := readMaybeGzip(path, func(r io.Reader) error {
		var err error
		data, err = io.ReadAll(r)
		return err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
}

// readMaybeGzip opens path and calls read with its content, decompressed
// if it is gzip; errors after the open name the file.
func readMaybeGzip(path string, read func(io.Reader) error) error {
	r, err := ingest.OpenText(path)
	if err != nil {
		return err
	}
	defer r.Close()
	if err := read(r); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// span is a byte range of the source text.
type span struct{ start, end int }

// member is a top-level member other than traceEvents: its key and the
// range of its value.
type topMember struct {
	key   string
	value span
	after bool // it comes after traceEvents
}

// splitDoc is where the parts of a trace document lie.
type splitDoc struct {
	array   bool // the document is a bare array of events
	events  []span
	open    int // position after the '[' of the events
	close   int // position of the ']' of the events
	members []topMember
}

// splitTrace finds the events of a trace document and its other top-level
// members.
func splitTrace(data []byte) (*splitDoc, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("at byte offset %d: %w", dec.InputOffset(), err)
	}
	doc := &splitDoc{}
	if tok == json.Delim('[') {
		doc.array = true
		return doc, doc.readEvents(dec)
	}
	if tok != json.Delim('{') {
		return nil, errors.New("not a JSON object or array")
	}
	seen := false
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("at byte offset %d: %w", dec.InputOffset(), err)
		}
		key, _ := k.(string)
		if key == "traceEvents" {
			if t, err := dec.Token(); err != nil || t != json.Delim('[') {
				return nil, fmt.Errorf("traceEvents is not an array (byte offset %d)", dec.InputOffset())
			}
			if err := doc.readEvents(dec); err != nil {
				return nil, err
			}
			seen = true
			continue
		}
		v, err := rawValue(dec)
		if err != nil {
			return nil, err
		}
		doc.members = append(doc.members, topMember{key: key, value: v, after: seen})
	}
	if !seen {
		return nil, errors.New("no traceEvents array")
	}
	return doc, nil
}

// readEvents reads the events array after its '['.
func (d *splitDoc) readEvents(dec *json.Decoder) error {
	d.open = int(dec.InputOffset())
	for dec.More() {
		v, err := rawValue(dec)
		if err != nil {
			return err
		}
		d.events = append(d.events, v)
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("at byte offset %d: %w", dec.InputOffset(), err)
	}
	d.close = int(dec.InputOffset()) - 1
	if len(d.events) < 2 {
		return fmt.Errorf("%d events: too few to repeat", len(d.events))
	}
	return nil
}

// rawValue reads the next value and returns its range.
func rawValue(dec *json.Decoder) (span, error) {
	var raw json.RawMessage
	if err := dec.Decode(&raw); err != nil {
		return span{}, fmt.Errorf("at byte offset %d: %w", dec.InputOffset(), err)
	}
	end := int(dec.InputOffset())
	return span{end - len(raw), end}, nil
}

// kinetoSource keeps the source's text as it is.
func (d *splitDoc) kinetoSource(data []byte) *traceSource {
	first, last := d.events[0], d.events[len(d.events)-1]
	return &traceSource{
		head: data[:first.start],
		body: data[first.start:last.end],
		sep:  data[d.events[0].end:d.events[1].start],
		tail: data[last.end:],
	}
}

// compactSource re-saves the document as compact JSON, one event per line.
func (d *splitDoc) compactSource(data []byte) (*traceSource, error) {
	var head, body, tail bytes.Buffer
	if d.array {
		head.WriteString("[\n")
		tail.WriteString("\n]\n")
	} else {
		head.WriteString("{")
		if err := d.writeMembers(&head, data, false); err != nil {
			return nil, err
		}
		if head.Len() > 1 {
			head.WriteString(",")
		}
		head.WriteString("\"traceEvents\":[\n")
		tail.WriteString("\n]")
		if err := d.writeMembers(&tail, data, true); err != nil {
			return nil, err
		}
		tail.WriteString("}\n")
	}
	for i, e := range d.events {
		if i > 0 {
			body.WriteString(",\n")
		}
		if err := json.Compact(&body, data[e.start:e.end]); err != nil {
			return nil, fmt.Errorf("event at byte offset %d: %w", e.start, err)
		}
	}
	return &traceSource{head: head.Bytes(), body: body.Bytes(), sep: []byte(",\n"), tail: tail.Bytes()}, nil
}

// writeMembers writes the top-level members before (after false) or after
// traceEvents compactly, each preceded by a comma but the first before.
func (d *splitDoc) writeMembers(w *bytes.Buffer, data []byte, after bool) error {
	for _, m := range d.members {
		if m.after != after {
			continue
		}
		if after || w.Len() > 1 {
			w.WriteString(",")
		}
		k, _ := json.Marshal(m.key)
		w.Write(k)
		w.WriteString(":")
		if err := json.Compact(w, data[m.value.start:m.value.end]); err != nil {
			return fmt.Errorf("top-level %q at byte offset %d: %w", m.key, m.value.start, err)
		}
	}
	return nil
}

// findPatches finds the numbers to shift in body, and the time and id
// spans of one copy.
func (s *traceSource) findPatches() {
	minTS, maxTS, maxID := int64(-1), int64(0), int64(0)
	for _, m := range shiftedNumber.FindAllSubmatchIndex(s.body, -1) {
		key := string(s.body[m[2]:m[3]])
		v, err := strconv.ParseInt(string(s.body[m[4]:m[5]]), 10, 64)
		if err != nil {
			continue
		}
		p := patch{start: m[4], end: m[5], id: key != "ts"}
		s.patches = append(s.patches, p)
		if p.id {
			maxID = max(maxID, v)
			continue
		}
		if minTS < 0 || v < minTS {
			minTS = v
		}
		maxTS = max(maxTS, v)
	}
	// A gap of a second after the last start covers the longest event of
	// any real trace's window.
	s.span = maxTS - max(minTS, 0) + 1_000_000
	s.idSpan = maxID + 1
}

// writeCopies writes the trace with its events repeated n times to w.
func (s *traceSource) writeCopies(w io.Writer, n int) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.Write(s.head)
	var num []byte
	for k := range int64(n) {
		if k > 0 {
			bw.Write(s.sep)
		}
		at := 0
		for _, p := range s.patches {
			bw.Write(s.body[at:p.start])
			v, _ := strconv.ParseInt(string(s.body[p.start:p.end]), 10, 64)
			if p.id {
				v += k * s.idSpan
			} else {
				v += k * s.span
			}
			num = strconv.AppendInt(num[:0], v, 10)
			bw.Write(num)
			at = p.end
		}
		bw.Write(s.body[at:])
	}
	bw.Write(s.tail)
	return bw.Flush()
}

// buildTrace writes to out (gzip-compressed) the trace at src with its
// events repeated n times, in layout.
func buildTrace(src, out, layout string, n int) error {
	s, err := readSource(src, layout)
	if err != nil {
		return err
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw := gzip.NewWriter(f)
	err = s.writeCopies(zw, n)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return nil
}
