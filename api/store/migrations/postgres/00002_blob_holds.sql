-- Holds on blobs: an upload that has stored a blob and is about to record
-- a run with it holds the blob, so that no process deletes it meanwhile
-- (a delete of another run with the same content). Expires is Unix
-- nanoseconds; an expired hold (its process died) no longer counts.

-- +goose Up
CREATE TABLE blob_holds (
	sha256 TEXT NOT NULL,
	holder TEXT NOT NULL,
	expires BIGINT NOT NULL,
	PRIMARY KEY (sha256, holder)
);
CREATE INDEX blob_holds_holder ON blob_holds (holder);

-- +goose Down
DROP TABLE blob_holds;
