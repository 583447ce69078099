package main

import (
	"errors"
	"io"
)

// runBench is the bench command. Placeholder until its issue lands.
func runBench(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
