package main

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// TestMain stops the PostgreSQL cluster and the S3 server the tests start.
func TestMain(m *testing.M) { s3test.MainWith(m, pgtest.Stop) }

// serve --db postgres://... --blobs s3://... --replica NAME: the flags reach
// the server (health names the replica, a shared instance loads no samples
// by itself), and an upload is analysed through the shared queue.
func TestServeTeamFlags(t *testing.T) {
	meta, blobs := pgtest.New(t), s3test.New(t)
	f, err := parseServeFlags([]string{"--db", meta, "--blobs", blobs, "--replica", "r1", "--job-timeout", "2m",
		"--data", t.TempDir(), "--addr", "127.0.0.1:0"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !f.shared() || f.jobTimeout != 2*time.Minute {
		t.Fatalf("flags: %+v", f)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln, f, io.Discard) }()
	base := "http://" + ln.Addr().String()
	var health map[string]string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			json.NewDecoder(resp.Body).Decode(&health)
			resp.Body.Close()
			break
		}
	}
	if health["status"] != "ok" || health["replica"] != "r1" {
		t.Fatalf("healthz: %v", health)
	}
	trace, err := os.Open(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer trace.Close()
	resp, err := http.Post(base+"/api/v1/runs?name=team", "application/gzip", trace)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("upload: %v %v", resp, err)
	}
	resp.Body.Close()
	var list struct {
		Total int `json:"total"`
		Runs  []struct {
			Name, Status string
		} `json:"runs"`
	}
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/api/v1/runs")
		if err != nil {
			t.Fatal(err)
		}
		json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
		if len(list.Runs) == 1 && list.Runs[0].Status == "done" {
			break
		}
	}
	if list.Total != 1 || len(list.Runs) != 1 || list.Runs[0].Name != "team" || list.Runs[0].Status != "done" {
		t.Fatalf("runs of a shared instance (no samples, the upload analysed): %+v", list)
	}
	// River marks the job completed a moment after the run is recorded.
	var metrics []byte
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(base + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		metrics, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(metrics), `kinetoscope_queue_jobs{state="completed"} 1`) {
			break
		}
	}
	for _, want := range []string{`kinetoscope_queue_jobs{state="completed"} 1`, `kinetoscope_queue_jobs{state="available"} 0`,
		`kinetoscope_queue_jobs{state="running"} 0`, `kinetoscope_replica_info{replica="r1"} 1`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("metrics lack %s:\n%s", want, metrics)
		}
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
}
