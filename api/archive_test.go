package api_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/analyze"
	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// profileArchive packs the two ranks of the sampled public job as a
// profile directory in a tar, tar.gz or zip archive.
func profileArchive(t *testing.T, kind string) []byte {
	var buf bytes.Buffer
	var tw *tar.Writer
	var zw *zip.Writer
	var gz *gzip.Writer
	switch kind {
	case "tar":
		tw = tar.NewWriter(&buf)
	case "tar.gz":
		gz = gzip.NewWriter(&buf)
		tw = tar.NewWriter(gz)
	case "zip":
		zw = zip.NewWriter(&buf)
	}
	for _, name := range []string{traceRank0, traceRank1} {
		b, err := os.ReadFile(testkit.Public(t, name))
		testkit.Must(t, err)
		if tw != nil {
			testkit.Must(t, tw.WriteHeader(&tar.Header{Name: "profile/" + name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
			tw.Write(b)
		} else {
			w, err := zw.Create("profile/" + name)
			testkit.Must(t, err)
			w.Write(b)
		}
	}
	if tw != nil {
		testkit.Must(t, tw.Close())
	}
	if gz != nil {
		testkit.Must(t, gz.Close())
	}
	if zw != nil {
		testkit.Must(t, zw.Close())
	}
	return buf.Bytes()
}

// A profile directory uploaded as an archive is analysed as one run with
// both ranks.
func TestUploadArchives(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	for _, tc := range []struct{ kind, ctype string }{
		{"tar", "application/x-tar"}, {"tar.gz", "application/gzip"}, {"zip", "application/zip"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			code, body := do(t, "POST", s.URL+"/api/v1/runs?filename=profile."+tc.kind, tc.ctype, bytes.NewReader(profileArchive(t, tc.kind)))
			if code != http.StatusAccepted {
				t.Fatalf("upload: %d %s", code, body)
			}
			var c created
			testkit.Must(t, json.Unmarshal(body, &c))
			if c.Run.Files[0].Format != tc.kind {
				t.Errorf("stored kind %q, want %q", c.Run.Files[0].Format, tc.kind)
			}
			checkTwoRanks(t, s.URL, c.ID)
		})
	}
	code, body := do(t, "GET", s.URL+"/metrics", "", nil)
	text := string(body)
	for _, want := range []string{
		"kinetoscope_uploads_total 3\n",
		`kinetoscope_runs{status="done"} 3`,
		`kinetoscope_http_requests_total{method="POST",route="/api/v1/runs",code="202"} 3`,
		"# TYPE kinetoscope_analysis_seconds summary",
	} {
		if code != 200 || !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// A run whose analysis was cut short by a shutdown is analysed on the next
// start.
func TestRestartResumesAnalysis(t *testing.T) {
	data := t.TempDir()
	started := make(chan struct{})
	blocked := func(ctx context.Context, _ api.Analysis, _ func() (*analyze.Report, error)) (*analyze.Report, error) {
		close(started)
		<-ctx.Done()
		return nil, errors.New("stopped")
	}
	srv, err := api.OpenWithAnalysis(withBackend(t, api.Config{DataDir: data, Logger: quietLog()}), blocked)
	testkit.Must(t, err)
	f, err := os.Open(testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz"))
	testkit.Must(t, err)
	defer f.Close()
	run, err := srv.Import(context.Background(), f.Name(), nil)
	testkit.Must(t, err)
	<-started
	testkit.Must(t, srv.Close())

	s := startServer(t, api.Config{DataDir: data})
	if got := waitRun(t, s.URL, run.ID); got.Status != store.StatusDone {
		t.Fatalf("resumed run: %s %s", got.Status, got.Error)
	}
}
