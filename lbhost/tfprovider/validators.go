// The schema validators the resources share.

package tfprovider

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/haproxy"
	"github.com/tfccm/tfccm/lbhost/host"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// stringCheck validates a known string at plan time with a message that
// names the attribute (the framework adds its path).
type stringCheck struct {
	desc string
	ok   func(string) bool
}

func (v stringCheck) Description(context.Context) string         { return v.desc }
func (v stringCheck) MarkdownDescription(context.Context) string { return v.desc }
func (v stringCheck) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if s := req.ConfigValue.ValueString(); !v.ok(s) {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value", fmt.Sprintf("%s: %q must be %s.", req.Path, s, v.desc))
	}
}

func oneOf(vals ...string) stringCheck {
	return stringCheck{desc: fmt.Sprintf("one of %q", vals), ok: func(s string) bool {
		for _, v := range vals {
			if s == v {
				return true
			}
		}
		return false
	}}
}

var (
	nameCheck   = stringCheck{desc: "1-100 lowercase letters, digits, '_', '.' or '-', starting with a letter or digit", ok: haproxy.ValidName}
	serverCheck = stringCheck{desc: "a node name (lowercase letters, digits, '.', '-')", ok: haproxy.ValidServerName}
	ipv4Check   = stringCheck{desc: "an IPv4 address such as 10.0.0.1", ok: haproxy.ValidIPv4}
	ipCheck     = stringCheck{desc: "an IPv4 or IPv6 address such as 10.0.0.1 or fd00::1 (canonical form)", ok: haproxy.ValidIP}
	cidrCheck   = stringCheck{desc: "a CIDR such as 10.0.0.0/8", ok: haproxy.ValidPrefix}
	timeCheck   = stringCheck{desc: "an HAProxy time such as 5s or 500ms", ok: haproxy.ValidTime}
	hcPathCheck = stringCheck{desc: "a URL path starting with '/'", ok: haproxy.ValidPath}
	ifaceCheck  = stringCheck{desc: "a Linux interface name", ok: host.ValidInterface}
	ownerCheck  = stringCheck{desc: "1-100 lowercase letters, digits, '_', '.' or '-'", ok: host.ValidOwner}
)

type pathValidator struct{}

func (pathValidator) Description(context.Context) string { return "a clean absolute path" }
func (pathValidator) MarkdownDescription(context.Context) string {
	return "a clean absolute path"
}
func (pathValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := transport.CheckPath(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid path", err.Error())
	}
}

type pathOrNameValidator struct{}

var reCommand = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

func (pathOrNameValidator) Description(context.Context) string { return "a command name or path" }
func (pathOrNameValidator) MarkdownDescription(context.Context) string {
	return "a command name or path"
}
func (pathOrNameValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if s := req.ConfigValue.ValueString(); !reCommand.MatchString(s) || s[0] == '-' {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid command", fmt.Sprintf("%q is not a command name or path", s))
	}
}

// int64Range validates a known number.
type int64Range struct{ min, max int64 }

func (v int64Range) Description(context.Context) string {
	return fmt.Sprintf("from %d to %d", v.min, v.max)
}
func (v int64Range) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v int64Range) ValidateInt64(_ context.Context, req validator.Int64Request, resp *validator.Int64Response) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if n := req.ConfigValue.ValueInt64(); n < v.min || n > v.max {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value", fmt.Sprintf("%s: %d must be from %d to %d.", req.Path, n, v.min, v.max))
	}
}

var portRange = int64Range{1, 65535}

// keptUnreachable: when err says the host could not be connected to at
// all, Read keeps the resource's last recorded state (with a warning naming
// the host) instead of failing, so a plan still updates the other hosts of
// a configuration; a change to this host is then recorded as pending
// (pendingUnreachable) and the drift check applies it once the host is
// back.
func keptUnreachable(diags *diag.Diagnostics, summary string, err error) bool {
	if !transport.IsUnreachable(err) {
		return false
	}
	diags.AddWarning(summary+": host unreachable, state not refreshed",
		err.Error()+"; what was applied to this host since it became unreachable waits for it (the drift check applies it when the host is back)")
	return true
}

// pendingUnreachable: when err says the host could not be connected to at
// all, a Create or Update records the planned object in state as if
// applied (with a warning naming the host: the change waits for it)
// instead of failing, so an apply goes on with a host down. The first
// refresh that reaches the host finds it differs (or is missing) and the
// next apply writes it. A wrong host key or a refused login is no
// UnreachableError: it still fails.
func pendingUnreachable(diags *diag.Diagnostics, summary string, err error) bool {
	if !transport.IsUnreachable(err) {
		return false
	}
	diags.AddWarning(summary+": host unreachable, change pending",
		err.Error()+"; recorded as pending: the drift check applies it when the host is back")
	return true
}

// addError turns an error from the host into a diagnostic, attached to the
// attribute it names when it is a field error.
func addError(diags *diag.Diagnostics, summary string, err error) {
	var fe *haproxy.FieldError
	var he *host.FieldError
	var re *frr.Error
	field := ""
	switch {
	case errors.As(err, &re):
		field = re.Field
	case errors.As(err, &fe):
		field = fe.Field
	case errors.As(err, &he):
		field = he.Field
	}
	if field != "" {
		if p, ok := attrPath(field); ok {
			diags.AddAttributeError(p, summary, err.Error())
			return
		}
	}
	diags.AddError(summary, err.Error())
}

var reStep = regexp.MustCompile(`^([a-z_]+)(?:\[(\d+)\])?$`)

// attrPath converts "ports[1].node_port" into a framework path.
func attrPath(field string) (path.Path, bool) {
	var p path.Path
	first := true
	for _, step := range splitDots(field) {
		m := reStep.FindStringSubmatch(step)
		if m == nil {
			return p, false
		}
		if first {
			p = path.Root(m[1])
			first = false
		} else {
			p = p.AtName(m[1])
		}
		if m[2] != "" {
			var i int
			fmt.Sscan(m[2], &i)
			p = p.AtListIndex(i)
		}
	}
	return p, !first
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func isIP(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.String() == s
}

// eachString applies a string check to every known element of a list.
type eachString struct{ check stringCheck }

func (v eachString) Description(context.Context) string {
	return "every element is " + v.check.desc
}
func (v eachString) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }
func (v eachString) ValidateList(_ context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	for i, e := range req.ConfigValue.Elements() {
		s, ok := e.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if !v.check.ok(s.ValueString()) {
			p := req.Path.AtListIndex(i)
			resp.Diagnostics.AddAttributeError(p, "Invalid value", fmt.Sprintf("%s: %q must be %s.", p, s.ValueString(), v.check.desc))
		}
	}
}
