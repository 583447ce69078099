package ingest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// The formats a file comes in, told from its first bytes by Sniff.
const (
	FormatJSON  = "json"
	FormatGzip  = "gzip" // a gzip stream of JSON (Check tells tar.gz)
	FormatTar   = "tar"
	FormatTarGz = "tar.gz"
	FormatZip   = "zip"
)

// FormatExt returns the file name extension readers expect for a format.
func FormatExt(format string) string {
	switch format {
	case FormatGzip:
		return ".json.gz"
	case FormatTar:
		return ".tar"
	case FormatTarGz:
		return ".tar.gz"
	case FormatZip:
		return ".zip"
	}
	return ".json"
}

// Sniff tells the format of a stream from its first bytes (512 tell a
// tar); anything else is taken for JSON.
func Sniff(head []byte) string {
	switch {
	case isGzip(head):
		return FormatGzip
	case isZip(head):
		return FormatZip
	case isTar(head):
		return FormatTar
	}
	return FormatJSON
}

// isZip reports whether head is the start of a zip archive, an empty one
// included.
func isZip(head []byte) bool {
	return bytes.HasPrefix(head, []byte("PK\x03\x04")) || bytes.HasPrefix(head, []byte("PK\x05\x06"))
}

// isTar reports whether head is the start of a tar archive.
func isTar(head []byte) bool {
	return len(head) >= 262 && string(head[257:262]) == "ustar"
}

// CheckError is a problem with the content Check read, not with reading
// it.
type CheckError struct {
	Msg string
	// TooLarge says that a limit was passed.
	TooLarge bool
}

// Error returns the message.
func (e *CheckError) Error() string { return e.Msg }

func contentError(format string, args ...any) error {
	return &CheckError{Msg: fmt.Sprintf(format, args...)}
}

func tooLargeError(format string, args ...any) error {
	return &CheckError{Msg: fmt.Sprintf(format, args...), TooLarge: true}
}

// Limits are the checks Check applies to content before it is kept: the
// most bytes it may decompress to, and the most times its compressed size
// (past 256 MiB).
type Limits struct {
	MaxUncompressedBytes int64
	MaxRatio             int64
	// MaxMembers caps the files of an archive (0: no cap).
	MaxMembers int
}

// ratioFloor is the decompressed size past which the ratio check applies.
const ratioFloor = 256 << 20

// Check reads a whole stream of the given format (Sniff) and checks it: a
// trace must start as JSON, gzip must be complete and within the limits,
// archive members must have safe names (a zip is checked once stored, with
// CheckZip). name is used in messages. It returns the format, which for
// gzip may turn out to be tar.gz. A problem with the content is a
// *CheckError; other errors are the reader's.
func (l Limits) Check(name, format string, r io.Reader) (string, error) {
	switch format {
	case FormatJSON:
		return format, checkJSONStart(name, bufio.NewReader(r))
	case FormatGzip:
		return l.checkGzip(name, r)
	case FormatTar:
		return format, l.checkTar(name, r)
	}
	if _, err := io.Copy(io.Discard, r); err != nil { // zip: checked once stored
		return format, fmt.Errorf("%s: read: %w", name, err)
	}
	return format, nil
}

// checkJSONStart checks that a trace begins with a JSON object or array,
// then the rest of its text (checkTraceText).
func checkJSONStart(name string, br *bufio.Reader) error {
	for off := 0; ; off++ {
		c, err := br.ReadByte()
		if err == io.EOF {
			if off == 0 {
				return contentError("%s: empty file", name)
			}
			return contentError("%s: not JSON: only whitespace", name)
		}
		if err != nil {
			return fmt.Errorf("%s: read: %w", name, err)
		}
		switch {
		case off == 0 && c == 0xEF: // UTF-8 byte order mark
			br.Discard(2)
			off += 2
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
		case c == '{' || c == '[':
			return checkTraceText(name, c, int64(off), br)
		default:
			return contentError("%s: not a JSON trace: expected '{' at byte offset %d, found %q", name, off, c)
		}
	}
}

// checkGzip decompresses a gzip stream, checking its size, ratio and
// integrity, then its content (JSON or tar).
func (l Limits) checkGzip(name string, r io.Reader) (string, error) {
	cr := &countingReader{r: r}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return FormatGzip, contentError("%s: bad gzip header: %v", name, err)
	}
	defer zr.Close()
	lr := &inflateLimit{name: name, r: zr, in: cr, lim: l}
	br := bufio.NewReaderSize(lr, 4096)
	head, _ := br.Peek(512)
	kind := FormatGzip
	if isTar(head) {
		kind = FormatTarGz
		err = l.checkTar(name, br)
	} else {
		err = checkJSONStart(name, br)
	}
	var ce *CheckError
	switch {
	case errors.As(err, &ce):
		return kind, err
	case lr.err != nil:
		return kind, lr.err
	case err != nil:
		return kind, checkGzipError(name, cr.n.Load(), err)
	}
	// A tar stream may end before the gzip stream: read on to check it all.
	if _, err := io.Copy(io.Discard, br); err != nil {
		if lr.err != nil {
			return kind, lr.err
		}
		return kind, checkGzipError(name, cr.n.Load(), err)
	}
	return kind, nil
}

