// The provider: its configuration, the connection to the host, and the resources and data sources it serves.

package tfprovider

import (
	"context"
	"fmt"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// Address is where the provider is installed and found.
const Address = "registry.opentofu.org/tfccm/lbhost"

// New returns the provider factory for providerserver.Serve.
func New(version string) func() provider.Provider {
	return func() provider.Provider { return &lbhostProvider{version: version} }
}

type lbhostProvider struct{ version string }

type providerModel struct {
	ConfigDir types.String `tfsdk:"config_dir"`
	HAProxy   types.String `tfsdk:"haproxy"`
	KAConfig  types.String `tfsdk:"keepalived_config"`
	KAPIDFile types.String `tfsdk:"keepalived_pid_file"`
	// FRR of BGP speakers: its configuration file and -N pathspace.
	FRRConfig    types.String `tfsdk:"frr_config"`
	FRRPathspace types.String `tfsdk:"frr_pathspace"`
	Netns        types.String `tfsdk:"netns"`
	SSH          *sshModel    `tfsdk:"ssh"`
	Reserved     types.List   `tfsdk:"reserved_addresses"`
	// Hosts: a provider of every LB host (lbhost_vip_allocation,
	// lbhost_hosts) instead of one.
	Hosts []hostEntry `tfsdk:"hosts"`
	// ForgetUnreachable: Delete of an unreachable host's object forgets
	// it (a retired host that will not come back).
	ForgetUnreachable types.Bool `tfsdk:"forget_unreachable"`
	// Kubernetes: node mode, the cluster instead of a host.
	Kubernetes *kubeModel `tfsdk:"kubernetes"`
}

// hostEntry is one host of a provider of every host.
type hostEntry struct {
	Name      types.String `tfsdk:"name"`
	ConfigDir types.String `tfsdk:"config_dir"`
	Netns     types.String `tfsdk:"netns"`
	SSH       *sshModel    `tfsdk:"ssh"`
	// KAConfig is the host's keepalived main configuration (import of a
	// hand-made instance reads it).
	KAConfig types.String `tfsdk:"keepalived_config"`
}

type sshModel struct {
	Host           types.String `tfsdk:"host"`
	Port           types.Int64  `tfsdk:"port"`
	User           types.String `tfsdk:"user"`
	HostKey        types.String `tfsdk:"host_key"`
	KnownHostsFile types.String `tfsdk:"known_hosts_file"`
	AgentSocket    types.String `tfsdk:"agent_socket"`
	PrivateKeyFile types.String `tfsdk:"private_key_file"`
	Sudo           types.Bool   `tfsdk:"sudo"`
}

func (p *lbhostProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "lbhost"
	resp.Version = p.version
}

func (p *lbhostProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Manages HAProxy load balancers, VIPs and kernel routes on one Linux load-balancer host, " +
			"reached through a network namespace of the machine running OpenTofu (`netns`) or over SSH (`ssh`); or, with `hosts`, " +
			"every host of a group at once (for `lbhost_vip_allocation` and `lbhost_hosts`); or, with `kubernetes`, the cluster's own nodes (node mode: `lbhost_node_vip`). Exactly one of `netns`, `ssh`, `hosts` and `kubernetes` is set.",
		Attributes: map[string]schema.Attribute{
			"config_dir": schema.StringAttribute{
				Optional: true,
				Description: "Directory on the host holding HAProxy's `base.cfg` (global and defaults, the host's own), " +
					"lbhost's `fragments/`, `claims/` and `pending/`, the `lock` and `commit.lock` files, `server-state` and the master CLI socket `master.sock`. Required for `lbhost_frontend` and `lbhost_vip`; a provider that only manages routes may leave it out.",
				Validators: []validator.String{pathValidator{}},
			},
			"haproxy": schema.StringAttribute{
				Optional:    true,
				Description: "The haproxy binary on the host. Default `haproxy`.",
				Validators:  []validator.String{pathOrNameValidator{}},
			},
			"keepalived_config": schema.StringAttribute{
				Optional:    true,
				Description: "keepalived's main configuration on the host, checked with `keepalived -t -f` before every reload. It must `include <config_dir>/keepalived/*.conf`. Default `/etc/keepalived/keepalived.conf`.",
				Validators:  []validator.String{pathValidator{}},
			},
			"keepalived_pid_file": schema.StringAttribute{
				Optional:    true,
				Description: "Pid file of keepalived's parent process (reloaded with SIGHUP). Default `/run/keepalived.pid`.",
				Validators:  []validator.String{pathValidator{}},
			},
			"frr_config": schema.StringAttribute{
				Optional:    true,
				Description: "FRR's integrated configuration file on the host, which `lbhost_bgp_speaker` owns (on a router, `lbhost_bgp_router` owns only its marked tfccm-* section of it; written readable by root and group frr only, checked with `vtysh -C`, applied with `frr-reload.py`). Default `/etc/frr/frr.conf`.",
				Validators:  []validator.String{pathValidator{}},
			},
			"frr_pathspace": schema.StringAttribute{
				Optional:    true,
				Description: "FRR's `-N` pathspace, when the host's FRR daemons run with one (one FRR per network namespace, as in tfccm's host tests). Default none.",
			},
			"reserved_addresses": schema.ListAttribute{
				Optional: true, ElementType: types.StringType,
				Description: "Addresses no VIP of this host ever gets: allocation from a pool skips them and a requested one is refused, naming this setting. " +
					"For the addresses of the other load balancer hosts and of a gateway when they lie inside a VIP pool (the host's own addresses, " +
					"those with a subnet's prefix, are skipped without it: VIPs are /32 or /128). Entries that are not IP addresses (host names) are ignored. " +
					"A provider setting, not a resource's: changing it changes no plan.",
			},
			"netns": schema.StringAttribute{
				Optional:    true,
				Description: netnsDescription,
			},
			"ssh":        sshAttribute(),
			"kubernetes": kubernetesAttribute(),
			"forget_unreachable": schema.BoolAttribute{
				Optional: true,
				Description: "Destroying an object of this host while the host is unreachable forgets it (a warning) instead of failing: for a " +
					"host being retired that will not come back. Default false: the destroy fails until the host answers.",
			},
			"hosts": schema.ListNestedAttribute{
				Optional: true,
				Description: "Instead of `netns` or `ssh`: every LB host of a group, by name, for `lbhost_vip_allocation` (an address and VRRP id " +
					"decided across the hosts that answer, so no one host holds them) and the `lbhost_hosts` data source. `reserved_addresses` applies to all of them.",
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":       schema.StringAttribute{Required: true, Description: "The host's name (in diagnostics and `lbhost_hosts`)."},
					"config_dir": schema.StringAttribute{Required: true, Description: "As the provider's `config_dir`.", Validators: []validator.String{pathValidator{}}},
					"netns":      schema.StringAttribute{Optional: true, Description: netnsDescription},
					"ssh":        sshAttribute(),
					"keepalived_config": schema.StringAttribute{Optional: true, Validators: []validator.String{pathValidator{}},
						Description: "As the provider's `keepalived_config` (default `/etc/keepalived/keepalived.conf`): where `lbhost_vip_allocation`'s import of a hand-made instance (`keepalived:<instance>,...`) reads it on this host."},
				}},
			},
		},
	}
}

