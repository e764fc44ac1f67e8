package deploy

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/config/chartvalues"
	"github.com/tfccm/tfccm/internal/version"
)

// TestChartValuesMatchChart: one rule, two paths. The cloud config the
// chart gives the CCM (helm template, its ConfigMap's files, config.Load)
// equals chartvalues.Load of the same values (what tfccm render --values
// and tfccm lbhost check --values use), for every example and golden case
// whose cloud config the chart writes.
func TestChartValuesMatchChart(t *testing.T) {
	root, bin := helm(t)
	examples, err := filepath.Glob(filepath.Join(root, Chart, "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type tc struct {
		name, namespace string
		files           []string
	}
	var tcs []tc
	for _, f := range examples {
		tcs = append(tcs, tc{"examples/" + filepath.Base(f), chartvalues.ReleaseNamespace, []string{f}})
	}
	for _, c := range cases(t) {
		tcs = append(tcs, tc{"testdata/" + c, caseNamespace(c), caseValues(c)})
	}
	for _, c := range tcs {
		t.Run(c.name, func(t *testing.T) {
			out, err := HelmTemplate(bin, root, chartvalues.ReleaseName, c.namespace, c.files)
			if err != nil {
				t.Fatal(err)
			}
			objs, err := Decode(out)
			if err != nil {
				t.Fatal(err)
			}
			var data map[string]string
			for _, o := range objs {
				if cm, ok := o.(*corev1.ConfigMap); ok && cm.Name == "tfccm-cloud-config" {
					data = cm.Data
				}
			}
			if data == nil {
				t.Skip("the chart writes no cloud config (cloudConfig.existingConfigMap)")
			}
			dir := t.TempDir()
			for k, v := range data {
				if err := os.WriteFile(filepath.Join(dir, k), []byte(v), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			fromChart, err := config.Load(filepath.Join(dir, "cloud.hcl"))
			if err != nil {
				t.Fatalf("the CCM refuses the chart's cloud config: %v", err)
			}
			values := mergedValues(t, c.files)
			fromValues, err := chartvalues.Load(values)
			if err != nil {
				t.Fatalf("chartvalues.Load: %v", err)
			}
			if c.namespace != chartvalues.ReleaseNamespace {
				// Load assumes the docs' release namespace.
				fromChart.Namespace = fromValues.Namespace
			}
			if j := fromValues.Terraform.Job; j != nil && strings.HasSuffix(j.Image, ":"+version.Version()) {
				// The chart's image tag defaults to its appVersion, Load's
				// to the binary's version: one version in a release.
				j.Image = strings.TrimSuffix(j.Image, ":"+version.Version()) + ":" + appVersion(t, root)
			}
			if d := cmp.Diff(fromChart, fromValues, configComparers...); d != "" {
				t.Errorf("the chart's cloud config (-) and chartvalues.Load's (+) differ:\n%s", d)
			}
		})
	}
}

// appVersion is the chart's appVersion.
func appVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, Chart, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil || c.AppVersion == "" {
		t.Fatalf("Chart.yaml: no appVersion (%v)", err)
	}
	return c.AppVersion
}

// configComparers compare two Configs by what they say, not where it was
// written (file names, source ranges, parsed bodies).
var configComparers = []cmp.Option{
	cmpopts.IgnoreFields(config.Config{}, "Filename"),
	cmpopts.IgnoreTypes(hcl.Range{}),
	cmpopts.EquateComparable(netip.Addr{}),
	cmpopts.IgnoreInterfaces(struct{ hcl.Body }{}),
	cmp.Comparer(func(a, b cty.Value) bool { return a.RawEquals(b) }),
	cmp.Comparer(func(a, b labels.Selector) bool { return a.String() == b.String() }),
}

// mergedValues is the values files merged as helm merges them (maps key
// by key, everything else replaced), as one file.
func mergedValues(t *testing.T, files []string) []byte {
	t.Helper()
	merged := map[string]any{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := yaml.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		mergeInto(merged, m)
	}
	out, err := yaml.Marshal(merged)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func mergeInto(dst, src map[string]any) {
	for k, v := range src {
		if sm, ok := v.(map[string]any); ok {
			if dm, ok := dst[k].(map[string]any); ok {
				mergeInto(dm, sm)
				continue
			}
		}
		dst[k] = v
	}
}