// checkGzipError describes a failed gzip read.
func checkGzipError(name string, at int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return contentError("%s: truncated gzip: the stream ends early after %d compressed bytes", name, at)
	}
	return contentError("%s: corrupt gzip near compressed byte %d: %v", name, at, err)
}

// inflateLimit stops a decompression that grows too large.
type inflateLimit struct {
	name string
	r    io.Reader
	in   *countingReader
	lim  Limits
	n    int64
	err  error
}

// Read reads decompressed bytes, failing once a limit is passed.
func (l *inflateLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	switch {
	case l.n > l.lim.MaxUncompressedBytes:
		l.err = tooLargeError("%s: decompresses to more than %d bytes (the limit): refusing it as a possible gzip bomb", l.name, l.lim.MaxUncompressedBytes)
	case l.n > ratioFloor && l.n > l.lim.MaxRatio*l.in.n.Load():
		l.err = tooLargeError("%s: decompresses more than %d times its compressed size (%d bytes from %d): refusing it as a gzip bomb", l.name, l.lim.MaxRatio, l.n, l.in.n.Load())
	}
	if l.err != nil {
		return n, l.err
	}
	return n, err
}

// checkTar checks a tar stream's member names and total size.
func (l Limits) checkTar(name string, r io.Reader) error {
	var total int64
	members := 0
	err := WalkArchive(FormatTar, r, 0, func(m Member) error {
		members++
		if err := CheckMember(name, m.Name); err != nil {
			return err
		}
		if m.Kind == MemberLink {
			return contentError("%s: archive member %q is a link: links are not accepted", name, m.Name)
		}
		if err := l.checkCount(name, members); err != nil {
			return err
		}
		if err := l.readMember(name+"!"+m.Name, m); err != nil {
			return err
		}
		total += int64(m.Size)
		if total > l.MaxUncompressedBytes {
			return tooLargeError("%s: archive members add up to more than %d bytes (the limit)", name, l.MaxUncompressedBytes)
		}
		return nil
	})
	if ae := (*ArchiveError)(nil); errors.As(err, &ae) {
		if ce := (*CheckError)(nil); errors.As(ae.Err, &ce) {
			return ce
		}
		return contentError("%s: bad tar archive: %v", name, ae.Err)
	}
	if err == nil && members == 0 {
		return contentError("%s: empty tar archive", name)
	}
	return err
}

// CheckZip checks a stored zip archive's member names, declared sizes and
// content; r reads the archive, of size bytes, at offsets.
func (l Limits) CheckZip(name string, r io.ReaderAt, size int64) error {
	var members []Member
	var total uint64
	err := WalkArchive(FormatZip, io.NewSectionReader(r, 0, size), size, func(m Member) error {
		if err := CheckMember(name, m.Name); err != nil {
			return err
		}
		if m.Kind == MemberLink {
			return contentError("%s: archive member %q is a link: links are not accepted", name, m.Name)
		}
		total += m.Size
		if total > uint64(l.MaxUncompressedBytes) {
			return tooLargeError("%s: archive members add up to more than %d bytes (the limit)", name, l.MaxUncompressedBytes)
		}
		members = append(members, m)
		return nil
	})
	if ae := (*ArchiveError)(nil); errors.As(err, &ae) {
		return contentError("%s: bad zip archive: %v", name, ae.Err)
	}
	if err != nil {
		return err
	}
	if len(members) == 0 {
		return contentError("%s: empty zip archive", name)
	}
	return l.checkZipContent(name, members)
}

// CheckMember rejects archive member names that are absolute or climb out
// with "..".
func CheckMember(archive, member string) error {
	m := strings.ReplaceAll(member, "\\", "/")
	if strings.HasPrefix(m, "/") || (len(m) > 1 && m[1] == ':') {
		return contentError("%s: archive member %q has an absolute path: rejected", archive, member)
	}
	for _, part := range strings.Split(m, "/") {
		if part == ".." {
			return contentError("%s: archive member %q climbs out of the archive with '..': rejected", archive, member)
		}
	}
	if path.Clean("/"+m) == "/" && m != "" && !strings.HasSuffix(m, "/") {
		return contentError("%s: archive member %q has no name", archive, member)
	}
	return nil
}
