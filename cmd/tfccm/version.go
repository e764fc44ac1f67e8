package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/tfccm/tfccm/internal/version"
)

// runVersion prints the build's version (internal/version): the same one
// the CCM's --version, the image and the chart carry.
func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	short := fs.Bool("short", false, "print the version only")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "tfccm version: takes no arguments")
		return exitUsage
	}
	if *short {
		fmt.Fprintln(stdout, version.Version())
		return exitOK
	}
	fmt.Fprintln(stdout, version.String("tfccm"))
	return exitOK
}
