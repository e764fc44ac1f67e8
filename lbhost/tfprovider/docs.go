// docs/lbhost.md generated from the provider's schemas.

package tfprovider

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/datasource"
	dschema "github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	pschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	rschema "github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// attribute is what provider and resource schema attributes share.
type attribute interface {
	IsRequired() bool
	IsOptional() bool
	IsComputed() bool
	IsSensitive() bool
	GetDescription() string
	GetType() attr.Type
}

// examples and import ids, by resource type name.
var docExamples = map[string]string{
	"lbhost_vip": `resource "lbhost_vip" "web" {
  owner = "prod_web"
  pool  = "10.252.0.0/24"
}`,
	"lbhost_frontend": `resource "lbhost_frontend" "web" {
  name    = "prod_web"
  address = lbhost_vip.web.address
  ports   = [{ port = 80, node_port = 30080 }]
  backends = [
    { name = "node-a", address = "10.250.0.11" },
    { name = "node-b", address = "10.250.0.12" },
  ]
  health_check = { protocol = "HTTP", port = 10256, path = "/healthz" }
}`,
	"lbhost_backend_health": `data "lbhost_backend_health" "web" {
  frontend = lbhost_frontend.web.name
}

output "backends" {
  value = [for b in data.lbhost_backend_health.web.backends : { name = b.name, healthy = b.healthy }]
}`,
	"lbhost_vip_holder": `data "lbhost_vip_holder" "web" {
  owner = lbhost_vip.web.owner
}

output "holds_web" {
  value = data.lbhost_vip_holder.web.held
}`,
	"lbhost_node_vip_holder": `data "lbhost_node_vip_holder" "web" {
  name = lbhost_node_vip.web.name
}

output "web_holder" {
  value = data.lbhost_node_vip_holder.web.holder
}`,
	"lbhost_l4_frontend": `resource "lbhost_l4_frontend" "dns" {
  name    = "prod_dns"
  address = lbhost_vip.dns.address
  ports = [
    { protocol = "UDP", port = 53, node_port = 30053 },
    { protocol = "TCP", port = 53, node_port = 30053 },
  ]
  backends = [
    { name = "node-a", address = "10.250.0.11" },
    { name = "node-b", address = "10.250.0.12" },
  ]
  health_check = { protocol = "HTTP", port = 10256, path = "/healthz" }
}`,
	"lbhost_node_vip": `provider "lbhost" {
  kubernetes = { namespace = "tfccm-system" }
}

resource "lbhost_node_vip" "web" {
  name                    = "prod-web-4"
  address                 = "192.168.1.240"
  service                 = { namespace = "shop", name = "web" }
  ports                   = [{ protocol = "TCP", port = 443 }, { protocol = "UDP", port = 443 }]
  external_traffic_policy = "Local"
  nodes                   = ["node-a", "node-b", "node-c"]
}`,
	"lbhost_route": `resource "lbhost_route" "pods_node_a" {
  destination = "10.244.1.0/24"
  gateway     = "10.250.0.11"
}`,
}

var docImports = map[string]string{
	"lbhost_vip":         "tofu import lbhost_vip.web 'prod_web,10.252.0.0/24'   # <owner>,<pool>[,<interface>]",
	"lbhost_frontend":    "tofu import lbhost_frontend.web prod_web           # <name>",
	"lbhost_route":       "tofu import lbhost_route.pods_node_a 10.244.1.0/24  # <destination>",
	"lbhost_l4_frontend": "tofu import lbhost_l4_frontend.dns prod_dns     # <name>",
	"lbhost_node_vip":    "tofu import lbhost_node_vip.web prod-web-4      # <NodeVIP name> (in the provider's namespace)",
}

