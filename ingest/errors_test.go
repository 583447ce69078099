package ingest

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     string // substring of the error
		offset   int64  // for syntax errors, -1 otherwise
	}{
		{"empty", "", "not a trace: empty input", -1},
		{"not json", "hello world", `not JSON (starts with 'h')`, -1},
		{"binary", "\x00\x01\x02", `not JSON`, -1},
		{"no traceEvents", `{"schemaVersion": 1, "other": [1, 2]}`, "no traceEvents", -1},
		{"events not array", `{"traceEvents": {"a": 1}}`, "traceEvents is not an array", -1},
		{"scalar document", `42`, "not JSON", -1},
		{"bad separator", `{"traceEvents": [{"ph": "X",, "cat": "kernel"}]}`, "expected an object key", 28},
		{"event not object", `{"traceEvents": [1, 2]}`, "expected an event object", 17},
		{"missing colon", `{"traceEvents" [`, "expected ':'", 15},
		{"truncated", `{"traceEvents": [{"ph": "X", "cat": "ker`, "unexpected end of input", 40},
		{"truncated after event", `{"traceEvents": [{"ph": "X"},`, "unexpected end of input", 29},
		{"mismatched brackets", `{"traceEvents": [{"args": {"a": [1, 2}}]}`, "mismatched", 37},
		{"trailing data", `{"traceEvents": []} x`, "data after the end", 20},
		{"bad literal", `{"traceEvents": [{"ph": @}]}`, "expected a JSON value", 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.in), "bad.json", Options{})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "bad.json: ") {
				t.Errorf("error %q, want it to name the file and say %q", err, tt.want)
			}
			var se *SyntaxError
			if tt.offset >= 0 && (!errors.As(err, &se) || se.Offset != tt.offset) {
				t.Errorf("error %q, want a syntax error at offset %d", err, tt.offset)
			}
		})
	}
}

func TestReadGzipErrors(t *testing.T) {
	src, err := os.ReadFile(publicTrace(t, "hta-sampled-rank-0.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	corrupt := bytes.Clone(src)
	corrupt[len(corrupt)-6] ^= 0x5a // CRC-32 trailer
	tests := []struct {
		name string
		in   []byte
		want string
	}{
		{"truncated", src[:len(src)/2], "truncated gzip stream"},
		{"truncated header", src[:5], "gzip header"},
		{"corrupt", corrupt, "corrupt gzip stream"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tt.in), "x.json.gz", Options{})
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "x.json.gz: ") {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestReadLimit(t *testing.T) {
	path := publicTrace(t, "hta-sampled-rank-0.json.gz")
	_, err := ReadFile(path, Options{MaxUncompressedBytes: 100_000})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), path) {
		t.Errorf("error %v, want ErrTooLarge naming the file", err)
	}
	tr, err := ReadFile(path, Options{MaxUncompressedBytes: 1 << 30})
	if err != nil || tr.GPU.Len() == 0 {
		t.Errorf("under the limit: %v", err)
	}
}

// TestReadSmallBlocks checks that values spanning block boundaries parse
// the same as with large blocks, including values longer than a block.
func TestReadSmallBlocks(t *testing.T) {
	for _, name := range []string{"tracelens-vllm-decode-full-graph.json.gz", "hta-sampled-rank-1.json.gz"} {
		path := publicTrace(t, name)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		whole, err := readTrace(bytes.NewReader(b), path, 0, Options{}, blockSize)
		if err != nil {
			t.Fatal(err)
		}
		for _, bs := range []int{100, 4096} {
			small, err := readTrace(bytes.NewReader(b), path, 0, Options{}, bs)
			if err != nil {
				t.Fatalf("%s, %d-byte blocks: %v", path, bs, err)
			}
			if streamCounts(whole).refTotals != streamCounts(small).refTotals {
				t.Errorf("%s: %d-byte blocks differ", path, bs)
			}
		}
	}
}
