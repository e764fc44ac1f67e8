package clouds

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	tfjson "github.com/hashicorp/terraform-json"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances"
	"github.com/tfccm/tfccm/instances/mapping"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
	"github.com/tfccm/tfccm/ipam"
	"github.com/tfccm/tfccm/templates"
	"github.com/tfccm/tfccm/test/standin"
)

// cloud describes one template set's test matrix.
type cloud struct {
	set      string
	provider string // stand-in provider name
	// only limits the stand-in to these type prefixes (standin.EnvOnly):
	// OpenTofu spends seconds per command on the whole oci schema.
	only []string
	// config is the cloud config body (settings); work_dir is added.
	config  string
	nodes   func() []*corev1.Node
	fixture map[string]map[string]any
	// nodeRemoved checks the calls made when the last node leaves.
	nodeRemoved func(t *testing.T, calls []standin.Call)
	lb          []lbCase
	// routes: nodes for RoutesFromNodes, and the expected route calls.
	routeNodes func() []*corev1.Node
	routeCheck func(t *testing.T, calls []standin.Call)
	routeErrs  []routeErr
	// instances: the infrastructure fixture dir and expected instances.
	infra         string
	infraFixture  map[string]map[string]any
	wantInstances func(t *testing.T, got []*instances.Instance)
}

type lbCase struct {
	name string
	mut  func(*corev1.Service)
	// fixture overrides the cloud's fixture attributes for this case.
	fixture map[string]map[string]any
	// nodes overrides the cloud's nodes (refusal cases only).
	nodes func() []*corev1.Node
	// wantErr: plan must fail with this message (a refused Service setting).
	wantErr string
	// check asserts on the calls and the status ingress after apply.
	check func(t *testing.T, calls []standin.Call, ingress []map[string]any)
	// golden: write the rendered tfvars and apply calls as a golden file.
	golden bool
	// shared is the Service's tfccm.io/allow-shared-ip key: rendered as
	// tfccm renders it (service.shared_ip, the requested addresses).
	shared string
}

type routeErr struct {
	name    string
	nodes   func() []*corev1.Node
	wantErr string
}

func parseConfig(t testing.TB, body, workDir string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("cluster_name = %q\nwork_dir = %q\n%s", "prod", workDir, body)), "cloud.hcl")
	if err != nil {
		t.Fatalf("cloud config: %v", err)
	}
	return cfg
}

// service is a LoadBalancer Service with two TCP ports.
func service(mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "shop", Name: "web", UID: types.UID("6f1c2d3e-4a5b-4c7d-8e9f-0a1b2c3d4e5f"),
			Labels: map[string]string{"app": "web"}, Annotations: map[string]string{},
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeLoadBalancer,
			Ports: []corev1.ServicePort{
				{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, NodePort: 30080},
				{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, NodePort: 30443},
			},
			ExternalTrafficPolicy: corev1.ServiceExternalTrafficPolicyCluster,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			SessionAffinity:       corev1.ServiceAffinityNone,
		},
	}
	if mut != nil {
		mut(s)
	}
	return s
}

func etpLocal(s *corev1.Service) {
	s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	s.Spec.HealthCheckNodePort = 32000
}

func dualStack(s *corev1.Service) {
	s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
}

func udp(s *corev1.Service) {
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, NodePort: 30053})
}

func node(name, providerID, internalIP, externalIP string, podCIDRs ...string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name}},
		Spec:       corev1.NodeSpec{ProviderID: providerID, PodCIDRs: podCIDRs},
		Status: corev1.NodeStatus{Addresses: []corev1.NodeAddress{
			{Type: corev1.NodeInternalIP, Address: internalIP}, {Type: corev1.NodeHostName, Address: name},
		}},
	}
	if externalIP != "" {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeExternalIP, Address: externalIP})
	}
	if len(podCIDRs) > 0 {
		n.Spec.PodCIDR = podCIDRs[0]
	}
	return n
}

