package workspace

// Adoption (Spec.Adopts): the template's import blocks read the input
// AdoptVar. They are meant for the first apply only: once an apply
// succeeded, what was adopted is in the state, and a port or node added
// later must be created, not imported (there is nothing to import). So
// every later plan, and the apply of its saved plan (which must be given
// the same value), sets AdoptVar to null.

import "github.com/hashicorp/terraform-exec/tfexec"

// adoptDone reports whether r's workspace adopted already: it adopts,
// the plan is not a destroy, and an apply succeeded before.
func (r *runner) adoptDone(destroy bool) bool {
	return r.spec != nil && r.spec.Adopts && !destroy && !r.created
}

// adoptNullVar is the -var that turns the adoption's imports off.
func adoptNullVar() *tfexec.VarOption { return tfexec.Var(AdoptVar + "=null") }
