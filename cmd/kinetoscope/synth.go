package main

import (
	"errors"
	"io"
)

// runSynth is the synth command. Placeholder until its issue lands.
func runSynth(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
