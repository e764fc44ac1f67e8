package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/config/chartvalues"
	"github.com/tfccm/tfccm/internal/manifest"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/workspace"
)

func runRender(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tfccm render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "cloud config file (HCL), as passed to the controller with --cloud-config")
	valuesPath := fs.String("values", "", "or the Helm chart's values file: the cloud config the chart gives the controller (release tfccm in kube-system)")
	svcPath := fs.String("service", "", "the v1 Service (YAML or JSON) to render the load balancer of")
	nodesPath := fs.String("nodes", "", "v1 Nodes: a NodeList or one Node per YAML document")
	poolsPath := fs.String("pools", "", "the cluster's AddressPool objects (kubectl get addresspools -o yaml), allocated from as the controller does")
	out := fs.String("out", "", "directory to write the workspace into (created if missing)")
	routes := fs.Bool("routes", false, "render the cluster's routes workspace (from the Nodes' podCIDRs) instead of a load balancer")
	peering := fs.Bool("peering", false, "render the cluster's BGP peering workspace (the set's bgp module, from load_balancer.settings.bgp) instead of a load balancer: what the controller applies")
	backend := fs.String("backend", "config", "config: the cloud config's backend, as the controller uses it; local: a local state beside the workspace's files and no state encryption, so `tofu init && tofu plan` runs without the cluster (CI)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: tfccm render [--backend config|local] --config cloud.hcl|--values values.yaml --service svc.yaml --nodes nodes.yaml --out DIR\n       tfccm render [--backend config|local] --routes --config cloud.hcl|--values values.yaml --nodes nodes.yaml --out DIR\n       tfccm render [--backend config|local] --peering --config cloud.hcl|--values values.yaml --out DIR")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	if *cfgPath != "" && *valuesPath != "" {
		fmt.Fprintln(stderr, "tfccm render: --config and --values are exclusive")
		return exitUsage
	}
	var missing []string
	for _, f := range []struct{ name, val string }{{"--config", *cfgPath + *valuesPath}, {"--nodes", *nodesPath}, {"--out", *out}} {
		if f.val == "" && !(*peering && f.name == "--nodes") {
			missing = append(missing, f.name)
		}
	}
	if !*routes && !*peering && *svcPath == "" {
		missing = append(missing, "--service")
	}
	if n := btoi(*routes) + btoi(*peering) + btoi(*svcPath != ""); n > 1 {
		fmt.Fprintln(stderr, "tfccm render: --service, --routes and --peering are exclusive")
		return exitUsage
	}
	if *backend != "config" && *backend != "local" {
		fmt.Fprintf(stderr, "tfccm render: --backend is config or local, not %q\n", *backend)
		return exitUsage
	}
	if len(missing) > 0 || fs.NArg() > 0 {
		fmt.Fprintf(stderr, "tfccm render: missing %s\n", strings.Join(missing, ", "))
		fs.Usage()
		return exitUsage
	}
	target := targetService
	switch {
	case *routes:
		target = targetRoutes
	case *peering:
		target = targetPeering
	}
	ws, err := render(cloudConfig{*cfgPath, *valuesPath}, renderInputs{*svcPath, *nodesPath, *poolsPath}, target, *backend == "local")
	if err != nil {
		fmt.Fprintf(stderr, "tfccm render: %v\n", err)
		return exitError
	}
	if err := ws.WriteDir(*out); err != nil {
		fmt.Fprintf(stderr, "tfccm render: %v\n", err)
		return exitError
	}
	fmt.Fprintf(stdout, "Wrote workspace %s (template %s, hash %s) to %s.\n", ws.Name, ws.Module, ws.Hash, *out)
	if ws.StateWorkspace != "default" {
		fmt.Fprintf(stdout, "The backend keeps workspaces apart by name: run `tofu workspace select -or-create %s` after init.\n", ws.StateWorkspace)
	}
	if len(ws.BackendConfig) > 0 {
		var names []string
		for k := range ws.BackendConfig {
			names = append(names, k)
		}
		fmt.Fprintf(stdout, "Secret backend settings (%s) are not written; pass them to `tofu init` with -backend-config or the backend's environment variables.\n", strings.Join(sortStrings(names), ", "))
	}
	return exitOK
}

