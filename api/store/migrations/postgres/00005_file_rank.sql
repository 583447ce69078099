-- The rank an upload assigned to a trace file (a rank field FILE=N), over
-- what the file's distributedInfo.rank and name say; NULL for none.

-- +goose Up
ALTER TABLE run_files ADD COLUMN assigned_rank INTEGER;

-- +goose Down
ALTER TABLE run_files DROP COLUMN assigned_rank;
