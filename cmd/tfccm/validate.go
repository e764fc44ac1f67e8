package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/tfccm/tfccm/templates"
)

func runValidate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "", "module kind of a module directory whose name does not say it (loadbalancer or routes)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tfccm validate [--kind loadbalancer|routes] DIR...\n\nDIR is a template set (loadbalancer/, loadbalancer.<variant>/, routes/, instances.hcl) or one module directory.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() == 0 {
		fs.Usage()
		return exitUsage
	}
	code := exitOK
	for _, dir := range fs.Args() {
		diags := templates.ValidateDir(dir, templates.Kind(*kind))
		if len(diags) > 0 {
			fmt.Fprintln(stderr, templates.FormatDiagnostics(diags))
		}
		if diags.HasErrors() {
			code = exitError
			continue
		}
		fmt.Fprintf(stdout, "%s: ok\n", dir)
	}
	return code
}
