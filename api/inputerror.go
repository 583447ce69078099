package api

import (
	"errors"
	"fmt"
	"net/http"

	"kinetoscope/ingest"
)

// inputError is a problem with what the client sent: it answers with Code
// and the message.
type inputError struct {
	Code int
	Msg  string
}

// Error returns the message.
func (e *inputError) Error() string { return e.Msg }

func badInput(format string, args ...any) error {
	return &inputError{Code: http.StatusBadRequest, Msg: fmt.Sprintf(format, args...)}
}

// checkFailure turns a problem ingest's content check found into an
// answer: 413 when a limit was passed, else 400. Other errors (reading the
// request) pass through.
func checkFailure(err error) error {
	var ce *ingest.CheckError
	if !errors.As(err, &ce) {
		return err
	}
	code := http.StatusBadRequest
	if ce.TooLarge {
		code = http.StatusRequestEntityTooLarge
	}
	return &inputError{Code: code, Msg: ce.Msg}
}
