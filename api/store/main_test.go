package store

import (
	"testing"

	"kinetoscope/internal/testkit/pgtest"
	"kinetoscope/internal/testkit/s3test"
)

// TestMain stops the PostgreSQL cluster and the S3 server that the tests
// started.
func TestMain(m *testing.M) { s3test.MainWith(m, pgtest.Stop) }
