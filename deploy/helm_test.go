package deploy

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/deploy/image"
	"github.com/tfccm/tfccm/internal/repo"
	"github.com/tfccm/tfccm/internal/testkit"
)

// helm returns the repository's root and its bin/helm (make tools).
func helm(t *testing.T) (root, bin string) {
	t.Helper()
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("helm not found at %s: run `make tools`", bin)
	}
	return root, bin
}

// cases are the golden renders: testdata/helm/<case>.values.yaml rendered
// over default.values.yaml (the values the chart requires) to
// testdata/helm/<case>.yaml.
func cases(t *testing.T) []string {
	files, err := filepath.Glob("testdata/helm/*.values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".values.yaml"))
	}
	return out
}

// caseValues are the values files of case c.
func caseValues(c string) []string {
	values := []string{filepath.Join("testdata", "helm", "default.values.yaml")}
	if c != "default" {
		values = append(values, filepath.Join("testdata", "helm", c+".values.yaml"))
	}
	return values
}

// caseNamespace is the release namespace case c renders in: kube-system,
// except for review mode, which needs a namespace of its own.
func caseNamespace(c string) string {
	if c == "review" {
		return "tfccm-system"
	}
	return "kube-system"
}

func render(t *testing.T, c string, set ...string) []byte {
	t.Helper()
	root, bin := helm(t)
	out, err := HelmTemplate(bin, root, "tfccm", caseNamespace(c), caseValues(c), set...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHelmLint(t *testing.T) {
	root, bin := helm(t)
	for _, c := range cases(t) {
		args := []string{"lint", "--strict", "--namespace", caseNamespace(c), filepath.Join(root, Chart)}
		for _, v := range caseValues(c) {
			args = append(args, "--values", v)
		}
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Errorf("helm lint (%s): %v\n%s", c, err, out)
		}
	}
}

// TestHelmTemplateGolden compares each render with its golden file
// (`go test ./deploy -update` rewrites them) and decodes it strictly.
func TestHelmTemplateGolden(t *testing.T) {
	for _, c := range cases(t) {
		t.Run(c, func(t *testing.T) {
			got := render(t, c)
			testkit.Golden(t, filepath.Join("testdata", "helm", c+".yaml"), got)
			if _, err := Decode(got); err != nil {
				t.Errorf("render does not decode: %v", err)
			}
		})
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func objects(t *testing.T, c string, set ...string) []runtime.Object {
	t.Helper()
	objs, err := Decode(render(t, c, set...))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func podSpec(t *testing.T, objs []runtime.Object) (kind string, spec corev1.PodSpec) {
	t.Helper()
	for _, o := range objs {
		switch v := o.(type) {
		case *appsv1.Deployment:
			return "Deployment", v.Spec.Template.Spec
		case *appsv1.DaemonSet:
			return "DaemonSet", v.Spec.Template.Spec
		}
	}
	t.Fatal("no workload rendered")
	return
}

// TestHelmChartSettings checks what the goldens cannot say by themselves:
// the restricted security context, the paths the image provides, a cloud
// config tfccm accepts, the daemonset layout and the template items.
func TestHelmChartSettings(t *testing.T) {
	objs := objects(t, "default")
	kind, spec := podSpec(t, objs)
	if kind != "Deployment" {
		t.Errorf("default mode renders a %s", kind)
	}
	c := spec.Containers[0]
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || sc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != image.UID ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		t.Errorf("security context is not restricted: pod %+v container %+v", psc, sc)
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		mounts[m.MountPath] = true
	}
	for _, p := range []string{"/etc/tfccm/config", image.WorkDir, "/tmp"} {
		if !mounts[p] {
			t.Errorf("no volume at %s (the root file system is read-only)", p)
		}
	}
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--cloud-provider=terraform", "--cloud-config=/etc/tfccm/config/cloud.hcl", "--leader-elect=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("args lack %s: %s", want, args)
		}
	}
	// Ready only once it serves /healthz, right before it joins the leader
	// election: a rollout must not stop the leader while the pod that
	// replaces it cannot take the Lease yet (#46).
	if rp := c.ReadinessProbe; rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/healthz" || rp.HTTPGet.Port.String() != "https" || rp.PeriodSeconds > 1 {
		t.Errorf("readiness probe %+v, want /healthz on the https port every second", rp)
	}
	var pdb bool
	for _, o := range objs {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if v.Name != "tfccm-cloud-config" {
				continue
			}
			cfg, err := chartCloudConfig(t, v)
			if err != nil {
				t.Error(err)
				continue
			}
			if cfg.Terraform.CLIConfigFile != image.CLIConfig || cfg.WorkDir != image.WorkDir {
				t.Errorf("cloud config: cli_config_file %q, work_dir %q; want the image's %s and %s", cfg.Terraform.CLIConfigFile, cfg.WorkDir, image.CLIConfig, image.WorkDir)
			}
			if cfg.Terraform.ProviderLockFile != image.ProviderLockFile {
				t.Errorf("cloud config: provider_lock_file %q, want the image's %s", cfg.Terraform.ProviderLockFile, image.ProviderLockFile)
			}
		case *policyv1.PodDisruptionBudget:
			pdb = v.Spec.MaxUnavailable != nil && v.Spec.MaxUnavailable.IntValue() == 1
		}
	}
	if !pdb {
		t.Error("no PodDisruptionBudget for the default two replicas")
	}

	if spec.HostNetwork {
		t.Error("the default Deployment runs on the host network")
	}
	hnObjects := objects(t, "default", "hostNetwork=true")
	_, hn := podSpec(t, hnObjects)
	// A surge pod would find no node with the host port free: the rollout
	// replaces the replicas one at a time.
	for _, o := range hnObjects {
		if d, ok := o.(*appsv1.Deployment); ok {
			if ru := d.Spec.Strategy.RollingUpdate; ru == nil || ru.MaxSurge == nil || ru.MaxUnavailable == nil || ru.MaxSurge.IntValue() != 0 || ru.MaxUnavailable.IntValue() != 1 {
				t.Errorf("hostNetwork=true: rolling update %+v, want maxSurge 0, maxUnavailable 1", ru)
			}
		}
	}
	if !hn.HostNetwork || hn.DNSPolicy != corev1.DNSClusterFirstWithHostNet {
		t.Errorf("hostNetwork=true: hostNetwork %v, dnsPolicy %q", hn.HostNetwork, hn.DNSPolicy)
	}
	// The default tolerations, plus network-unavailable (which only tfccm's
	// routes lift), as the DaemonSet controller gives host-network pods.
	hnTol := map[string]bool{}
	for _, x := range hn.Tolerations {
		hnTol[x.Key] = true
	}
	if len(hn.Tolerations) != len(spec.Tolerations)+1 || !hnTol["node.kubernetes.io/network-unavailable"] || !hnTol["node.cloudprovider.kubernetes.io/uninitialized"] {
		t.Errorf("hostNetwork=true: tolerations %v", hn.Tolerations)
	}
	for _, x := range spec.Tolerations {
		if x.Key == "node.kubernetes.io/network-unavailable" {
			t.Error("the default Deployment tolerates network-unavailable")
		}
	}

	_, ds := podSpec(t, objects(t, "daemonset"))
	if !ds.HostNetwork || ds.NodeSelector["node-role.kubernetes.io/control-plane"] != "" || len(ds.NodeSelector) != 1 {
		t.Errorf("daemonset: hostNetwork %v, nodeSelector %v", ds.HostNetwork, ds.NodeSelector)
	}
	tol := map[string]bool{}
	for _, x := range ds.Tolerations {
		tol[x.Key] = true
	}
	for _, k := range []string{"node-role.kubernetes.io/control-plane", "node.cloudprovider.kubernetes.io/uninitialized"} {
		if !tol[k] {
			t.Errorf("daemonset does not tolerate %s", k)
		}
	}
	// The tolerations value adds to the chart's own, in both modes.
	for _, c := range []string{"default", "daemonset"} {
		_, spec := podSpec(t, objects(t, c, "tolerations[0].key=example.com/dedicated", "tolerations[0].operator=Exists"))
		got := map[string]bool{}
		for _, x := range spec.Tolerations {
			got[x.Key] = true
		}
		if len(spec.Tolerations) != 3 || !got["example.com/dedicated"] || !got["node.cloudprovider.kubernetes.io/uninitialized"] || !got["node-role.kubernetes.io/control-plane"] {
			t.Errorf("%s with a toleration set: %v", c, spec.Tolerations)
		}
	}
	// logLevel is --v.
	_, lv := podSpec(t, objects(t, "default", "logLevel=5"))
	if args := strings.Join(lv.Containers[0].Args, " "); !strings.Contains(args, "--v=5") || strings.Contains(args, "--v=2") {
		t.Errorf("logLevel=5: args %s", args)
	}

	full := objects(t, "full")
	_, fs := podSpec(t, full)
	var items map[string]string
	var cm *corev1.ConfigMap
	for _, v := range fs.Volumes {
		if v.Name == "templates" && v.ConfigMap != nil {
			items = map[string]string{}
			for _, it := range v.ConfigMap.Items {
				items[it.Path] = it.Key
			}
		}
	}
	var monitor bool
	for _, o := range full {
		if v, ok := o.(*corev1.ConfigMap); ok && v.Name == "tfccm-templates" {
			cm = v
		}
		if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "ServiceMonitor" {
			monitor = true
		}
	}
	if cm == nil || len(items) != 3 {
		t.Fatalf("templates: ConfigMap %v, items %v", cm != nil, items)
	}
	for path, key := range items {
		if !strings.Contains(cm.Data[key], "resource") && !strings.Contains(cm.Data[key], "output") {
			t.Errorf("item %s -> key %s holds %q", path, key, cm.Data[key])
		}
	}
	if !strings.Contains(cm.Data[items["loadbalancer.internal/main.tf"]], `"internal"`) {
		t.Errorf("loadbalancer.internal/main.tf maps to the wrong content")
	}
	if !monitor {
		t.Error("serviceMonitor.enabled renders no ServiceMonitor")
	}

	// The uninstall guard: a pre-delete hook Job running tfccm services
	// from the image, allowed to list (refuse) or also delete Services.
	for mode, verbs := range map[string]string{"refuse": "list", "delete": "list delete", "none": ""} {
		var job *batchv1.Job
		var role *rbacv1.ClusterRole
		for _, o := range objects(t, "default", "uninstall.loadBalancers="+mode) {
			switch v := o.(type) {
			case *batchv1.Job:
				job = v
			case *rbacv1.ClusterRole:
				if v.Name == "tfccm-uninstall" {
					role = v
				}
			}
		}
		if mode == "none" {
			if job != nil || role != nil {
				t.Errorf("uninstall.loadBalancers=none renders the hook")
			}
			continue
		}
		if job == nil || role == nil {
			t.Fatalf("uninstall.loadBalancers=%s: Job %v, ClusterRole %v", mode, job != nil, role != nil)
		}
		c := job.Spec.Template.Spec.Containers[0]
		if job.Annotations["helm.sh/hook"] != "pre-delete" || c.Image != spec.Containers[0].Image ||
			strings.Join(c.Command, " ") != "/usr/local/bin/tfccm services --uninstall="+mode+" --timeout=600s" {
			t.Errorf("uninstall.loadBalancers=%s: hook %q, image %s, command %v", mode, job.Annotations["helm.sh/hook"], c.Image, c.Command)
		}
		if job.Spec.Template.Labels["app.kubernetes.io/name"] == "tfccm" {
			t.Errorf("the hook's pod carries the CCM's selector labels")
		}
		if got := strings.Join(role.Rules[0].Verbs, " "); got != verbs || role.Rules[0].Resources[0] != "services" || len(role.Rules) != 1 {
			t.Errorf("uninstall.loadBalancers=%s: the hook may %s %v", mode, got, role.Rules[0].Resources)
		}
	}
}

