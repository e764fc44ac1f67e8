package main

import (
	"io"

	"github.com/tfccm/tfccm/workspace/jobrunner"
)

// runRun is `tfccm run`, the job runner's pod side (terraform { runner =
// "job" }): it runs one tofu command from the input Secrets mounted in the
// pod and writes the result Secrets.
func runRun(args []string, stdout, stderr io.Writer) int {
	return jobrunner.PodMain(args, stdout, stderr)
}
