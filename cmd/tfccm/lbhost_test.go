package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The command's own errors (the checks themselves run against real hosts
// in lbhost/hosttest' TestLBHostCheck).
func TestLBHostCheckUsage(t *testing.T) {
	dir := t.TempDir()
	noHosts := filepath.Join(dir, "cloud.hcl")
	if err := os.WriteFile(noHosts, []byte("cluster_name = \"c1\"\ntemplate_set = \"baremetal\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unreachable := filepath.Join(dir, "unreachable.hcl")
	if err := os.WriteFile(unreachable, []byte(`cluster_name = "c1"
template_set = "baremetal"
load_balancer {
  settings = {
    hosts = { lb-a = { address = "127.0.0.1", ssh_port = 1, host_key = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u" } }
    ssh_private_key_file = "/nonexistent"
  }
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lbhost"}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check"}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check", "--config", noHosts}, exitError, "no LB hosts to check"},
		{[]string{"lbhost", "check", "--config", unreachable, "--host", "lb-z"}, exitError, `no host "lb-z"`},
		{[]string{"lbhost", "check", "--config", unreachable}, exitError, "lb-a: MISSING  ssh:"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
	}
}
