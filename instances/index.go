package instances

import (
	"fmt"
	"sort"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/tfccm/tfccm/instances/mapping"
)

// Instance is one instance from state (see mapping.Instance). Instances are
// shared: callers must not modify them.
type Instance = mapping.Instance

// Address is one typed instance address (see mapping.Address).
type Address = mapping.Address

// maxKeptErrors bounds the mapping errors an Index keeps verbatim.
const maxKeptErrors = 10

// Index is the instances of one state, by node name and providerID. It is
// immutable once built.
type Index struct {
	byName       map[string]*Instance
	byProviderID map[string]*Instance
	// dupNames and dupIDs hold keys claimed by more than one resource:
	// lookups of them are errors, never a guess.
	dupNames map[string][]string
	dupIDs   map[string][]string
	// errs are mapping errors (the first maxKeptErrors); errCount counts all.
	errs      []error
	errCount  int
	resources int
}

// BuildIndex maps every resource of st (root and child modules) with m.
func BuildIndex(m *mapping.Mapping, st *tfjson.State) *Index {
	ix := &Index{byName: map[string]*Instance{}, byProviderID: map[string]*Instance{}}
	if st == nil || st.Values == nil || st.Values.RootModule == nil {
		return ix
	}
	ix.addModule(m, st.Values.RootModule)
	return ix
}

func (ix *Index) addModule(m *mapping.Mapping, mod *tfjson.StateModule) {
	for _, r := range mod.Resources {
		ix.resources++
		in, err := m.Map(&mapping.Resource{
			Address:   r.Address,
			Mode:      string(r.Mode),
			Type:      r.Type,
			Name:      r.Name,
			Module:    mod.Address,
			Provider:  r.ProviderName,
			Index:     r.Index,
			Values:    r.AttributeValues,
			Sensitive: r.SensitiveValues,
		})
		if err != nil {
			ix.errCount++
			if len(ix.errs) < maxKeptErrors {
				ix.errs = append(ix.errs, err)
			}
			continue
		}
		if in != nil {
			ix.add(in)
		}
	}
	for _, c := range mod.ChildModules {
		ix.addModule(m, c)
	}
}

func (ix *Index) add(in *Instance) {
	claim(ix.byName, &ix.dupNames, in.Name, in)
	if in.ProviderID != "" {
		claim(ix.byProviderID, &ix.dupIDs, in.ProviderID, in)
	}
}

// claim indexes in under key, unless another resource claimed key too:
// then key moves to dups with every resource claiming it.
func claim(by map[string]*Instance, dups *map[string][]string, key string, in *Instance) {
	if d, ok := (*dups)[key]; ok {
		(*dups)[key] = append(d, in.Resource)
	} else if prev, ok := by[key]; ok {
		delete(by, key)
		if *dups == nil {
			*dups = map[string][]string{}
		}
		(*dups)[key] = []string{prev.Resource, in.Resource}
	} else {
		by[key] = in
	}
}

// Find looks an instance up by providerID first, then by node name. It
// returns (nil, nil) on a miss and an error when the key is ambiguous. A
// name match whose providerID differs from a given providerID is a
// different instance (the node's instance was replaced), so a miss.
func (ix *Index) Find(providerID, name string) (*Instance, error) {
	if providerID != "" {
		if d, ok := ix.dupIDs[providerID]; ok {
			return nil, fmt.Errorf("providerID %q is claimed by several resources %v", providerID, d)
		}
		if in, ok := ix.byProviderID[providerID]; ok {
			return in, nil
		}
	}
	if name == "" {
		return nil, nil
	}
	if d, ok := ix.dupNames[name]; ok {
		return nil, fmt.Errorf("node name %q is claimed by several resources %v", name, d)
	}
	in, ok := ix.byName[name]
	if !ok {
		return nil, nil
	}
	if providerID != "" && in.ProviderID != "" && in.ProviderID != providerID {
		return nil, nil
	}
	return in, nil
}

// Len is the number of distinct instances.
func (ix *Index) Len() int { return len(ix.byName) + len(ix.dupNames) }

// Resources is the number of state resources mapped.
func (ix *Index) Resources() int { return ix.resources }

// Errors returns the first mapping errors and how many there were in all.
func (ix *Index) Errors() ([]error, int) { return ix.errs, ix.errCount }

// Instances lists the unambiguous instances sorted by name.
func (ix *Index) Instances() []*Instance {
	out := make([]*Instance, 0, len(ix.byName))
	for _, in := range ix.byName {
		out = append(out, in)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// incomplete explains why a miss in this index cannot prove absence, or
// returns nil.
func (ix *Index) incomplete() error {
	if ix.errCount > 0 {
		return fmt.Errorf("%d resource(s) failed to map, first: %w", ix.errCount, ix.errs[0])
	}
	if ix.Len() == 0 {
		return fmt.Errorf("the state holds no instances (%d resources); refusing to report instances gone", ix.resources)
	}
	return nil
}
