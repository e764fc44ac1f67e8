// Command conformance runs the upstream Kubernetes e2e LoadBalancer specs
// (bin/e2e.test, make tools-e2e) against tfccm on real nodes (make
// conformance, make conformance-fast, make conformance-nodes).
//
//	go run ./hack/conformance [--nodes 3] [--set local|nodes] [--focus RE] [--skip RE] [--parallel N] [--dir DIR] [--out FILE]
//
// It brings up the control plane with N real nodes in the local cloud
// (test/nodes), starts tfccm as their CCM with the local set's `routed`
// module as the cluster's default LoadBalancer module (an override_dir) or,
// with --set nodes, node mode (the nodes set, a pool on the nodes' network,
// a node agent on each real node: make conformance-nodes), lists
// the specs the focus selects, runs each in its own e2e.test process (up to
// --parallel at once, each in its own namespaces, with its own JUnit report),
// tears everything down and writes the per-spec result table (Markdown) to
// --out. It exits non-zero if a spec failed.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/test/harness"
	"github.com/tfccm/tfccm/test/nodes"
)

// Focus selects the upstream LoadBalancer specs.
const Focus = `\[sig-network\] LoadBalancers`

type options struct {
	nodes, parallel int
	focus, skip     string
	dir, out        string
	specTimeout     time.Duration
	keep            bool
	prefix          string
	module          string
	set             string
}

func main() {
	var o options
	flag.IntVar(&o.nodes, "nodes", 3, "real nodes")
	flag.IntVar(&o.parallel, "parallel", 4, "e2e.test processes at once (one spec each)")
	flag.StringVar(&o.focus, "focus", Focus, "ginkgo focus: the specs to run")
	flag.StringVar(&o.skip, "skip", "", "ginkgo skip: specs not to run (see the README for why)")
	flag.StringVar(&o.dir, "dir", ".work/conformance", "work directory (cluster, logs, JUnit reports); emptied first")
	flag.StringVar(&o.out, "out", "", "result table (Markdown); default DIR/results.md")
	flag.DurationVar(&o.specTimeout, "spec-timeout", 25*time.Minute, "limit of one spec's e2e.test process")
	flag.BoolVar(&o.keep, "keep", false, "leave the cluster up afterwards (bin/devcluster down --dir DIR/cluster)")
	flag.StringVar(&o.prefix, "prefix", "tfccmcf", "local cloud name prefix")
	flag.StringVar(&o.module, "module", "loadbalancer.routed", "the local set's LoadBalancer module the run makes the default (e.g. loadbalancer.l4)")
	flag.StringVar(&o.set, "set", "local", "the template set serving LoadBalancers: local (its --module the default) or nodes (node mode: the nodes set, a node agent on each real node)")
	flag.Parse()
	start := time.Now()
	err := run(o)
	fmt.Printf("==> conformance took %s\n", time.Since(start).Round(time.Second))
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		os.Exit(1)
	}
}

func say(format string, args ...any) { fmt.Printf("==> "+format+"\n", args...) }

