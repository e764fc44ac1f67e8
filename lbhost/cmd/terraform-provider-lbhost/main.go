// Command terraform-provider-lbhost is the lbhost Terraform/OpenTofu
// provider (plugin protocol 6): HAProxy load balancers, VIPs and kernel
// routes on Linux load-balancer hosts. See lbhost/tfprovider.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/tfccm/tfccm/internal/parentwatch"
	"github.com/tfccm/tfccm/internal/providerlock"
	tfccmversion "github.com/tfccm/tfccm/internal/version"
	"github.com/tfccm/tfccm/lbhost/mirror"
	"github.com/tfccm/tfccm/lbhost/tfprovider"
)

// version is the provider's own semver (the directory OpenTofu installs it
// under; see docs/releasing.md); the tfccm build it belongs to is
// internal/version.
var version = tfprovider.Version

func main() {
	debug := flag.Bool("debug", false, "run as a debuggable process (prints TF_REATTACH_PROVIDERS)")
	cliConfig := flag.String("cli-config", "", "print a CLI configuration installing this provider from the filesystem mirror at `DIR`, and exit")
	lockFile := flag.String("lock-file", "", "print the dependency lock file (checksums) of every provider in the filesystem mirror at `DIR`, for terraform.provider_lock_file, and exit")
	showVersion := flag.Bool("version", false, "print the provider's version and the tfccm build's, and exit")
	flag.Parse()
	if *showVersion {
		fmt.Printf("terraform-provider-lbhost %s, %s\n", version, tfccmversion.String("tfccm"))
		return
	}
	if *cliConfig != "" {
		fmt.Print(mirror.CLIConfig(*cliConfig))
		return
	}
	if *lockFile != "" {
		ps, err := providerlock.Mirror(*lockFile)
		if err != nil {
			log.Fatal(err)
		}
		os.Stdout.Write(providerlock.File(ps))
		return
	}
	if !*debug {
		parentwatch.Watch("terraform-provider-lbhost")
	}
	err := providerserver.Serve(context.Background(), tfprovider.New(version), providerserver.ServeOpts{
		Address:         tfprovider.Address,
		Debug:           *debug,
		ProtocolVersion: 6,
	})
	if err != nil {
		log.Fatal(err)
	}
}
