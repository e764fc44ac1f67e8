package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/fleet"
	"github.com/tfccm/tfccm/gate"
	"github.com/tfccm/tfccm/internal/manifest"
	"github.com/tfccm/tfccm/internal/secret"
	"github.com/tfccm/tfccm/internal/tfenv"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

// Exit codes of `tfccm plan` beyond exitOK (nothing changes), exitError
// (a workspace failed to render or plan) and exitUsage.
const (
	exitChanges = 3 // at least one workspace changes
	exitDenied  = 4 // a policy rule denies a plan
)

// planOptions are the flags of `tfccm plan`.
type planOptions struct {
	kube      kubeFlags
	config    string
	objects   string
	format    string
	parallel  int
	cliConfig string
	timeout   time.Duration
}

// runPlan answers `tfccm plan`: the fleet plan of a cluster with candidate
// templates and cloud config (package fleet).
func runPlan(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o planOptions
	o.kube.register(fs)
	fs.StringVar(&o.config, "config", "", "the candidate cloud config (its template_set and override_dir are the candidate templates)")
	fs.StringVar(&o.objects, "objects", "", "read Services, Nodes and AddressPools from this dump (kubectl get services,nodes,addresspools -A -o yaml) instead of the cluster")
	fs.StringVar(&o.format, "format", "text", "text, markdown (a pull request comment) or json")
	fs.IntVar(&o.parallel, "parallel", 0, "plans run at once (default: the config's terraform.parallelism)")
	fs.StringVar(&o.cliConfig, "cli-config", "", "tofu's CLI config (provider mirror) (default: $TF_CLI_CONFIG_FILE when that file exists, else the config's terraform.cli_config_file)")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Minute, "give up after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tfccm plan --config cloud.hcl [--objects dump.yaml | --kubeconfig K --context C] [--format text|markdown|json]\n\n"+
			"Plans every load balancer (and the routes and the BGP peering; the peering's destroy, read from\n"+
			"the state backend's catalog, when the candidate has no bgp) read-only against its real state with\n"+
			"the candidate config and templates. Exit code: 0 nothing changes, 3 something changes, 4 a policy rule denies\n"+
			"a plan, 1 a workspace failed to render or plan, 2 usage.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	write, ok := map[string]func(*fleet.Report, io.Writer) error{
		"text": (*fleet.Report).WriteText, "markdown": (*fleet.Report).WriteMarkdown, "json": (*fleet.Report).WriteJSON,
	}[o.format]
	if o.config == "" || fs.NArg() != 0 || !ok {
		fs.Usage()
		return exitUsage
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	report, err := fleetPlan(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "tfccm plan: %v\n", err)
		return exitError
	}
	if err := write(report, stdout); err != nil {
		fmt.Fprintf(stderr, "tfccm plan: %v\n", err)
		return exitError
	}
	switch c := report.Counts(); {
	case c.Errors > 0:
		return exitError
	case c.Denied > 0:
		return exitDenied
	case c.Changed > 0:
		return exitChanges
	}
	return exitOK
}

// fleetPlan loads the candidate, reads the cluster's objects and plans.
func fleetPlan(ctx context.Context, o planOptions) (*fleet.Report, error) {
	cfg, err := config.Load(o.config)
	if err != nil {
		return nil, err
	}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		return nil, err
	}
	g, err := gate.New(cfg)
	if err != nil {
		return nil, err
	}
	svcs, nodes, err := clusterObjects(ctx, o)
	if err != nil {
		return nil, err
	}
	compat := cfg.Compat != nil && cfg.Compat.MetalLB
	pools, err := readPoolDump(o.objects, compat)
	if o.objects == "" {
		pools, err = clusterPools(ctx, o.kube, compat)
	}
	if err != nil {
		return nil, err
	}
	cfg, _ = ipam.WithObjectPools(cfg, pools, nodes)
	nsLabels, err := namespaceLabels(ctx, o, cfg)
	if err != nil {
		return nil, err
	}
	t := *cfg.Terraform
	if t.CLIConfigFile, err = cliConfig(o.cliConfig, t.CLIConfigFile); err != nil {
		return nil, err
	}
	scratch, err := os.MkdirTemp("", "tfccm-plan-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(scratch)
	env, creds, secrets, err := tfenv.Workspace(t.EnvSettings(scratch))
	if err != nil {
		return nil, err
	}
	opts := fleet.Options{
		PreviewOptions: workspace.PreviewOptions{Binary: t.Binary, Env: env, Credentials: creds, ProviderLockFile: t.ProviderLockFile, Scrub: secret.NewScrubber(secrets)},
		Parallelism:    o.parallel,
		ScratchDir:     scratch,
		Gate:           g,
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = t.Parallelism
	}
	report := fleet.Plan(ctx, opts, fleet.Targets(cfg, loader.Set(), svcs, nodes, nsLabels))
	report.Set = cfg.TemplateSet
	if cfg.OverrideDir != "" {
		report.Set += " + " + cfg.OverrideDir
	}
	return report, nil
}

// clusterObjects reads the Services and Nodes from the dump or the cluster.
func clusterObjects(ctx context.Context, o planOptions) ([]*corev1.Service, []*corev1.Node, error) {
	if o.objects != "" {
		return manifest.ReadCluster(o.objects)
	}
	client, _, err := o.kube.client()
	if err != nil {
		return nil, nil, err
	}
	sl, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Services: %w", err)
	}
	nl, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("list Nodes: %w", err)
	}
	svcs := make([]*corev1.Service, len(sl.Items))
	for i := range sl.Items {
		svcs[i] = &sl.Items[i]
	}
	nodes := make([]*corev1.Node, len(nl.Items))
	for i := range nl.Items {
		nodes[i] = &nl.Items[i]
	}
	return svcs, nodes, nil
}

// namespaceLabels gives the namespaces' labels when an address pool
// selects by them and the objects come from the cluster (nil otherwise: a
// dump has no Namespaces).
func namespaceLabels(ctx context.Context, o planOptions, cfg *config.Config) (func(string) labels.Set, error) {
	if o.objects != "" || !slices.ContainsFunc(cfg.LoadBalancer.AddressPools, func(p config.AddressPool) bool { return len(p.NamespaceSels) > 0 }) {
		return nil, nil
	}
	client, _, err := o.kube.client()
	if err != nil {
		return nil, err
	}
	nl, err := client.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Namespaces (an address pool selects by their labels): %w", err)
	}
	byName := make(map[string]labels.Set, len(nl.Items))
	for _, n := range nl.Items {
		byName[n.Name] = labels.Set(n.Labels)
	}
	return func(ns string) labels.Set { return byName[ns] }, nil
}

// cliConfig is the CLI config tofu gets: --cli-config (which must exist),
// else $TF_CLI_CONFIG_FILE when it names a file (tofu only warns about a
// missing one, and that warning breaks reading its version), else the
// cloud config's. tofu runs in a scratch directory, so a relative path is
// made absolute.
func cliConfig(flagValue, fromConfig string) (string, error) {
	p := flagValue
	if p == "" {
		if env := os.Getenv("TF_CLI_CONFIG_FILE"); env != "" {
			if _, err := os.Stat(env); err == nil {
				p = env
			}
		}
	}
	if p == "" {
		return fromConfig, nil
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("--cli-config: %w", err)
	}
	return filepath.Abs(p)
}
