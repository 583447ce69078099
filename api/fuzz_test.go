package api_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"testing"

	"kinetoscope/analyze"
	"kinetoscope/api"
)

// uploadTypes are the content types FuzzUpload sends its body as.
var uploadTypes = []string{"application/gzip", "application/json", "application/x-tar", "application/zip", "application/octet-stream", "multipart/form-data"}

// fuzzMultipart builds a multipart body from data: its parts are the
// chunks between 0xff bytes, a file part when the chunk starts with an
// odd byte, else a name or labels field.
func fuzzMultipart(data []byte) (string, []byte) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for i, chunk := range bytes.Split(data, []byte{0xff}) {
		switch {
		case len(chunk) > 0 && chunk[0]%2 == 1:
			w, _ := mw.CreateFormFile("file", fmt.Sprintf("r%d-%x.json.gz", i, chunk[:1]))
			w.Write(chunk[1:])
		case len(chunk) > 0 && chunk[0]%4 == 0:
			mw.WriteField("labels", string(chunk[1:]))
		default:
			mw.WriteField("name", string(chunk))
		}
	}
	mw.Close()
	return mw.FormDataContentType(), buf.Bytes()
}

// FuzzUpload sends fuzzed bodies through the upload path (content
// sniffing, ingest's checks of gzip, tar and zip, multipart parsing with
// file and field parts, names and labels): every answer is 202 or a 4xx,
// never a 5xx or a panic. Accepted runs are not analysed here (FuzzAnalyze
// in driver fuzzes analysis).
func FuzzUpload(f *testing.F) {
	f.Add(uint8(0), []byte(gzipOf(f, `{"traceEvents": []}`)), "")
	f.Add(uint8(1), []byte(`{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2}]}`), "name=x")
	f.Add(uint8(2), tarOfFiles(f, 2), "label=a=b")
	f.Add(uint8(3), zipWith(f, "rank0.json"), "")
	f.Add(uint8(3), zipWith(f, "../up.json"), "")
	f.Add(uint8(4), tarGzWith(f, "rank0.json"), "")
	f.Add(uint8(5), append([]byte{1}, gzipOf(f, `{"traceEvents": []}`)...), "")
	f.Add(uint8(5), []byte("\x01{}\xff\x04a=b,c=d\xffname\xff\x03[]"), "label=k=v;x")
	s, err := api.OpenWithAnalysis(api.Config{DataDir: f.TempDir(), Logger: quietLog(), MaxUncompressedBytes: 8 << 20, MaxFiles: 16, MaxParts: 32},
		func(context.Context, api.Analysis, func() (*analyze.Report, error)) (*analyze.Report, error) {
			return nil, errors.New("not analysed while fuzzing uploads")
		})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := s.Handler()
	f.Fuzz(func(t *testing.T, kind uint8, body []byte, query string) {
		ctype := uploadTypes[int(kind)%len(uploadTypes)]
		if ctype == "multipart/form-data" {
			ctype, body = fuzzMultipart(body)
		}
		req := httptest.NewRequest("POST", "/api/v1/runs", bytes.NewReader(body))
		req.URL.RawQuery = query
		req.Header.Set("Content-Type", ctype)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted && (rec.Code < 400 || rec.Code >= 500) {
			t.Fatalf("%s body of %d bytes, query %q: %d %s", ctype, len(body), query, rec.Code, rec.Body)
		}
		io.Copy(io.Discard, rec.Body)
	})
}
