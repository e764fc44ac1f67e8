package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// runWorkspaces answers `tfccm workspaces`: the workspaces in the cloud
// config's work_dir, as the controller left them on disk, each with its
// phase (Applied: what it last applied is what it wants; Changed: a newer
// desired configuration is not applied yet, pending or failing, see the
// Service's Events; NotApplied: never applied; Destroyed), the Service it
// belongs to (with --kubeconfig or in a pod) and, with --locks, who holds
// its state lock. Without --config (from a workstation) it runs itself in
// the leader's pod (remote.go); with it, it reads work_dir here (in the
// CCM's pod, or beside a CCM run outside the cluster).
func runWorkspaces(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm workspaces", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the cloud config (its work_dir holds the workspaces); without it, ask the leader's pod")
	var kf kubeFlags
	kf.register(fs)
	var lf leaderFlags
	lf.register(fs)
	locks := fs.Bool("locks", false, "also show each workspace's state lock (runs tofu once per workspace)")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if fs.NArg() != 0 {
		fmt.Fprintln(stderr, "usage: tfccm workspaces [--config cloud.hcl | --kubeconfig K --context C --tfccm-namespace T] [--locks]")
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	if *cfgPath == "" {
		remote := []string{"--locks=" + strconv.FormatBool(*locks), "--timeout=" + timeout.String()}
		code, err := inLeader(ctx, kf, lf, "workspaces", remote, stdout, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "tfccm workspaces: %v\n", err)
		}
		return code
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	rows, err := listWorkspaces(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	services := serviceOfWorkspace(ctx, cfg, kf.kubeconfig, stderr)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	header := "WORKSPACE\tPHASE\tSERVICE"
	if *locks {
		header += "\tLOCK"
	}
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		svc := services[r.name]
		if svc == "" {
			svc = "-"
			switch r.name {
			case templates.RoutesWorkspaceName:
				svc = "(routes)"
			case templates.PeeringWorkspaceName:
				svc = "(bgp peering)"
			}
		}
		line := fmt.Sprintf("%s\t%s\t%s", r.name, r.phase, svc)
		if *locks {
			line += "\t" + lockOf(ctx, cfg, r)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	return exitOK
}

type workspaceRow struct {
	name, phase string
	spec        *workspace.Spec // nil when destroyed
	dir         string
}

// listWorkspaces reads work_dir: every workspace directory and every
// destroyed name, by name.
func listWorkspaces(cfg *config.Config) ([]workspaceRow, error) {
	entries, err := os.ReadDir(cfg.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("work_dir: %w", err)
	}
	seen := map[string]bool{}
	var rows []workspaceRow
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(cfg.WorkDir, e.Name())
		spec, err := workspace.ReadDir(dir)
		if errors.Is(err, workspace.ErrNotFound) {
			continue // not a workspace (a plugin cache, ...)
		}
		if err != nil {
			return nil, err
		}
		phase := "NotApplied"
		if applied, err := workspace.LastApplied(dir); err == nil {
			phase = "Changed"
			if applied.ContentHash() == spec.ContentHash() {
				phase = "Applied"
			}
		}
		seen[e.Name()] = true
		rows = append(rows, workspaceRow{name: e.Name(), phase: phase, spec: &spec, dir: dir})
	}
	for _, name := range workspace.Destroyed(cfg.WorkDir) {
		if !seen[name] {
			rows = append(rows, workspaceRow{name: name, phase: "Destroyed"})
		}
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].name < rows[j].name })
	return rows, nil
}

// serviceOfWorkspace maps load balancer workspace names to their Service
// (namespace/name), when the cluster can be reached.
func serviceOfWorkspace(ctx context.Context, cfg *config.Config, kubeconfig string, stderr io.Writer) map[string]string {
	out := map[string]string{}
	client, err := kubeClient(kubeconfig)
	if err != nil {
		return out
	}
	list, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "(Services not listed: %v)\n", err)
		return out
	}
	for i := range list.Items {
		s := &list.Items[i]
		out[templates.LoadBalancerWorkspaceName(cfg, s)] = s.Namespace + "/" + s.Name
	}
	return out
}

// lockOf is who holds r's state lock ("-" when nobody does).
func lockOf(ctx context.Context, cfg *config.Config, r workspaceRow) string {
	if r.spec == nil {
		return "-"
	}
	spec, err := templates.WithBackend(cfg, *r.spec)
	if err != nil {
		return "? " + err.Error()
	}
	lock, err := workspace.InspectLock(ctx, unlockOptions(cfg, time.Minute), &spec, r.dir)
	switch {
	case err != nil:
		return "? " + err.Error()
	case !lock.Held:
		return "-"
	case lock.Stale:
		return lock.Holder + " (stale: tfccm unlock releases it)"
	}
	return lock.Holder
}

// unlockOptions are how tfccm runs tofu for cfg's lock operations.
func unlockOptions(cfg *config.Config, timeout time.Duration) workspace.UnlockOptions {
	return workspace.UnlockOptions{
		Binary:   cfg.Terraform.Binary,
		Identity: cfg.Identity(),
		Timeout:  timeout,
		Env:      cfg.Terraform.EnvSettings(cfg.WorkDir),
	}
}
