package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"fmt"
	"kinetoscope/internal/testkit"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// archiveOf builds a tar (kind 0), tar.gz (1) or zip (2) from data: its
// members are the chunks between 0xff bytes, each named by its first
// byte (a trace name, a gzip-compressed trace, a directory entry, a
// name with "..", a link, or a name that is not a trace's); kind 3 keeps
// data as it is.
func archiveOf(kind uint8, data []byte) []byte {
	if kind%4 == 3 {
		return data
	}
	var buf bytes.Buffer
	var add func(name string, typ byte, body []byte)
	var finish func()
	if kind%4 == 2 {
		zw := zip.NewWriter(&buf)
		add = func(name string, _ byte, body []byte) {
			if w, err := zw.Create(name); err == nil {
				w.Write(body)
			}
		}
		finish = func() { zw.Close() }
	} else {
		tw := tar.NewWriter(&buf)
		add = func(name string, typ byte, body []byte) {
			h := &tar.Header{Name: name, Typeflag: typ, Mode: 0o644, Size: int64(len(body))}
			if typ != tar.TypeReg {
				h.Size, h.Linkname = 0, "rank0.json"
			}
			if tw.WriteHeader(h) == nil {
				tw.Write(body)
			}
		}
		finish = func() { tw.Close() }
	}
	for i, chunk := range bytes.Split(data, []byte{0xff}) {
		if len(chunk) == 0 {
			continue
		}
		name, typ, body := memberOf(i, chunk)
		add(name, typ, body)
	}
	finish()
	if kind%4 == 1 {
		return testkit.Gzip(buf.Bytes())
	}
	return buf.Bytes()
}

// memberOf picks a member's name, tar type and body from its first byte.
func memberOf(i int, chunk []byte) (string, byte, []byte) {
	body := chunk[1:]
	switch chunk[0] % 8 {
	case 1:
		return fmt.Sprintf("prof/rank%d.pt.trace.json.gz", i), tar.TypeReg, testkit.Gzip(body)
	case 2:
		return fmt.Sprintf("prof/capture_traces/rank%d.json", i), tar.TypeReg, body
	case 3:
		return "prof/", tar.TypeDir, nil
	case 4:
		return "../up.json", tar.TypeReg, body
	case 5:
		return fmt.Sprintf("link%d.json", i), tar.TypeSymlink, nil
	case 6:
		return fmt.Sprintf("notes%d.txt", i), tar.TypeReg, body
	}
	return fmt.Sprintf("rank%d.json", i), tar.TypeReg, body
}

// FuzzOpenArchive reads tar, tar.gz and zip archives built from fuzzed
// members, or fuzzed bytes as they are, with Open and with the upload
// checks (Limits.Check, CheckZip): neither may panic or hang, and every
// trace read stays within the limits.
func FuzzOpenArchive(f *testing.F) {
	ev := []byte(`{"traceEvents": [{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"args":{"device":0,"stream":7}}]}`)
	two := append(append(append([]byte{0}, ev...), 0xff, 1), ev...)
	for kind := range uint8(4) {
		f.Add(kind, two)
		f.Add(kind, append([]byte{2}, ev...))
	}
	f.Add(uint8(0), append([]byte{4}, ev...))
	f.Add(uint8(0), []byte{5, 0xff, 3, 0xff, 6, 'x'})
	f.Add(uint8(3), []byte("PK\x05\x06"+string(make([]byte, 18))))
	dir := f.TempDir()
	lim := Limits{MaxUncompressedBytes: 8 << 20, MaxRatio: 200, MaxMembers: 64}
	f.Fuzz(func(t *testing.T, kind uint8, data []byte) {
		b := archiveOf(kind, data)
		p := filepath.Join(dir, "a"+FormatExt(Sniff(b)))
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(p)
		format, _ := lim.Check("a", Sniff(b), bytes.NewReader(b))
		if format == FormatZip {
			lim.CheckZip("a", bytes.NewReader(b), int64(len(b)))
		}
		set, err := Open(p, Options{MaxUncompressedBytes: lim.MaxUncompressedBytes, MaxRatio: lim.MaxRatio})
		if err != nil {
			return
		}
		for _, tr := range set.Traces {
			if tr.Counts.Events < 0 {
				t.Fatalf("%s: %d events", tr.Path, tr.Counts.Events)
			}
			if member, ok := strings.CutPrefix(tr.Path, p+"!"); ok { // the member served is the one read
				rc, err := OpenMember(format, bytes.NewReader(b), int64(len(b)), member)
				if err != nil {
					t.Fatalf("%s read, but OpenMember: %v", tr.Path, err)
				}
				rc.Close()
			}
		}
	})
}
