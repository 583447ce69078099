package ingest

import "unsafe"

// KeptEvents returns the number of events the trace keeps: GPU events,
// launches, annotations and comm ops.
func (t *Trace) KeptEvents() int64 {
	return int64(t.GPU.Len() + t.Launches.Len() + t.Annotations.Len() + t.CommOps.Len())
}

// RetainedBytes estimates the memory the trace holds: its event columns,
// collectives, interned strings (with their table overhead) and threads.
func (t *Trace) RetainedBytes() int64 {
	n := t.GPU.RetainedBytes(int(unsafe.Sizeof(GPUEvent{}))) +
		t.Launches.RetainedBytes(int(unsafe.Sizeof(Launch{}))) +
		t.Annotations.RetainedBytes(int(unsafe.Sizeof(Annotation{}))) +
		t.CommOps.RetainedBytes(int(unsafe.Sizeof(CommOp{}))) +
		t.PythonCalls.RetainedBytes(int(unsafe.Sizeof(Annotation{}))) +
		t.Modules.RetainedBytes(int(unsafe.Sizeof(Annotation{}))) +
		t.CollectiveOps.RetainedBytes(int(unsafe.Sizeof(Annotation{}))) +
		int64(cap(t.Collectives))*int64(unsafe.Sizeof(CollectiveArgs{})) +
		int64(len(t.Threads))*int64(unsafe.Sizeof(Thread{})) +
		t.Shapes.RetainedBytes()
	if t.Strings != nil {
		// Each distinct string: its bytes, a slice entry and a map entry.
		n += t.Strings.Bytes() + int64(t.Strings.Len())*(16+32)
	}
	return n
}