func run(o options) (err error) {
	if o.set != "local" && o.set != "nodes" {
		return errNoSet
	}
	root, err := repo.Root()
	if err != nil {
		return err
	}
	bin := filepath.Join(root, "bin")
	e2e := filepath.Join(bin, "e2e.test")
	if _, err := os.Stat(e2e); err != nil {
		return fmt.Errorf("%s missing (run `make tools-e2e`)", e2e)
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return err
	}
	if o.out == "" {
		o.out = filepath.Join(dir, "results.md")
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
		return err
	}
	specs, err := listSpecs(e2e, dir, o.focus, o.skip)
	if err != nil {
		return err
	}
	say("%d specs selected", len(specs))

	ctx := context.Background()
	clusterDir := filepath.Join(dir, "cluster")
	say("starting the control plane, CoreDNS and %d real nodes", o.nodes)
	// One host route to the nodes' network fits the machine: wait for
	// another run's or test's cluster to release it.
	unlock, err := nodes.LockHostRoute()
	if err != nil {
		return err
	}
	defer unlock() // after the cluster's down (deferred below)
	c, err := nodes.Up(ctx, nodes.Options{Dir: clusterDir, Nodes: o.nodes, Prefix: o.prefix, HostRoute: true})
	if err != nil {
		return err
	}
	var ccm *harness.CCM
	var nodeAgents *agents
	defer func() {
		if ccm != nil {
			ccm.Stop()
		}
		if nodeAgents != nil {
			nodeAgents.stop()
		}
		if o.keep {
			say("cluster left up: bin/devcluster down --dir %s", clusterDir)
			return
		}
		say("tearing down")
		if derr := nodes.Down(context.Background(), clusterDir); derr != nil {
			err = fmt.Errorf("%w; down: %v", err, derr)
		}
	}()
	if o.set == "nodes" {
		if nodeAgents, err = startNodeAgents(ctx, c, root, bin, dir); err != nil {
			return err
		}
		say("node agents on %d nodes (logs: %s)", len(c.Nodes), filepath.Join(dir, "agents"))
	}
	if ccm, err = startCCM(c, root, bin, dir, o); err != nil {
		return err
	}
	say("tfccm is the CCM (log: %s)", ccm.LogPath)
	if err := harness.WaitNodesInitialized(ctx, c.Client(), 3*time.Minute); err != nil {
		return fmt.Errorf("%w\nCCM log:\n%s", err, ccm.LogTail(40))
	}

	say("running %d specs, %d at a time (logs and JUnit reports in %s)", len(specs), o.parallel, filepath.Join(dir, "reports"))
	results := runSpecs(e2e, bin, c.Kubeconfig(), dir, specs, o)
	table := Table(results)
	fmt.Print(table)
	if err := os.WriteFile(o.out, []byte(table), 0o644); err != nil {
		return err
	}
	say("result table: %s", o.out)
	if n := countStatus(results, "failed"); n > 0 {
		return fmt.Errorf("%d of %d specs failed", n, len(results))
	}
	return nil
}

// startCCM runs tfccm (bin/, make build) as the cluster's CCM. Its default
// LoadBalancer module is the local set's module (by default the `routed`
// variant), through an override directory: the upstream specs need what
// only a routed VIP gives (Services without node ports, client addresses
// kept for externalTrafficPolicy: Local, the VIP served by kube-proxy).
// With --set nodes it is the nodes set's (nodeModeConfig).
func startCCM(c *nodes.Cluster, root, bin, dir string, o options) (*harness.CCM, error) {
	cfg, err := ccmConfig(c, root, bin, dir, o)
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "cloud.hcl")
	if err := cfg.Write(cfgPath); err != nil {
		return nil, err
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
	if o.set == "nodes" {
		// The nodes set's provider writes NodeVIPs with the kubeconfig a
		// client finds by default (~/.kube/config: tofu gets HOME, never
		// KUBECONFIG), as the chart's pod has its in-cluster credentials.
		home, err := kubeHome(c, dir)
		if err != nil {
			return nil, err
		}
		env = append(env, "HOME="+home)
	}
	return harness.StartCCM(harness.CCMOptions{
		Binary: filepath.Join(bin, "terraform-cloud-controller-manager"), Kubeconfig: c.Kubeconfig(),
		CloudConfig: cfgPath, Dir: dir, StopGrace: 30 * time.Second, Flags: nodes.CCMFlags, Env: env,
	})
}

// ccmConfig is the CCM's cloud config for the run's set.
func ccmConfig(c *nodes.Cluster, root, bin, dir string, o options) (harness.CloudConfig, error) {
	if o.set == "nodes" {
		return nodeModeConfig(c, root, bin, dir)
	}
	module := o.module
	if !regexp.MustCompile(`^loadbalancer(\.[a-z0-9-]+)?$`).MatchString(module) {
		return harness.CloudConfig{}, fmt.Errorf("--module %q is not a LoadBalancer module of the local set", module)
	}
	overrides := filepath.Join(dir, "templates")
	if err := os.CopyFS(filepath.Join(overrides, "loadbalancer"), os.DirFS(filepath.Join(root, "templates", "local", module))); err != nil {
		return harness.CloudConfig{}, err
	}
	return nodes.CCMConfig(c, "conformance", filepath.Join(dir, "tfccm"), filepath.Join(bin, "tofu"), filepath.Join(bin, "lbhost.tfrc"), overrides), nil
}

