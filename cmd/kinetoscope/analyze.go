package main

import (
	"errors"
	"io"
)

// runAnalyze is the analyze command. Placeholder until its issue lands.
func runAnalyze(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
