// Command terraform-provider-standin is tfccm's test stand-in for real
// cloud providers (see package test/standin). Run by OpenTofu through a
// launcher that passes -provider; `install` writes launchers and a CLI
// config:
//
//	terraform-provider-standin install -mirror DIR -cli-config FILE [name...]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6/tf6server"

	"github.com/tfccm/tfccm/internal/parentwatch"
	"github.com/tfccm/tfccm/test/standin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "install" {
		if err := install(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	// A stand-in whose tofu was killed must not outlive it (as a real
	// provider would): the tests' leftover check counts it.
	parentwatch.Watch("terraform-provider-standin")
	if err := serve(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func serve(args []string) error {
	fs := flag.NewFlagSet("terraform-provider-standin", flag.ContinueOnError)
	provider := fs.String("provider", "", "known provider name or address to pose as")
	schemaFile := fs.String("schema", "", "a `tofu providers schema -json` file (.json or .json.gz) instead of an embedded schema")
	settings := fs.String("settings", "", "a JSON `file` of the stand-in's variables (TFCCM_STANDIN_*) for those the environment lacks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *settings != "" {
		if err := standin.LoadSettings(*settings); err != nil {
			return err
		}
	}
	var (
		schema *standin.ProviderSchema
		err    error
	)
	if *schemaFile != "" {
		schema, err = standin.LoadSchemaFile(*schemaFile, *provider)
	} else {
		var p standin.Provider
		if p, err = standin.Lookup(*provider); err == nil {
			var only []string
			if v := os.Getenv(standin.EnvOnly); v != "" {
				only = strings.Split(v, ",")
			}
			schema, err = standin.LoadKnownSchema(p, only...)
		}
	}
	if err != nil {
		return err
	}
	srv, err := standin.NewServer(schema)
	if err != nil {
		return err
	}
	if err := tf6server.Serve(schema.Address, func() tfprotov6.ProviderServer { return srv }); err != nil {
		return fmt.Errorf("serve %s: %w", schema.Address, err)
	}
	return nil
}

func install(args []string) error {
	fs := flag.NewFlagSet("terraform-provider-standin install", flag.ContinueOnError)
	mirror := fs.String("mirror", "", "filesystem mirror directory to write")
	cliConfig := fs.String("cli-config", "", "OpenTofu CLI config file to write")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *mirror == "" || *cliConfig == "" {
		return fmt.Errorf("install: -mirror and -cli-config are required")
	}
	providers := standin.Known
	if fs.NArg() > 0 {
		providers = nil
		for _, n := range fs.Args() {
			p, err := standin.Lookup(n)
			if err != nil {
				return err
			}
			providers = append(providers, p)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	mirrorAbs, err := filepath.Abs(*mirror)
	if err != nil {
		return fmt.Errorf("install: %w", err)
	}
	if err := standin.Install(mirrorAbs, self, providers...); err != nil {
		return err
	}
	return standin.WriteCLIConfig(*cliConfig, mirrorAbs, providers...)
}
