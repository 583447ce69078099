package ingest

// category is an event category the reader knows by number, so that
// counting needs no map lookup for the common ones.
type category uint8

// Known categories; catOther is counted by name in a map.
const (
	catOther category = iota
	catNone           // no "cat" key (metadata and instant events)
	catKernel
	catMemcpy
	catMemset
	catRuntime
	catDriver
	catCPUOp
	catUserAnnotation
	catGPUAnnotation
	catPython
	catAC2G
	catFwdBwd
	catAsyncCPUToGPU
	catCPUInstant
	catOverhead
	catTrace
	numCategories
)

// categoryNames are the trace names of the known categories.
var categoryNames = [numCategories]string{
	catOther:          "",
	catNone:           "",
	catKernel:         "kernel",
	catMemcpy:         "gpu_memcpy",
	catMemset:         "gpu_memset",
	catRuntime:        "cuda_runtime",
	catDriver:         "cuda_driver",
	catCPUOp:          "cpu_op",
	catUserAnnotation: "user_annotation",
	catGPUAnnotation:  "gpu_user_annotation",
	catPython:         "python_function",
	catAC2G:           "ac2g",
	catFwdBwd:         "fwdbwd",
	catAsyncCPUToGPU:  "async_cpu_to_gpu",
	catCPUInstant:     "cpu_instant_event",
	catOverhead:       "overhead",
	catTrace:          "Trace",
}

// classify returns the category of a raw "cat" value.
func classify(cat []byte) category {
	switch string(cat) {
	case "":
		return catNone
	case "python_function":
		return catPython
	case "cpu_op":
		return catCPUOp
	case "kernel":
		return catKernel
	case "cuda_runtime":
		return catRuntime
	case "ac2g":
		return catAC2G
	case "gpu_memcpy":
		return catMemcpy
	case "gpu_memset":
		return catMemset
	case "cuda_driver":
		return catDriver
	case "user_annotation":
		return catUserAnnotation
	case "gpu_user_annotation":
		return catGPUAnnotation
	case "fwdbwd":
		return catFwdBwd
	case "async_cpu_to_gpu":
		return catAsyncCPUToGPU
	case "cpu_instant_event":
		return catCPUInstant
	case "overhead":
		return catOverhead
	case "Trace":
		return catTrace
	}
	return catOther
}
