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
	values := filepath.Join(dir, "my-values.yaml")
	if err := os.WriteFile(values, []byte(`cloudConfig: {clusterName: c1, templateSet: baremetal}
baremetal:
  hosts:
    - {name: lb-a, address: 127.0.0.1, port: 1, hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u"}
  user: tfccm
  sudo: true
  vipPool: 192.168.10.128/25
  interface: eth0
sshKey: {existingSecret: tfccm-ssh}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	badValues := filepath.Join(dir, "bad-values.yaml")
	if err := os.WriteFile(badValues, []byte("cloudConfig: {templateSet: baremetal}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "tfccm_ed25519")
	if err := os.WriteFile(key, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lbhost"}, exitUsage, "usage: tfccm lbhost prepare"},
		{[]string{"lbhost", "check"}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check", "--config", noHosts}, exitError, "no LB hosts to check"},
		{[]string{"lbhost", "check", "--config", unreachable, "--host", "lb-z"}, exitError, `no host "lb-z"`},
		{[]string{"lbhost", "check", "--config", unreachable}, exitError, "lb-a: MISSING  ssh:"},
		{[]string{"lbhost", "check", "--values", values}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check", "--config", unreachable, "--values", values, "--ssh-key", key}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check", "--config", unreachable, "--ssh-key", key}, exitUsage, "usage: tfccm lbhost check"},
		{[]string{"lbhost", "check", "--values", filepath.Join(dir, "none.yaml"), "--ssh-key", key}, exitError, "none.yaml: no such file"},
		{[]string{"lbhost", "check", "--values", badValues, "--ssh-key", key}, exitError, "cloudConfig.clusterName is required"},
		// The hosts of the values file, reached with the key given here
		// (the values name the pod's /etc/tfccm/ssh/...).
		{[]string{"lbhost", "check", "--values", values, "--ssh-key", key}, exitError, "lb-a: MISSING  ssh:"},
		{[]string{"lbhost", "check", "--values", values, "--ssh-key", key, "--host", "lb-z"}, exitError, `no host "lb-z"`},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
		if strings.Contains(stdout.String()+stderr.String(), "c2VjcmV0") {
			t.Errorf("%v: the output quotes the key file", tc.args)
		}
	}
}

// TestLBHostPrepare: the command prints the script for the flags, and
// refuses bad input naming it, printing nothing (the script itself:
// lbhost/hostfiles' TestPrepareScript; run on hosts: lbhost/hosttest).
func TestLBHostPrepare(t *testing.T) {
	dir := t.TempDir()
	pub := filepath.Join(dir, "tfccm_ed25519.pub")
	key := "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFn3B0tNsg4UhmJRQbcVPMsXWe9J6fuk1Ip3nRGY4r5u"
	if err := os.WriteFile(pub, []byte(key+" me@laptop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	priv := filepath.Join(dir, "tfccm_ed25519")
	if err := os.WriteFile(priv, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nc2VjcmV0\n-----END OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"lbhost", "prepare"}, exitUsage, "usage: tfccm lbhost prepare"},
		{[]string{"lbhost", "prepare", "--name", "lb-a"}, exitUsage, "usage: tfccm lbhost prepare"},
		{[]string{"lbhost", "prepare", "--name", "lb-a", "--ssh-public-key", pub}, exitOK, "\nkey='" + key + " tfccm'\n"},
		{[]string{"lbhost", "prepare", "--name", "lb-b", "--user", "tfccm", "--ssh-public-key", pub}, exitOK, "tfccm ALL=(root) NOPASSWD: TFCCM_LBHOST"},
		{[]string{"lbhost", "prepare", "--name", "lb a", "--ssh-public-key", pub}, exitError, `host name "lb a"`},
		{[]string{"lbhost", "prepare", "--name", "lb-a", "--ssh-public-key", filepath.Join(dir, "none.pub")}, exitError, "the public key: open"},
		{[]string{"lbhost", "prepare", "--name", "lb-a", "--ssh-public-key", priv}, exitError, "the public key"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, &stdout, &stderr)
		if code != tc.code || !strings.Contains(stdout.String()+stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, output %q %q; want %d and %q", tc.args, code, stdout.String(), stderr.String(), tc.code, tc.want)
		}
		if code != exitOK && stdout.Len() > 0 {
			t.Errorf("%v failed but printed %q", tc.args, stdout.String())
		}
		if strings.Contains(stderr.String(), "c2VjcmV0") {
			t.Errorf("%v: the error quotes the key file: %q", tc.args, stderr.String())
		}
	}
}
