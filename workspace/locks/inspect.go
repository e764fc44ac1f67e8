package locks

// A held state lock as an operator sees it (tfccm unlock, tfccm
// workspaces): who holds it, and whether it is a stale one of tfccm's own.

import "fmt"

// Lock describes the state lock of a workspace, as an operator sees it.
type Lock struct {
	// Held is false when nobody holds the lock.
	Held bool
	// ID, Who, Operation and Created are tofu's lock info.
	ID, Who, Operation, Created string
	// Holder is the one-line description used in Events and messages.
	Holder string
	// Ours is true when the workspace's claim names the lock's holder: it
	// was taken by a tfccm run of this identity.
	Ours bool
	// Stale is true when the holder is known to be gone (a tfccm run whose
	// process on this host has exited, or an earlier boot).
	Stale bool
	// Why explains Ours and Stale.
	Why string
}

// Judge describes li, the lock held on the state of the workspace in dir,
// for a tfccm of identity: the workspace's claim tells whether a tfccm run
// took it, and this host whether that run is gone.
func Judge(li LockInfo, dir, identity string) Lock {
	l := Lock{Held: true, ID: li.ID, Who: li.Who, Operation: li.Operation, Created: li.Created, Holder: li.Holder()}
	c, ok := ReadClaim(dir)
	self := SelfClaim(identity, "")
	switch {
	case !ok || c.Identity != self.Identity || c.Who != li.Who:
		l.Why = "no tfccm run of this deployment claims it: someone else (a person or another controller) holds it"
	case c.Host != self.Host && c.BootID != self.BootID:
		l.Ours = true
		l.Why = fmt.Sprintf("taken by a tfccm run on host %s, which this command cannot check is gone", c.Host)
	case ProcessAlive(c.PID, c.PIDStart) && !(c.BootID != "" && c.BootID != self.BootID):
		l.Ours = true
		l.Why = fmt.Sprintf("taken by tfccm process %d on this host, which is still running", c.PID)
	default:
		l.Ours, l.Stale = true, true
		l.Why = fmt.Sprintf("taken by tfccm process %d on this host, which has exited", c.PID)
	}
	return l
}
