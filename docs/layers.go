// The declared layer order of tfccm's packages: the one table that says
// which package may import which (checked by TestLayerOrder) and that
// groups the generated layout in development.md (TestLayoutUpToDate).

package docs

// Layer is one level of tfccm's package order. A package may import the
// packages of lower layers (of those Only names, when it names any);
// within its own layer, only packages of its own family (the same
// pattern), unless Peers says the layer's families may import each other.
// Test code (_test.go files) is above every layer.
type Layer struct {
	// Name is the layer's short name, shown in development.md.
	Name string
	// Owns says what the layer's packages are for, in one sentence.
	Owns string
	// Patterns are import paths relative to the module. "config" matches
	// config and every package beneath it (one family); "internal/*"
	// matches every package beneath internal/, each child (internal/tfenv
	// and its sub-packages) a family of its own. A package belongs to the
	// layer of its most specific matching pattern (the one with the most
	// characters besides "*"), so "internal/repo" takes internal/repo out
	// of "internal/*".
	Patterns []string
	// Peers lets a family import another family of the same layer.
	Peers bool
	// Only, when set, names the only lower layers the layer's packages
	// may import: a product kept apart from the layers between.
	Only []string
}

// Layers is tfccm's package order, from the bottom up. A new package falls
// into the layer of its parent's pattern; a new top-level package matches
// none, and TestLayerOrder fails until it is declared here.
var Layers = []Layer{
	{
		Name:     "internal",
		Owns:     "small rules and helpers shared by the layers above (the tofu environment, secrets, atomic writes, the inputs printer, encryption keys); each imports nothing of tfccm",
		Patterns: []string{"internal/*"},
	},
	{
		Name:     "declarations",
		Owns:     "what an admin and a Service owner write, declared once: the cloud config and the Service annotations",
		Patterns: []string{"config", "annotations"},
	},
	{
		Name:     "features",
		Owns:     "one decision each over the declarations: addresses, policy rules, change windows, the instances index read from Terraform state",
		Patterns: []string{"ipam", "gate", "instances"},
	},
	{
		Name:     "engine",
		Owns:     "the Terraform engine, the only place that runs tofu, and the packages of its jobs beneath it",
		Patterns: []string{"workspace"},
	},
	{
		Name:     "render",
		Owns:     "the template sets and the one render of a workspace from a Service or the routes",
		Patterns: []string{"templates"},
	},
	{
		Name:     "controllers",
		Owns:     "what drives the engine with rendered workspaces besides the cloudprovider façade: the fleet plan",
		Patterns: []string{"fleet"},
	},
	{
		Name:     "ccm",
		Owns:     "the cloudprovider.Interface façade the cloud-controller-manager calls",
		Patterns: []string{"ccm"},
	},
	{
		Name:     "frr",
		Owns:     "FRR's typed BGP configuration, its checks and its rendering: one owner of the rules for LB hosts (lbhost) and the cluster's nodes (nodelb, BGP mode)",
		Patterns: []string{"lbhost/frr"},
		Only:     []string{"internal"},
	},
	{
		Name:     "nodelb",
		Owns:     "node mode: the NodeVIP and NodeBGP objects, the holder rule, the node agent and its announcements; below lbhost, whose provider writes NodeVIPs, and kept apart from the CCM like it",
		Patterns: []string{"nodelb"},
		Only:     []string{"internal", "frr"},
	},
	{
		Name:     "lbhost",
		Owns:     "the lbhost product: tfccm's own Terraform provider for Linux load-balancer hosts and the services those hosts run, kept apart from the CCM, whose layers are all below it",
		Patterns: []string{"lbhost"},
		Only:     []string{"internal", "frr", "nodelb"},
	},
	{
		Name:     "deploy",
		Owns:     "what installs and ships tfccm: manifests, the Helm chart, the image, load-balancer host files, GitOps health checks",
		Patterns: []string{"deploy"},
	},
	{
		Name:     "commands",
		Owns:     "the binaries: each main package wires the layers below into one command",
		Patterns: []string{"cmd/*"},
	},
	{
		Name:     "test support",
		Owns:     "helpers for tests and tools only (the repository's pinned tools, polling, golden files), so no production package imports them",
		Patterns: []string{"internal/testkit", "internal/repo", "internal/frrtest"},
	},
	{
		Name:     "tests and tools",
		Owns:     "end-to-end tests and what they run, development and release tools, and the documentation with its tests; the test code of every package belongs here too",
		Patterns: []string{"test/*", "hack/*", "docs", "lbhost/hosttest"},
		Peers:    true,
	},
}
