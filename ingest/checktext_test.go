package ingest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// checkJSON runs the upload check on a plain JSON text.
func checkJSON(text []byte) error {
	_, err := Limits{MaxUncompressedBytes: 1 << 40, MaxRatio: 200}.Check("f.json", FormatJSON, bytes.NewReader(text))
	return err
}

// The upload check refuses a text the reader cannot analyse with the
// reader's words and offset, and accepts what it reads.
func TestCheckTraceText(t *testing.T) {
	tests := []struct {
		name string
		text string
		msg  string // "" when accepted
	}{
		{"object", `{"traceEvents": [{"ph": "X", "name": "k"}], "displayTimeUnit": "ms"}`, ""},
		{"bare array", `[{"ph": "X"}, {"ph": "i"}]`, ""},
		{"empty events", "{\"traceEvents\":[ ]}\n", ""},
		{"bare empty array", `[]`, ""},
		{"BOM", "\xef\xbb\xbf{\"traceEvents\":[]}", ""},
		{"brackets in strings", `{"traceEvents":[{"name":"a\"}]{[\\"}],"x":"}{\"","n":-1.5e3,"t":true}`, ""},
		{"nested metadata", `{"deviceProperties":[{"id":0,"a":[[1],{}]}],"traceEvents":[{"args":{"a":[1,{"b":null}]}}],"z":null}`, ""},
		{"key with escapes", `{"trace\u0045vents":[1],"traceEvents":[]}`, ""},
		{"truncated event", `{"traceEvents":[{"ph":"X","na`, "invalid JSON at byte offset 29: unexpected end of input"},
		{"truncated after an event", `{"traceEvents":[{"ph":"X"},`, "invalid JSON at byte offset 27: unexpected end of input"},
		{"truncated before the end", `{"traceEvents":[{"ph":"X"}]`, "invalid JSON at byte offset 27: unexpected end of input"},
		{"truncated key", `{"trace`, "invalid JSON at byte offset 7: unexpected end of input"},
		{"nested arrays", `[[[[[]]]]]`, "invalid JSON at byte offset 1: expected an event object, found '['"},
		{"array of numbers", `[1, 2]`, "invalid JSON at byte offset 1: expected an event object, found '1'"},
		{"events of numbers", `{"traceEvents":[{}, 7]}`, "invalid JSON at byte offset 20: expected an event object, found '7'"},
		{"no traceEvents", `{"a": 1, "b": [{}]}`, "not a trace: no traceEvents key"},
		{"empty object", `{}`, "not a trace: no traceEvents key"},
		{"traceEvents object", `{"traceEvents": {}}`, "not a trace: traceEvents is not an array"},
		{"traceEvents twice", `{"traceEvents":[],"traceEvents":[]}`, "invalid JSON at byte offset 32: traceEvents appears twice"},
		{"data after", `{"traceEvents":[]} {}`, "invalid JSON at byte offset 19: data after the end"},
		{"mismatched bracket", `{"traceEvents":[{"a":[1}]}`, "invalid JSON at byte offset 23: expected ']', found '}'"},
		{"trailing comma", `[{}, ]`, "invalid JSON at byte offset 5: expected an event object, found ']'"},
		{"no comma", `[{} {}]`, "invalid JSON at byte offset 4: expected ',' or ']' after an event"},
		{"no colon", `{"traceEvents" []}`, "invalid JSON at byte offset 15: expected ':' after a key"},
		{"bare key", `{traceEvents: []}`, "invalid JSON at byte offset 1: expected a key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkJSON([]byte(tc.text))
			var ce *CheckError
			switch {
			case tc.msg == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.msg != "" && (!errors.As(err, &ce) || ce.TooLarge || !strings.Contains(ce.Msg, "f.json: "+tc.msg)):
				t.Fatalf("got %v, want a check error with %q", err, tc.msg)
			}
			// The reader agrees: it reads what is accepted and fails what
			// is refused, at the same offset.
			_, rerr := Read(strings.NewReader(tc.text), "f.json", Options{})
			if (rerr == nil) != (err == nil) {
				t.Fatalf("check: %v; reader: %v", err, rerr)
			}
			var rse *SyntaxError
			if errors.As(rerr, &rse) && !strings.Contains(err.Error(), fmt.Sprintf("byte offset %d:", rse.Offset)) {
				t.Errorf("reader: %v; check: %v", rerr, err)
			}
		})
	}
}

// Every bundled real and public trace passes, and each cut short is
// refused at the byte where it ends, as the reader would.
func TestCheckTraceTextSamples(t *testing.T) {
	files := publicTraces(t)
	for _, v := range []string{"eager", "moe", "profilerstep"} {
		files = append(files, realTraces(t, v)[0])
	}
	for _, path := range files {
		text := gunzipFile(t, path)
		if err := checkJSON(text); err != nil {
			t.Errorf("%s: refused: %v", filepath.Base(path), err)
		}
		for _, frac := range []int{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			cut := len(text) * frac / 10
			err := checkJSON(text[:cut])
			var ce *CheckError
			want := (&SyntaxError{Offset: int64(cut), Msg: "unexpected end of input (truncated file?)"}).Error()
			if !errors.As(err, &ce) || !strings.Contains(ce.Msg, want) {
				t.Errorf("%s cut at %d: got %v, want %q", filepath.Base(path), cut, err, want)
			}
		}
	}
}

// FuzzCheckTraceText: the upload check never refuses a valid JSON text
// that the reader reads, and refuses with the reader's offset one it
// fails with a syntax error at the end of the input.
func FuzzCheckTraceText(f *testing.F) {
	for _, s := range []string{`{"traceEvents":[{"ph":"X","args":{"a":[1]}}]}`, `[{}]`, `{"a":"}","traceEvents":[]}`, `[[]]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		cerr := checkJSON(text)
		_, rerr := Read(bytes.NewReader(text), "f.json", Options{})
		if rerr == nil && cerr != nil && json.Valid(text) {
			t.Fatalf("the reader reads %q, the check refuses it: %v", text, cerr)
		}
		var rse *SyntaxError
		if errors.As(rerr, &rse) && rse.AtEnd && cerr == nil {
			t.Fatalf("the reader finds %q cut short (%v), the check accepts it", text, rerr)
		}
	})
}

// Escapes and brackets inside strings are followed at every position of
// the eight-byte words the check reads.
func TestCheckTraceTextAlignment(t *testing.T) {
	for pad := range 24 {
		for _, str := range []string{`\"}]`, `\\`, `x\\\"[{`, `\u0022}`, `]}"`[:2]} {
			text := fmt.Sprintf(`{"traceEvents":[{"n":"%s%s","a":[{}]}]}`, strings.Repeat("a", pad), str)
			if !json.Valid([]byte(text)) {
				t.Fatalf("test text %s is not JSON", text)
			}
			if err := checkJSON([]byte(text)); err != nil {
				t.Errorf("%s: refused: %v", text, err)
			}
			if err := checkJSON([]byte(text[:len(text)-1])); err == nil {
				t.Errorf("%s cut short: accepted", text)
			}
		}
	}
}
