package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// rank0Files returns rank 0's trace of two real runs (eager, p2p_disabled).
func rank0Files(t *testing.T) []string {
	var out []string
	for _, v := range []string{"eager", "p2p_disabled"} {
		f, err := filepath.Glob(filepath.Join(testkit.Real(t, v), "*_rank0.*.pt.trace.json.gz"))
		if err != nil || len(f) != 1 {
			t.Fatalf("%s rank 0: %v %v", v, f, err)
		}
		out = append(out, f[0])
	}
	return out
}

// Two files of two runs that claim rank 0: sent as files, a 400 naming
// both; inside one archive (read after the upload), a failed run whose
// error names both. Neither is analysed with one of them dropped.
func TestUploadDuplicateRank(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	files := rank0Files(t)
	ct, body := multipartBody(t, "two runs", "", files...)
	code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "duplicate rank 0") ||
		!strings.Contains(string(resp), filepath.Base(files[0])) || !strings.Contains(string(resp), filepath.Base(files[1])) {
		t.Errorf("two files claiming rank 0: %d %s, want 400 naming both", code, resp)
	}

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	var members []string
	for i, f := range files {
		b, err := os.ReadFile(f)
		testkit.Must(t, err)
		name := []string{"a", "b"}[i] + "/" + filepath.Base(f)
		members = append(members, name)
		testkit.Must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
		_, err = tw.Write(b)
		testkit.Must(t, err)
	}
	testkit.Must(t, tw.Close())
	code, resp = do(t, "POST", s.URL+"/api/v1/runs?filename=two.tar", "application/x-tar", &buf)
	if code != http.StatusAccepted {
		t.Fatalf("tar upload: %d %s", code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	r := waitRun(t, s.URL, c.ID)
	if r.Status != store.StatusFailed || !strings.Contains(r.Error, "duplicate rank 0") ||
		!strings.Contains(r.Error, members[0]) || !strings.Contains(r.Error, members[1]) {
		t.Errorf("archive with two rank 0 files: status %s, error %q; want failed, naming both", r.Status, r.Error)
	}
}