// hostSetup is what a host must provide; the provider manages only its own
// files and objects on it.
const hostSetup = `## What the host provides

One provider configuration is one host. lbhost manages only its own objects there (and HAProxy's
server-state file, which it filters at every reload); it never rewrites the host's own configuration:

- HAProxy (2.6+) in master-worker mode, loading ` + "`<config_dir>/base.cfg`" + ` (global and defaults:
  ` + "`server-state-file <config_dir>/server-state`" + ` and ` + "`load-server-state-from-file global`" + `) and
  the directory ` + "`<config_dir>/fragments`" + `, with its master CLI at ` + "`<config_dir>/master.sock`" + `:
  ` + "`haproxy -W -S <config_dir>/master.sock -f <config_dir>/base.cfg -f <config_dir>/fragments`" + `.
  ` + "`examples/local/infra`" + ` sets up exactly this in the local cloud.
- For ` + "`lbhost_vip`" + ` with ` + "`vrrp`" + `: keepalived whose main configuration includes
  ` + "`<config_dir>/keepalived/*.conf`" + `; on a VRRP backup HAProxy binds a VIP it does not hold, so set
  ` + "`net.ipv4.ip_nonlocal_bind = 1`" + ` (and ` + "`net.ipv6.ip_nonlocal_bind = 1`" + ` for IPv6 VIPs).
- For ` + "`lbhost_l4_frontend`" + `: ` + "`nft`" + ` (nftables) and the router service running where the
  rules belong, ` + "`lbhost-router -l4 <config_dir>/l4`" + ` (as root; it health-checks the backends and loads
  table ` + "`lbhost_l4`" + `), IPv4 forwarding on, and ` + "`conntrack`" + ` (conntrack-tools, optional: UDP flows to a failed
  backend are flushed with it).
- ` + "`ip`" + ` (iproute2), ` + "`ss`" + `, ` + "`flock`" + `, and for the ssh transport ` + "`sh`" + `, ` + "`env`" + `, ` + "`cat`" + `, ` + "`tar`" + `
  and OpenSSH's streamlocal forwarding (on by default) to reach the master CLI socket.

Every change takes ` + "`flock <config_dir>/lock`" + `; commands are argv vectors (over ssh each argument is
single-quoted for the remote shell, and every value is validated first). Load balancer changes are
group commits: each new fragment is staged under the lock in ` + "`<config_dir>/pending/`" + `, outside what HAProxy
loads, and checked there on its own with ` + "`haproxy -c`" + `; whoever holds ` + "`<config_dir>/commit.lock`" + ` then moves
every staged fragment into ` + "`fragments/`" + ` and reloads HAProxy once, so applies that arrive together
share one reload. When HAProxy's master refuses the whole configuration (its old workers run on), the
fragments of that commit HAProxy rejects on their own are restored and fail, the others are reloaded
without them; if it is refused without any of them (a fragment not lbhost's), every fragment of the
commit is restored. A change staged by a provider that died goes in with the next commit.

A host that cannot be connected to at all (ssh: no route, refused, 10 s connect timeout) fails
neither the plan nor the apply: at plan its resources keep their last recorded state with a warning
naming the host; at apply a change to it is recorded in state as pending (a warning: ` + "`host unreachable, change pending`" + `), so
a configuration spanning several hosts goes on with the others. The first refresh that reaches the
host again finds its objects differ or are missing, and the next apply (tfccm's drift check) writes
them. Destroying an object of an unreachable host fails, unless the provider's ` + "`forget_unreachable`" + ` is set (a
retired host that will not come back). A connection that stops answering mid-apply is closed after two missed SSH
keepalives (5 s apart), failing what waited on it. A host that answers wrongly (host key mismatch,
authentication) is an error.
`

// Docs renders the provider's reference page from its schemas: every
// resource, data source and argument, with examples and import ids. docs/lbhost.md is
// this output; a test fails when it is stale.
func Docs() string {
	ctx := context.Background()
	var b strings.Builder
	p := New(Version)()
	var ps provider.SchemaResponse
	p.Schema(ctx, provider.SchemaRequest{}, &ps)
	fmt.Fprintf(&b, "# lbhost provider\n\n<!-- Generated by lbhost/tfprovider.Docs (go test ./lbhost/tfprovider -run TestDocs -update). Do not edit. -->\n\n")
	fmt.Fprintf(&b, "Source `%s`, version %s, plugin protocol 6.\n\n%s\n\n", Address, Version, ps.Schema.Description)
	b.WriteString("Installed by `make build` into the filesystem mirror `bin/providers`; `bin/lbhost.tfrc` is a CLI configuration " +
		"(`TF_CLI_CONFIG_FILE`) that installs it from there:\n\n```hcl\nterraform {\n  required_providers {\n    lbhost = { source = \"tfccm/lbhost\" }\n  }\n}\n\n" +
		"provider \"lbhost\" {\n  netns      = \"tfccm-cloud\"\n  config_dir = \"/run/tfccm\"\n}\n```\n\n")
	b.WriteString(hostSetup)
	b.WriteString("\n## Provider arguments\n\n")
	writeProviderAttrs(&b, ps.Schema.Attributes, "")
	for _, f := range p.Resources(ctx) {
		r := f()
		var md resource.MetadataResponse
		r.Metadata(ctx, resource.MetadataRequest{ProviderTypeName: "lbhost"}, &md)
		var rs resource.SchemaResponse
		r.Schema(ctx, resource.SchemaRequest{}, &rs)
		fmt.Fprintf(&b, "\n## Resource `%s`\n\n%s\n\n", md.TypeName, rs.Schema.Description)
		if ex := docExamples[md.TypeName]; ex != "" {
			fmt.Fprintf(&b, "```hcl\n%s\n```\n\n", ex)
		}
		b.WriteString("### Arguments\n\n")
		writeResourceAttrs(&b, rs.Schema.Attributes, "")
		if imp := docImports[md.TypeName]; imp != "" {
			fmt.Fprintf(&b, "\n### Import\n\n```sh\n%s\n```\n", imp)
		}
	}
	for _, f := range p.DataSources(ctx) {
		d := f()
		var md datasource.MetadataResponse
		d.Metadata(ctx, datasource.MetadataRequest{ProviderTypeName: "lbhost"}, &md)
		var ds datasource.SchemaResponse
		d.Schema(ctx, datasource.SchemaRequest{}, &ds)
		fmt.Fprintf(&b, "\n## Data source `%s`\n\n%s\n\n", md.TypeName, ds.Schema.Description)
		if ex := docExamples[md.TypeName]; ex != "" {
			fmt.Fprintf(&b, "```hcl\n%s\n```\n\n", ex)
		}
		b.WriteString("### Arguments\n\n")
		writeDataSourceAttrs(&b, ds.Schema.Attributes, "")
	}
	return b.String()
}

