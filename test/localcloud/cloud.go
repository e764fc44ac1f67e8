package localcloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/tfccm/tfccm/internal/fsutil"
	"github.com/tfccm/tfccm/internal/repo"
)

// NodeSpec describes one node (VM) of the local cloud.
type NodeSpec struct {
	Name         string
	Zone         string
	Region       string
	InstanceType string
	// IPv6 gives the node an fd00:250::N/64 address besides 10.250.0.N/24.
	IPv6 bool
}

// Options configure Up. Zero values get defaults.
type Options struct {
	// Prefix of every netns, link and state dir name: 1-10 of [a-z0-9],
	// starting with a letter. Default "tfccm".
	Prefix string
	// Nodes of the cloud. Default: node-a, node-b (zone local-a) and
	// node-c (zone local-b), all dual-stack.
	Nodes []NodeSpec
	// Tofu is the OpenTofu binary. Default: $TFCCM_TOFU, else bin/tofu in
	// the repository, else "tofu" on PATH.
	Tofu string
	// StateDir holds HAProxy's config, VIP claims and sockets. Default /run/<Prefix>.
	StateDir string
	// WorkDir holds the infra workspace and its state. Default: a new
	// temporary directory (removed by Down).
	WorkDir string
	// InfraDir is the infra module. Default examples/local/infra in the repository.
	InfraDir string
	// TransitCIDR (a /30) and VIPPool override the automatic choice.
	TransitCIDR string
	VIPPool     string
	// VIPs is how many VIPs the automatic VIP pool must hold at least
	// (default a /24: 254; e.g. 1,000 for a burst bench gives a /22).
	VIPs int
}

// NodeInfo is a node as the infra's state records it.
type NodeInfo struct {
	Name         string `json:"name"`
	Netns        string `json:"netns"`
	Address      string `json:"address"`
	AddressV6    string `json:"address_v6"`
	Zone         string `json:"zone"`
	Region       string `json:"region"`
	InstanceType string `json:"instance_type"`
	Kind         string `json:"kind"`
	Running      bool   `json:"running"`
}

// Cloud is a running local cloud.
type Cloud struct {
	Prefix       string
	CloudNetns   string
	StateDir     string
	MasterSocket string
	StatsSocket  string
	VIPPool      string
	// VIPPool6 is the IPv6 VIP pool (reached from the cloud netns and the
	// IPv6 nodes, not from the host).
	VIPPool6 string
	// HostAddress is the host's end of the host<->cloud link: the source
	// address of connections from the host to a VIP.
	HostAddress string
	// CloudAddress is the cloud netns end (the host's next hop to the VIPs).
	CloudAddress string
	TransitCIDR  string
	// RoutedVIPs tells whether the cloud runs the routed-VIP service
	// (bin/lbhost-router, built by make build) for the local set's
	// `routed` load balancers.
	RoutedVIPs bool
	// WorkDir holds the infra workspace (WorkDir/infra) and its state.
	WorkDir string
	// Tofu is the OpenTofu binary used.
	Tofu string
	// RepoRoot is the repository the infra module was taken from ("" when
	// Options.InfraDir pointed elsewhere and no repository was found).
	RepoRoot string

	mu         sync.Mutex
	nodes      map[string]NodeSpec
	indexes    map[string]int
	info       map[string]NodeInfo
	ownWorkDir bool
}

var prefixRE = regexp.MustCompile(`^[a-z][a-z0-9]{0,9}$`)

// DefaultNodes are the nodes Up creates when Options.Nodes is empty.
func DefaultNodes() []NodeSpec {
	return []NodeSpec{
		{Name: "node-a", Zone: "local-a", Region: "local", InstanceType: "local.small", IPv6: true},
		{Name: "node-b", Zone: "local-a", Region: "local", InstanceType: "local.small", IPv6: true},
		{Name: "node-c", Zone: "local-b", Region: "local", InstanceType: "local.large", IPv6: true},
	}
}

// Up applies examples/local/infra (copied to WorkDir/infra) with OpenTofu
// and returns the running cloud. On failure it destroys what it created.
func Up(ctx context.Context, opts Options) (*Cloud, error) {
	c, err := newCloud(opts)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(filepath.Join("/run/netns", c.CloudNetns)); err == nil {
		return nil, fmt.Errorf("local cloud %q is already up (netns %s exists): bring it down or use another prefix", c.Prefix, c.CloudNetns)
	}
	infraDir := opts.InfraDir
	if infraDir == "" {
		if c.RepoRoot == "" {
			return nil, errors.New("local cloud: cannot find the repository (go.mod of github.com/tfccm/tfccm) above the working directory; set Options.InfraDir")
		}
		infraDir = filepath.Join(c.RepoRoot, "examples", "local", "infra")
	}
	if err := copyModule(infraDir, c.infraWorkspace()); err != nil {
		return nil, fmt.Errorf("local cloud: copy infra: %w", err)
	}

	unlock, err := lockHost()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if c.TransitCIDR == "" || c.VIPPool == "" {
		transit, pool, err := pickSlot(poolBits(opts.VIPs))
		if err != nil {
			return nil, err
		}
		if c.TransitCIDR == "" {
			c.TransitCIDR = transit
		}
		if c.VIPPool == "" {
			c.VIPPool = pool
		}
	}
	if err := c.tofu(ctx, "init", "-input=false", "-no-color"); err != nil {
		return nil, c.cleanupAfter(ctx, err)
	}
	if err := c.apply(ctx); err != nil {
		return nil, c.cleanupAfter(ctx, err)
	}
	return c, nil
}

