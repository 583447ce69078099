package ingest

// Options control how traces are read.
type Options struct {
	// MaxUncompressedBytes stops reading a file whose JSON text passes this
	// many bytes (a gzip bomb guard). Zero means no limit.
	MaxUncompressedBytes int64
	// Progress, when not nil, is called from time to time during a read.
	Progress func(Progress)
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
