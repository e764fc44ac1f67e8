// Package locks owns the engine's knowledge of state locks: reading the
// lock tofu reports when it cannot take one, the claim an engine writes in
// a workspace before it runs tofu there, and the one decision whether a
// held lock was left by an earlier incarnation of this controller (which
// may release it with force-unlock) or belongs to anyone else (reported,
// never stolen), and a held lock as an operator sees it (tfccm unlock).
// It imports nothing of package workspace.
package locks