func newCloud(opts Options) (*Cloud, error) {
	if opts.Prefix == "" {
		opts.Prefix = "tfccm"
	}
	if !prefixRE.MatchString(opts.Prefix) {
		return nil, fmt.Errorf("local cloud: prefix %q must be 1-10 of [a-z0-9] starting with a letter (link names are limited to 15 characters)", opts.Prefix)
	}
	if len(opts.Nodes) == 0 {
		opts.Nodes = DefaultNodes()
	}
	c := &Cloud{
		Prefix:      opts.Prefix,
		CloudNetns:  opts.Prefix + "-cloud",
		StateDir:    opts.StateDir,
		WorkDir:     opts.WorkDir,
		TransitCIDR: opts.TransitCIDR,
		VIPPool:     opts.VIPPool,
		nodes:       map[string]NodeSpec{},
		indexes:     map[string]int{},
		info:        map[string]NodeInfo{},
	}
	if c.StateDir == "" {
		c.StateDir = "/run/" + opts.Prefix
	}
	c.RepoRoot, _ = repo.Root()
	c.Tofu = opts.Tofu
	if c.Tofu == "" {
		if p, err := repo.TofuPath(); err == nil {
			c.Tofu = p
		} else {
			c.Tofu = "tofu"
		}
	}
	for _, n := range opts.Nodes {
		if err := c.addSpec(n); err != nil {
			return nil, err
		}
	}
	if c.WorkDir == "" {
		d, err := os.MkdirTemp("", "localcloud-"+opts.Prefix+"-")
		if err != nil {
			return nil, fmt.Errorf("local cloud: %w", err)
		}
		c.WorkDir, c.ownWorkDir = d, true
	}
	return c, nil
}

var nodeNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`)

func (c *Cloud) addSpec(n NodeSpec) error {
	if !nodeNameRE.MatchString(n.Name) {
		return fmt.Errorf("local cloud: node name %q must be 1-40 of [a-z0-9-]", n.Name)
	}
	if _, dup := c.nodes[n.Name]; dup {
		return fmt.Errorf("local cloud: node %q already exists", n.Name)
	}
	if n.Zone == "" {
		n.Zone = "local-a"
	}
	if n.Region == "" {
		n.Region = "local"
	}
	if n.InstanceType == "" {
		n.InstanceType = "local.small"
	}
	used := map[int]bool{}
	for _, i := range c.indexes {
		used[i] = true
	}
	idx := 11
	for used[idx] {
		idx++
	}
	if idx > 254 {
		return errors.New("local cloud: no node address left (at most 244 nodes)")
	}
	c.nodes[n.Name] = n
	c.indexes[n.Name] = idx
	return nil
}

func (c *Cloud) infraWorkspace() string { return filepath.Join(c.WorkDir, "infra") }

// apply writes the variables and runs tofu apply, then reads the outputs.
func (c *Cloud) apply(ctx context.Context) error {
	type node struct {
		Index        int    `json:"index"`
		Zone         string `json:"zone"`
		Region       string `json:"region"`
		InstanceType string `json:"instance_type"`
		IPv6         bool   `json:"ipv6"`
	}
	nodes := map[string]node{}
	for name, n := range c.nodes {
		nodes[name] = node{Index: c.indexes[name], Zone: n.Zone, Region: n.Region, InstanceType: n.InstanceType, IPv6: n.IPv6}
	}
	vars := map[string]any{
		"prefix": c.Prefix, "nodes": nodes, "vip_pool": c.VIPPool,
		"transit_cidr": c.TransitCIDR, "state_dir": c.StateDir,
	}
	// The routed-VIP service, when make build has built it.
	if c.RepoRoot != "" {
		if router := filepath.Join(c.RepoRoot, "bin", "lbhost-router"); fileExists(router) {
			vars["router_binary"] = router
		}
	}
	b, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return fmt.Errorf("local cloud: encode variables: %w", err)
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(c.infraWorkspace(), "terraform.tfvars.json"), b, 0o600); err != nil {
		return fmt.Errorf("local cloud: write variables: %w", err)
	}
	if err := c.tofu(ctx, "apply", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return err
	}
	return c.readOutputs(ctx)
}

func (c *Cloud) readOutputs(ctx context.Context) error {
	out, err := c.tofuOutput(ctx, "output", "-json")
	if err != nil {
		return err
	}
	var raw map[string]struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(out, &raw); err != nil {
		return fmt.Errorf("local cloud: decode outputs: %w", err)
	}
	str := func(name string) string {
		var s string
		_ = json.Unmarshal(raw[name].Value, &s)
		return s
	}
	var nodes map[string]NodeInfo
	if err := json.Unmarshal(raw["nodes"].Value, &nodes); err != nil {
		return fmt.Errorf("local cloud: decode nodes output: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.info = nodes
	c.CloudNetns = str("cloud_netns")
	c.StateDir = str("state_dir")
	c.MasterSocket = str("haproxy_master_socket")
	c.StatsSocket = str("haproxy_stats_socket")
	c.VIPPool = str("vip_pool")
	c.VIPPool6 = str("vip_pool6")
	c.HostAddress = str("host_address")
	_ = json.Unmarshal(raw["routed_vips"].Value, &c.RoutedVIPs)
	c.CloudAddress = str("cloud_address")
	return nil
}

// Down destroys the cloud and checks that nothing is left behind.
func (c *Cloud) Down(ctx context.Context) error {
	if err := c.tofu(ctx, "destroy", "-auto-approve", "-input=false", "-no-color"); err != nil {
		return err
	}
	if left := c.Leftovers(); len(left) > 0 {
		return fmt.Errorf("local cloud %s: destroy left %v behind", c.Prefix, left)
	}
	if c.ownWorkDir {
		return os.RemoveAll(c.WorkDir)
	}
	return nil
}

// Leftovers lists what of this cloud still exists on the host: netns,
// host link, state dir.
func (c *Cloud) Leftovers() []string {
	var left []string
	names := []string{c.Prefix + "-cloud"}
	c.mu.Lock()
	for name := range c.nodes {
		names = append(names, c.Prefix+"-n-"+name)
	}
	c.mu.Unlock()
	for _, ns := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", ns)); err == nil {
			left = append(left, "netns "+ns)
		}
	}
	if _, err := os.Stat(filepath.Join("/sys/class/net", c.Prefix+"-h")); err == nil {
		left = append(left, "link "+c.Prefix+"-h")
	}
	if _, err := os.Stat(c.StateDir); err == nil {
		left = append(left, "state dir "+c.StateDir)
	}
	sort.Strings(left)
	return left
}

// cleanupAfter destroys a half-made cloud after err and returns err.
func (c *Cloud) cleanupAfter(ctx context.Context, err error) error {
	if derr := c.tofu(context.WithoutCancel(ctx), "destroy", "-auto-approve", "-input=false", "-no-color"); derr != nil {
		return errors.Join(err, fmt.Errorf("and cleaning up failed: %w", derr))
	}
	return err
}

// AddNode adds a node and re-applies the infra.
func (c *Cloud) AddNode(ctx context.Context, n NodeSpec) error {
	c.mu.Lock()
	err := c.addSpec(n)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	return c.apply(ctx)
}

// RemoveNode removes a node and re-applies the infra.
func (c *Cloud) RemoveNode(ctx context.Context, name string) error {
	c.mu.Lock()
	if _, ok := c.nodes[name]; !ok {
		c.mu.Unlock()
		return fmt.Errorf("local cloud: no node %q", name)
	}
	delete(c.nodes, name)
	delete(c.indexes, name)
	c.mu.Unlock()
	return c.apply(ctx)
}

// Node returns a node's netns and addresses (zero NodeInfo if unknown).
func (c *Cloud) Node(name string) NodeInfo {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.info[name]
}

// Nodes returns the names of the cloud's nodes, sorted.
func (c *Cloud) Nodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Sorted(maps.Keys(c.info))
}

// InfraDir is the applied infra workspace; its state is what the
// instances template reads.
func (c *Cloud) InfraDir() string { return c.infraWorkspace() }

// LBSettings is what the cloud config's load_balancer.settings must hold
// for the local loadbalancer template.
func (c *Cloud) LBSettings() map[string]any {
	return map[string]any{"state_dir": c.StateDir, "cloud_netns": c.CloudNetns, "vip_pool": c.VIPPool, "vip_pool6": c.VIPPool6}
}

// RoutesSettings is what the cloud config's routes.settings must hold for
// the local routes template.
func (c *Cloud) RoutesSettings() map[string]any {
	return map[string]any{"cloud_netns": c.CloudNetns}
}

var (
	testSeqMu sync.Mutex
	testSeq   int
)

// ForTest brings up a cloud with a unique prefix (unless opts.Prefix is
// set) and destroys it when the test ends. It fails the test on error.
func ForTest(t testing.TB, opts Options) *Cloud {
	t.Helper()
	if opts.Prefix == "" {
		testSeqMu.Lock()
		testSeq++
		opts.Prefix = fmt.Sprintf("t%05x%x", os.Getpid()&0xfffff, testSeq)
		testSeqMu.Unlock()
	}
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	c, err := Up(context.Background(), opts)
	if err != nil {
		t.Fatalf("local cloud up: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Down(context.Background()); err != nil {
			t.Errorf("local cloud down: %v", err)
		}
	})
	return c
}

// LBObjects lists the load balancer objects the cloud holds: HAProxy
// fragments and VIP claims (the soak checks none outlives its Service).
func (c *Cloud) LBObjects() []string {
	var out []string
	for _, sub := range []string{"fragments", "claims"} {
		entries, _ := os.ReadDir(filepath.Join(c.StateDir, sub))
		for _, e := range entries {
			out = append(out, sub+"/"+e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
