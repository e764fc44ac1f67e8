package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/cloud-provider/options"

	"github.com/tfccm/tfccm/ccm"
	"github.com/tfccm/tfccm/deploy"
	"github.com/tfccm/tfccm/internal/repo"
)

// command builds the command as main does.
func command(t *testing.T) (*cobra.Command, *options.CloudControllerManagerOptions) {
	t.Helper()
	o, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		t.Fatal(err)
	}
	cmd := newCommand(o, &handover{stopping: make(chan struct{})})
	if err := applyDefaults(cmd.Flags()); err != nil {
		t.Fatal(err)
	}
	return cmd, o
}

// parsed builds the command and parses args.
func parsed(t *testing.T, args ...string) *options.CloudControllerManagerOptions {
	t.Helper()
	cmd, o := command(t)
	if err := cmd.Flags().Parse(args); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestDefaults: run with only --cloud-config, the CCM serves tfccm's
// provider with ten service workers; flags on the command line still win.
func TestDefaults(t *testing.T) {
	o := parsed(t, "--cloud-config=/etc/tfccm/cloud.hcl")
	if got := o.ServiceController.ConcurrentServiceSyncs; got != 10 {
		t.Errorf("concurrent service syncs %d, want 10", got)
	}
	if got := o.KubeCloudShared.CloudProvider.Name; got != ccm.ProviderName {
		t.Errorf("cloud provider %q, want %q", got, ccm.ProviderName)
	}
	if !o.Generic.LeaderElection.LeaderElect || o.KubeCloudShared.UseServiceAccountCredentials {
		t.Errorf("leader-elect %v, use-service-account-credentials %v", o.Generic.LeaderElection.LeaderElect, o.KubeCloudShared.UseServiceAccountCredentials)
	}
	o = parsed(t, "--concurrent-service-syncs=3")
	if got := o.ServiceController.ConcurrentServiceSyncs; got != 3 {
		t.Errorf("--concurrent-service-syncs=3 gives %d", got)
	}
}

// TestChartArgsAreDefaults: every flag the chart passes with its default
// values (except the paths it mounts) is the binary's default, so the
// README's command line and the chart run the same CCM.
func TestChartArgsAreDefaults(t *testing.T) {
	root, err := repo.Root()
	if err != nil {
		t.Fatal(err)
	}
	helm := filepath.Join(root, "bin", "helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("helm not found at %s: run `make tools`", helm)
	}
	out, err := deploy.HelmTemplate(helm, root, "tfccm", "kube-system", []string{filepath.Join(root, "deploy", "testdata", "helm", "default.values.yaml")})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := deploy.Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for _, o := range objs {
		if d, ok := o.(*appsv1.Deployment); ok {
			args = d.Spec.Template.Spec.Containers[0].Args
		}
	}
	if len(args) < 5 {
		t.Fatalf("chart args: %v", args)
	}
	cmd, _ := command(t)
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || name == "cloud-config" {
			continue
		}
		f := cmd.Flags().Lookup(name)
		if f == nil {
			t.Errorf("the chart passes %s, which the CCM does not have", a)
			continue
		}
		if f.DefValue != value {
			t.Errorf("the chart passes %s; the binary's default is %s (set it in Defaults)", a, f.DefValue)
		}
	}
}
