-- The link a run's collective bandwidth is held against (an analyze
-- Options.Link value: nvlink4, pcie5x16, a GB/s figure); '' for the one
-- the GPU name tells. It is set at upload and may be changed later.

-- +goose Up
ALTER TABLE runs ADD COLUMN link TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN link;
