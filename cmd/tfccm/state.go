package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances"
	"github.com/tfccm/tfccm/templates"
)

// runState answers `tfccm state query`: the instances the controller's
// Instances facet sees, read from the configured state sources through the
// same mapping and Store.
func runState(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "query" {
		fmt.Fprintln(stderr, "usage: tfccm state query --config cloud.hcl [--name NODE] [--provider-id ID] [--json]")
		return exitUsage
	}
	fs := flag.NewFlagSet("tfccm state query", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("config", "", "the cloud config (its instances block names the state sources)")
	name := fs.String("name", "", "look up one node by name")
	providerID := fs.String("provider-id", "", "look up one node by providerID (tried before --name)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", 2*time.Minute, "give up reading state after this long")
	if err := fs.Parse(args[1:]); err != nil {
		return exitUsage
	}
	if *cfgPath == "" || fs.NArg() != 0 {
		fmt.Fprintln(stderr, "tfccm state query: --config is required")
		return exitUsage
	}
	cfg, err := config.Load(*cfgPath)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if len(cfg.Instances.Sources) == 0 {
		fmt.Fprintf(stderr, "%s: no instances sources configured (instances { source \"NAME\" { dir = ... } })\n", *cfgPath)
		return exitError
	}
	loader, err := templates.NewLoader(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	store, err := instances.StoreFromConfig(cfg, loader.Set().InstancesMapping)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	list, err := query(ctx, store, *providerID, *name)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if err := printInstances(stdout, list, *asJSON); err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	return exitOK
}

// query looks one instance up (by providerID, then name) or, with
// neither, lists them all.
func query(ctx context.Context, store *instances.Store, providerID, name string) ([]*instances.Instance, error) {
	if name == "" && providerID == "" {
		return store.Instances(ctx)
	}
	in, err := store.Lookup(ctx, providerID, name)
	if errors.Is(err, instances.ErrNotFound) {
		return nil, errors.New("not found: fresh state has no such instance")
	}
	if err != nil {
		return nil, err
	}
	return []*instances.Instance{in}, nil
}

// printInstances writes list as indented JSON or as a table.
func printInstances(w io.Writer, list []*instances.Instance, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPROVIDER-ID\tTYPE\tZONE\tREGION\tADDRESSES\tSHUTDOWN\tRESOURCE")
	for _, in := range list {
		var addrs []string
		for _, a := range in.Addresses {
			addrs = append(addrs, a.Type+"="+a.Address)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%t\t%s\n", in.Name, dash(in.ProviderID), dash(in.InstanceType), dash(in.Zone), dash(in.Region), dash(strings.Join(addrs, ",")), in.Shutdown, in.Resource)
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
