// Split brain as one holder sees it: another node's claim written over its own.

package agent

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// contenderTTL is how long a node that wrote itself over this holder's
// claim stays a contender without doing it again: contenders overwrite
// each other every overwriteEvery while neither hears the other.
const contenderTTL = 3 * overwriteEvery

// contention is what a holder knows of other nodes answering for its
// addresses, by address.
type contention struct {
	// claimed: the status has named this node as holder since it took
	// the address (its claim was written and seen).
	claimed map[string]bool
	// others: nodes seen overwriting that claim while this node holds the
	// address, and when last.
	others map[string]map[string]time.Time
}

func newContention() contention {
	return contention{claimed: map[string]bool{}, others: map[string]map[string]time.Time{}}
}

// observe looks at the statuses of d's NodeVIPs, d being an address self
// holds, and returns the nodes answering for it at once (sorted, self
// included; nil when self alone does) and a node newly seen contending
// ("" when none). A status naming another holder after self's claim was
// seen means that node wrote its own claim while self held the address;
// unless it is a live member of self's gossip (then it follows the same
// rule, and one of the two lets go: a hand-over), both answer: a split
// brain (the two do not hear each other but reach the API server). A
// contender drops out once self hears it again or after contenderTTL
// without a new claim.
func (c contention) observe(self string, d decision, members map[string]member, now time.Time) (list []string, fresh string) {
	addr := d.Address.String()
	others := c.others[addr]
	for _, v := range d.VIPs {
		a := v.Status.Announced()
		if a == nil || a.Status != metav1.ConditionTrue || v.Status.Holder == "" {
			continue
		}
		h := v.Status.Holder
		switch {
		case h == self:
			c.claimed[addr] = true
		case c.claimed[addr]:
			if _, alive := members[h]; alive {
				continue
			}
			if others == nil {
				others = map[string]time.Time{}
				c.others[addr] = others
			}
			if _, seen := others[h]; !seen {
				fresh = h
			}
			others[h] = now
		}
	}
	for h, at := range others {
		if _, alive := members[h]; alive || now.Sub(at) >= contenderTTL {
			delete(others, h)
		}
	}
	if len(others) == 0 {
		delete(c.others, addr)
		return nil, fresh
	}
	list = append(list, self)
	for h := range others {
		list = append(list, h)
	}
	slices.Sort(list)
	return list, fresh
}

// forget drops what is known of addr (self released it).
func (c contention) forget(addr string) {
	delete(c.claimed, addr)
	delete(c.others, addr)
}
