package api_test

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"mime/multipart"
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

// rankUpload is a multipart body of files (path -> name sent) and rank
// fields.
func rankUpload(t *testing.T, files [][2]string, ranks ...string) (string, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, r := range ranks {
		testkit.Must(t, mw.WriteField("rank", r))
	}
	for _, f := range files {
		w, err := mw.CreateFormFile("file", f[1])
		testkit.Must(t, err)
		b, err := os.ReadFile(f[0])
		testkit.Must(t, err)
		w.Write(b)
	}
	testkit.Must(t, mw.Close())
	return mw.FormDataContentType(), &buf
}

// One real rank file sent twice under two names: when the names claim
// rank 0, a 400 that names the rank field; when they claim nothing, a run
// that fails with the same words. A rank field FILE=N (or ?rank=) says
// which rank the copy is: the run is analysed as ranks 0 and 1, the file
// keeps its rank, and the timeline of rank 1 reads it. A FILE that is no
// trace file of the upload is a 400.
func TestUploadRankField(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	src := rank0Files(t)[0]
	for _, names := range [][2]string{{"x_rank0.pt.trace.json.gz", "y_rank0.pt.trace.json.gz"}, {"first.pt.trace.json.gz", "second.pt.trace.json.gz"}} {
		files := [][2]string{{src, names[0]}, {src, names[1]}}
		ct, body := rankUpload(t, files)
		code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
		if namesClaimRank := names[0][0] == 'x'; namesClaimRank {
			if code != http.StatusBadRequest || !strings.Contains(string(resp), "duplicate rank 0") || !strings.Contains(string(resp), "rank field FILE=N") {
				t.Errorf("%v unassigned: %d %s; want 400 naming the rank field", names, code, resp)
			}
		} else {
			if code != http.StatusAccepted {
				t.Fatalf("%v unassigned: %d %s", names, code, resp)
			}
			var c created
			testkit.Must(t, json.Unmarshal(resp, &c))
			if r := waitRun(t, s.URL, c.ID); r.Status != store.StatusFailed || !strings.Contains(r.Error, "duplicate rank 0") ||
				!strings.Contains(r.Error, "rank field FILE=N") {
				t.Errorf("%v unassigned: status %s, error %q; want failed, naming the rank field", names, r.Status, r.Error)
			}
		}
		for _, how := range []string{"field", "query"} {
			var ct string
			var body *bytes.Buffer
			url := s.URL + "/api/v1/runs"
			if how == "field" {
				ct, body = rankUpload(t, files, names[1]+"=1")
			} else {
				ct, body = rankUpload(t, files)
				url += "?rank=" + names[1] + "%3D1"
			}
			code, resp := do(t, "POST", url, ct, body)
			if code != http.StatusAccepted {
				t.Fatalf("%v, rank %s: %d %s", names, how, code, resp)
			}
			var c created
			testkit.Must(t, json.Unmarshal(resp, &c))
			r := waitRun(t, s.URL, c.ID)
			if r.Status != store.StatusDone || len(r.Files) != 2 || r.Files[0].Rank != nil || r.Files[1].Rank == nil || *r.Files[1].Rank != 1 {
				t.Fatalf("%v, rank %s: status %s (%s), files %+v; want done, the second file rank 1", names, how, r.Status, r.Error, r.Files)
			}
			var rep struct {
				Ranks []struct {
					Rank int    `json:"rank"`
					File string `json:"file"`
				} `json:"ranks"`
			}
			getJSON(t, s.URL+"/api/v1/runs/"+c.ID+"/report", &rep)
			if len(rep.Ranks) != 2 || rep.Ranks[0].Rank != 0 || rep.Ranks[0].File != names[0] || rep.Ranks[1].Rank != 1 || rep.Ranks[1].File != names[1] {
				t.Errorf("%v, rank %s: report ranks %+v; want 0 %s, 1 %s", names, how, rep.Ranks, names[0], names[1])
			}
			if code, body := do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/charts/timeline.svg?rank=1", "", nil); code != http.StatusOK {
				t.Errorf("%v, rank %s: timeline of rank 1: %d %.300s", names, how, code, body)
			}
		}
	}
	ct, body := rankUpload(t, [][2]string{{src, "a.pt.trace.json.gz"}}, "nosuch.json=1")
	code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "rank given for nosuch.json") || !strings.Contains(string(resp), "a.pt.trace.json.gz") {
		t.Errorf("rank for no file: %d %s; want 400 naming it and the upload's files", code, resp)
	}
	ct, body = rankUpload(t, [][2]string{{src, "a.pt.trace.json.gz"}, {src, "b.pt.trace.json.gz"}, {src, "c.pt.trace.json.gz"}}, "b.pt.trace.json.gz=1, c.pt.trace.json.gz=2")
	code, resp = do(t, "POST", s.URL+"/api/v1/runs", ct, body)
	if code != http.StatusAccepted {
		t.Fatalf("comma-separated rank field: %d %s", code, resp)
	}
	var c created
	testkit.Must(t, json.Unmarshal(resp, &c))
	if r := waitRun(t, s.URL, c.ID); r.Status != store.StatusDone || len(r.Files) != 3 || r.Files[1].Rank == nil || *r.Files[1].Rank != 1 || r.Files[2].Rank == nil || *r.Files[2].Rank != 2 {
		t.Errorf("comma-separated rank field: status %s (%s), files %+v; want done, ranks 1 and 2", r.Status, r.Error, r.Files)
	}
	var tarBuf bytes.Buffer
	tw := tar.NewWriter(&tarBuf)
	b, err := os.ReadFile(src)
	testkit.Must(t, err)
	testkit.Must(t, tw.WriteHeader(&tar.Header{Name: "a.pt.trace.json.gz", Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}))
	_, err = tw.Write(b)
	testkit.Must(t, err)
	testkit.Must(t, tw.Close())
	code, resp = do(t, "POST", s.URL+"/api/v1/runs?filename=run.tar&rank=a.pt.trace.json.gz%3D1", "application/x-tar", &tarBuf)
	if code != http.StatusBadRequest || !strings.Contains(string(resp), "files inside an archive cannot be given a rank") {
		t.Errorf("rank for an archive member: %d %s; want 400 saying why", code, resp)
	}
	ct, body = rankUpload(t, [][2]string{{src, "a.pt.trace.json.gz"}}, "a.pt.trace.json.gz=x")
	if code, resp := do(t, "POST", s.URL+"/api/v1/runs", ct, body); code != http.StatusBadRequest || !strings.Contains(string(resp), "want FILE=N") {
		t.Errorf("bad rank field: %d %s; want 400", code, resp)
	}
}