// dualStackNodes are node-a..node-c with IPv4 InternalIPs 10.0.10.2-4, IPv6
// InternalIPs fd00:10::2-4, pod CIDRs 10.244.1-3.0/24, the providerID
// providerID(i) and, when external is set, ExternalIPs 198.51.100.1-3.
func dualStackNodes(providerID func(i int) string, external bool) []*corev1.Node {
	var out []*corev1.Node
	for i, name := range []string{"node-a", "node-b", "node-c"} {
		ext := ""
		if external {
			ext = "198.51.100." + string(rune('1'+i))
		}
		n := node(name, providerID(i), "10.0.10."+string(rune('2'+i)), ext, "10.244."+string(rune('1'+i))+".0/24")
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "fd00:10::" + string(rune('2'+i))})
		out = append(out, n)
	}
	return out
}

// runCloud runs every test of one cloud.
func runCloud(t *testing.T, c cloud) {
	env := standin.Setup(t, c.provider)
	env.Only = c.only
	set, err := templates.LoadBuiltin(c.set)
	if err != nil {
		t.Fatal(err)
	}
	t.Run("loadbalancer", func(t *testing.T) {
		validated := false
		for _, tc := range c.lb {
			t.Run(tc.name, func(t *testing.T) { runLB(t, env, set, c, tc, &validated) })
		}
	})
	if c.routeNodes != nil {
		t.Run("routes", func(t *testing.T) { runRoutes(t, env, set, c) })
	}
	if c.infra != "" {
		t.Run("instances", func(t *testing.T) { runInstances(t, env, set, c) })
	}
}

func tofuCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 3*time.Minute)
}

// runLB runs one Service case through init, plan, apply, a second plan, a
// node fewer and destroy. `tofu validate` ignores the variables, so its
// result is the same for every case of a set: it runs in the first case
// that gets past init (*validated records it).
func runLB(t *testing.T, env *standin.Env, set *templates.Set, c cloud, tc lbCase, validated *bool) {
	fixture := map[string]map[string]any{}
	for _, f := range []map[string]map[string]any{c.fixture, tc.fixture} {
		for typ, attrs := range f {
			if fixture[typ] == nil {
				fixture[typ] = map[string]any{}
			}
			for k, v := range attrs {
				fixture[typ][k] = v
			}
		}
	}
	env.SetFixture(t, fixture)
	work := t.TempDir()
	cfg := parseConfig(t, c.config, work)
	svc := service(tc.mut)
	nodes := c.nodes
	if tc.nodes != nil {
		nodes = tc.nodes
	}
	ws, err := set.RenderLoadBalancer(cfg, svc, nodes(), sharing(t, svc, tc.shared))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	dir := filepath.Join(work, "ws")
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	env.Tofu(t, dir, "init", "-input=false", "-no-color")
	t.Cleanup(func() { cleanup(t, env, dir) })
	if tc.wantErr != "" {
		ctx, cancel := tofuCtx()
		defer cancel()
		_, err := env.Run(ctx, dir, "plan", "-input=false", "-no-color")
		var te *standin.TofuError
		if !errors.As(err, &te) {
			t.Fatalf("plan accepted a Service the cloud cannot serve (err %v)", err)
		}
		if got := strings.Join(strings.Fields(te.Stderr), " "); !strings.Contains(got, tc.wantErr) {
			t.Fatalf("plan error lacks %q:\n%s", tc.wantErr, te.Stderr)
		}
		onlySetErrors(t, te.Stderr)
		if calls := env.Calls(t); len(calls) != 0 {
			t.Fatalf("refused Service still called the cloud: %+v", calls)
		}
		return
	}
	if !*validated {
		noWarnings(t, "validate", env.Tofu(t, dir, "validate", "-no-color"))
		*validated = true
	}
	noWarnings(t, "plan", env.Tofu(t, dir, "plan", "-input=false", "-no-color", "-out=tfplan"))
	noWarnings(t, "apply", env.Tofu(t, dir, "apply", "-input=false", "-no-color", "tfplan"))
	calls := env.Calls(t)
	for _, call := range calls {
		if call.Op != "create" {
			t.Errorf("first apply made a %s call: %+v", call.Op, call)
		}
	}
	var ingress []map[string]any
	if err := json.Unmarshal(env.Tofu(t, dir, "output", "-json", "ingress"), &ingress); err != nil {
		t.Fatal(err)
	}
	if len(ingress) == 0 {
		t.Error("empty ingress")
	}
	if tc.check != nil {
		tc.check(t, calls, ingress)
	}
	if tc.golden {
		var b bytes.Buffer
		fmt.Fprintf(&b, "--- %s\n%s--- calls\n", templates.TfvarsFile, ws.Files[templates.TfvarsFile])
		writeCalls(&b, calls)
		fmt.Fprintf(&b, "--- ingress\n")
		writeJSON(&b, ingress)
		golden(t, filepath.Join(c.set, "lb-"+tc.name+".txt"), b.Bytes())
	}

	// Nothing to do on a second plan: read returns what was applied.
	env.Tofu(t, dir, "plan", "-input=false", "-no-color", "-detailed-exitcode")

	// One node fewer: only that node's target goes.
	fewer := nodes()
	ws2, err := set.RenderLoadBalancer(cfg, svc, fewer[:len(fewer)-1], sharing(t, svc, tc.shared))
	if err != nil {
		t.Fatal(err)
	}
	if err := ws2.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	env.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	changed := env.Calls(t)
	c.nodeRemoved(t, changed)
	alive := len(calls)
	for _, ch := range changed {
		switch ch.Op {
		case "create":
			alive++
		case "delete":
			alive--
		}
	}

	env.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	deleted := env.Calls(t)
	if len(deleted) != alive {
		t.Errorf("destroy made %d calls, want %d deletes", len(deleted), alive)
	}
	for _, d := range deleted {
		if d.Op != "delete" {
			t.Errorf("destroy made a %s call", d.Op)
		}
	}
	assertStoreEmpty(t, env)
}

