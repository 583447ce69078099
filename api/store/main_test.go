package store

import (
	"testing"

	"kinetoscope/internal/testkit/pgtest"
)

// TestMain stops the PostgreSQL cluster the Postgres tests started.
func TestMain(m *testing.M) { pgtest.Main(m) }