// cloudConfig names where render's cloud config comes from: a cloud
// config file, or a chart values file (exactly one is set).
type cloudConfig struct{ path, values string }

// load reads the cloud config: the file, or the one the chart gives the
// controller for the values file (chartvalues.Load).
func (c cloudConfig) load() (*config.Config, error) {
	if c.values == "" {
		return config.Load(c.path)
	}
	b, err := os.ReadFile(c.values)
	if err != nil {
		return nil, fmt.Errorf("read values: %w", err)
	}
	cfg, err := chartvalues.Load(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", c.values, err)
	}
	return cfg, nil
}

// renderInputs are the files `tfccm render` reads besides the config.
type renderInputs struct{ svcPath, nodesPath, poolsPath string }

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// renderTarget is the workspace `tfccm render` renders.
type renderTarget int

const (
	targetService renderTarget = iota // a Service's load balancer
	targetRoutes                      // the cluster's routes
	targetPeering                     // the cluster's BGP peering
)

// render loads everything exactly as the controller does and renders the
// workspace; nothing is written. offline swaps the backend for a local one
// (config.Offline).
func render(src cloudConfig, in renderInputs, target renderTarget, offline bool) (*workspace.Spec, error) {
	svcPath, nodesPath := in.svcPath, in.nodesPath
	cfg, err := src.load()
	if err != nil {
		return nil, err
	}
	pools, err := readPoolDump(in.poolsPath, cfg.Compat != nil && cfg.Compat.MetalLB)
	if err != nil {
		return nil, err
	}
	if offline {
		cfg = cfg.Offline()
	}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		return nil, err
	}
	if target == targetPeering {
		ws, ok, err := loader.Set().RenderPeering(cfg)
		switch {
		case err != nil:
			return nil, err
		case !ok && loader.Set().Peering() == nil:
			return nil, fmt.Errorf("the template set has no %s module: there is no BGP peering to render", templates.PeeringDir)
		case !ok:
			return nil, fmt.Errorf("load_balancer.settings has no bgp: the controller applies no BGP peering (and destroys one applied earlier once no Service of the %s variant is left)", templates.PeeringVariant)
		}
		return ws, nil
	}
	nodes, err := manifest.ReadNodes(nodesPath)
	if err != nil {
		return nil, err
	}
	cfg, _ = ipam.WithObjectPools(cfg, pools, nodes)
	set := loader.Set()
	if target == targetRoutes {
		return set.RenderRoutes(cfg, templates.RoutesFromNodes(nodes))
	}
	svc, err := manifest.ReadService(svcPath)
	if err != nil {
		return nil, err
	}
	if svc.Spec.Type != corev1.ServiceTypeLoadBalancer {
		return nil, fmt.Errorf("%s: Service %s/%s has type %q; only type LoadBalancer gets a load balancer", svcPath, svc.Namespace, svc.Name, svc.Spec.Type)
	}
	if !cfg.ServesClass(svc.Spec.LoadBalancerClass) {
		return nil, fmt.Errorf("%s: Service %s/%s: %s", svcPath, svc.Namespace, svc.Name, notServed(cfg, svc.Spec.LoadBalancerClass))
	}
	// No cluster: the book knows the Service's own status (the addresses
	// it has, kept as the controller keeps them).
	a, err := ipam.Offline(cfg, []*corev1.Service{svc}, nil).Decide(svc)
	if err != nil {
		return nil, fmt.Errorf("Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	ws, err := set.RenderLoadBalancer(cfg, svc, nodes, templates.Addresses{IPs: a.IPs, Shared: a.Shared, Segments: a.Segments})
	if err != nil {
		return nil, fmt.Errorf("Service %s/%s: %w", svc.Namespace, svc.Name, err)
	}
	return ws, nil
}

// notServed says why tfccm leaves a Service of class (nil: none) alone.
func notServed(cfg *config.Config, class *string) string {
	if class == nil {
		return "it has no loadBalancerClass and the cloud config sets serve_classless = false, so tfccm leaves it to another implementation"
	}
	return fmt.Sprintf("its loadBalancerClass %q is not tfccm's (load_balancer_class %q), so tfccm leaves it alone", *class, cfg.LoadBalancerClass)
}

func sortStrings(s []string) []string {
	sort.Strings(s)
	return s
}