// sharing is what tfccm passes the template for a Service sharing its
// address under key (none: the Service's requested addresses, unshared).
func sharing(t testing.TB, svc *corev1.Service, key string) templates.Addresses {
	req, err := ipam.RequestOf(svc, false)
	if err != nil {
		t.Fatal(err)
	}
	return templates.Addresses{IPs: req.IPs, Shared: ipam.ShareToken("prod", "", key)}
}

// setErrors are the error summaries of a set's own checks (variable
// validations, preconditions): the errors that name a Service setting.
var setErrors = map[string]bool{"Invalid value for variable": true, "Resource precondition failed": true}

// onlySetErrors fails the test when a refused Service also got another
// error (a provider's, an API's, an invalid index): the user must see the
// set's message alone, not after or beside one that does not name the
// Service setting.
func onlySetErrors(t *testing.T, stderr string) {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if summary, ok := strings.CutPrefix(strings.TrimSpace(line), "Error: "); ok && !setErrors[summary] {
			t.Errorf("a refused Service got %q besides the set's message:\n%s", summary, stderr)
		}
	}
}

// noWarnings fails the test when OpenTofu warned (a deprecated attribute,
// a value derived from one, ...): what a user would see on every plan.
func noWarnings(t *testing.T, what string, out []byte) {
	t.Helper()
	if bytes.Contains(out, []byte("Warning: ")) {
		t.Errorf("tofu %s warned:\n%s", what, out)
	}
}

// cleanup destroys what a failed test left behind, so the next test
// starts with an empty cloud and an empty call log.
func cleanup(t *testing.T, env *standin.Env, dir string) {
	if !t.Failed() {
		return
	}
	ctx, cancel := tofuCtx()
	defer cancel()
	if _, err := env.Run(ctx, dir, "destroy", "-auto-approve", "-input=false", "-no-color"); err != nil {
		t.Logf("cleanup: %v", err)
	}
	env.Calls(t)
}

func assertStoreEmpty(t *testing.T, env *standin.Env) {
	t.Helper()
	var left []string
	_ = filepath.WalkDir(env.Store, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, strings.TrimPrefix(p, env.Store))
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("objects left in the cloud after destroy: %v", left)
	}
}

