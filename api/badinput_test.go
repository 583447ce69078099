package api_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"

	"kinetoscope/api"
	"kinetoscope/api/store"
	"kinetoscope/internal/testkit"
)

// zipWith returns a zip archive holding one member of the given name.
func zipWith(t testing.TB, name string) []byte {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, err := zw.Create(name)
	testkit.Must(t, err)
	w.Write([]byte(`{"traceEvents": []}`))
	testkit.Must(t, zw.Close())
	return buf.Bytes()
}

// tarGzWith returns a tar.gz archive holding one member of the given name.
func tarGzWith(t testing.TB, name string) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	body := []byte(`{"traceEvents": []}`)
	testkit.Must(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
	tw.Write(body)
	testkit.Must(t, tw.Close())
	testkit.Must(t, zw.Close())
	return buf.Bytes()
}

// gzipBomb streams a gzip body that inflates to size bytes: a JSON opening
// followed by zeros, written as repeated gzip members of 1 MiB of zeros
// each, so that nothing of that size is ever held or stored.
func gzipBomb(t testing.TB, size int64) io.Reader {
	member := func(prefix string) []byte {
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write([]byte(prefix))
		zw.Write(make([]byte, 1<<20-len(prefix)))
		zw.Close()
		return buf.Bytes()
	}
	first, rest := member(`{"traceEvents": [{"name": "`), member("") // zeros in a string: a trace's shape
	pr, pw := io.Pipe()
	go func() {
		_, err := pw.Write(first)
		for n := int64(1 << 20); err == nil && n < size; n += 1 << 20 {
			_, err = pw.Write(rest)
		}
		pw.CloseWithError(err)
	}()
	t.Cleanup(func() { pr.Close() })
	return pr
}

func TestBadInputs(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), MaxUploadBytes: 32 << 20, MaxUncompressedBytes: 64 << 30})
	gz, err := os.ReadFile(testkit.Public(t, traceH100))
	testkit.Must(t, err)
	ctEmpty, emptyForm := multipartBody(t, "x", "")
	text := gunzip(t, gz)
	ctTrunc, truncForm := multipartBody(t, "x", "", writeTemp(t, "rank0.json", string(text[:100])))
	ctMixed, mixedForm := multipartBody(t, "x", "", testkit.Public(t, traceRank0), writeTemp(t, "bad.json", "not json"))
	tests := []struct {
		name  string
		ctype string
		body  io.Reader
		code  int
		msg   string
	}{
		{"truncated gzip", "application/gzip", bytes.NewReader(gz[:len(gz)/2]), 400, "truncated gzip"},
		{"truncated JSON", "application/json", bytes.NewReader(text[:len(text)/2]), 400,
			fmt.Sprintf("upload: invalid JSON at byte offset %d: unexpected end of input (truncated file?)", len(text)/2)},
		{"truncated named JSON", ctTrunc, truncForm, 400, "rank0.json: invalid JSON at byte offset 100: unexpected end of input"},
		{"gzip of truncated JSON", "application/gzip", bytes.NewReader(gzipOf(t, string(text[:1000]))), 400, "invalid JSON at byte offset 1000: unexpected end"},
		{"JSON not a trace", "application/json", strings.NewReader(strings.Repeat("[", 500) + strings.Repeat("]", 500)), 400,
			"upload: invalid JSON at byte offset 1: expected an event object, found '['"},
		{"JSON object not a trace", "application/json", strings.NewReader(`{"data": [1, 2]}`), 400, "upload: not a trace: no traceEvents key"},
		{"corrupt gzip", "application/gzip", bytes.NewReader(append(gz[:100:100], bytes.Repeat([]byte{0xff}, 4000)...)), 400, "gzip"},
		{"not JSON", "application/json", strings.NewReader("PNG this is not a trace"), 400, "not a JSON trace: expected '{' at byte offset 0"},
		{"not JSON gzip", "application/gzip", bytes.NewReader(gzipOf(t, "  hello")), 400, "byte offset 2"},
		{"empty body", "application/json", strings.NewReader(""), 400, "empty body"},
		{"empty gzip", "application/gzip", bytes.NewReader(gzipOf(t, "")), 400, "empty file"},
		{"zip with ../x", "application/zip", bytes.NewReader(zipWith(t, "../x.json")), 400, `"../x.json" climbs out`},
		{"zip with absolute path", "application/zip", bytes.NewReader(zipWith(t, "/etc/x.json")), 400, "absolute path"},
		{"tar.gz with ../x", "application/gzip", bytes.NewReader(tarGzWith(t, "prof/../../x.json")), 400, "climbs out"},
		{"10 GB gzip bomb", "application/gzip", gzipBomb(t, 10<<30), 413, "gzip bomb"},
		{"zeros gzip bomb", "application/gzip", zeroBomb(t, 10<<30), 400, "not a JSON trace"},
		{"wrong content type", "text/html", bytes.NewReader(gz), 415, `unsupported content type "text/html"`},
		{"form-encoded (curl -d)", "application/x-www-form-urlencoded", bytes.NewReader(gz), 415, "--data-binary"},
		{"multipart without a file", ctEmpty, emptyForm, 400, "holds no file"},
		{"multipart with a good and a bad file", ctMixed, mixedForm, 400, "bad.json: not a JSON trace"},
		{"too large", "application/octet-stream", io.MultiReader(strings.NewReader("{"), io.LimitReader(spaceReader{}, 40<<20)), 413, "larger than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(t, "POST", s.URL+"/api/v1/runs", tc.ctype, tc.body)
			var e struct{ Error string }
			json.Unmarshal(body, &e)
			if code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("got %d %s, want %d with %q", code, body, tc.code, tc.msg)
			}
			if code, _ := do(t, "GET", s.URL+"/healthz", "", nil); code != 200 {
				t.Fatalf("server stopped serving: healthz %d", code)
			}
		})
	}
	// Nothing was stored: no run, no blob, no temporary file.
	var list struct{ Total int }
	getJSON(t, s.URL+"/api/v1/runs", &list)
	if list.Total != 0 {
		t.Errorf("%d runs stored from bad uploads", list.Total)
	}
	if n := storedObjects(t, s.DataDir(), "sha256") + storedObjects(t, s.DataDir(), "tmp"); n != 0 {
		t.Errorf("%d files left in the blob store", n)
	}
}

