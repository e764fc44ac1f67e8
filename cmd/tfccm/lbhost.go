package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/config/chartvalues"
	"github.com/tfccm/tfccm/lbhost/hostfiles"
	"github.com/tfccm/tfccm/lbhost/transport"
)

const (
	usageLBHostCheck   = "usage: tfccm lbhost check --config cloud.hcl | --values my-values.yaml --ssh-key FILE [--host NAME]"
	usageLBHostPrepare = "usage: tfccm lbhost prepare --name NAME --ssh-public-key FILE.pub [--user root|USER]"
)

// runLBHost answers `tfccm lbhost prepare|check`.
func runLBHost(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "check" {
		return runLBHostCheck(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "prepare" {
		return runLBHostPrepare(args[1:], stdout, stderr)
	}
	fmt.Fprintln(stderr, usageLBHostPrepare+"\n"+usageLBHostCheck)
	return exitUsage
}

// runLBHostPrepare prints the script that prepares one LB host (run it as
// root there, or give it as cloud-init user data).
func runLBHostPrepare(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm lbhost prepare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var p hostfiles.Preparation
	fs.StringVar(&p.Name, "name", "", "the host's name in load_balancer.settings.hosts (keepalived's router_id)")
	fs.StringVar(&p.User, "user", "root", "the SSH login tfccm uses: root, or a user to create with lbhost's sudoers rules (then sudo = true)")
	keyFile := fs.String("ssh-public-key", "", "tfccm's public key file (ssh-keygen's .pub), authorized for the login")
	fs.StringVar(&p.ConfigDir, "config-dir", hostfiles.DefaultConfigDir, "the host's config_dir setting")
	fs.StringVar(&p.KeepalivedConfig, "keepalived-config", hostfiles.KeepalivedConfig, "the host's keepalived_config setting")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if p.Name == "" || *keyFile == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, usageLBHostPrepare)
		return exitUsage
	}
	var err error
	if p.AuthorizedKey, err = os.ReadFile(*keyFile); err != nil {
		fmt.Fprintf(stderr, "the public key: %v\n", err)
		return exitError
	}
	script, err := p.Script()
	if err != nil {
		fmt.Fprintf(stderr, "tfccm lbhost prepare: %v\n", err)
		return exitError
	}
	fmt.Fprint(stdout, script)
	return exitOK
}

// runLBHostCheck answers `tfccm lbhost check`: it connects to every LB host
// of the baremetal set's load_balancer.settings with the provider's SSH
// settings and lists what is missing or wrong there, each with its fix.
// The settings come from the cloud config (in the pod, or a helm test), or
// from the chart's values file before install (with the private key's
// path on this machine: the values name the pod's).
func runLBHostCheck(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm lbhost check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the cloud config whose load_balancer.settings name the LB hosts (the baremetal set's)")
	valuesPath := fs.String("values", "", "the Helm chart's values file (instead of --config): the cloud config the chart will give tfccm")
	sshKey := fs.String("ssh-key", "", "with --values: tfccm's SSH private key file on this machine (the one in the chart's sshKey Secret)")
	only := fs.String("host", "", "check only this host (its name in settings.hosts)")
	timeout := fs.Duration("timeout", time.Minute, "give up on a host after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if (*cfgPath == "") == (*valuesPath == "") || (*valuesPath != "") != (*sshKey != "") || fs.NArg() != 0 {
		fmt.Fprintln(stderr, usageLBHostCheck)
		return exitUsage
	}
	cfg, err := loadCheckConfig(*cfgPath, *valuesPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	targets, err := hostfiles.TargetsFromSettings(cfg.LoadBalancer.Settings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	for i := range targets {
		if *sshKey != "" {
			targets[i].SSH.PrivateKeyFile, targets[i].SSH.AgentSocket = *sshKey, ""
		}
	}
	return checkHosts(targets, *only, *timeout, stdout, stderr)
}

// loadCheckConfig reads the cloud config from cfgPath, or the one the
// chart makes of the values file valuesPath.
func loadCheckConfig(cfgPath, valuesPath string) (*config.Config, error) {
	if cfgPath != "" {
		return config.Load(cfgPath)
	}
	b, err := os.ReadFile(valuesPath)
	if err != nil {
		return nil, err
	}
	cfg, err := chartvalues.Load(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", valuesPath, err)
	}
	return cfg, nil
}

// checkHosts checks every host of targets (only the one called only, if
// given).
func checkHosts(targets []hostfiles.Target, only string, timeout time.Duration, stdout, stderr io.Writer) int {
	code, seen := exitOK, false
	for _, target := range targets {
		if only != "" && target.Name != only {
			continue
		}
		seen = true
		if !checkHost(target, timeout, stdout) {
			code = exitError
		}
	}
	if !seen {
		fmt.Fprintf(stderr, "no host %q in load_balancer.settings.hosts\n", only)
		return exitError
	}
	return code
}

// checkHost prints target's findings and reports whether all are ok.
func checkHost(target hostfiles.Target, timeout time.Duration, w io.Writer) bool {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	t, err := transport.DialSSH(ctx, target.SSH)
	if err != nil {
		fmt.Fprintf(w, "%s: MISSING  ssh: %v\n         fix: check the host's address, sshd, host key and the login's authorized key\n", target.Name, err)
		return false
	}
	defer t.Close()
	fmt.Fprintf(w, "%s (%s):\n", target.Name, t)
	ok := true
	for _, f := range hostfiles.Check(ctx, t, target) {
		if f.OK {
			fmt.Fprintf(w, "  ok       %-20s %s\n", f.Check, f.What)
			continue
		}
		ok = false
		fmt.Fprintf(w, "  MISSING  %-20s %s\n           fix: %s\n", f.Check, f.What, f.Fix)
	}
	return ok
}
