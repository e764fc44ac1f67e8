package annotations

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Prefix is the namespace of every tfccm annotation.
const Prefix = "tfccm.io/"

// Decl is the untyped description of one annotation, used for documentation
// and for checking a Service's annotations as a whole.
type Decl struct {
	// Name is the full annotation key, e.g. "tfccm.io/template".
	Name string
	// Type is the Go type of the parsed value, as shown in the docs.
	Type string
	// Doc describes the annotation (Markdown, one paragraph).
	Doc string
	// Example is a valid value.
	Example string

	check func(string) error
}

// Key is a typed annotation: Get parses the value on a Service.
type Key[T any] struct {
	Decl
	parse func(string) (T, error)
}

// Get returns the parsed value of the annotation in annotations, whether it
// was set, and an error naming the annotation if the value is invalid.
func (k Key[T]) Get(annotations map[string]string) (T, bool, error) {
	return k.GetFrom(annotations, k.Name)
}

// Parse parses a raw value with the annotation's parser.
func (k Key[T]) Parse(raw string) (T, error) {
	v, err := k.parse(raw)
	if err != nil {
		return v, fmt.Errorf("annotation %s: %w", k.Name, err)
	}
	return v, nil
}

var registry []Decl

// MaxValueBytes is the largest value a tfccm.io/ annotation may have; a
// larger one is refused before it is parsed (and never echoed).
const MaxValueBytes = 16 << 10

// maxQuoted is how much of a user value a message quotes.
const maxQuoted = 96

// Quote quotes a user-supplied value for an error message or Event, cut to
// a short prefix with its full length when long: a message never carries
// a whole oversized value.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	cut := maxQuoted
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// sized refuses oversized values before parse sees them.
func sized[T any](parse func(string) (T, error)) func(string) (T, error) {
	return func(s string) (T, error) {
		if len(s) > MaxValueBytes {
			var zero T
			return zero, fmt.Errorf("value is %d bytes; the limit is %d", len(s), MaxValueBytes)
		}
		return parse(s)
	}
}

// declare declares one annotation, on one line of the tables below: its
// name, the Go type shown in the docs, a valid example, its parser and its
// documentation.
func declare[T any](name, typ, example string, parse func(string) (T, error), doc string) Key[T] {
	if !strings.HasPrefix(name, Prefix) {
		panic("annotation " + name + " lacks prefix " + Prefix)
	}
	for _, d := range registry {
		if d.Name == name {
			panic("annotation " + name + " declared twice")
		}
	}
	parse = sized(parse)
	if _, err := parse(example); err != nil {
		panic(fmt.Sprintf("annotation %s: example %q does not parse: %v", name, example, err))
	}
	d := Decl{Name: name, Type: typ, Doc: doc, Example: example, check: func(s string) error { _, err := parse(s); return err }}
	registry = append(registry, d)
	return Key[T]{Decl: d, parse: parse}
}

