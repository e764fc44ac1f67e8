// The claim files: who claims an address, share tokens, and the VRRP owner
// of a shared address.

package host

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// A claim file claims/<address> holds one line per claimant: its owner,
// and " share=<token>" when the owner shares the address with every
// claimant of the same token (tfccm's tfccm.io/allow-shared-ip, whose
// rules tfccm checks before it renders). A file with one owner and no
// token is the format of every earlier release.

var reShare = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,62}$`)

// ValidShare reports whether s can be a share token ("" = not shared).
func ValidShare(s string) bool { return s == "" || reShare.MatchString(s) }

// claimant is one line of a claim file.
type claimant struct{ owner, share string }

// claimants is everyone claiming one address.
type claimants []claimant

func parseClaimants(data []byte) claimants {
	var out claimants
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		c := claimant{owner: f[0]}
		if len(f) > 1 {
			c.share, _ = strings.CutPrefix(f[1], "share=")
		}
		out = append(out, c)
	}
	return out
}

func (cs claimants) bytes() []byte {
	var b strings.Builder
	for _, c := range cs {
		b.WriteString(c.owner)
		if c.share != "" {
			b.WriteString(" share=" + c.share)
		}
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

func (cs claimants) has(owner string) bool {
	for _, c := range cs {
		if c.owner == owner {
			return true
		}
	}
	return false
}

// other names a claimant other than owner ("" if none).
func (cs claimants) other(owner string) string {
	var names []string
	for _, c := range cs {
		if c.owner != owner {
			names = append(names, c.owner)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// admits reports whether owner (with share) may claim the address too:
// everyone else claims it with the same non-empty token.
func (cs claimants) admits(owner, share string) bool {
	for _, c := range cs {
		if c.owner != owner && (share == "" || c.share != share) {
			return false
		}
	}
	return true
}

// with returns cs with owner's claim (replacing an earlier one of owner).
func (cs claimants) with(owner, share string) claimants {
	out := cs.without(owner)
	return append(out, claimant{owner, share})
}

func (cs claimants) without(owner string) claimants {
	var out claimants
	for _, c := range cs {
		if c.owner != owner {
			out = append(out, c)
		}
	}
	return out
}

// shareOwner is the owner of a shared address's VRRP instance: one per
// address, kept while any sharer claims it. Load balancer owners have no
// '.', so it is never a load balancer's own.
func shareOwner(share string) string { return "share." + share }

// vrrpOwner is who owns v's VRRP instance.
func (v VIP) vrrpOwner() string {
	if v.Share != "" {
		return shareOwner(v.Share)
	}
	return v.Owner
}

// VRRPOwner is the owner of the VRRP instance of owner's VIP with share.
func VRRPOwner(owner, share string) string {
	if share != "" {
		return shareOwner(share)
	}
	return owner
}

// usedBy is the error for owner asking for addr that others hold.
func usedBy(addr, owner string, cs claimants, host fmt.Stringer) *FieldError {
	other := cs.other(owner)
	if !ValidOwner(other) { // a claim file's line, not one lbhost wrote: never quoted
		other = "(a claim lbhost did not write)"
	}
	return &FieldError{Field: "address", Msg: fmt.Sprintf("%s is already used by load balancer %s on %s", addr, other, host)}
}
