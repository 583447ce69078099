package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
)

// newFlagSet returns a command's flag set: errors go to stderr, and -h
// prints the command's synopsis followed by its flags.
func newFlagSet(name, synopsis string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, synopsis, "\nflags:\n")
		fs.PrintDefaults()
	}
	return fs
}

// parseInterspersed parses args with fs, taking flags given before, between
// or after the positional arguments, and returns the positional arguments in
// order. A "--" ends the flags only up to the next positional argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return positional, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// checkOneOf returns an error naming what v is when it is not one of allowed.
func checkOneOf(what, v string, allowed []string) error {
	if !slices.Contains(allowed, v) {
		return fmt.Errorf("unknown %s %q (want one of %s)", what, v, strings.Join(allowed, ", "))
	}
	return nil
}