const netnsDescription = "netns transport: the network namespace (of the machine running OpenTofu) where HAProxy runs and VIPs and routes live."

// sshAttribute is the ssh transport's attribute (of the provider, and of
// each of its hosts).
func sshAttribute() schema.SingleNestedAttribute {
	return schema.SingleNestedAttribute{
		Optional:    true,
		Description: "ssh transport. The host key is always verified (`host_key` or `known_hosts_file`); the private key comes from an agent or a key file and is never part of the configuration.",
		Attributes: map[string]schema.Attribute{
			"host":             schema.StringAttribute{Required: true, Description: "Host name or address."},
			"port":             schema.Int64Attribute{Optional: true, Description: "SSH port. Default 22."},
			"user":             schema.StringAttribute{Required: true, Description: "Login user."},
			"host_key":         schema.StringAttribute{Optional: true, Description: "The host's public key in authorized_keys format, e.g. `ssh-ed25519 AAAA...`."},
			"known_hosts_file": schema.StringAttribute{Optional: true, Description: "An OpenSSH known_hosts file to verify the host key against."},
			"agent_socket":     schema.StringAttribute{Optional: true, Description: "Path of an SSH agent socket (e.g. the value of SSH_AUTH_SOCK)."},
			"private_key_file": schema.StringAttribute{Optional: true, Description: "Path of an unencrypted private key file on the machine running OpenTofu."},
			"sudo":             schema.BoolAttribute{Optional: true, Description: "Run every command on the host through `sudo -n` (as root, never prompting), so `user` can be an unprivileged login with exactly the sudoers rules of tfccm's `lbhost/hostfiles/sudoers`; HAProxy's master socket must then be reachable by `user` (docs/install-baremetal.md). Default false: `user` is root."},
		},
	}
}

// conn is the provider's configured host, connected on first use (so a
// plan that never touches the host never dials it).
type conn struct {
	cfg providerModel
	// unknown: part of the configuration is only known after apply (it
	// comes from another resource), so plan-time checks on the host wait.
	unknown bool
	once    sync.Once
	h       *host.Host
	err     error
	// peers: a provider of every host (hosts), one connection each, by
	// name; name is this connection's host name among them.
	peers []*conn
	name  string
	// kube: node mode's connection to the cluster (the kubernetes block).
	kube *kubeConn
}

