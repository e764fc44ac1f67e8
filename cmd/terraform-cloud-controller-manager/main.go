// Command terraform-cloud-controller-manager is the Kubernetes
// cloud-controller-manager whose cloud is described in Terraform. It is the
// standard k8s.io/cloud-provider/app command with the "terraform" provider
// registered, its own flag defaults (the Helm chart's, held equal to them
// by a test) and a leader hand-over on shutdown.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/annotations"
	"github.com/tfccm/tfccm/ccm"
	"github.com/tfccm/tfccm/internal/keyserver"
	"github.com/tfccm/tfccm/workspace/jobrunner"
)

func main() {
	if jobrunner.IsClient() {
		// Started by the workspace engine as tofu (terraform { runner =
		// "job" }): run the command in a Kubernetes Job.
		os.Exit(jobrunner.ClientMain())
	}
	ccmOptions, err := options.NewCloudControllerManagerOptions()
	if err != nil {
		klog.Fatalf("unable to initialize command options: %v", err)
	}
	// SIGTERM (a pod stopping, an upgrade) stops the app and hands the
	// leader Lease over (handover.go); a second signal kills at once.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() { <-ctx.Done(); stop() }()
	h := &handover{stopping: ctx.Done()}
	command := newCommand(ccmOptions, h)
	if err := applyDefaults(command.Flags()); err != nil {
		klog.Fatal(err)
	}
	rc := cli.Run(command)
	if ctx.Err() != nil {
		h.stop()
	}
	keyserver.Shutdown() // tfccm_pbkdf2's socket
	os.Exit(rc)
}

// newCommand is the upstream command with tfccm's cloud, stopped by h's
// signal.
func newCommand(o *options.CloudControllerManagerOptions, h *handover) *cobra.Command {
	initCloud := func(c *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
		return h.wrap(c, cloudInitializer(c))
	}
	var extra cliflag.NamedFlagSets
	extra.FlagSet("tfccm").StringVar(&h.previousName, previousLeaseFlag, "",
		"before leading, wait until this Lease of an earlier release (in --leader-elect-resource-namespace) is free, then hold it while leading, so that no pod of that release leads meanwhile; a Lease that does not exist is ignored (the chart sets "+annotations.PreviousLeaderLease+" on upgrades)")
	return app.NewCloudControllerManagerCommand(o, initCloud, app.DefaultInitFuncConstructors, names.CCMControllerAliases(), extra, h.stopping)
}

func cloudInitializer(c *cloudcontrollerconfig.CompletedConfig) *ccm.Cloud {
	shared := c.ComponentConfig.KubeCloudShared.CloudProvider
	if shared.Name != ccm.ProviderName {
		klog.Fatalf("this binary only serves --cloud-provider=%s, got %q", ccm.ProviderName, shared.Name)
	}
	cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
	if err != nil {
		klog.Fatalf("cloud provider %q: %v", shared.Name, err)
	}
	tc, ok := cloud.(*ccm.Cloud)
	if !ok || tc == nil {
		klog.Fatalf("cloud provider %q could not be initialized", shared.Name)
	}
	return tc
}