func TestHelmRejectsBadValues(t *testing.T) {
	root, bin := helm(t)
	for _, tc := range []struct {
		values, want string
		alone        bool // without default.values.yaml
	}{
		// No cloud configured: the chart says what to set.
		{"{}", "cloudConfig.templateSet is required", true},
		{"cloudConfig: {templateSet: hcloud}", "cloudConfig.clusterName is required", true},
		{"cloudConfig: {clusterName: Prod}", "cloudConfig.clusterName \"Prod\" must be", false},
		{"cloudConfig: {templateSet: \"x\\\"y\"}", "is not a template set name", false},
		{"mode: statefulset", "mode must be deployment or daemonset", false},
		{"stateBackend: {type: s3}", "stateBackend.type must be", false},
		{`cloudConfig: {inline: "load_balancer {}\n  backend \"local\" {}\n"}`, "has a backend block", false},
		{`cloudConfig: {inline: "terraform {\n}\n"}`, "has a terraform block", false},
		{`cloudConfig: {inline: "cluster_name = \"x\"\n"}`, "cloudConfig.inline sets cluster_name", false},
		{`cloudConfig: {inline: "work_dir = \"/tmp\"\n"}`, "cloudConfig.inline sets work_dir", false},
		{"templates: {files: {../evil.tf: x}}", "relative file path", false},
		{"templates: {files: {/etc/passwd: x}}", "relative file path", false},
		{"templates: {files: {a.tf: x}, existingConfigMap: t}", "not both", false},
		{"credentials: {keys: [A]}", "credentials.keys needs credentials.existingSecret", false},
		{"credentials: {existingSecret: s}", "credentials.keys is required", false},
		{"credentials: {existingSecret: s, keys: [\"A B\"]}", "is not an environment variable name", false},
		{"logLevel: debug", "logLevel must be a number", false},
		{"uninstall: {loadBalancers: keep}", "uninstall.loadBalancers must be refuse, delete or none", false},
		// Namespaces: the admin's, never kube-system for state or runners,
		// nor review's Secrets and approvers' ConfigMaps there.
		{"stateBackend: {kubernetes: {namespace: kube-system}}", "stateBackend.kubernetes.namespace kube-system: whoever reads the state Secrets", false},
		{"runner: {enabled: true, namespace: kube-system}", "runner.namespace kube-system: tfccm starts Jobs", false},
		{"runner: {enabled: true, namespace: st}\nstateBackend: {kubernetes: {namespace: st}}", "runner.namespace st is the state's or the release's namespace", false},
		{"runner: {enabled: true}\nstateBackend: {kubernetes: {namespace: kube-system}}", "stateBackend.kubernetes.namespace kube-system", false},
		{"runner: {enabled: true, pool: 65}", "runner/pool", false},
		{"runner: {enabled: true, pool: -1}", "runner/pool", false},
		{"review: {enabled: true}", "review.enabled (or policy/change_windows blocks) in the release namespace kube-system", false},
		{`cloudConfig: {inline: "policy \"x\" {\n}\n"}`, "in the release namespace kube-system", false},
		{"review: {approvers: [{kind: Group, name: sre}]}", "review.approvers in the release namespace kube-system", false},
		{`cloudConfig: {terraform: "review = true\n"}`, "cloudConfig.terraform sets review: set review.enabled instead", false},
		{`cloudConfig: {inline: "namespace = \"x\"\n"}`, "cloudConfig.inline sets namespace", false},
	} {
		f := filepath.Join(t.TempDir(), "values.yaml")
		if err := os.WriteFile(f, []byte(tc.values), 0o644); err != nil {
			t.Fatal(err)
		}
		values := append(caseValues("default"), f)
		if tc.alone {
			values = []string{f}
		}
		_, err := HelmTemplate(bin, root, "tfccm", "kube-system", values)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("values %s: got %v, want an error containing %q", tc.values, err, tc.want)
		}
	}
}

