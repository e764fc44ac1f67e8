package annotations

// The value of tfccm.io/adopt: the id of an existing load balancer (and,
// for template sets whose parts have ids of their own, the parts' ids by
// name) that the Service's first plan imports instead of creating one.

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Adoption is a parsed tfccm.io/adopt value.
type Adoption struct {
	// ID is the load balancer's id in its cloud, as the template set's
	// import block expects it (README of the set).
	ID string
	// Parts are the ids of the load balancer's parts the set cannot
	// derive from ID (OpenStack's listeners and pools), by part name
	// ("listener.80"); nil for most sets.
	Parts map[string]string
}

// IDs returns every id the adoption names: ID first, then the parts' ids
// in part-name order.
func (a Adoption) IDs() []string {
	out := []string{a.ID}
	for _, k := range a.PartNames() {
		out = append(out, a.Parts[k])
	}
	return out
}

// PartNames returns the part names, sorted.
func (a Adoption) PartNames() []string {
	names := make([]string, 0, len(a.Parts))
	for k := range a.Parts {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// maxAdoptParts bounds the parts one adoption may name.
const maxAdoptParts = 64

var (
	// adoptIDRE is the shape of a cloud id: numbers, UUIDs, OCIDs,
	// Google's resource paths, Exoscale's id@zone. It never holds a quote,
	// a brace, a space or a '$', and it reaches templates as a variable,
	// never as HCL.
	adoptIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:/@+=-]{0,254}$`)
	// adoptPartRE is the shape of a part name.
	adoptPartRE = regexp.MustCompile(`^[a-z][a-z0-9_.-]{0,62}$`)
)

// parseAdopt accepts a bare id, or a JSON object of strings with key "id"
// and one key per part.
func parseAdopt(s string) (Adoption, error) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") {
		if !adoptIDRE.MatchString(s) {
			return Adoption{}, fmt.Errorf("%s is not a load balancer id (1-255 characters of letters, digits and ._:/@+=-, starting with a letter or digit), nor a JSON object such as {\"id\": \"...\", \"listener.80\": \"...\"}", Quote(s))
		}
		return Adoption{ID: s}, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return Adoption{}, fmt.Errorf("not a JSON object of strings: %v", err)
	}
	id, ok := m["id"]
	if !ok {
		return Adoption{}, fmt.Errorf("the JSON object has no \"id\" (the load balancer's id)")
	}
	delete(m, "id")
	if len(m) > maxAdoptParts {
		return Adoption{}, fmt.Errorf("%d parts; at most %d", len(m), maxAdoptParts)
	}
	a := Adoption{ID: id}
	if !adoptIDRE.MatchString(id) {
		return Adoption{}, fmt.Errorf("id %s is not a load balancer id (1-255 characters of letters, digits and ._:/@+=-, starting with a letter or digit)", Quote(id))
	}
	for _, k := range sortedKeys(m) {
		if !adoptPartRE.MatchString(k) {
			return Adoption{}, fmt.Errorf("part name %s is not a part name (a-z, 0-9 and _.-, starting with a letter, e.g. \"listener.80\")", Quote(k))
		}
		if !adoptIDRE.MatchString(m[k]) {
			return Adoption{}, fmt.Errorf("part %s: %s is not an id (1-255 characters of letters, digits and ._:/@+=-)", k, Quote(m[k]))
		}
	}
	if len(m) > 0 {
		a.Parts = m
	}
	return a, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
