package api

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// File kinds, from the content's first bytes.
const (
	kindJSON  = "json"
	kindGzip  = "gzip" // a gzip stream of JSON
	kindTar   = "tar"
	kindTarGz = "tar.gz"
	kindZip   = "zip"
)

// kindExt returns the file name extension readers expect for a kind.
func kindExt(kind string) string {
	switch kind {
	case kindGzip:
		return ".json.gz"
	case kindTar:
		return ".tar"
	case kindTarGz:
		return ".tar.gz"
	case kindZip:
		return ".zip"
	}
	return ".json"
}

// inputError is a problem with what the client sent: it answers with Code
// and the message.
type inputError struct {
	Code int
	Msg  string
}

// Error returns the message.
func (e *inputError) Error() string { return e.Msg }

func badInput(format string, args ...any) error {
	return &inputError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &inputError{Code: http.StatusRequestEntityTooLarge, Msg: fmt.Sprintf(format, args...)}
}

// sniffKind tells the kind of a stream from its first bytes.
func sniffKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		return kindGzip
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("PK\x05\x06")):
		return kindZip
	case isTar(head):
		return kindTar
	}
	return kindJSON
}

func isTar(head []byte) bool {
	return len(head) >= 262 && string(head[257:262]) == "ustar"
}

// limits are the checks applied to an upload's content.
type limits struct {
	maxUncompressed int64
	maxRatio        int64
}

// ratioFloor is the decompressed size past which the ratio check applies.
const ratioFloor = 256 << 20

// validate reads a whole stream of the given kind and checks it: a trace
// must start as JSON, gzip must be complete and within the limits, archive
// members must have safe names. name is used in messages. It returns the
// kind, which for gzip may turn out to be tar.gz.
func (l limits) validate(name, kind string, r io.Reader) (string, error) {
	switch kind {
	case kindJSON:
		return kind, checkJSONStart(name, bufio.NewReader(r))
	case kindGzip:
		return l.validateGzip(name, r)
	case kindTar:
		return kind, l.validateTar(name, r)
	}
	if _, err := io.Copy(io.Discard, r); err != nil { // zip: checked once stored
		return kind, fmt.Errorf("%s: read: %w", name, err)
	}
	return kind, nil
}

// checkJSONStart checks that a trace begins with a JSON object or array.
func checkJSONStart(name string, br *bufio.Reader) error {
	for off := 0; ; off++ {
		c, err := br.ReadByte()
		if err == io.EOF {
			if off == 0 {
				return badInput("%s: empty file", name)
			}
			return badInput("%s: not JSON: only whitespace", name)
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
			if _, err := io.Copy(io.Discard, br); err != nil {
				return fmt.Errorf("%s: read: %w", name, err)
			}
			return nil
		default:
			return badInput("%s: not a JSON trace: expected '{' at byte offset %d, found %q", name, off, c)
		}
	}
}

// validateGzip decompresses a gzip stream, checking its size, ratio and
// integrity, then its content (JSON or tar).
func (l limits) validateGzip(name string, r io.Reader) (string, error) {
	cr := &countReader{r: r}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return kindGzip, badInput("%s: bad gzip header: %v", name, err)
	}
	defer zr.Close()
	lr := &inflateLimit{name: name, r: zr, in: cr, lim: l}
	br := bufio.NewReaderSize(lr, 4096)
	head, _ := br.Peek(512)
	kind := kindGzip
	if isTar(head) {
		kind = kindTarGz
		err = l.validateTar(name, br)
	} else {
		err = checkJSONStart(name, br)
	}
	var ie *inputError
	switch {
	case errors.As(err, &ie):
		return kind, err
	case lr.err != nil:
		return kind, lr.err
	case err != nil:
		return kind, gzipError(name, cr.n, err)
	}
	// A tar stream may end before the gzip stream: read on to check it all.
	if _, err := io.Copy(io.Discard, br); err != nil {
		if lr.err != nil {
			return kind, lr.err
		}
		return kind, gzipError(name, cr.n, err)
	}
	return kind, nil
}

// gzipError describes a failed gzip read.
func gzipError(name string, at int64, err error) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return badInput("%s: truncated gzip: the stream ends early after %d compressed bytes", name, at)
	}
	return badInput("%s: corrupt gzip near compressed byte %d: %v", name, at, err)
}

// inflateLimit stops a decompression that grows too large.
type inflateLimit struct {
	name string
	r    io.Reader
	in   *countReader
	lim  limits
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
	case l.n > l.lim.maxUncompressed:
		l.err = tooLarge("%s: decompresses to more than %d bytes (the server's limit): refusing it as a possible gzip bomb", l.name, l.lim.maxUncompressed)
	case l.n > ratioFloor && l.n > l.lim.maxRatio*l.in.n:
		l.err = tooLarge("%s: decompresses more than %d times its compressed size (%d bytes from %d): refusing it as a gzip bomb", l.name, l.lim.maxRatio, l.n, l.in.n)
	}
	if l.err != nil {
		return n, l.err
	}
	return n, err
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

// Read reads from the underlying reader and counts.
func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// validateTar checks a tar stream's member names and total size.
func (l limits) validateTar(name string, r io.Reader) error {
	tr := tar.NewReader(r)
	var total int64
	for members := 0; ; members++ {
		h, err := tr.Next()
		if err == io.EOF {
			if members == 0 {
				return badInput("%s: empty tar archive", name)
			}
			return nil
		}
		if err != nil {
			var ie *inputError
			if errors.As(err, &ie) {
				return err
			}
			return badInput("%s: bad tar archive: %v", name, err)
		}
		if err := checkMember(name, h.Name); err != nil {
			return err
		}
		if h.Typeflag == tar.TypeSymlink || h.Typeflag == tar.TypeLink {
			return badInput("%s: archive member %q is a link: links are not accepted", name, h.Name)
		}
		total += h.Size
		if total > l.maxUncompressed {
			return tooLarge("%s: archive members add up to more than %d bytes (the server's limit)", name, l.maxUncompressed)
		}
	}
}

// validateZip checks a stored zip file's member names and declared sizes.
func (l limits) validateZip(name, file string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return badInput("%s: bad zip archive: %v", name, err)
	}
	defer zr.Close()
	if len(zr.File) == 0 {
		return badInput("%s: empty zip archive", name)
	}
	var total uint64
	for _, f := range zr.File {
		if err := checkMember(name, f.Name); err != nil {
			return err
		}
		if f.Mode()&0o170000 == 0o120000 {
			return badInput("%s: archive member %q is a link: links are not accepted", name, f.Name)
		}
		total += f.UncompressedSize64
		if total > uint64(l.maxUncompressed) {
			return tooLarge("%s: archive members add up to more than %d bytes (the server's limit)", name, l.maxUncompressed)
		}
	}
	return nil
}

// checkMember rejects archive member names that are absolute or climb out
// with "..".
func checkMember(archive, member string) error {
	m := strings.ReplaceAll(member, "\\", "/")
	if strings.HasPrefix(m, "/") || (len(m) > 1 && m[1] == ':') {
		return badInput("%s: archive member %q has an absolute path: rejected", archive, member)
	}
	for _, part := range strings.Split(m, "/") {
		if part == ".." {
			return badInput("%s: archive member %q climbs out of the archive with '..': rejected", archive, member)
		}
	}
	if path.Clean("/"+m) == "/" && m != "" && !strings.HasSuffix(m, "/") {
		return badInput("%s: archive member %q has no name", archive, member)
	}
	return nil
}
