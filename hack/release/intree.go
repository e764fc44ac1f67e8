package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/lbhost/mirror"
)

// releaseVersion matches the versions `make release` accepts: vMAJOR.MINOR.PATCH.
var releaseVersion = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$`)

// inTree is every place the repository itself names the current release
// (bumped together in the commit that is tagged; docs/releasing.md).
type inTree struct {
	chartVersion string // deploy/helm/tfccm/Chart.yaml version (X.Y.Z)
	appVersion   string // ... appVersion (vX.Y.Z), the chart's default image tag
	baseImageTag string // deploy/base/deployment.yaml's image tag
	provider     string // lbhost/mirror.Version (X.Y.Z), the lbhost provider's version
	changelog    bool   // CHANGELOG.md has a "## [X.Y.Z]" section for the provider version
}

func readInTree(root string) (inTree, error) {
	var t inTree
	b, err := os.ReadFile(filepath.Join(root, deploy.Chart, "Chart.yaml"))
	if err != nil {
		return t, err
	}
	var chart struct {
		Version    string `json:"version"`
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil {
		return t, fmt.Errorf("Chart.yaml: %w", err)
	}
	t.chartVersion, t.appVersion = chart.Version, chart.AppVersion
	objs, err := deploy.Objects(filepath.Join(root, "deploy", "base"))
	if err != nil {
		return t, err
	}
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok && len(d.Spec.Template.Spec.Containers) > 0 {
			_, t.baseImageTag, _ = strings.Cut(d.Spec.Template.Spec.Containers[0].Image, ":")
		}
	}
	t.provider = mirror.Version
	cl, err := os.ReadFile(filepath.Join(root, "CHANGELOG.md"))
	if err != nil {
		return t, err
	}
	t.changelog = regexp.MustCompile(`(?m)^## \[` + regexp.QuoteMeta(t.provider) + `\]`).Match(cl)
	return t, nil
}

// check fails unless every in-tree version is version (vX.Y.Z).
func (t inTree) check(version string) error {
	if !releaseVersion.MatchString(version) {
		return fmt.Errorf("VERSION=%s: a release is vMAJOR.MINOR.PATCH (tag the commit, or give VERSION=)", version)
	}
	plain := strings.TrimPrefix(version, "v")
	var bad []string
	for _, c := range []struct{ what, got, want string }{
		{"deploy/helm/tfccm/Chart.yaml version", t.chartVersion, plain},
		{"deploy/helm/tfccm/Chart.yaml appVersion", t.appVersion, version},
		{"deploy/base/deployment.yaml image tag", t.baseImageTag, version},
		{"lbhost/mirror/version.go Version", t.provider, plain},
	} {
		if c.got != c.want {
			bad = append(bad, fmt.Sprintf("%s is %q, want %q", c.what, c.got, c.want))
		}
	}
	if len(bad) == 0 && !t.changelog {
		bad = append(bad, fmt.Sprintf("CHANGELOG.md has no \"## [%s]\" section", plain))
	}
	if len(bad) > 0 {
		return fmt.Errorf("the tree does not name release %s (bump them in the release commit; docs/releasing.md):\n  %s", version, strings.Join(bad, "\n  "))
	}
	return nil
}
