package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// runUnlock answers `tfccm unlock`: it shows who holds a workspace's state
// lock and releases it only when the holder is known to be gone (a tfccm
// process of this deployment on this host that has exited), or with
// --force once the operator has made sure of it. Without --config (from a
// workstation) it runs itself in the leader's pod (remote.go), whose tofu
// and backend hold the lock.
func runUnlock(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm unlock", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the cloud config (work_dir, backend, terraform settings); without it, run in the leader's pod")
	var kf kubeFlags
	kf.register(fs)
	var lf leaderFlags
	lf.register(fs)
	name := fs.String("workspace", "", "the workspace whose lock to release (lb-<cluster>-<hash> or routes; named in the TerraformStateLocked Event)")
	force := fs.Bool("force", false, "release a lock whose holder this command cannot prove gone (someone else's, or a tfccm run on another host): only once you know it is")
	dryRun := fs.Bool("dry-run", false, "only show who holds the lock")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *name == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: tfccm unlock [--config cloud.hcl | --kubeconfig K --context C --tfccm-namespace T] --workspace NAME [--dry-run] [--force]")
		return exitUsage
	}
	if *cfgPath == "" {
		remote := []string{"--workspace", *name, "--dry-run=" + strconv.FormatBool(*dryRun), "--force=" + strconv.FormatBool(*force), "--timeout=" + timeout.String()}
		return unlockInLeader(kf, lf, *name, remote, *timeout, stdout, stderr)
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	dir := filepath.Join(cfg.WorkDir, *name)
	spec, err := workspace.ReadDir(dir)
	if err != nil {
		fmt.Fprintf(stderr, "workspace %s: %v (is work_dir %s this controller's?)\n", *name, err, cfg.WorkDir)
		return exitError
	}
	if spec, err = templates.WithBackend(cfg, spec); err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	opts := unlockOptions(cfg, *timeout)
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	lock, err := workspace.InspectLock(ctx, opts, &spec, dir)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if !lock.Held {
		fmt.Fprintf(stdout, "Workspace %s: the state is not locked.\n", *name)
		return exitOK
	}
	fmt.Fprintf(stdout, "Workspace %s: the state is locked by %s.\n%s.\n", *name, lock.Holder, lock.Why)
	switch {
	case *dryRun:
		return exitOK
	case !lock.Stale && !*force:
		fmt.Fprintln(stderr, "Not releasing it: its holder may still be working on the state. Rerun with --force once you know it is gone.")
		return exitError
	}
	if err := workspace.ForceUnlock(ctx, opts, &spec, dir, lock.ID); err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	fmt.Fprintf(stdout, "Released lock %s; the controller's next run of %s proceeds.\n", lock.ID, *name)
	return exitOK
}

// unlockInLeader runs `tfccm unlock` in the leader's pod (remote.go), once
// name is a workspace's.
func unlockInLeader(kf kubeFlags, lf leaderFlags, name string, remote []string, timeout time.Duration, stdout, stderr io.Writer) int {
	if !workspaceName.MatchString(name) {
		fmt.Fprintf(stderr, "tfccm unlock: --workspace %q is not a workspace name (lb-<cluster>-<hash> or routes, as the TerraformStateLocked Event names it)\n", name)
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	code, err := inLeader(ctx, kf, lf, "unlock", remote, stdout, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm unlock: %v\n", err)
	}
	return code
}
