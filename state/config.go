package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tfccm/tfccm/provider/config"
	"github.com/tfccm/tfccm/state/mapping"
)

// MappingSource returns an instances.hcl file's bytes and name; the
// template set's InstancesMapping has this shape.
type MappingSource func() (src []byte, filename string, err error)

// StoreFromConfig builds the Store the controller uses for cfg (and that
// `tfccm state query` uses too): the mapping is cfg.Instances.Mapping when
// set (relative to the cloud config's directory), else builtin; the
// sources are cfg.Instances' sources. The Store is not started.
func StoreFromConfig(cfg *config.Config, builtin MappingSource) (*Store, error) {
	base := "."
	if cfg.Filename != "" {
		base = filepath.Dir(cfg.Filename)
	}
	var src []byte
	var name string
	var err error
	if p := cfg.Instances.Mapping; p != "" {
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		src, err = os.ReadFile(p)
		name = p
	} else if builtin != nil {
		src, name, err = builtin()
	} else {
		err = errors.New("no instances mapping: set instances.mapping")
	}
	if err != nil {
		return nil, fmt.Errorf("instances mapping: %w", err)
	}
	m, err := mapping.Parse(src, name)
	if err != nil {
		return nil, err
	}
	sources, err := SourcesFromConfig(cfg.Instances, cfg.Terraform, base)
	if err != nil {
		return nil, err
	}
	return NewStore(OptionsFromConfig(cfg.Instances), m, sources...)
}