// spec is one selected spec: its full text (containers and leaf, what
// --ginkgo.focus matches) and its leaf text.
type spec struct{ Full, Leaf string }

// listSpecs asks e2e.test which specs focus and skip select (a dry run,
// JSON report).
func listSpecs(e2e, dir, focus, skip string) ([]spec, error) {
	report := filepath.Join(dir, "dry-run.json")
	args := []string{"--ginkgo.dry-run", "--ginkgo.focus=" + focus, "--ginkgo.json-report=" + report, "--ginkgo.no-color", "--kubeconfig=/dev/null"}
	if skip != "" {
		args = append(args, "--ginkgo.skip="+skip)
	}
	if out, err := exec.Command(e2e, args...).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("e2e.test dry run: %v: %s", err, tail(string(out), 20))
	}
	b, err := os.ReadFile(report)
	if err != nil {
		return nil, err
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
		}
	}
	if err := json.Unmarshal(b, &reports); err != nil {
		return nil, fmt.Errorf("dry-run report: %w", err)
	}
	var specs []spec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if s.LeafNodeType != "It" || s.State != "passed" {
				continue // suite nodes; specs the focus does not select
			}
			specs = append(specs, spec{Full: strings.Join(append(s.ContainerHierarchyTexts, s.LeafNodeText), " "), Leaf: s.LeafNodeText})
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("focus %q selects no spec", focus)
	}
	return specs, nil
}

// runSpecs runs each spec in its own e2e.test process, o.parallel at once,
// and reads each one's JUnit report.
func runSpecs(e2e, bin, kubeconfig, dir string, specs []spec, o options) []Result {
	results := make([]Result, len(specs))
	sem := make(chan struct{}, o.parallel)
	var wg sync.WaitGroup
	for i, s := range specs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			results[i] = runSpec(e2e, bin, kubeconfig, filepath.Join(dir, "reports"), i, s, o.specTimeout)
			say("%-7s %s (%s)", results[i].Status, s.Leaf, results[i].Duration.Round(time.Second))
		}()
	}
	wg.Wait()
	return results
}

// runSpec runs one spec; its log and JUnit report are reports/spec-NN.*.
func runSpec(e2e, bin, kubeconfig, reports string, i int, s spec, timeout time.Duration) Result {
	base := filepath.Join(reports, fmt.Sprintf("spec-%02d", i))
	junit := base + ".xml"
	ctx, cancel := context.WithTimeout(context.Background(), timeout+time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, e2e,
		"--ginkgo.focus="+regexp.QuoteMeta(s.Full),
		"--ginkgo.junit-report="+junit,
		"--ginkgo.timeout="+timeout.String(),
		"--ginkgo.no-color", "--ginkgo.v",
		"--kubeconfig="+kubeconfig,
		// No cloud provider of the e2e framework's own: the specs talk to
		// the cluster and reach load balancers from this machine.
		"--provider=local",
		"--node-os-distro=debian",
		"--disable-log-dump", "--dump-logs-on-failure=false",
	)
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"))
	logf, err := os.Create(base + ".log")
	if err != nil {
		return Result{Spec: s.Leaf, Status: "failed", Message: err.Error()}
	}
	defer logf.Close()
	cmd.Stdout, cmd.Stderr = logf, logf
	start := time.Now()
	runErr := cmd.Run()
	rs, err := ReadJUnit(junit)
	if err != nil || len(rs) != 1 {
		msg := fmt.Sprintf("no result in %s (%v, %d cases); e2e.test: %v", junit, err, len(rs), runErr)
		return Result{Spec: s.Leaf, Status: "failed", Message: msg, Duration: time.Since(start)}
	}
	rs[0].Spec = s.Leaf
	return rs[0]
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
