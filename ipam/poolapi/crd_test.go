package poolapi

import (
	"reflect"
	"testing"

	"github.com/tfccm/tfccm/internal/testkit"
)

// TestCRDMatchesTypes: every field of the Go types' spec and status is in
// the CRD's schema under its JSON name, and the schema has no field the
// types lack (the apiserver would keep a value the CCM never reads).
func TestCRDMatchesTypes(t *testing.T) {
	testkit.CheckCRD(t, testkit.CRD{
		File:  "../../deploy/helm/tfccm/crds/tfccm.io_addresspools.yaml",
		Group: Group, Kind: Kind, Resource: Resource, Version: Version,
		Spec: reflect.TypeFor[AddressPoolSpec](), Status: reflect.TypeFor[AddressPoolStatus](),
	})
}
