package ingest

import "context"

// Options control how traces are read.
type Options struct {
	// Context, when not nil, stops a read once it is done: the reader
	// checks it before each block of input, and Open fails with its error.
	Context context.Context
	// MaxUncompressedBytes stops reading a file whose JSON text passes this
	// many bytes (a gzip bomb guard). Zero means no limit.
	MaxUncompressedBytes int64
	// MaxRatio, when > 0, stops reading a zip member past this many times
	// its compressed size (once past 256 MiB), as Limits does on upload.
	MaxRatio int64
	// Progress, when not nil, is called from time to time during a read.
	Progress func(Progress)
	// Budget, when not nil, bounds the memory the analysis of what is read
	// will take (see Budget); the reads of one set share it.
	Budget *Budget
	// ParseWorkers, when > 0, is the number of goroutines that parse the
	// events of a trace in chunks: 1 is the sequential parse. Zero leaves
	// it to parseWorkers (chunks for a large file on more than two cores).
	// The report is the same either way.
	ParseWorkers int
	// ParseStats, when not nil, counts what the parse over chunks did.
	ParseStats *ParseStats
	// GzipWorkers, when > 0, is the number of goroutines decompressing a
	// gzip file that can be read at offsets: 1 is klauspost's reader,
	// more the parallel reader of internal/pgzip. Zero leaves it to
	// gzipWorkers (the parallel reader for a large file on more than two
	// cores).
	GzipWorkers int
	// Ranks, when not empty, say which rank trace files are, overriding
	// their distributedInfo.rank and their names (see RankAssignments).
	Ranks RankAssignments
	// filesAtOnce is the number of files read at the same time (set by
	// readFiles), among which the cores are shared.
	filesAtOnce int
	// pool, when set, is the workers that parse the chunks of the files
	// parseWorkers says to parse in chunks, shared by the reads of a set.
	pool *parsePool
}

// Progress reports how far a read has come.
type Progress struct {
	Path              string
	Bytes             int64 // bytes read from the file so far
	TotalBytes        int64 // the file's size, 0 if unknown
	UncompressedBytes int64
	Events            int64
	Done              bool
}
