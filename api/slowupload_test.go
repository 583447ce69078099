package api_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"kinetoscope/api"
	"kinetoscope/internal/testkit"
)

// A body trickled at 50 bytes a second, each byte in time for the stall
// timeout, is cut off once the grace period has passed (408), and leaves
// no run.
func TestSlowBodyCutOff(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), MinUploadRate: 1 << 10, UploadGrace: 300 * time.Millisecond, StallTimeout: 5 * time.Second})
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	testkit.Must(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"traceEvents\": [")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(15 * time.Second)) // the bound: 2000 s to send it all
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a trickled body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("trickled body answered %d, want 408", resp.StatusCode)
	}
	if total := runTotal(t, s.URL+"/api/v1/runs"); total != 0 {
		t.Errorf("%d runs after a cut upload", total)
	}
}

// Past --max-uploads receiving at once, an upload is answered 503 with
// Retry-After at once; once those end, uploads pass again.
func TestMaxUploads(t *testing.T) {
	data := t.TempDir()
	s := startServer(t, api.Config{DataDir: data, MaxUploads: 2})
	held := []net.Conn{halfUpload(t, s, data)}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	testkit.Must(t, err)
	fmt.Fprintf(conn, "POST /api/v1/runs HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/gzip\r\nContent-Length: 100000\r\n\r\n\x1f\x8b")
	held = append(held, conn)
	trace, err := os.ReadFile(testkit.Public(t, traceSmall))
	testkit.Must(t, err)
	upload := func() (*http.Response, string) {
		return send(t, "POST", s.URL+"/api/v1/runs", "", nil, strings.NewReader(string(trace)), map[string]string{"Content-Type": "application/gzip"})
	}
	waitFor(t, "both slots taken", func() bool {
		resp, _ := upload()
		return resp.StatusCode == http.StatusServiceUnavailable
	})
	resp, body := upload()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "--max-uploads") {
		t.Errorf("third upload: %d Retry-After %q %s; want 503 with Retry-After naming --max-uploads", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	for _, c := range held {
		c.Close()
	}
	waitFor(t, "an upload passes once the others ended", func() bool {
		resp, _ := upload()
		return resp.StatusCode == http.StatusAccepted
	})
}
