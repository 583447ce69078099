-- The runs schema. Times are Unix nanoseconds (BIGINT), as in the SQLite
-- store, so that both keep and order them alike.

-- +goose Up
CREATE TABLE runs (
	id TEXT PRIMARY KEY,
	name TEXT NOT NULL,
	status TEXT NOT NULL,
	progress JSONB NOT NULL,
	error TEXT NOT NULL DEFAULT '',
	created BIGINT NOT NULL,
	updated BIGINT NOT NULL,
	report BYTEA
);
CREATE INDEX runs_created ON runs (created DESC, id);
CREATE INDEX runs_status ON runs (status);
CREATE TABLE run_files (
	run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	pos INTEGER NOT NULL,
	name TEXT NOT NULL,
	sha256 TEXT NOT NULL,
	size BIGINT NOT NULL,
	kind TEXT NOT NULL,
	PRIMARY KEY (run_id, pos)
);
CREATE INDEX run_files_sha ON run_files (sha256);
CREATE TABLE run_labels (
	run_id TEXT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
	key TEXT NOT NULL,
	value TEXT NOT NULL,
	PRIMARY KEY (run_id, key)
);
CREATE INDEX run_labels_kv ON run_labels (key, value);

-- +goose Down
DROP TABLE run_labels;
DROP TABLE run_files;
DROP TABLE runs;
