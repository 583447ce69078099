package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// smallDisk mounts a tmpfs of size bytes and returns its path: a real
// file system that fills up. Mounting needs root (CI runs as root).
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Fatalf("mount a %s tmpfs for the full-disk test (needs root): %v", size, err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// free returns the free bytes of dir's file system.
func free(t *testing.T, dir string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	testkit.Must(t, syscall.Statfs(dir, &st))
	return int64(st.Bavail) * st.Bsize
}

// fill writes a file into dir until at most leave bytes are free (0: until
// the disk is full) and returns its path.
func fill(t *testing.T, dir string, leave int64) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.OpenFile(p, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	testkit.Must(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for {
		n := free(t, dir) - leave
		if n <= 0 {
			return p
		}
		if _, err := f.Write(chunk[:min(n, int64(len(chunk)))]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return p
			}
			t.Fatal(err)
		}
	}
}

// uploadBytes posts a gzip trace body and returns the status and answer.
func uploadBytes(t *testing.T, base string, body []byte) (int, string) {
	t.Helper()
	code, out := do(t, "POST", base+"/api/v1/runs?filename=t.json.gz", "application/gzip", bytes.NewReader(body))
	return code, string(out)
}

// On a real small disk: below the --min-free-disk reserve an upload is
// refused 507 without naming a path and /healthz says degraded; with the
// disk full to the last byte a delete still works; an upload that meets
// a full disk (no reserve) answers 507 too; a run whose report could
// not be stored is marked failed, not left running.
func TestFullDisk(t *testing.T) {
	trace, err := os.ReadFile(testkit.Public(t, traceSmall))
	testkit.Must(t, err)
	disk := smallDisk(t, "16m")
	data := filepath.Join(disk, "data")
	s := startServer(t, embedded(api.Config{DataDir: data, MinFreeDisk: 4 << 20}))
	code, out := uploadBytes(t, s.URL, trace)
	if code != http.StatusAccepted {
		t.Fatalf("upload on an empty disk: %d %s", code, out)
	}
	var first created
	testkit.Must(t, json.Unmarshal([]byte(out), &first))
	waitRun(t, s.URL, first.ID)
	checkHealth(t, s.URL, http.StatusOK, "ok")

	filler := fill(t, disk, 2<<20) // below the reserve
	code, out = uploadBytes(t, s.URL, trace)
	if code != http.StatusInsufficientStorage || !strings.Contains(out, "--min-free-disk") || strings.Contains(out, disk) {
		t.Errorf("upload below the reserve: %d %s; want 507 naming --min-free-disk, no path", code, out)
	}
	checkHealth(t, s.URL, http.StatusServiceUnavailable, "degraded")

	fill(t, disk, 0) // full to the last byte
	if code, out := do(t, "DELETE", s.URL+"/api/v1/runs/"+first.ID, "", nil); code != http.StatusNoContent {
		t.Errorf("delete on a full disk: %d %s", code, out)
	}
	testkit.Must(t, os.Remove(filler))

	// No reserve: the upload meets the full disk itself.
	s.stop()
	s = startServer(t, embedded(api.Config{DataDir: data, MinFreeDisk: -1}))
	filler = fill(t, disk, 64<<10)
	big, err := os.ReadFile(testkit.Public(t, "hta-diff-control-a100.json.gz")) // 1.8 MB: more than the disk has left
	testkit.Must(t, err)
	code, out = uploadBytes(t, s.URL, big)
	if code != http.StatusInsufficientStorage || !strings.Contains(out, "disk is full") || strings.Contains(out, disk) || strings.Contains(out, "tmp") {
		t.Errorf("upload into a full disk: %d %s; want 507 naming no path", code, out)
	}
	testkit.Must(t, os.Remove(filler))

	// Another failure of the store: 500, naming no path either.
	tmp := filepath.Join(data, "blobs", "tmp")
	testkit.Must(t, os.Rename(tmp, tmp+".away"))
	testkit.Must(t, os.WriteFile(tmp, nil, 0o600))
	code, out = uploadBytes(t, s.URL, trace)
	if code != http.StatusInternalServerError || strings.Contains(out, disk) || strings.Contains(out, "tmp") {
		t.Errorf("upload the store failed: %d %s; want 500 naming no path", code, out)
	}
	testkit.Must(t, os.Remove(tmp))
	testkit.Must(t, os.Rename(tmp+".away", tmp))
	s.stop()

	// The report does not fit: the run fails, saying why.
	s = startWithAnalysis(t, embedded(api.Config{DataDir: data, MinFreeDisk: -1}), func(ctx context.Context, a api.Analysis, real func() (*analyze.Report, error)) (*analyze.Report, error) {
		rep, err := real()
		fill(t, disk, 0)
		return rep, err
	})
	code, out = uploadJSON(t, s.URL, testkit.DistinctKernels(20000))
	if code != http.StatusAccepted {
		t.Fatalf("upload of a large-report trace: %d %s", code, out)
	}
	var c created
	testkit.Must(t, json.Unmarshal([]byte(out), &c))
	run := waitRun(t, s.URL, c.ID)
	if run.Status != store.StatusFailed || !strings.Contains(run.Error, "disk is full") {
		t.Errorf("run whose report did not fit: %s %q; want failed, disk is full", run.Status, run.Error)
	}
}

// uploadJSON uploads a JSON trace body.
func uploadJSON(t *testing.T, base string, body []byte) (int, string) {
	t.Helper()
	code, out := do(t, "POST", base+"/api/v1/runs?filename=t.json", "application/json", bytes.NewReader(body))
	return code, string(out)
}

// checkHealth checks /healthz's status code and status field, and that
// it states the disk's free space.
func checkHealth(t *testing.T, base string, code int, status string) {
	t.Helper()
	got, body := do(t, "GET", base+"/healthz", "", nil)
	var h struct {
		Status string `json:"status"`
		Disk   *struct {
			Free int64 `json:"free_bytes"`
			Min  int64 `json:"min_free_bytes"`
		} `json:"disk"`
	}
	if err := json.Unmarshal(body, &h); err != nil || got != code || h.Status != status || h.Disk == nil || h.Disk.Min <= 0 {
		t.Errorf("healthz: %d %s; want %d %q with the disk state", got, body, code, status)
	}
}
