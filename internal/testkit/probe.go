package testkit

import (
	"bytes"
	"fmt"
)

// DistinctKernels returns the JSON text of a trace of n one-microsecond
// GPU kernels on one stream, each of its own name: the shape of issue
// 26's memory probe (10 M of them drove an analysis to 1.97 GB), whose
// memory grows with the distinct names as well as the events.
func DistinctKernels(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"traceEvents":[` + "\n")
	for i := range n {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d,"dur":1,"args":{"device":0,"stream":7}}`, i, 2*i)
	}
	b.WriteString("\n]}\n")
	return b.Bytes()
}
