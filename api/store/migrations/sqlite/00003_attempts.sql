-- Attempts counts the analyses of a run that started and neither ended
-- nor were handed back (a shutdown hands its analyses back): a process
-- that died analysing the run (out of memory, killed) leaves one counted.
-- A run started too many times is failed, not analysed again, so that one
-- input never crash-loops the server.

-- +goose Up
ALTER TABLE runs ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE runs DROP COLUMN attempts;
