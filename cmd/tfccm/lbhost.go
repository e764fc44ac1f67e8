package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/lbhost/hostfiles"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// runLBHost answers `tfccm lbhost check`: it connects to every LB host of
// the baremetal set's load_balancer.settings with the provider's SSH
// settings and lists what is missing or wrong there, each with its fix.
func runLBHost(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "usage: tfccm lbhost check --config cloud.hcl [--host NAME]")
		return exitUsage
	}
	fs := flag.NewFlagSet("tfccm lbhost check", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the cloud config whose load_balancer.settings name the LB hosts (the baremetal set's)")
	only := fs.String("host", "", "check only this host (its name in settings.hosts)")
	timeout := fs.Duration("timeout", time.Minute, "give up on a host after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	if *cfgPath == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: tfccm lbhost check --config cloud.hcl [--host NAME]")
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	targets, err := hostfiles.TargetsFromSettings(cfg.LoadBalancer.Settings)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	code, seen := exitOK, false
	for _, target := range targets {
		if *only != "" && target.Name != *only {
			continue
		}
		seen = true
		if !checkHost(target, *timeout, stdout) {
			code = exitError
		}
	}
	if !seen {
		fmt.Fprintf(stderr, "no host %q in load_balancer.settings.hosts\n", *only)
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
