package instances

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/tfccm/tfccm/config"
	"github.com/tfccm/tfccm/instances/mapping"
)

// MappingSource returns an instances.hcl file's bytes and name; the
// template set's InstancesMapping has this shape.
type MappingSource func() (src []byte, filename string, err error)

// MappingFromConfig is where cfg's instances mapping comes from:
// cfg.Instances.Mapping when set (a file, relative to the cloud config's
// directory, re-read on every call), else builtin (the template set's
// instances.hcl, which follows the override directory).
func MappingFromConfig(cfg *config.Config, builtin MappingSource) MappingSource {
	if p := cfg.Instances.Mapping; p != "" {
		if !filepath.IsAbs(p) && cfg.Filename != "" {
			p = filepath.Join(filepath.Dir(cfg.Filename), p)
		}
		return func() ([]byte, string, error) {
			b, err := os.ReadFile(p)
			return b, p, err
		}
	}
	if builtin != nil {
		return builtin
	}
	return func() ([]byte, string, error) {
		return nil, "", errors.New("no instances mapping: set instances.mapping")
	}
}

// StoreFromConfig builds the Store the controller uses for cfg (and that
// `tfccm state query` uses too): the mapping from MappingFromConfig and
// cfg.Instances' sources. The Store is not started.
func StoreFromConfig(cfg *config.Config, builtin MappingSource) (*Store, error) {
	src, name, err := MappingFromConfig(cfg, builtin)()
	if err != nil {
		return nil, fmt.Errorf("instances mapping: %w", err)
	}
	m, err := mapping.Parse(src, name)
	if err != nil {
		return nil, err
	}
	base := "."
	if cfg.Filename != "" {
		base = filepath.Dir(cfg.Filename)
	}
	sources, err := SourcesFromConfig(cfg.Instances, cfg.Terraform, base)
	if err != nil {
		return nil, err
	}
	return NewStore(OptionsFromConfig(cfg.Instances), m, sources...)
}

// WatchMapping re-reads the mapping from src every interval until ctx ends
// (wait.Until); when its content differs from the mapping the store serves
// it is parsed and, if valid, given to the store (SetMapping). An invalid
// mapping is logged with file:line once and the last good one keeps
// serving.
func WatchMapping(ctx context.Context, store *Store, src MappingSource, interval time.Duration) {
	// The baseline is what the store serves, not a read of src: a change
	// made before this goroutine ran is not missed.
	var last []byte
	if m := store.Mapping(); m != nil {
		last = m.Source()
	} else {
		last, _, _ = src()
	}
	var lastBad string
	check := func(context.Context) {
		b, name, err := src()
		if err != nil || bytes.Equal(b, last) {
			return
		}
		m, err := mapping.Parse(b, name)
		if err != nil {
			if msg := err.Error(); msg != lastBad {
				klog.ErrorS(err, "Invalid instances mapping; the last good one keeps serving", "file", name)
				lastBad = msg
			}
			return
		}
		last, lastBad = b, ""
		klog.InfoS("Loaded new instances mapping", "file", name)
		store.SetMapping(m)
	}
	wait.UntilWithContext(ctx, check, interval)
}