// All returns every declared annotation, sorted by name.
func All() []Decl {
	out := append([]Decl(nil), registry...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the declaration of name.
func Lookup(name string) (Decl, bool) {
	for _, d := range registry {
		if d.Name == name {
			return d, true
		}
	}
	return Decl{}, false
}

// Check validates every tfccm.io/ annotation in annotations: unknown keys
// under the prefix and invalid values are errors naming the annotation.
// Annotations outside the prefix are ignored. Errors are reported in key order.
func Check(annotations map[string]string) error {
	keys := make([]string, 0, len(annotations))
	for k := range annotations {
		if strings.HasPrefix(k, Prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var errs []string
	for _, k := range keys {
		d, ok := Lookup(k)
		if !ok {
			errs = append(errs, fmt.Sprintf("unknown annotation %s (known: %s)", k, strings.Join(names(), ", ")))
			continue
		}
		if err := d.check(annotations[k]); err != nil {
			errs = append(errs, fmt.Sprintf("annotation %s: %v", k, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}

func names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

// variantRE is the only shape a template variant name may have: it becomes
// part of a directory name, so it can never contain a path separator or dots.
var variantRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// lbNameRE is the shape of an explicit load balancer name.
var lbNameRE = regexp.MustCompile(`^[a-z]([a-z0-9-]{0,30}[a-z0-9])?$`)

// ValidVariant reports whether s is a syntactically valid variant name.
func ValidVariant(s string) bool { return variantRE.MatchString(s) }

var parseVariant = matching(variantRE, "a valid template variant name (1-32 characters of a-z, 0-9 and '-', starting and ending with a letter or digit)")

// matching is the parser of a name of the shape re: the name itself, or
// an error saying the value is not what.
func matching(re *regexp.Regexp, what string) func(string) (string, error) {
	return func(s string) (string, error) {
		if !re.MatchString(s) {
			return "", fmt.Errorf("%s is not %s", Quote(s), what)
		}
		return s, nil
	}
}

func parseBool(s string) (bool, error) {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	if err != nil {
		return false, fmt.Errorf("%s is not a boolean (use \"true\" or \"false\")", Quote(s))
	}
	return b, nil
}

func parseIP(s string) (netip.Addr, error) {
	a, err := netip.ParseAddr(strings.TrimSpace(s))
	if err != nil || a.Zone() != "" {
		return netip.Addr{}, fmt.Errorf("%s is not an IPv4 or IPv6 address", Quote(s))
	}
	return a.Unmap(), nil
}

var parseLBName = matching(lbNameRE, "a valid load balancer name (1-32 characters of a-z, 0-9 and '-', starting with a letter, not ending with '-')")

// planHashRE is the shape of a plan hash: sha256, lowercase hex.
var planHashRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ValidPlanHash reports whether s is a syntactically valid plan hash.
func ValidPlanHash(s string) bool { return planHashRE.MatchString(s) }

// parsePlanHash accepts a plan hash with surrounding space.
func parsePlanHash(s string) (string, error) {
	return matching(planHashRE, "a plan hash (64 lowercase hex digits, the sha256 of the saved plan as published in the tfccm-plan-* ConfigMap)")(strings.TrimSpace(s))
}

// parseVars accepts a JSON object; each member stays raw JSON so that the
// renderer can check it against the type the template declares.
func parseVars(s string) (map[string]json.RawMessage, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var probe any
	if err := dec.Decode(&probe); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("not valid JSON: trailing data after the object")
	}
	if _, ok := probe.(map[string]any); !ok {
		return nil, fmt.Errorf("must be a JSON object such as {\"size\": \"small\"}")
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, fmt.Errorf("not valid JSON: %v", err)
	}
	return m, nil
}

// The declarations, one line each (declare). Keep docs short and
// user-facing; they are published.
var (
	// Template picks a template variant among the installed ones.
	Template = declare(Prefix+"template", "string", "internal", parseVariant, "Picks a load balancer template variant installed by the cluster admin: variant `NAME` is the module directory `loadbalancer.NAME/` of the override directory or the built-in set. Unset means the default `loadbalancer/`. An unknown variant is an error that lists the installed ones.")
	// Vars is merged over the cluster's load_balancer.settings, for the keys
	// the admin allows (load_balancer.service_vars): the tenant's side.
	Vars = declare(Prefix+"vars", "JSON object", `{"size": "small"}`, parseVars, "A JSON object merged (top-level keys replace) over the cloud config's `load_balancer.settings` and passed to the template as `settings`: the namespace tenant's choice of the settings the cluster admin lets a Service set, and only those. A key that `load_balancer.service_vars` does not list (by default none) is refused: a Warning Event naming the key and the allow-list, `tfccm.io/Accepted=False`, and nothing is applied. Each allowed key must be an attribute of the template's declared `settings` type and its value must convert to that attribute's type; an unknown key or a wrong type is an error naming the key.")
	// ProxyProtocol asks the template to send the PROXY protocol to backends.
	ProxyProtocol = declare(Prefix+"proxy-protocol", "bool", "true", parseBool, "Asks the load balancer to send the PROXY protocol header to the nodes. Reaches the template as `service.proxy_protocol` (default false).")
	// Internal asks for a load balancer reachable only from the private network.
	Internal = declare(Prefix+"internal", "bool", "true", parseBool, "Asks for an internal (private network only) load balancer. Reaches the template as `service.internal` (default false).")
	// LoadBalancerIP requests an address for the load balancer.
	LoadBalancerIP = declare(Prefix+"load-balancer-ip", "netip.Addr", "10.252.0.10", parseIP, "Requests this IPv4 or IPv6 address for the load balancer. Reaches the template as `service.load_balancer_ip`; an alternative to the deprecated `spec.loadBalancerIP` (setting both to different addresses is an error).")
	// Name sets the load balancer name explicitly.
	Name = declare(Prefix+"name", "string", "web-prod", parseLBName, "Sets the load balancer name passed as `load_balancer_name` instead of the default `<cluster>-<hash of the Service UID>`: 1-32 characters of a-z, 0-9 and '-', starting with a letter. The workspace stays keyed by the Service UID, so changing the name renames the load balancer instead of leaking it. A name belongs to one Service in the cluster: while another Service (in any namespace) holds it, the oldest by creation time, then UID, this Service is refused with Event `LoadBalancerNameTaken` and condition `tfccm.io/Accepted` False naming the holder, and nothing is applied. What identifies the load balancer on LB hosts never comes from this name (templates get `load_balancer_id`, from the UID).")
	// Adopt names an existing load balancer the Service's workspace
	// imports instead of creating one (docs/migrate-from-ccm.md).
	Adopt = declare(Prefix+"adopt", "string or JSON object", "4711", parseAdopt, "Adopts an existing load balancer instead of creating one: its id in the cloud (as the template set's README says: Hetzner's number, DigitalOcean's UUID, an OCID, ..., or `keepalived:<instance>` for a hand-made keepalived VRRP instance on the bare-metal LB hosts), or a JSON object `{\"id\": \"...\", \"listener.80\": \"...\"}` when the set needs the ids of parts it cannot derive (OpenStack's listeners and pools). The template imports them (OpenTofu `import` blocks; the plan shows `importing`) and keeps the address. Only ids the cluster admin allows for the Service's namespace (`load_balancer { adopt \"NAMESPACE\" { ids = [...] } }`) are accepted; any other id, or a template set that cannot adopt, is refused with a Warning Event and `tfccm.io/Accepted=False`, and nothing is planned. A plan that would destroy or replace an adopted resource is refused naming it. Once adopted the load balancer is the Service's: deleting the Service destroys it (or keeps it: `tfccm.io/retain-on-delete`). Remove the annotation after the adoption applied, or keep it (a no-op).")
	// RetainOnDelete keeps the Service's load balancer in the cloud when
	// the Service is deleted (docs/migrate-from-ccm.md).
	RetainOnDelete = declare(Prefix+"retain-on-delete", "bool", "true", parseBool, "Keeps the Service's load balancer (an adopted one, or one tfccm made) in the cloud when the Service is deleted: the delete plans an OpenTofu `removed { lifecycle { destroy = false } }` for every resource of the workspace, so the plan shows every resource `forget` and none destroyed (\"0 to destroy, N to forget\" in the `TerraformApplying` Event, and in the published plan in review mode); then the workspace and its state are removed as after a destroy, and nothing of tfccm manages the load balancer any more (adopt it again, or delete it by hand). Read when the Service is deleted. Only in namespaces the cluster admin allows (`load_balancer { adopt \"NAMESPACE\" { retain = true } }`): anywhere else the Service is refused with a Warning Event and `tfccm.io/Accepted=False`, nothing is planned, and deleting it destroys its load balancer as usual. Unset or false: deleting the Service destroys it.")
	// ApprovedPlan approves a plan in review mode, on the plan's
	// ConfigMap in tfccm's namespace (an approver's write); on a Service
	// it approves nothing.
	ApprovedPlan = declare(Prefix+"approved-plan", "string (sha256 hex)", "3f1c9a0d6b2e4f5a8c7d9e0b1a2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e", parsePlanHash, "Review mode and `require-approval` policies: **not an approval on a Service.** A plan is approved by an approver (a group the cluster admin names) setting this key, with the plan's hash, on the plan's ConfigMap `tfccm-plan-<workspace>` in tfccm's namespace (cloud config `namespace`), which a namespace tenant cannot write; `tfccm approve` does it. tfccm then applies exactly that saved plan; a hash that is not the pending plan's (stale or unknown) applies nothing, and a new plan (changed Service or nodes, a deletion, an orphan's destroy) needs a new approval. On a Service this annotation is accepted (a Service annotated before approvals moved keeps working) but ignored: tfccm records a Warning Event `TerraformApprovalIgnored` naming the ConfigMap and the command, and applies nothing.")
)
