package workspace

// A read of the state backend's catalog for `tfccm plan`: the last
// applied configuration of a workspace the candidate no longer renders
// (the BGP peering once bgp is removed), read as the engine's catalog
// reads it (package backends' Catalog), but in a scratch directory the
// caller owns: it lists the catalog's Terraform workspaces and pulls one
// entry's state, taking no lock. It writes no entry; only tofu init may
// write the catalog's empty default state when there is none yet (the
// kubernetes and pg backends create the selected workspace's state), as
// the controller's first use of the catalog does.

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/tfccm/tfccm/workspace/backends"
)

// PreviewCatalogEntry reads workspace name's entry from the catalog in
// the state backend whose backend is catalog (templates.Catalog), with
// tofu run as o says in dir (a new scratch directory). ok is false when
// the catalog holds no entry for name; a nil catalog (the local backend
// keeps none) is ErrNoCatalog. Errors name the backend's problem with
// o's and the backend's secrets scrubbed.
func PreviewCatalogEntry(ctx context.Context, o PreviewOptions, catalog *Spec, name, dir string) (entry CatalogEntry, ok bool, err error) {
	if catalog == nil {
		return CatalogEntry{}, false, ErrNoCatalog
	}
	scrub := o.Scrub.With(mapValues(catalog.BackendConfig))
	fail := func(op string, err error) error {
		return fmt.Errorf("%s backend: tofu %s: %s", catalog.Backend.Type, op, scrub.Scrub(err.Error()))
	}
	if err := catalog.WriteDir(dir); err != nil {
		return CatalogEntry{}, false, fmt.Errorf("the state backend's catalog: %w", err)
	}
	tf, err := previewTofu(o, catalog, dir)
	if err != nil {
		return CatalogEntry{}, false, fmt.Errorf("the state backend's catalog: %w", err)
	}
	r := previewRunner{tf: tf, fail: fail}
	open := func(ctx context.Context, _ string, _ backends.Runner) error {
		_, err := previewInit(ctx, tf, catalog, dir, fail)
		return err
	}
	store := backends.NewCatalog([]string{dir}, func(string) backends.Runner { return r }, open, validName)
	return lookupEntry(ctx, store, name)
}

// previewRunner runs the catalog's tofu commands with the preview's tofu,
// its errors scrubbed.
type previewRunner struct {
	tf   *tfexec.Terraform
	fail func(op string, err error) error
}

func (r previewRunner) Step(ctx context.Context, op string, fn func(context.Context, *tfexec.Terraform) error) error {
	if err := fn(ctx, r.tf); err != nil {
		return r.fail(op, err)
	}
	return nil
}
