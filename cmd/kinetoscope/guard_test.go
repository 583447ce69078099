package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"kinetoscope/watch"
)

// startServe runs serve on a loopback listener with the default served
// names and returns its base URL; the server stops with the test.
func startServe(t *testing.T, f *serveFlags) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, f, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	})
	return "http://" + ln.Addr().String()
}

// With the served names checked, the CLI's watch --server uploads and curl
// uploads still pass, by address and by the name localhost, and a Host
// the server does not serve is refused.
func TestServeClientsPassHostAndOriginChecks(t *testing.T) {
	base := startServe(t, &serveFlags{addr: "127.0.0.1:0", data: t.TempDir(), noSamples: true,
		maxUpload: 1 << 30, maxUncompressed: 1 << 30, workers: 1})
	files := eagerFiles(t)
	byName := strings.Replace(base, "127.0.0.1", "localhost", 1)
	for _, b := range []string{base, byName} {
		id, err := uploadSet(context.Background(), watchArgs{server: b, dir: filepath.Dir(files[0]), source: "watch"}, &watch.SetReport{Files: files})
		if err != nil || id == "" {
			t.Errorf("watch --server %s upload: %q %v", b, id, err)
		}
		out, err := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}",
			"-F", "file=@"+files[0], b+"/api/v1/runs").CombinedOutput()
		if err != nil || string(out) != "202" {
			t.Errorf("curl -F upload to %s: %s %v", b, out, err)
		}
	}
	req, err := http.NewRequest("GET", base+"/api/v1/runs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = "evil.example"
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("Host evil.example answered %d, want 403", resp.StatusCode)
	}
}

// A blank or short --token or --read-token is refused, naming the flag.
func TestShortTokenRefused(t *testing.T) {
	t.Setenv("KINETOSCOPE_TOKEN", "")
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--token", "   "}, "--token"},
		{[]string{"--token", "s3cret"}, "--token"},
		{[]string{"--token", "a-token-of-16-chars", "--read-token", "short"}, "--read-token"},
	} {
		_, err := parseServeFlags(tc.args, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%q: %v, want a refusal naming %s", tc.args, err, tc.flag)
		}
	}
	if _, err := parseServeFlags([]string{"--token", "a-token-of-16-chars"}, io.Discard); err != nil {
		t.Errorf("a 19-character token: %v", err)
	}
}
