package main

import (
	"errors"
	"io"
)

// runDiff is the diff command. Placeholder until its issue lands.
func runDiff(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
