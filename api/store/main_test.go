package store

import (
	"testing"

	"kinetoscope/internal/testkit/s3test"
)

// TestMain stops the S3 test server that the S3 tests start.
func TestMain(m *testing.M) { s3test.Main(m) }