// writeTemp writes a file in a test directory and returns its path.
func writeTemp(t testing.TB, name, content string) string {
	p := filepath.Join(t.TempDir(), name)
	testkit.Must(t, os.WriteFile(p, []byte(content), 0o644))
	return p
}

// zeroBomb is a 10 GB gzip stream of zeros only.
func zeroBomb(t testing.TB, size int64) io.Reader {
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	zw.Write(make([]byte, 1<<20))
	zw.Close()
	return io.MultiReader(io.LimitReader(repeatReader{b: buf.Bytes()}, int64(buf.Len())*(size>>20)))
}

type repeatReader struct{ b []byte }

func (r repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		n += copy(p[n:], r.b)
	}
	return n, nil
}

// spaceReader reads JSON whitespace forever.
type spaceReader struct{}

func (spaceReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = ' '
	}
	return len(p), nil
}

func gzipOf(_ testing.TB, s string) []byte { return testkit.Gzip([]byte(s)) }

// gunzip returns the text of a gzip stream.
func gunzip(t testing.TB, gz []byte) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	testkit.Must(t, err)
	text, err := io.ReadAll(zr)
	testkit.Must(t, err)
	return text
}

// countFiles counts the regular files below dir.
func countFiles(t testing.TB, dir string) int {
	n := 0
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

// A trace that is JSON but fails analysis (no GPU events) keeps its run,
// with the error.
func TestFailedAnalysisKeepsRun(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir()})
	code, body := do(t, "POST", s.URL+"/api/v1/runs?name=broken", "application/json", strings.NewReader(`{"traceEvents": [{"ph": "X", "ts": 1}]}`))
	if code != http.StatusAccepted {
		t.Fatalf("upload: %d %s", code, body)
	}
	var c created
	testkit.Must(t, json.Unmarshal(body, &c))
	run := waitRun(t, s.URL, c.ID)
	if run.Status != store.StatusFailed || run.Error == "" {
		t.Fatalf("run: %s %q", run.Status, run.Error)
	}
	code, body = do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/report", "", nil)
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "failed analysis") {
		t.Errorf("report of failed run: %d %s", code, body)
	}
	req, _ := http.NewRequest("GET", s.URL+"/runs/"+c.ID, nil)
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(t, err)
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "Analysis failed") || !strings.Contains(string(page), htmlEscape(run.Error)) {
		t.Errorf("run page does not show the error %q", run.Error)
	}
	code, _ = do(t, "GET", s.URL+"/api/v1/runs/"+c.ID+"/trace", "", nil)
	if code != 200 {
		t.Errorf("trace of failed run: %d", code)
	}
}

func htmlEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString("&#34;")
		case '\'':
			b.WriteString("&#39;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestToken(t *testing.T) {
	s := startServer(t, api.Config{DataDir: t.TempDir(), Token: "s3cret"})
	gz := testkit.Public(t, "tracelens-vllm-decode-full-graph.json.gz")
	for _, auth := range []string{"", "Bearer wrong", "s3cret"} {
		f, err := os.Open(gz)
		testkit.Must(t, err)
		req, _ := http.NewRequest("POST", s.URL+"/api/v1/runs", f)
		req.Header.Set("Content-Type", "application/gzip")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		testkit.Must(t, err)
		resp.Body.Close()
		f.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("auth %q: %d, want 401", auth, resp.StatusCode)
		}
	}
	f, err := os.Open(gz)
	testkit.Must(t, err)
	defer f.Close()
	req, _ := http.NewRequest("POST", s.URL+"/api/v1/runs", f)
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer s3cret")
	resp, err := http.DefaultClient.Do(req)
	testkit.Must(t, err)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("with token: %d", resp.StatusCode)
	}
	if code, _ := do(t, "GET", s.URL+"/api/v1/runs", "", nil); code != 401 {
		t.Errorf("read without token: %d, want 401", code)
	}
	if code, _ := do(t, "DELETE", s.URL+"/api/v1/runs/x", "", nil); code != 401 {
		t.Errorf("delete without token: %d", code)
	}
}
