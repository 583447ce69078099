package main

import (
	"errors"
	"io"
)

// runServe is the serve command. Placeholder until its issue lands.
func runServe(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
