package api_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// An upload that stops sending is cut off after StallTimeout and leaves
// no run; one that keeps sending slowly completes although it lasts many
// stall periods.
func TestStalledUpload(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), StallTimeout: 300 * time.Millisecond})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	testkit.Must(t, err)
	defer conn.Close()
	start := time.Now()
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"traceEvents\": [")
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, _ := io.ReadAll(conn) // until the server closes the connection
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stalled upload held for %v, want about the 300ms stall timeout", d)
	}
	t.Logf("stalled upload cut off after %v: %.60q", time.Since(start).Round(time.Millisecond), answer)

	// A slow but steady upload: 1.2s in 100ms drips, 4 stall periods.
	trace, err := os.ReadFile(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	pr2, pw2 := io.Pipe()
	go func() {
		chunk := len(trace)/12 + 1
		for off := 0; off < len(trace); off += chunk {
			pw2.Write(trace[off:min(off+chunk, len(trace))])
			time.Sleep(100 * time.Millisecond)
		}
		pw2.Close()
	}()
	code, body := do(t, "POST", s.URL+"/api/v1/runs", "application/gzip", pr2)
	if code != http.StatusAccepted {
		t.Fatalf("slow upload: %d %s", code, body)
	}
	var list struct{ Total int }
	getJSON(t, s.URL+"/api/v1/runs", &list)
	if list.Total != 1 {
		t.Errorf("%d runs, want only the slow upload's", list.Total)
	}
}
