package ingest

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
)

// checkCount fails once an archive holds more than MaxMembers files.
func (l Limits) checkCount(name string, members int) error {
	if l.MaxMembers > 0 && members > l.MaxMembers {
		return tooLargeError("%s: the archive holds more than %d files (the limit)", name, l.MaxMembers)
	}
	return nil
}

// checkMemberContent reads one archive member whole; a trace inside that
// is gzip-compressed gets the gzip stream's size and ratio limits, on the
// bytes it inflates to. Other problems with its content are left to the
// analysis, which names the member.
func (l Limits) checkMemberContent(name string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 4096)
	head, _ := br.Peek(2)
	if isTraceName(name) && isGzip(head) {
		if err := l.inflateWithin(name, br); err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, br); err != nil {
		var ce *CheckError
		if errors.As(err, &ce) {
			return err
		}
		return contentError("%s: read: %v", name, err)
	}
	return nil
}

// inflateWithin decompresses a gzip stream within the limits; only a
// limit passed is an error.
func (l Limits) inflateWithin(name string, r io.Reader) error {
	cr := &countingReader{r: r}
	zr, err := gzip.NewReader(cr)
	if err != nil {
		return nil
	}
	defer zr.Close()
	lr := &inflateLimit{name: name, r: zr, in: cr, lim: l}
	io.Copy(io.Discard, lr)
	return lr.err
}

// checkZipContent checks a zip's members against the limits: the count,
// each member's declared size against its compressed size (the ratio
// limit, as for gzip), and, reading them, the bytes they actually hold
// (archive/zip fails a member that holds more than it declares) and those
// of a gzip-compressed trace inside.
func (l Limits) checkZipContent(name string, members []Member) error {
	if err := l.checkCount(name, len(members)); err != nil {
		return err
	}
	var n, c uint64
	for _, m := range members {
		n, c = n+m.Size, c+m.Compressed
	}
	if n > ratioFloor && n > uint64(l.MaxRatio)*c {
		return tooLargeError("%s: members declare %d bytes from %d compressed, more than %d times: refusing it as a zip bomb", name, n, c, l.MaxRatio)
	}
	for _, m := range members {
		if m.Kind == MemberDir {
			continue
		}
		member := name + "!" + m.Name
		if n, c := m.Size, m.Compressed; n > ratioFloor && n > uint64(l.MaxRatio)*c {
			return tooLargeError("%s: declares %d bytes from %d compressed, more than %d times: refusing it as a zip bomb", member, n, c, l.MaxRatio)
		}
		if err := l.readMember(member, m); err != nil {
			return err
		}
	}
	return nil
}

// readMember reads one archive member whole (see checkMemberContent).
func (l Limits) readMember(member string, m Member) error {
	rc, err := m.Open()
	if err != nil {
		return contentError("%s: %v", member, err)
	}
	defer rc.Close()
	return l.checkMemberContent(member, rc)
}

// memberLimit bounds the bytes read from a zip member while it is
// analysed: past ratioFloor, at most MaxRatio times its compressed size
// (archive/zip itself stops at the size the member declares).
func (c *collector) memberLimit(name string, r io.Reader, compressed uint64) io.Reader {
	if c.opt.MaxRatio <= 0 {
		return r
	}
	return &ratioReader{name: name, r: r, max: max(ratioFloor, int64(compressed)*c.opt.MaxRatio), ratio: c.opt.MaxRatio}
}

// ratioReader fails once more than max bytes were read.
type ratioReader struct {
	name  string
	r     io.Reader
	n     int64
	max   int64
	ratio int64
}

// Read implements io.Reader.
func (l *ratioReader) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, fmt.Errorf("%w: %s inflates to more than %d times its compressed size", ErrTooLarge, l.name, l.ratio)
	}
	n, err := l.r.Read(p)
	l.n += int64(n)
	return n, err
}