func writeDataSourceAttrs(b *strings.Builder, attrs map[string]dschema.Attribute, indent string) {
	for _, name := range sorted(attrs) {
		a := attrs[name]
		line(b, indent, name, a, "")
		switch n := a.(type) {
		case dschema.ListNestedAttribute:
			writeDataSourceAttrs(b, n.NestedObject.Attributes, indent+"  ")
		case dschema.MapNestedAttribute:
			writeDataSourceAttrs(b, n.NestedObject.Attributes, indent+"  ")
		}
	}
}

func line(b *strings.Builder, indent, name string, a attribute, extra string) {
	kind := "optional"
	switch {
	case a.IsRequired():
		kind = "required"
	case a.IsComputed() && !a.IsOptional():
		kind = "computed"
	}
	if a.IsSensitive() {
		kind += ", sensitive"
	}
	desc := a.GetDescription()
	if extra != "" {
		desc = strings.TrimSpace(desc + " " + extra)
	}
	fmt.Fprintf(b, "%s- `%s` (%s, %s): %s\n", indent, name, typeName(a.GetType()), kind, desc)
}

func typeName(t attr.Type) string {
	switch tt := t.(type) {
	case types.ListType:
		return "list(" + typeName(tt.ElemType) + ")"
	case types.MapType:
		return "map(" + typeName(tt.ElemType) + ")"
	case types.ObjectType:
		return "object"
	}
	switch t {
	case types.StringType:
		return "string"
	case types.Int64Type:
		return "number"
	case types.BoolType:
		return "bool"
	}
	if lt, ok := t.(interface{ ElementType() attr.Type }); ok {
		return "list(" + typeName(lt.ElementType()) + ")"
	}
	return strings.ToLower(strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", t), "basetypes."), "Type"))
}

func sorted[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func writeProviderAttrs(b *strings.Builder, attrs map[string]pschema.Attribute, indent string) {
	for _, name := range sorted(attrs) {
		a := attrs[name]
		line(b, indent, name, a, "")
		if n, ok := a.(pschema.SingleNestedAttribute); ok {
			writeProviderAttrs(b, n.Attributes, indent+"  ")
		}
	}
}

func defaultOf(a rschema.Attribute) string {
	ctx := context.Background()
	var d interface{ Description(context.Context) string }
	switch x := a.(type) {
	case rschema.StringAttribute:
		if x.Default != nil {
			d = x.Default
		}
	case rschema.Int64Attribute:
		if x.Default != nil {
			d = x.Default
		}
	case rschema.BoolAttribute:
		if x.Default != nil {
			d = x.Default
		}
	}
	if d == nil {
		return ""
	}
	return "(" + strings.TrimSuffix(d.Description(ctx), ".") + ".)"
}

func writeResourceAttrs(b *strings.Builder, attrs map[string]rschema.Attribute, indent string) {
	for _, name := range sorted(attrs) {
		a := attrs[name]
		extra := defaultOf(a)
		if replaces(a) {
			extra = strings.TrimSpace(extra + " Changing it replaces the resource.")
		}
		line(b, indent, name, a, extra)
		switch n := a.(type) {
		case rschema.SingleNestedAttribute:
			writeResourceAttrs(b, n.Attributes, indent+"  ")
		case rschema.ListNestedAttribute:
			writeResourceAttrs(b, n.NestedObject.Attributes, indent+"  ")
		}
	}
}

// replaces reports whether a plan modifier of a forces replacement.
func replaces(a rschema.Attribute) bool {
	ctx := context.Background()
	var descs []string
	switch x := a.(type) {
	case rschema.StringAttribute:
		for _, m := range x.PlanModifiers {
			descs = append(descs, m.Description(ctx))
		}
	}
	for _, d := range descs {
		if strings.Contains(d, "destroy and recreate") {
			return true
		}
	}
	return false
}
