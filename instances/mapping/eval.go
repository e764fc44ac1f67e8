package mapping

import (
	"fmt"
	"net/netip"
	"regexp"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"k8s.io/apimachinery/pkg/util/validation"
)

// addressTypes are the address types an instance may report.
var addressTypes = []string{"InternalIP", "ExternalIP", "Hostname", "InternalDNS", "ExternalDNS"}

var providerIDPattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://[^\s]+$`)

// Map evaluates the mapping for one resource. It returns (nil, nil) when
// no instance block matches, and an *Error naming file:line and the
// resource when an expression fails or yields an invalid value.
func (m *Mapping) Map(r *Resource) (*Instance, error) {
	val, marked, err := resourceValue(r)
	if err != nil {
		return nil, &Error{Range: hcl.Range{Filename: m.filename}, Summary: "Invalid resource", Detail: err.Error(), Resource: r.Address}
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{"resource": val},
		Functions: m.funcs,
	}
	for _, ru := range m.rules {
		ev := evaluator{ctx: ctx, resource: r.Address, marked: marked}
		matched := ev.boolean(ru.exprs[fieldMatch], true, false)
		if ev.err != nil {
			return nil, ev.err
		}
		if !matched {
			continue
		}
		in := &Instance{Resource: r.Address, Rule: ru.label}
		ev.instance(ru, in)
		if ev.err != nil {
			return nil, ev.err
		}
		return in, nil
	}
	return nil, nil
}

// evaluator evaluates one rule's expressions, keeping the first error.
type evaluator struct {
	ctx      *hcl.EvalContext
	resource string
	marked   bool // the resource has sensitive attributes
	err      *Error
}

func (e *evaluator) fail(rng hcl.Range, summary, detail string) {
	if e.err == nil {
		e.err = &Error{Range: rng, Summary: summary, Detail: detail, Resource: e.resource}
	}
}

// value evaluates expr; nil expr, or a failure, yields cty.NilVal.
// allowSensitive permits values derived from sensitive attributes (they are
// unmarked: used only for decisions, never published).
func (e *evaluator) value(expr hcl.Expression, allowSensitive bool) cty.Value {
	if expr == nil || e.err != nil {
		return cty.NilVal
	}
	v, diags := expr.Value(e.ctx)
	for _, d := range diags {
		if d.Severity != hcl.DiagError {
			continue
		}
		rng := expr.Range()
		if d.Subject != nil {
			rng = *d.Subject
		}
		e.fail(rng, d.Summary, d.Detail)
		return cty.NilVal
	}
	if e.marked && v.ContainsMarked() {
		if !allowSensitive {
			e.fail(expr.Range(), "Sensitive value", "The expression uses an attribute Terraform marks as sensitive; tfccm never publishes sensitive values.")
			return cty.NilVal
		}
		v, _ = v.UnmarkDeep()
	}
	if !v.IsWhollyKnown() {
		e.fail(expr.Range(), "Unknown value", "The expression's value is not known in state.")
		return cty.NilVal
	}
	return v
}

// boolean evaluates a bool expression; null is an error unless nullOK.
func (e *evaluator) boolean(expr hcl.Expression, allowSensitive, nullOK bool) bool {
	v := e.value(expr, allowSensitive)
	if v == cty.NilVal {
		return false
	}
	if v.IsNull() {
		if !nullOK {
			e.fail(expr.Range(), "Invalid value", "Must be true or false, not null.")
		}
		return false
	}
	b, err := convert.Convert(v, cty.Bool)
	if err != nil {
		e.fail(expr.Range(), "Invalid value", fmt.Sprintf("Must be true or false: %s.", err))
		return false
	}
	return b.True()
}

func (e *evaluator) str(expr hcl.Expression) string {
	v := e.value(expr, false)
	if v == cty.NilVal || v.IsNull() {
		return ""
	}
	s, err := convert.Convert(v, cty.String)
	if err != nil {
		e.fail(expr.Range(), "Invalid value", fmt.Sprintf("Must be a string: %s.", err))
		return ""
	}
	return s.AsString()
}

// labelValue evaluates an optional string that becomes a label value.
func (e *evaluator) labelValue(expr hcl.Expression, field string) string {
	s := e.str(expr)
	if s == "" || e.err != nil {
		return s
	}
	if errs := validation.IsValidLabelValue(s); len(errs) > 0 {
		e.fail(expr.Range(), "Invalid "+field, fmt.Sprintf("%q is not a valid label value: %s.", s, errs[0]))
	}
	return s
}

