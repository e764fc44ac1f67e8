// Command terraform-provider-lbhost is the lbhost Terraform/OpenTofu
// provider (plugin protocol 6): HAProxy load balancers, VIPs and kernel
// routes on Linux load-balancer hosts. See lbhost/tfprovider.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/tfccm/tfccm/lbhost/mirror"
	"github.com/tfccm/tfccm/lbhost/tfprovider"
)

// version may be overridden with -ldflags "-X main.version=...".
var version = tfprovider.Version

func main() {
	debug := flag.Bool("debug", false, "run as a debuggable process (prints TF_REATTACH_PROVIDERS)")
	cliConfig := flag.String("cli-config", "", "print a CLI configuration installing this provider from the filesystem mirror at `DIR`, and exit")
	flag.Parse()
	if *cliConfig != "" {
		fmt.Print(mirror.CLIConfig(*cliConfig))
		return
	}
	if !*debug {
		watchParent()
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
