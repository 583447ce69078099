package ingest

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// walkCase is one member of the archives the walker tests build.
type walkCase struct {
	name    string
	kind    MemberKind
	content string
}

var walkMembers = []walkCase{
	{"run/", MemberDir, ""},
	{"run/rank0.json", MemberFile, `{"traceEvents": []}`},
	{"run/link.json", MemberLink, "rank0.json"},
	{"run/notes.txt", MemberFile, "hello"},
}

// walkArchives returns the members as a tar, a tar.gz and a zip archive,
// by format.
func walkArchives(t *testing.T, members []walkCase) map[string][]byte {
	t.Helper()
	var tb, zb bytes.Buffer
	tw := tar.NewWriter(&tb)
	zw := zip.NewWriter(&zb)
	for _, m := range members {
		h := &tar.Header{Name: m.name, Mode: 0o644, Typeflag: tar.TypeReg, Size: int64(len(m.content))}
		zh := &zip.FileHeader{Name: m.name, Method: zip.Deflate}
		zh.SetMode(0o644)
		switch m.kind {
		case MemberDir:
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
			zh.SetMode(fs.ModeDir | 0o755)
		case MemberLink: // a tar holds a link's target in its header, a zip as its content
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, m.content, 0
			zh.SetMode(fs.ModeSymlink | 0o777)
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if m.kind == MemberFile {
			tw.Write([]byte(m.content))
		}
		w, err := zw.CreateHeader(zh)
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte(m.content))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	var gb bytes.Buffer
	gw := gzip.NewWriter(&gb)
	gw.Write(tb.Bytes())
	gw.Close()
	return map[string][]byte{FormatTar: tb.Bytes(), FormatTarGz: gb.Bytes(), FormatZip: zb.Bytes()}
}

// WalkArchive meets every member of a tar, tar.gz and zip archive in
// order, with its name, kind, declared size and content, as written;
// OpenMember opens a regular file by name and nothing else.
func TestWalkArchive(t *testing.T) {
	for format, b := range walkArchives(t, walkMembers) {
		t.Run(format, func(t *testing.T) {
			var got []walkCase
			err := WalkArchive(format, bytes.NewReader(b), int64(len(b)), func(m Member) error {
				rc, err := m.Open()
				if err != nil {
					return err
				}
				defer rc.Close()
				content, err := io.ReadAll(rc)
				if err != nil {
					return err
				}
				if m.Kind != MemberLink && m.Size != uint64(len(content)) {
					t.Errorf("%s: size %d, content %d bytes", m.Name, m.Size, len(content))
				}
				got = append(got, walkCase{m.Name, m.Kind, string(content)})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(walkMembers) {
				t.Fatalf("met %v, want %v", got, walkMembers)
			}
			for i, w := range walkMembers {
				if w.kind == MemberLink && format != FormatZip {
					w.content = "" // a tar's link holds its target in its header
				}
				if got[i] != w {
					t.Errorf("member %d: %+v, want %+v", i, got[i], w)
				}
			}
			for _, w := range walkMembers {
				rc, err := OpenMember(format, bytes.NewReader(b), int64(len(b)), w.name)
				if w.kind != MemberFile {
					if !errors.Is(err, fs.ErrNotExist) {
						t.Errorf("OpenMember(%s), a %d: %v, want not found", w.name, w.kind, err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("OpenMember(%s): %v", w.name, err)
				}
				content, err := io.ReadAll(rc)
				rc.Close()
				if err != nil || string(content) != w.content {
					t.Errorf("OpenMember(%s): %q, %v; want %q", w.name, content, err, w.content)
				}
			}
			if _, err := OpenMember(format, bytes.NewReader(b), int64(len(b)), "nope.json"); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("OpenMember of no member: %v, want not found", err)
			}
		})
	}
}

// A walk stops at fn's first error, returned as it is, and at fs.SkipAll
// with nil; an archive that cannot be read is an *ArchiveError that says
// so (a tar stream cut short is truncated).
func TestWalkArchiveErrors(t *testing.T) {
	archives := walkArchives(t, walkMembers)
	stop := errors.New("stop")
	for format, b := range archives {
		for _, tc := range []struct {
			name string
			ret  error
			want error
		}{{"error", stop, stop}, {"skip all", fs.SkipAll, nil}} {
			calls := 0
			err := WalkArchive(format, bytes.NewReader(b), int64(len(b)), func(Member) error { calls++; return tc.ret })
			if err != tc.want || calls != 1 {
				t.Errorf("%s, fn returns %s: %v after %d calls, want %v after 1", format, tc.name, err, calls, tc.want)
			}
		}
	}
	tarred := archives[FormatTar]
	for _, tc := range []struct {
		name, format string
		b            []byte
		msg          string
	}{
		{"cut tar", FormatTar, tarred[:700], "reading tar archive: truncated: unexpected EOF"},
		{"cut zip", FormatZip, archives[FormatZip][:30], "reading zip archive: "},
		{"gzip that is not", FormatTarGz, tarred, "reading tar archive: gzip: invalid header"},
	} {
		err := WalkArchive(tc.format, bytes.NewReader(tc.b), int64(len(tc.b)), func(m Member) error {
			rc, _ := m.Open()
			_, err := io.Copy(io.Discard, rc)
			return err
		})
		var ae *ArchiveError
		if !errors.As(err, &ae) || !strings.HasPrefix(err.Error(), tc.msg) {
			t.Errorf("%s: %v, want an *ArchiveError saying %q", tc.name, err, tc.msg)
		}
	}
}
