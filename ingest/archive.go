package ingest

import (
	"archive/tar"
	"archive/zip"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/klauspost/compress/gzip"
)

// MemberKind says what an archive member is.
type MemberKind uint8

// The kinds of archive member. In a zip, every member that is neither a
// directory nor a link is a file.
const (
	MemberFile  MemberKind = iota // a regular file
	MemberDir                     // a directory
	MemberLink                    // a symbolic or hard link
	MemberOther                   // a device, a FIFO and the like (tar only)
)

// A Member is one file of an archive, as WalkArchive meets it.
type Member struct {
	// Name is the member's name in the archive.
	Name string
	Kind MemberKind
	// Size is the bytes the member holds, as the archive declares them;
	// Compressed, in a zip, the bytes it is stored in (0 in a tar: not
	// known).
	Size, Compressed uint64
	open             func() (io.ReadCloser, error)
}

// Open reads the member's content. A tar member is read from the archive's
// stream, and so only until the walk moves on.
func (m Member) Open() (io.ReadCloser, error) { return m.open() }

// ArchiveError is an archive that could not be walked: its directory, a
// member's header or the stream under it could not be read. The errors of
// reading a member's content are its reader's.
type ArchiveError struct {
	// Format is the archive's format (FormatTar, FormatTarGz, FormatZip).
	Format string
	Err    error
}

// Error says which kind of archive could not be read and why; a tar
// stream that ends early is said to be truncated.
func (e *ArchiveError) Error() string {
	if e.Format == FormatZip {
		return "reading zip archive: " + e.Err.Error()
	}
	if errors.Is(e.Err, io.ErrUnexpectedEOF) {
		return "reading tar archive: truncated: " + e.Err.Error()
	}
	return "reading tar archive: " + e.Err.Error()
}

// Unwrap returns the reading error.
func (e *ArchiveError) Unwrap() error { return e.Err }

// WalkArchive calls fn on every member of an archive, in the archive's
// order: r reads a tar or tar.gz archive from its start, or a zip one of
// size bytes at offsets (r must then be an io.ReaderAt too; size is used
// for a zip only). It is the one walk over archive members: reading an
// archive's traces (Open), checking an upload (Limits), and serving one
// member all go through it.
//
// fn's error ends the walk and is returned, except fs.SkipAll, which ends
// it with nil (a tar member's reader is then still good, until r is read
// otherwise). An archive that cannot be read is an *ArchiveError.
func WalkArchive(format string, r io.Reader, size int64, fn func(Member) error) error {
	var err error
	switch format {
	case FormatTar:
		err = walkTar(format, r, fn)
	case FormatTarGz:
		zr, gerr := gzip.NewReader(r)
		if gerr != nil {
			return &ArchiveError{Format: format, Err: gerr}
		}
		err = walkTar(format, zr, fn)
	case FormatZip:
		ra, ok := r.(io.ReaderAt)
		if !ok {
			return errors.New("walk zip archive: it cannot be read at offsets")
		}
		err = walkZip(ra, size, fn)
	default:
		return fmt.Errorf("walk archive: %q is not an archive format", format)
	}
	if err == fs.SkipAll {
		return nil
	}
	return err
}

// walkTar calls fn on every member of the tar stream r.
func walkTar(format string, r io.Reader, fn func(Member) error) error {
	tr := tar.NewReader(r)
	content := func() (io.ReadCloser, error) { return io.NopCloser(tr), nil }
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return &ArchiveError{Format: format, Err: err}
		}
		if err := fn(Member{Name: h.Name, Kind: tarKind(h.Typeflag), Size: uint64(max(h.Size, 0)), open: content}); err != nil {
			return err
		}
	}
}

// tarKind is the kind of a tar member of the type flag t (the reader has
// made the old regular-file flag TypeReg or TypeDir).
func tarKind(t byte) MemberKind {
	switch t {
	case tar.TypeReg:
		return MemberFile
	case tar.TypeDir:
		return MemberDir
	case tar.TypeSymlink, tar.TypeLink:
		return MemberLink
	}
	return MemberOther
}

// walkZip calls fn on every member of the zip archive of size bytes that r
// reads.
func walkZip(r io.ReaderAt, size int64, fn func(Member) error) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return &ArchiveError{Format: FormatZip, Err: err}
	}
	for _, f := range zr.File {
		kind := MemberFile
		switch {
		case f.Mode()&fs.ModeSymlink != 0:
			kind = MemberLink
		case f.FileInfo().IsDir():
			kind = MemberDir
		}
		m := Member{Name: f.Name, Kind: kind, Size: f.UncompressedSize64, Compressed: f.CompressedSize64,
			open: func() (io.ReadCloser, error) { return f.Open() }}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// OpenMember opens the regular file named member in the archive that r
// reads (see WalkArchive); an archive without it is an error matching
// fs.ErrNotExist. Closing the reader does not close r.
func OpenMember(format string, r io.Reader, size int64, member string) (io.ReadCloser, error) {
	if format != FormatTar && format != FormatTarGz && format != FormatZip {
		return nil, fmt.Errorf("no member %q: a file of format %q is no archive: %w", member, format, fs.ErrNotExist)
	}
	var found io.ReadCloser
	err := WalkArchive(format, r, size, func(m Member) error {
		if m.Name != member || m.Kind != MemberFile {
			return nil
		}
		rc, err := m.Open()
		if err != nil {
			return fmt.Errorf("%s: %w", member, err)
		}
		found = rc
		return fs.SkipAll
	})
	switch {
	case err != nil:
		return nil, err
	case found == nil:
		return nil, fmt.Errorf("no member %q: %w", member, fs.ErrNotExist)
	}
	return found, nil
}
