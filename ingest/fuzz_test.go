package ingest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strings"
	"testing"
)

// smallRealTrace cuts a public trace down to its metadata and first n
// events, re-encoded, to seed the fuzzer with real event shapes.
func smallRealTrace(f *testing.F, name string, n int) []byte {
	f.Helper()
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(gunzipFile(f, publicTrace(f, name)), &doc); err != nil {
		f.Fatal(err)
	}
	var events []json.RawMessage
	if err := json.Unmarshal(doc["traceEvents"], &events); err != nil {
		f.Fatal(err)
	}
	// Keep the kinds of events that matter, from anywhere in the trace.
	var keep []json.RawMessage
	seen := map[string]int{}
	for _, e := range events {
		var h struct{ Cat, Ph string }
		json.Unmarshal(e, &h)
		if seen[h.Cat+h.Ph] < n {
			seen[h.Cat+h.Ph]++
			keep = append(keep, e)
		}
	}
	doc["traceEvents"], _ = json.Marshal(keep)
	out, _ := json.Marshal(doc)
	return out
}

// FuzzRead feeds arbitrary input to the reader. It must never panic or
// hang, and reading with tiny blocks must give the same result as with
// normal ones, and parsing the events in chunks (of tiny blocks) the
// same trace, or error, as parsing them in order.
func FuzzRead(f *testing.F) {
	f.Add([]byte(handTrace))
	f.Add([]byte(`[{"ph":"X","cat":"kernel","name":"k","ts":1.5,"dur":2,"args":{"grid":[1,2,3]}}]`))
	f.Add([]byte(`{"traceEvents": [{"ph": "X",, }]}`))
	f.Add([]byte(`{"traceEvents": [` + strings.Join(kinetoEvents, ",") + `]}`))
	for _, name := range []string{"tracelens-vllm-decode-full-graph.json.gz", "hta-sampled-rank-0.json.gz",
		"tracelens-sglang-qwen3-8b-decode.json.gz"} {
		small := smallRealTrace(f, name, 3)
		f.Add(small)
		var gz bytes.Buffer
		zw := gzip.NewWriter(&gz)
		zw.Write(small)
		zw.Close()
		f.Add(gz.Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		opt := Options{MaxUncompressedBytes: 4 << 20}
		a, errA := readTrace(bytes.NewReader(data), "fuzz.json", 0, opt, blockSize)
		b, errB := readTrace(bytes.NewReader(data), "fuzz.json", 0, opt, 64)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("block size changes the outcome: %v vs %v", errA, errB)
		}
		if errA != nil {
			if errA.Error() != errB.Error() {
				t.Fatalf("block size changes the error: %v vs %v", errA, errB)
			}
			pool := newParsePool(2, nil)
			_, errC := readTrace(bytes.NewReader(data), "fuzz.json", 0, Options{MaxUncompressedBytes: opt.MaxUncompressedBytes, ParseWorkers: 2, pool: pool}, 64)
			pool.close()
			if errC == nil || errC.Error() != errA.Error() {
				t.Fatalf("the parse in chunks changes the error: %v vs %v", errC, errA)
			}
			return
		}
		if streamCounts(a).refTotals != streamCounts(b).refTotals {
			t.Fatalf("block size changes the counts")
		}
		pool := newParsePool(2, nil)
		opt.ParseWorkers, opt.pool = 2, pool
		c, errC := readTrace(bytes.NewReader(data), "fuzz.json", 0, opt, 64)
		pool.close()
		if errC != nil {
			t.Fatalf("the parse in chunks fails where the parse in order does not: %v", errC)
		}
		if d := traceDiff(c, b); d != "" {
			t.Fatalf("the parse in chunks changes the trace's %s", d)
		}
		kept := int64(a.GPU.Len() + a.Launches.Len() + a.Annotations.Len() + a.CommOps.Len())
		if kept > a.Counts.Events {
			t.Fatalf("kept %d of %d events", kept, a.Counts.Events)
		}
	})
}