func (c *conn) host(ctx context.Context) (*host.Host, error) {
	if c.unknown {
		return nil, fmt.Errorf("lbhost: the provider configuration is not known yet (it depends on values known only after apply)")
	}
	if c.kube != nil {
		return nil, fmt.Errorf("lbhost: this provider is configured with `kubernetes` (node mode): it serves lbhost_node_vip only, not host resources")
	}
	c.once.Do(func() {
		var t transport.Transport
		switch {
		case !c.cfg.Netns.IsNull():
			t, c.err = transport.NewNetns(c.cfg.Netns.ValueString())
		default:
			s := c.cfg.SSH
			t, c.err = transport.DialSSH(ctx, transport.SSHConfig{
				Host: s.Host.ValueString(), Port: int(s.Port.ValueInt64()), User: s.User.ValueString(),
				HostKey: s.HostKey.ValueString(), KnownHostsFile: s.KnownHostsFile.ValueString(),
				AgentSocket: s.AgentSocket.ValueString(), PrivateKeyFile: s.PrivateKeyFile.ValueString(),
				Sudo: s.Sudo.ValueBool(),
			})
		}
		if c.err != nil {
			return
		}
		c.h, c.err = host.New(t, c.cfg.ConfigDir.ValueString())
		if c.err != nil {
			return
		}
		if !c.cfg.HAProxy.IsNull() {
			c.h.HAProxy = c.cfg.HAProxy.ValueString()
		}
		if !c.cfg.KAConfig.IsNull() {
			c.h.Keepalived.Config = c.cfg.KAConfig.ValueString()
		}
		if !c.cfg.KAPIDFile.IsNull() {
			c.h.Keepalived.PIDFile = c.cfg.KAPIDFile.ValueString()
		}
		c.h.FRR = host.FRR{Config: c.cfg.FRRConfig.ValueString(), Pathspace: c.cfg.FRRPathspace.ValueString()}
		for _, e := range c.cfg.Reserved.Elements() {
			if v, ok := e.(types.String); ok && !v.IsNull() && !v.IsUnknown() {
				c.h.Reserved = append(c.h.Reserved, v.ValueString())
			}
		}
	})
	return c.h, c.err
}

func (p *lbhostProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var cfg providerModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &cfg)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if cfg.Hosts != nil {
		resp.Diagnostics.Append(configureHosts(cfg, resp)...)
		return
	}
	if cfg.Kubernetes != nil {
		if !cfg.Netns.IsNull() || cfg.SSH != nil {
			resp.Diagnostics.AddError("lbhost: choose one transport", "Set exactly one of `netns` (the local cloud), `ssh` (a remote host), `hosts` (every host of a group) and `kubernetes` (node mode).")
			return
		}
		c := &conn{cfg: cfg, kube: &kubeConn{cfg: *cfg.Kubernetes}}
		c.unknown = cfg.Kubernetes.Namespace.IsUnknown() || cfg.Kubernetes.ConfigPath.IsUnknown() || cfg.Kubernetes.ConfigContext.IsUnknown()
		resp.ResourceData = c
		resp.DataSourceData = c
		return
	}
	if cfg.Netns.IsNull() == (cfg.SSH == nil) {
		resp.Diagnostics.AddError("lbhost: choose one transport", "Set exactly one of `netns` (the local cloud), `ssh` (a remote host), `hosts` (every host of a group) and `kubernetes` (node mode).")
		return
	}
	c := &conn{cfg: cfg, unknown: cfg.ConfigDir.IsUnknown() || cfg.Netns.IsUnknown() || cfg.HAProxy.IsUnknown() ||
		cfg.KAConfig.IsUnknown() || cfg.KAPIDFile.IsUnknown()}
	if s := cfg.SSH; s != nil {
		c.unknown = c.unknown || s.Host.IsUnknown() || s.Port.IsUnknown() || s.User.IsUnknown() || s.HostKey.IsUnknown() ||
			s.KnownHostsFile.IsUnknown() || s.AgentSocket.IsUnknown() || s.PrivateKeyFile.IsUnknown()
	}
	resp.ResourceData = c
	resp.DataSourceData = c
}

func (p *lbhostProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{newFrontendResource, newVIPResource, newRouteResource, newRoutedVIPResource, newL4FrontendResource, newAllocationResource, newBGPSpeakerResource, newBGPRouterResource, newBGPAnnouncementResource, newNodeVIPResource, newNodeBGPResource}
}

func (p *lbhostProvider) DataSources(context.Context) []func() datasource.DataSource {
	return []func() datasource.DataSource{newBackendHealthDataSource, newHostsDataSource, newVIPHolderDataSource, newBGPSessionsDataSource, newHostHealthDataSource, newNodeVIPHolderDataSource}
}

// connected is what every resource embeds: the provider's connection to
// the host, which Configure hands it.
type connected struct{ c *conn }

// Configure takes the provider's connection (none yet while the provider
// is not configured).
func (r *connected) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		r.c = c
	}
}

// providerConn is the connection in the provider data that Configure of a
// resource or data source gets; nil while the provider is not configured.
func providerConn(data any, diags *diag.Diagnostics) *conn {
	if data == nil {
		return nil
	}
	c, ok := data.(*conn)
	if !ok {
		diags.AddError("lbhost: unexpected provider data", fmt.Sprintf("%T", data))
		return nil
	}
	return c
}

// readPrior reads Read's prior state into a model; false when it could not.
func readPrior[M any](ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) (M, bool) {
	var m M
	resp.Diagnostics.Append(req.State.Get(ctx, &m)...)
	return m, !resp.Diagnostics.HasError()
}
