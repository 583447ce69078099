-- The runs schema as it was before versioned migrations. Every statement
-- says IF NOT EXISTS so that a database created by those versions (which
-- has these tables but no goose version table) takes this migration as
-- a no-op and keeps its runs.

-- +goose Up
CREATE TABLE IF NOT EXISTS runs (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	status TEXT NOT NULL,
	progress TEXT NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	created INTEGER NOT NULL,
	updated INTEGER NOT NULL,
	report BLOB
);
CREATE INDEX IF NOT EXISTS runs_created ON runs(created DESC);
CREATE TABLE IF NOT EXISTS run_files (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	pos INTEGER NOT NULL,
	name TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	size INTEGER NOT NULL,
	kind TEXT NOT NULL,
	PRIMARY KEY (run_id, pos)
);
CREATE INDEX IF NOT EXISTS run_files_sha ON run_files(sha256);
CREATE TABLE IF NOT EXISTS run_labels (
	run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
	key TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
);
CREATE INDEX IF NOT EXISTS run_labels_kv ON run_labels(key, value);

-- +goose Down
DROP TABLE IF EXISTS run_labels;
DROP TABLE IF EXISTS run_files;
DROP TABLE IF EXISTS runs;
