-- The GPU peaks a run's roofline is held against (an analyze
-- Options.GPUPeak value: hbm=TB/s and dtype=TFLOP/s figures over the GPU
-- name's); '' for the GPU name's. It is set at upload and may be changed
-- later.

-- +goose Up
ALTER TABLE runs ADD COLUMN gpu_peak TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE runs DROP COLUMN gpu_peak;
