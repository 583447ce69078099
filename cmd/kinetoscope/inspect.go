package main

import (
	"errors"
	"io"
)

// runInspect is the inspect command. Placeholder until its issue lands.
func runInspect(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
