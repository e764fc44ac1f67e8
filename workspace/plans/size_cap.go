package plans

// The cap on a kept plan: a Store refuses a plan larger than it can keep,
// and the engine then fails the pass instead of keeping a plan a restart
// would lose.

import "fmt"

// MaxSealedPlan is the largest sealed plan a Store keeps, in bytes: a
// Kubernetes Secret holds at most 1 MiB, and the plan's labels,
// annotations and encoding need the rest.
const MaxSealedPlan = 900 << 10

// TooLargeError is a plan a Store will not keep: Size bytes sealed, over
// Cap, in Where (the Secret's name).
type TooLargeError struct {
	Where     string
	Size, Cap int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the sealed plan is %d bytes, over the cap of %d bytes for %s: it is neither kept nor applied, and the load balancer stays as it was; "+
		"a plan with fewer changes (fewer Services sharing one workspace, fewer ports or nodes per change) fits", e.Size, e.Cap, e.Where)
}
