// Package plans owns what the engine knows about a plan apart from
// running tofu: a pending plan and its counts, its published form with
// every sensitive value redacted, the gate's input and verdict (and the
// plan as policy rules see it), and the plan store's contract for keeping
// pending plans across restarts, with the stamp of the state a plan was
// made against. It imports nothing of package workspace.
package plans
