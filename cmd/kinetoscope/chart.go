package main

import (
	"errors"
	"io"
)

// runChart is the chart command. Placeholder until its issue lands.
func runChart(args []string, stdout, stderr io.Writer) error {
	return errors.New("not implemented yet")
}
