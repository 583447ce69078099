package store

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"

	"kinetoscope/internal/testkit"
	"kinetoscope/internal/testkit/s3test"
)

// cutTransport cuts the body of every GET of a blob key after n bytes,
// as a server that dies mid-answer does.
type cutTransport struct {
	rt http.RoundTripper
	n  int64
}

// RoundTrip implements http.RoundTripper.
func (c cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/sha256/") {
		resp.Body = cutBody{io.LimitReader(resp.Body, c.n), resp.Body}
	}
	return resp, err
}

// cutBody reads up to its limit, then fails as a dropped connection.
type cutBody struct {
	r io.Reader
	c io.Closer
}

func (b cutBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b cutBody) Close() error { return b.c.Close() }

// A blob that the S3 store fails to deliver (the answer cut mid-stream, the
// server down before the blob is opened, or before a ranged read) is a
// ReadError, never a short read that ends in io.EOF nor ErrNotFound: an
// analysis must not take it for a truncated trace.
func TestS3ReadErrors(t *testing.T) {
	data := make([]byte, 3<<20)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(rng.IntN(256))
	}
	for _, tc := range []struct {
		name string
		cut  int64  // cut GET answers after this many bytes (0: not)
		down string // stop the server before "open" or "readat"
	}{
		{"answer cut mid-stream", 1 << 20, ""},
		{"server down before open", 0, "open"},
		{"server down before a ranged read", 0, "readat"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			url := s3test.New(t)
			var rt http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()
			if tc.cut > 0 {
				rt = cutTransport{rt, tc.cut}
			}
			s, err := openS3(t.Context(), url, rt)
			testkit.Must(t, err)
			sha, _, err := s.Put(t.Context(), bytes.NewReader(data))
			testkit.Must(t, err)
			if tc.down == "open" {
				s3test.Down(t)
			}
			b, err := s.Open(t.Context(), sha)
			if err == nil {
				defer b.Close()
				if tc.down == "readat" {
					s3test.Down(t)
					_, err = b.ReadAt(make([]byte, 100), 2<<20)
				} else {
					_, err = io.ReadAll(b)
				}
			}
			var re *ReadError
			if !errors.As(err, &re) || errors.Is(err, ErrNotFound) || !Unavailable(err) {
				t.Fatalf("error %v (%T), want a ReadError", err, err)
			}
			if !strings.Contains(re.Store, "s3 bucket") {
				t.Errorf("ReadError names the store %q", re.Store)
			}
			t.Logf("%v", err)
		})
	}
}

// A Dir's blob read from a closed file is a ReadError too; the end of a
// blob is io.EOF, not an error.
func TestDirReadErrors(t *testing.T) {
	d, err := OpenDir(t.TempDir())
	testkit.Must(t, err)
	sha, _, err := d.Put(context.Background(), strings.NewReader("content"))
	testkit.Must(t, err)
	b, err := d.Open(context.Background(), sha)
	testkit.Must(t, err)
	if got, err := io.ReadAll(b); err != nil || string(got) != "content" {
		t.Fatalf("read: %q %v", got, err)
	}
	b.Close()
	_, err = b.Read(make([]byte, 1))
	var re *ReadError
	if !errors.As(err, &re) {
		t.Errorf("read of a closed blob: %v (%T), want a ReadError", err, err)
	}
}
