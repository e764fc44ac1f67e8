package main

import (
	"fmt"
	"os/exec"
	"runtime"
	"strings"
)

// checkVersions runs the binaries built for this machine's platform and
// fails unless each reports the release's version: proof that the stamping
// (VERSION_LDFLAGS) reached every program.
func checkVersions(bins map[platform]map[string]string, version, providerVersion string) error {
	host := platform{runtime.GOOS, runtime.GOARCH}
	b, ok := bins[host]
	if !ok {
		return nil // nothing runnable here
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"terraform-cloud-controller-manager", []string{"--version"}, []string{" " + version}},
		{"tfccm", []string{"version"}, []string{"tfccm " + version + " "}},
		{"lbhost-router", []string{"-version"}, []string{"lbhost-router " + version + " "}},
		{providerBinary, []string{"-version"}, []string{providerBinary + " " + providerVersion + ",", "tfccm " + version + " "}},
	} {
		out, err := exec.Command(b[c.name], c.args...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s %s: %v: %s", c.name, strings.Join(c.args, " "), err, out)
		}
		for _, w := range c.want {
			if !strings.Contains(string(out), w) {
				return fmt.Errorf("%s %s printed %q, which lacks %q: is VERSION_LDFLAGS wrong?", c.name, strings.Join(c.args, " "), out, w)
			}
		}
	}
	return nil
}