// grants are what a set of RBAC objects lets one ServiceAccount do, by
// rule, independent of how the objects are named: "NS GROUP RESOURCE VERB
// [NAMES]" (NAMES: the rule's resourceNames) with NS * for cluster-wide,
// "* URL VERB" for non-resource URLs, and "bind KIND NAME NS" for roles
// the objects bind but do not define (system:auth-delegator, ...).
func grants(t *testing.T, objs []runtime.Object, saNamespace, saName string) []string {
	t.Helper()
	clusterRoles := map[string][]rbacv1.PolicyRule{}
	roles := map[string][]rbacv1.PolicyRule{} // ns/name
	for _, o := range objs {
		switch v := o.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[v.Name] = v.Rules
		case *rbacv1.Role:
			roles[v.Namespace+"/"+v.Name] = v.Rules
		}
	}
	set := map[string]bool{}
	add := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, verb := range r.Verbs {
						g := fmt.Sprintf("%s %s %s %s", ns, g, res, verb)
						if len(r.ResourceNames) > 0 {
							g += " " + strings.Join(r.ResourceNames, ",")
						}
						set[g] = true
					}
				}
			}
			for _, u := range r.NonResourceURLs {
				for _, verb := range r.Verbs {
					set[fmt.Sprintf("%s %s %s", ns, u, verb)] = true
				}
			}
		}
	}
	bound := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" && s.Namespace == saNamespace && s.Name == saName {
				return true
			}
		}
		return false
	}
	for _, o := range objs {
		switch v := o.(type) {
		case *rbacv1.ClusterRoleBinding:
			if !bound(v.Subjects) {
				continue
			}
			if rules, ok := clusterRoles[v.RoleRef.Name]; ok {
				add("*", rules)
			} else {
				set["bind ClusterRole "+v.RoleRef.Name+" *"] = true
			}
		case *rbacv1.RoleBinding:
			if !bound(v.Subjects) {
				continue
			}
			var rules []rbacv1.PolicyRule
			var ok bool
			if v.RoleRef.Kind == "ClusterRole" {
				rules, ok = clusterRoles[v.RoleRef.Name]
			} else {
				rules, ok = roles[v.Namespace+"/"+v.RoleRef.Name]
			}
			if ok {
				add(v.Namespace, rules)
			} else {
				set["bind "+v.RoleRef.Kind+" "+v.RoleRef.Name+" "+v.Namespace] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestChartRBACMatchesBase: the chart (default values, in kube-system) and
// deploy/base let their ServiceAccount do exactly the same things.
func TestChartRBACMatchesBase(t *testing.T) {
	base, err := Objects("base")
	if err != nil {
		t.Fatal(err)
	}
	var baseSA *corev1.ServiceAccount
	for _, o := range base {
		if v, ok := o.(*corev1.ServiceAccount); ok {
			baseSA = v
		}
	}
	chart := objects(t, "default")
	var chartSA *corev1.ServiceAccount
	for _, o := range chart {
		if v, ok := o.(*corev1.ServiceAccount); ok && v.Annotations["helm.sh/hook"] == "" {
			chartSA = v
		}
	}
	if baseSA == nil || chartSA == nil {
		t.Fatal("a ServiceAccount is missing")
	}
	_, spec := podSpec(t, chart)
	if spec.ServiceAccountName != chartSA.Name {
		t.Errorf("the chart's pods run as %q, not its ServiceAccount %q", spec.ServiceAccountName, chartSA.Name)
	}
	b := grants(t, base, baseSA.Namespace, baseSA.Name)
	c := grants(t, chart, chartSA.Namespace, chartSA.Name)
	if strings.Join(b, "\n") != strings.Join(c, "\n") {
		t.Errorf("deploy/base and the chart grant different RBAC:\n%s", testkit.LineDiff(strings.Join(b, "\n"), strings.Join(c, "\n")))
	}
	if len(c) < 20 {
		t.Errorf("only %d grants: %v", len(c), c)
	}
}

// TestHelmLoadBalancerClass: cloudConfig.loadBalancerClass and
// serveClassless reach the cloud config tfccm reads and the uninstall
// hook's `tfccm services`, so both agree on which Services are tfccm's.
func TestHelmLoadBalancerClass(t *testing.T) {
	var hook []string
	var cfg *config.Config
	for _, o := range objects(t, "default", "cloudConfig.loadBalancerClass=example.com/lb", "cloudConfig.serveClassless=false") {
		switch v := o.(type) {
		case *corev1.ConfigMap:
			if v.Name != "tfccm-cloud-config" {
				continue
			}
			var err error
			if cfg, err = chartCloudConfig(t, v); err != nil {
				t.Fatal(err)
			}
		case *batchv1.Job:
			hook = v.Spec.Template.Spec.Containers[0].Command
		}
	}
	class, other := "example.com/lb", config.DefaultLoadBalancerClass
	if cfg == nil || !cfg.ServesClass(&class) || cfg.ServesClass(&other) || cfg.ServesClass(nil) {
		t.Errorf("cloud config: %+v", cfg)
	}
	if !slices.Contains(hook, "--load-balancer-class=example.com/lb") || !slices.Contains(hook, "--serve-classless=false") {
		t.Errorf("uninstall hook: %v", hook)
	}
}

// chartCloudConfig loads the cloud config the chart writes into cm as
// tfccm does.
func chartCloudConfig(t *testing.T, cm *corev1.ConfigMap) (*config.Config, error) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cloud.hcl")
	if err := os.WriteFile(f, []byte(cm.Data["cloud.hcl"]), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(f)
	if err != nil {
		return nil, fmt.Errorf("the chart's cloud config is refused: %w\n%s", err, cm.Data["cloud.hcl"])
	}
	return cfg, nil
}
