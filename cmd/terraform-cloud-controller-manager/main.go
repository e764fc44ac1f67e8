// Command terraform-cloud-controller-manager is the Kubernetes
// cloud-controller-manager whose cloud is described in Terraform. It is the
// standard k8s.io/cloud-provider/app command with the "terraform" provider
// registered and its own flag defaults (defaults.go).
package main

import (
	"os"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/wait"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/app"
	cloudcontrollerconfig "k8s.io/cloud-provider/app/config"
	"k8s.io/cloud-provider/names"
	"k8s.io/cloud-provider/options"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/provider"
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
	command := newCommand(ccmOptions)
	if err := applyDefaults(command.Flags()); err != nil {
		klog.Fatal(err)
	}
	os.Exit(cli.Run(command))
}

func newCommand(o *options.CloudControllerManagerOptions) *cobra.Command {
	return app.NewCloudControllerManagerCommand(o, cloudInitializer, app.DefaultInitFuncConstructors, names.CCMControllerAliases(), cliflag.NamedFlagSets{}, wait.NeverStop)
}

func cloudInitializer(c *cloudcontrollerconfig.CompletedConfig) cloudprovider.Interface {
	shared := c.ComponentConfig.KubeCloudShared.CloudProvider
	if shared.Name != provider.ProviderName {
		klog.Fatalf("this binary only serves --cloud-provider=%s, got %q", provider.ProviderName, shared.Name)
	}
	cloud, err := cloudprovider.InitCloudProvider(shared.Name, shared.CloudConfigFile)
	if err != nil {
		klog.Fatalf("cloud provider %q: %v", shared.Name, err)
	}
	if cloud == nil {
		klog.Fatalf("cloud provider %q could not be initialized", shared.Name)
	}
	return cloud
}
