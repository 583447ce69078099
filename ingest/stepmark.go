package ingest

import (
	"bytes"
	"strings"
)

// stepMarkFunctions are the Python functions whose python_function events
// (with_stack traces) the reader keeps in Trace.PythonCalls: the
// entry points of one engine step in vLLM's workers. A with_stack trace
// names them "FILE(LINE): FUNCTION", for example
// "vllm/v1/worker/gpu_worker.py(263): execute_model". sample_tokens is
// the second half of a step in vLLM versions that split it from
// execute_model (async scheduling).
var stepMarkFunctions = [...]string{ExecuteModel, SampleTokens}

// ExecuteModel is vLLM's worker-level step: the function of its
// python_function events and the name of its record_function annotation.
// The one definition of the name; analysis marks steps by it.
const ExecuteModel = "execute_model"

// SampleTokens is the second half of a step in vLLM versions that split it
// from execute_model.
const SampleTokens = "sample_tokens"

// PythonFunction returns the function a with_stack python_function event's
// name calls: FUNCTION of "FILE.py(LINE): FUNCTION", e.g. execute_model of
// "vllm/v1/worker/gpu_worker.py(263): execute_model"; ok is false for a
// name of any other form.
func PythonFunction(name string) (fn string, ok bool) {
	i := strings.LastIndex(name, "): ")
	if i < 0 {
		return "", false
	}
	open := strings.LastIndexByte(name[:i], '(')
	if open < len(".py") || !strings.HasSuffix(name[:open], ".py") {
		return "", false
	}
	line := name[open+1 : i]
	if line == "" || strings.Trim(line, "0123456789") != "" {
		return "", false
	}
	return name[i+len("): "):], true
}

// stepMarkFunction says whether raw, the raw JSON text of a
// python_function event's name, names a step-mark function: it ends in
// "): " and one of stepMarkFunctions. It is decided on the raw bytes while
// the event is scanned, so the events it refuses are skipped unparsed.
func stepMarkFunction(raw []byte) bool {
	if len(raw) < len("x(1): execute_model") || raw[len(raw)-1] < 'a' {
		return false
	}
	last := raw[len(raw)-1]
	for _, f := range stepMarkFunctions {
		if n := len(raw) - len(f); n >= 3 && last == f[len(f)-1] && string(raw[n:]) == f && raw[n-1] == ' ' && raw[n-2] == ':' && raw[n-3] == ')' {
			return bytes.IndexByte(raw[:n], '(') > 0
		}
	}
	return false
}

// modulePrefix starts the name of a python_function event of an nn.Module's
// forward ("nn.Module: DecoderLayer_3"), which the reader keeps in
// Trace.Modules.
const modulePrefix = "nn.Module: "

// keptPythonFunction says whether a python_function event of this raw name
// is kept: a step mark or a module's forward; every other one is skipped
// unparsed.
func keptPythonFunction(raw []byte) bool {
	return pythonFunctionKeptAs(raw) != keptNothing
}

// pythonFunctionKeptAs returns what a python_function event of this raw
// name is kept as: the list keptPythonFunction and keptAsOf read.
func pythonFunctionKeptAs(raw []byte) keptAs {
	switch {
	case bytes.HasPrefix(raw, []byte(modulePrefix)):
		return keptModule
	case stepMarkFunction(raw):
		return keptPythonCall
	}
	return keptNothing
}
