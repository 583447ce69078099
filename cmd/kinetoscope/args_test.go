package main

import (
	"bytes"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestParseInterspersed(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		paths  []string
		format string
		quiet  bool
		err    string // part of the error, "" for none
	}{
		{"none", nil, nil, "table", false, ""},
		{"flags only", []string{"--format", "json", "--quiet"}, nil, "json", true, ""},
		{"flags before", []string{"--format=csv", "a"}, []string{"a"}, "csv", false, ""},
		{"flags after", []string{"a", "b", "-format", "md", "-quiet"}, []string{"a", "b"}, "md", true, ""},
		{"flags between", []string{"a", "--quiet", "b", "--format", "json", "c"}, []string{"a", "b", "c"}, "json", true, ""},
		{"last flag wins", []string{"--format", "csv", "a", "--format", "json"}, []string{"a"}, "json", false, ""},
		{"dash dash", []string{"--", "-a", "--quiet"}, []string{"-a"}, "table", true, ""},
		{"unknown flag", []string{"a", "--colour"}, []string{"a"}, "table", false, "flag provided but not defined: -colour"},
		{"missing value", []string{"a", "--format"}, []string{"a"}, "table", false, "flag needs an argument: -format"},
		{"help", []string{"a", "-h"}, []string{"a"}, "table", false, flag.ErrHelp.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			fs := newFlagSet("test", "usage: test [PATH...]\n", &stderr)
			format := fs.String("format", "table", "output format")
			quiet := fs.Bool("quiet", false, "no progress")
			paths, err := parseInterspersed(fs, tt.args)
			if tt.err == "" && err != nil || tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
			if !slices.Equal(paths, tt.paths) || *format != tt.format || *quiet != tt.quiet {
				t.Errorf("paths %q, format %q, quiet %v; want %q, %q, %v", paths, *format, *quiet, tt.paths, tt.format, tt.quiet)
			}
			if usage := "usage: test [PATH...]\n\nflags:\n  -format string"; (tt.err != "") != strings.Contains(stderr.String(), usage) {
				t.Errorf("stderr %q: want the synopsis and flags exactly when parsing fails", stderr.String())
			}
			if errors.Is(err, flag.ErrHelp) != (tt.name == "help") {
				t.Errorf("ErrHelp: %v", err)
			}
		})
	}
}

func TestCheckOneOf(t *testing.T) {
	allowed := []string{"svg", "png"}
	tests := []struct {
		v    string
		want string // "" for no error
	}{
		{"svg", ""},
		{"png", ""},
		{"", `unknown format "" (want one of svg, png)`},
		{"SVG", `unknown format "SVG" (want one of svg, png)`},
	}
	for _, tt := range tests {
		got := ""
		if err := checkOneOf("format", tt.v, allowed); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%q: error %q, want %q", tt.v, got, tt.want)
		}
	}
}
