package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// OpenBlobs opens the blob store that url names:
//
//	file://DIR                   a directory (Dir); file:///abs or file://rel
//	s3://BUCKET?endpoint=...     a bucket of an S3-compatible store (see OpenS3)
func OpenBlobs(ctx context.Context, url string) (Blobs, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("blob store URL %q: no scheme (want file://DIR or s3://BUCKET?endpoint=HOST:PORT)", url)
	}
	switch scheme {
	case "file":
		if rest == "" {
			return nil, fmt.Errorf("blob store URL %q: no directory (want file://DIR)", url)
		}
		return OpenDir(rest)
	case "s3":
		s, err := OpenS3(ctx, url)
		if err != nil {
			return nil, err
		}
		// TODO(team-s3): return s itself once Blobs no longer has Local.
		return s3WithLocal{s}, nil
	default:
		return nil, fmt.Errorf("blob store URL %q: unknown scheme %q (want file or s3)", url, scheme)
	}
}

// s3WithLocal makes S3 a Blobs while the interface still has Local.
// TODO(team-s3): delete it once Blobs no longer has Local.
type s3WithLocal struct{ *S3 }

// errNoLocal is s3WithLocal.Local's error.
var errNoLocal = errors.New("an S3 blob has no local path: read it with Open")

// Local fails: an S3 blob has no local path.
func (s s3WithLocal) Local(ctx context.Context, sha string) (string, error) {
	return "", fmt.Errorf("blob %s: %w", sha, errNoLocal)
}