func runRoutes(t *testing.T, env *standin.Env, set *templates.Set, c cloud) {
	env.SetFixture(t, c.fixture)
	work := t.TempDir()
	cfg := parseConfig(t, c.config, work)
	ws, err := set.RenderRoutes(cfg, templates.RoutesFromNodes(c.routeNodes()))
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	dir := filepath.Join(work, "ws")
	if err := ws.WriteDir(dir); err != nil {
		t.Fatal(err)
	}
	env.Tofu(t, dir, "init", "-input=false", "-no-color")
	noWarnings(t, "validate", env.Tofu(t, dir, "validate", "-no-color"))
	noWarnings(t, "apply", env.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color"))
	calls := env.Calls(t)
	c.routeCheck(t, calls)
	var routes map[string]map[string]any
	if err := json.Unmarshal(env.Tofu(t, dir, "output", "-json", "routes"), &routes); err != nil {
		t.Fatal(err)
	}
	want := templates.RoutesFromNodes(c.routeNodes())
	if len(routes) != len(want) {
		t.Errorf("routes output has %d routes, want %d: %v", len(routes), len(want), routes)
	}
	for _, r := range want {
		got := routes[r.Name]
		if got["destination_cidr"] != r.DestinationCIDR || got["target_node"] != r.TargetNode || got["blackhole"] != false {
			t.Errorf("route %s: %v", r.Name, got)
		}
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "--- %s\n%s--- calls\n", templates.TfvarsFile, ws.Files[templates.TfvarsFile])
	writeCalls(&b, calls)
	golden(t, filepath.Join(c.set, "routes.txt"), b.Bytes())
	env.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
	if got := env.Calls(t); len(got) != len(calls) {
		t.Errorf("destroy: %d calls, want %d", len(got), len(calls))
	}
	assertStoreEmpty(t, env)

	for _, re := range c.routeErrs {
		t.Run(re.name, func(t *testing.T) {
			ws, err := set.RenderRoutes(cfg, templates.RoutesFromNodes(re.nodes()))
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			if err := ws.WriteDir(dir); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := tofuCtx()
			defer cancel()
			_, err = env.Run(ctx, dir, "plan", "-input=false", "-no-color")
			var te *standin.TofuError
			if !errors.As(err, &te) {
				t.Fatalf("plan accepted routes the cloud cannot make (err %v)", err)
			}
			if got := strings.Join(strings.Fields(te.Stderr), " "); !strings.Contains(got, re.wantErr) {
				t.Fatalf("plan error lacks %q:\n%s", re.wantErr, te.Stderr)
			}
		})
	}
}

func runInstances(t *testing.T, env *standin.Env, set *templates.Set, c cloud) {
	env.SetFixture(t, c.infraFixture)
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join(c.infra, "main.tf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	env.Tofu(t, dir, "init", "-input=false", "-no-color")
	env.Tofu(t, dir, "apply", "-auto-approve", "-input=false", "-no-color")
	env.Calls(t)
	var st tfjson.State
	if err := json.Unmarshal(env.Tofu(t, dir, "show", "-json"), &st); err != nil {
		t.Fatal(err)
	}
	msrc, name, err := set.InstancesMapping()
	if err != nil {
		t.Fatal(err)
	}
	m, err := mapping.Parse(msrc, name)
	if err != nil {
		t.Fatal(err)
	}
	ix := instances.BuildIndex(m, &st)
	if errs, n := ix.Errors(); n > 0 {
		t.Fatalf("mapping errors: %v", errs)
	}
	got := ix.Instances()
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	c.wantInstances(t, got)
	var b bytes.Buffer
	writeJSON(&b, got)
	golden(t, filepath.Join(c.set, "instances.txt"), b.Bytes())
	queryInstances(t, c.set, dir, b.Bytes(), got)
	env.Tofu(t, dir, "destroy", "-auto-approve", "-input=false", "-no-color")
}

// queryInstances reads the same state with `tfccm state query` (the binary,
// built from this tree): a cloud config naming the set and the
// infrastructure directory as a state source, read through the set's
// instances.hcl as the controller's Instances facet reads it, with NO
// provider plugin installed (an empty CLI config, none of the stand-in's
// settings): the raw state is read without any provider's schema, as in the
// image, which holds none of these providers. It must list exactly want
// (the JSON of the instances mapped above from `tofu show -json`, which
// needs the plugins) and find the first instance by providerID and by name.
func queryInstances(t *testing.T, set, infraDir string, want []byte, found []*instances.Instance) {
	t.Helper()
	noPlugins := filepath.Join(t.TempDir(), "empty.tofurc")
	if err := os.WriteFile(noPlugins, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, `cluster_name = "prod"
work_dir = %q
template_set = %q
terraform {
  binary          = %q
  cli_config_file = %q
}
instances {
  source "infra" { dir = %q }
}
`, t.TempDir(), set, repo.Tofu(t), noPlugins, infraDir), 0o644); err != nil {
		t.Fatal(err)
	}
	query := func(args ...string) []byte {
		ctx, cancel := tofuCtx()
		defer cancel()
		cmd := exec.CommandContext(ctx, tfccmBinary(t), append([]string{"state", "query", "--config", cfg, "--json"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("tfccm state query %v: %v\n%s", args, err, stderr.Bytes())
		}
		var got []*instances.Instance
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("tfccm state query %v: %v\n%s", args, err, out)
		}
		sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
		var b bytes.Buffer
		writeJSON(&b, got)
		return b.Bytes()
	}
	if got := query(); !bytes.Equal(got, want) {
		t.Errorf("tfccm state query lists\n%s\nwant\n%s", got, want)
	}
	var one bytes.Buffer
	writeJSON(&one, found[:1])
	for _, args := range [][]string{{"--provider-id", found[0].ProviderID}, {"--name", found[0].Name}} {
		if got := query(args...); !bytes.Equal(got, one.Bytes()) {
			t.Errorf("tfccm state query %v:\n%s\nwant\n%s", args, got, one.Bytes())
		}
	}
}

var (
	tfccmOnce sync.Once
	tfccmPath string
	tfccmErr  error
)

// TestMain removes the tfccm binary built for the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if tfccmPath != "" {
		_ = os.RemoveAll(filepath.Dir(tfccmPath))
	}
	os.Exit(code)
}