func (e *evaluator) instance(r *rule, in *Instance) {
	nameExpr := r.exprs[fieldName]
	in.Name = e.str(nameExpr)
	if e.err == nil {
		if in.Name == "" {
			e.fail(nameExpr.Range(), "Invalid name", "The node name must not be null or empty.")
		} else if errs := validation.IsDNS1123Subdomain(in.Name); len(errs) > 0 {
			e.fail(nameExpr.Range(), "Invalid name", fmt.Sprintf("%q is not a valid node name: %s.", in.Name, errs[0]))
		}
	}
	if x := r.exprs[fieldProviderID]; x != nil {
		in.ProviderID = e.str(x)
		if e.err == nil && in.ProviderID != "" && !providerIDPattern.MatchString(in.ProviderID) {
			e.fail(x.Range(), "Invalid provider_id", fmt.Sprintf("%q is not a provider ID of the form <scheme>://<id>.", in.ProviderID))
		}
	}
	in.InstanceType = e.labelValue(r.exprs[fieldInstanceType], fieldInstanceType)
	in.Zone = e.labelValue(r.exprs[fieldZone], fieldZone)
	in.Region = e.labelValue(r.exprs[fieldRegion], fieldRegion)
	in.Addresses = e.addresses(r.exprs[fieldAddresses])
	in.Labels = e.labels(r.exprs[fieldLabels])
	in.Shutdown = e.boolean(r.exprs[fieldShutdown], false, true)
}

func (e *evaluator) addresses(expr hcl.Expression) []Address {
	v := e.value(expr, false)
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsListType() && !t.IsTupleType() && !t.IsSetType() {
		e.fail(expr.Range(), "Invalid addresses", "Must be a list of { type, address } objects.")
		return nil
	}
	var out []Address
	seen := map[Address]bool{}
	for it := v.ElementIterator(); it.Next(); {
		i, el := it.Element()
		if el.IsNull() {
			continue
		}
		et := el.Type()
		if !et.IsObjectType() || !et.HasAttribute("type") || !et.HasAttribute("address") {
			e.fail(expr.Range(), "Invalid addresses", fmt.Sprintf("Element %s must be an object with type and address.", i.GoString()))
			return nil
		}
		addrV := el.GetAttr("address")
		if addrV.IsNull() {
			continue // e.g. no IPv6 address
		}
		typV, err1 := convert.Convert(el.GetAttr("type"), cty.String)
		addrS, err2 := convert.Convert(addrV, cty.String)
		if err1 != nil || err2 != nil || typV.IsNull() {
			e.fail(expr.Range(), "Invalid addresses", "Address type and address must be strings.")
			return nil
		}
		a := Address{Type: typV.AsString(), Address: addrS.AsString()}
		if !validAddressType(a.Type) {
			e.fail(expr.Range(), "Invalid addresses", fmt.Sprintf("Address type %q is not one of %v.", a.Type, addressTypes))
			return nil
		}
		if a.Address == "" {
			continue
		}
		if a.Type == "InternalIP" || a.Type == "ExternalIP" {
			ip, err := netip.ParseAddr(a.Address)
			if err != nil || ip.Zone() != "" {
				e.fail(expr.Range(), "Invalid addresses", fmt.Sprintf("%s %q is not an IP address.", a.Type, a.Address))
				return nil
			}
			a.Address = ip.String()
		}
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

func validAddressType(t string) bool {
	for _, v := range addressTypes {
		if t == v {
			return true
		}
	}
	return false
}

func (e *evaluator) labels(expr hcl.Expression) map[string]string {
	v := e.value(expr, false)
	if v == cty.NilVal || v.IsNull() {
		return nil
	}
	t := v.Type()
	if !t.IsObjectType() && !t.IsMapType() {
		e.fail(expr.Range(), "Invalid labels", "Must be a map of label names to strings.")
		return nil
	}
	out := map[string]string{}
	keys := []string{}
	for it := v.ElementIterator(); it.Next(); {
		k, el := it.Element()
		if el.IsNull() {
			continue
		}
		s, err := convert.Convert(el, cty.String)
		if err != nil {
			e.fail(expr.Range(), "Invalid labels", fmt.Sprintf("Label %q must be a string.", k.AsString()))
			return nil
		}
		out[k.AsString()] = s.AsString()
		keys = append(keys, k.AsString())
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			e.fail(expr.Range(), "Invalid labels", fmt.Sprintf("%q is not a valid label name: %s.", k, errs[0]))
			return nil
		}
		if errs := validation.IsValidLabelValue(out[k]); len(errs) > 0 {
			e.fail(expr.Range(), "Invalid labels", fmt.Sprintf("Label %q: %q is not a valid label value: %s.", k, out[k], errs[0]))
			return nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
