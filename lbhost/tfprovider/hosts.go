// A provider of every LB host of a group (its `hosts`): the connections,
// which of them answer, and the lbhost_hosts data source that reports it.

package tfprovider

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// configureHosts makes the connection of a provider of every host: one
// conn per entry, each connected on first use.
func configureHosts(cfg providerModel, resp *provider.ConfigureResponse) diag.Diagnostics {
	var diags diag.Diagnostics
	if !cfg.Netns.IsNull() || cfg.SSH != nil || !cfg.ConfigDir.IsNull() {
		diags.AddError("lbhost: choose one transport", "`hosts` replaces `netns`, `ssh` and `config_dir`: set each host's own.")
		return diags
	}
	all := &conn{cfg: cfg}
	seen := map[string]bool{}
	for i, e := range cfg.Hosts {
		if e.Name.IsUnknown() || e.ConfigDir.IsUnknown() || e.KAConfig.IsUnknown() || e.Netns.IsUnknown() || (e.SSH != nil && e.SSH.Host.IsUnknown()) {
			all.unknown = true
			continue
		}
		name := e.Name.ValueString()
		if e.Netns.IsNull() == (e.SSH == nil) {
			diags.AddError("lbhost: choose one transport", fmt.Sprintf("hosts[%d] (%s): set exactly one of `netns` and `ssh`.", i, name))
			continue
		}
		if seen[name] {
			diags.AddError("lbhost: duplicate host", fmt.Sprintf("hosts[%d]: the name %s is used twice.", i, name))
			continue
		}
		seen[name] = true
		all.peers = append(all.peers, &conn{name: name, cfg: providerModel{
			ConfigDir: e.ConfigDir, Netns: e.Netns, SSH: e.SSH, Reserved: cfg.Reserved,
			HAProxy: types.StringNull(), KAConfig: e.KAConfig, KAPIDFile: types.StringNull(),
		}})
	}
	sort.Slice(all.peers, func(i, j int) bool { return all.peers[i].name < all.peers[j].name })
	resp.ResourceData = all
	resp.DataSourceData = all
	return diags
}

// reach connects to every host of a provider of every host: the hosts
// that answer (in name order, the lock order), the names of those that
// could not be connected to at all, and the first other error (a wrong
// host key, a refused login: a configuration error, never "down").
func (c *conn) reach(ctx context.Context) (up []*host.Host, down []string, err error) {
	if c.unknown {
		return nil, nil, fmt.Errorf("lbhost: the hosts are not known yet (they depend on values known only after apply)")
	}
	if c.peers == nil {
		return nil, nil, fmt.Errorf("lbhost: this resource needs a provider with `hosts` (every LB host of the group)")
	}
	for _, p := range c.peers {
		h, err := p.host(ctx)
		switch {
		case transport.IsUnreachable(err):
			down = append(down, p.name)
		case err != nil:
			return nil, nil, fmt.Errorf("%s: %w", p.name, err)
		default:
			up = append(up, h)
		}
	}
	return up, down, nil
}

// hostsDataSource reports which hosts of the group answer.
type hostsDataSource struct{ c *conn }

func newHostsDataSource() datasource.DataSource { return &hostsDataSource{} }

type hostsModel struct {
	Reachable   []string `tfsdk:"reachable"`
	Unreachable []string `tfsdk:"unreachable"`
}

func (d *hostsDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_hosts"
}

func (d *hostsDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	resp.Schema = schema.Schema{
		Description: "Which hosts of a provider with `hosts` answer: connected to (SSH handshake and host key checked) at every read. " +
			"A host that cannot be connected to at all is unreachable; any other error (a wrong host key, a refused login) fails the read, " +
			"naming the host. No reachable host fails the read: `no LB host is reachable`.",
		Attributes: map[string]schema.Attribute{
			"reachable":   schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The names of the hosts that answer, sorted."},
			"unreachable": schema.ListAttribute{Computed: true, ElementType: types.StringType, Description: "The names of the hosts that could not be connected to, sorted."},
		},
	}
}

func (d *hostsDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	if c := providerConn(req.ProviderData, &resp.Diagnostics); c != nil {
		d.c = c
	}
}

func (d *hostsDataSource) Read(ctx context.Context, _ datasource.ReadRequest, resp *datasource.ReadResponse) {
	up, down, err := d.c.reach(ctx)
	if err != nil {
		addError(&resp.Diagnostics, "lbhost_hosts", err)
		return
	}
	if len(up) == 0 {
		resp.Diagnostics.AddError("lbhost_hosts: "+host.ErrNoHostReachable.Error(), "Unreachable: "+strings.Join(down, ", ")+".")
		return
	}
	m := hostsModel{Reachable: []string{}, Unreachable: []string{}}
	m.Unreachable = append(m.Unreachable, down...)
	for _, p := range d.c.peers {
		if !slices.Contains(down, p.name) {
			m.Reachable = append(m.Reachable, p.name)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}