// tfccmBinary builds the tfccm CLI from this tree once per test run.
func tfccmBinary(t *testing.T) string {
	t.Helper()
	tfccmOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tfccm-clouds-bin")
		if err != nil {
			tfccmErr = err
			return
		}
		tfccmPath = filepath.Join(dir, "tfccm")
		tfccmErr = repo.BuildTo("./cmd/tfccm", tfccmPath)
	})
	if tfccmErr != nil {
		t.Fatal(tfccmErr)
	}
	return tfccmPath
}

func writeCalls(b *bytes.Buffer, calls []standin.Call) {
	for _, c := range calls {
		line, _ := json.Marshal(c)
		b.Write(line)
		b.WriteByte('\n')
	}
}

func writeJSON(b *bytes.Buffer, v any) {
	out, _ := json.MarshalIndent(v, "", "  ")
	b.Write(out)
	b.WriteByte('\n')
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	testkit.Golden(t, filepath.Join("testdata", "golden", name), got)
}

// callsOf returns the calls on one resource type.
func callsOf(calls []standin.Call, typ string) []standin.Call {
	var out []standin.Call
	for _, c := range calls {
		if c.Type == typ {
			out = append(out, c)
		}
	}
	return out
}

// findCall returns the call on typ whose values have attr == value.
func findCall(t *testing.T, calls []standin.Call, typ, attr string, value any) standin.Call {
	t.Helper()
	for _, c := range callsOf(calls, typ) {
		if fmt.Sprint(c.Values[attr]) == fmt.Sprint(value) {
			return c
		}
	}
	t.Fatalf("no %s call with %s = %v in %+v", typ, attr, value, calls)
	return standin.Call{}
}

// nested returns the first element of a nested block list value.
func nested(v any) map[string]any {
	if l, ok := v.([]any); ok && len(l) > 0 {
		m, _ := l[0].(map[string]any)
		return m
	}
	return nil
}
