// BGP on the host: the speaker's FRR configuration, and the announcements
// the host's announcer (lbhost-router -announce) keeps routed.

package host

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tfccm/tfccm/lbhost/announce"
	"github.com/tfccm/tfccm/lbhost/frr"
	"github.com/tfccm/tfccm/lbhost/transport"
)

// FRR says where the host's FRR is.
type FRR struct {
	// Config is FRR's integrated configuration file (default
	// /etc/frr/frr.conf), which lbhost owns on a BGP host.
	Config string
	// Pathspace is FRR's -N (its daemons run with it; "" for the host's
	// own FRR): lbhost/hosttest runs one FRR per network namespace.
	Pathspace string
}

var rePathspace = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// Validate checks the paths and the pathspace.
func (f FRR) Validate() error {
	if err := transport.CheckPath(f.frrConfig()); err != nil {
		return &FieldError{Field: "frr_config", Msg: err.Error()}
	}
	if f.Pathspace != "" && !rePathspace.MatchString(f.Pathspace) {
		return &FieldError{Field: "frr_pathspace", Msg: fmt.Sprintf("%q: want 1-32 of a-z, 0-9 and '-'", f.Pathspace)}
	}
	return nil
}

func (f FRR) frrConfig() string {
	if f.Config == "" {
		return "/etc/frr/frr.conf"
	}
	return f.Config
}

// writeSecretScript writes stdin to $1 readable by root and group frr
// only (it may hold peer passwords), through a temporary file renamed
// over it. Constant: the path reaches it as $1, never as code.
const writeSecretScript = `set -e; umask 027; cat > "$1.lbhost-tmp"; chgrp frr "$1.lbhost-tmp" 2>/dev/null || true; mv -f -- "$1.lbhost-tmp" "$1"`

// ApplySpeaker writes c as the host's FRR configuration (checked by
// vtysh's dry run first) and reloads FRR with frr-reload.py, which
// changes only what differs (sessions that stay are not reset). Errors
// never show the file, which may hold passwords.
func (h *Host) ApplySpeaker(ctx context.Context, c frr.Config) error {
	text, err := frr.Render(c)
	if err != nil {
		return err
	}
	unlock, err := h.lockFRR(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	return h.replaceFRR(ctx, text, c.Peers)
}

// replaceFRR stages text beside the FRR file (readable by root and group
// frr only: it may hold passwords), checks it with vtysh -C, moves it over
// the file and reloads FRR. Errors never show a password of peers.
func (h *Host) replaceFRR(ctx context.Context, text string, peers []frr.Peer) error {
	file := h.FRR.frrConfig()
	staged := file + ".lbhost-new"
	if _, err := h.T.Run(ctx, []byte(text), "sh", "-c", writeSecretScript, "sh", staged); err != nil {
		return fmt.Errorf("%s: write %s: %w", h.T, staged, scrub(err, peers))
	}
	if _, err := h.T.Run(ctx, nil, "vtysh", "-C", "-f", staged); err != nil {
		_, _ = h.T.Run(ctx, nil, "rm", "-f", "--", staged)
		return fmt.Errorf("%s: FRR refuses the configuration (vtysh -C): %w", h.T, scrub(err, peers))
	}
	if _, err := h.T.Run(ctx, nil, "mv", "-f", "--", staged, file); err != nil {
		return fmt.Errorf("%s: %w", h.T, scrub(err, peers))
	}
	if err := h.reloadFRR(ctx, file); err != nil {
		return &PartialError{Err: scrub(err, peers)}
	}
	return nil
}

// lockFRR checks the FRR settings and takes the host's lock.
func (h *Host) lockFRR(ctx context.Context) (func(), error) {
	if err := h.FRR.Validate(); err != nil {
		return nil, err
	}
	return h.lock(ctx)
}

func (h *Host) reloadFRR(ctx context.Context, file string) error {
	// At info, frr-reload.py logs the configuration it applies (the
	// passwords with it) to /var/log/frr/frr-reload.log: warning at most.
	argv := []string{"/usr/lib/frr/frr-reload.py", "--reload", "--log-level", "warning"}
	if h.FRR.Pathspace != "" {
		argv = append(argv, "--pathspace", h.FRR.Pathspace)
	}
	if _, err := h.T.Run(ctx, nil, append(argv, file)...); err != nil {
		// Its output may show configuration lines: passwords masked, the
		// last lines only.
		lines := strings.Split(strings.TrimSpace(rePassword.ReplaceAllString(err.Error(), "${1}<password>")), "\n")
		if len(lines) > 3 {
			lines = lines[len(lines)-3:]
		}
		return fmt.Errorf("%s: reload FRR (frr-reload.py --reload %s) failed (its log is /var/log/frr/frr-reload.log on the host): %s", h.T, file, strings.Join(lines, " / "))
	}
	return nil
}

// rePassword masks whatever follows "password" in FRR's output.
var rePassword = regexp.MustCompile(`(password\s+)\S+`)

// scrub replaces every peer password in err's text.
func scrub(err error, peers []frr.Peer) error {
	s := err.Error()
	for _, p := range peers {
		if p.Password != "" {
			s = strings.ReplaceAll(s, p.Password, "<password>")
		}
	}
	return fmt.Errorf("%s", s)
}

// SpeakerHash returns a hash of the host's FRR configuration as it is
// ("" when there is none), to compare with ConfigHash of the wanted one.
func (h *Host) SpeakerHash(ctx context.Context) (string, error) {
	if err := h.FRR.Validate(); err != nil {
		return "", err
	}
	b, err := h.T.ReadFile(ctx, h.FRR.frrConfig())
	if transport.IsNotExist(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w", h.T, err)
	}
	return ConfigHash(string(b)), nil
}

// ConfigHash is the hash of an FRR configuration kept in state, with its
// passwords masked (a hash over a password would let anyone with the
// state guess it offline): a changed password alone is no diff, and is
// written by the next apply of the speaker (or -replace).
func ConfigHash(text string) string {
	sum := sha256.Sum256([]byte(frr.Masked(text)))
	return hex.EncodeToString(sum[:])
}

// DeleteSpeaker replaces the configuration with one without BGP (every
// session closes, every route is withdrawn) and reloads FRR.
func (h *Host) DeleteSpeaker(ctx context.Context) error {
	unlock, err := h.lockFRR(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	file := h.FRR.frrConfig()
	empty := "! Written by tfccm's lbhost provider: no BGP on this host.\nfrr defaults traditional\nservice integrated-vtysh-config\n!\n"
	if _, err := h.T.Run(ctx, []byte(empty), "sh", "-c", writeSecretScript, "sh", file); err != nil {
		return fmt.Errorf("%s: write %s: %w", h.T, file, err)
	}
	return h.reloadFRR(ctx, file)
}

// Networks are the networks of the host's interfaces (global scope), for
// checking that every peer is directly connected.
func (h *Host) Networks(ctx context.Context) ([]netip.Prefix, error) {
	out, err := h.T.Run(ctx, nil, "ip", "-j", "addr", "show")
	if err != nil {
		return nil, fmt.Errorf("%s: read addresses: %w", h.T, err)
	}
	var links []struct {
		AddrInfo []struct {
			Local     string `json:"local"`
			PrefixLen int    `json:"prefixlen"`
			Scope     string `json:"scope"`
		} `json:"addr_info"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		return nil, fmt.Errorf("%s: parse ip -j addr: %w", h.T, err)
	}
	var nets []netip.Prefix
	for _, l := range links {
		for _, a := range l.AddrInfo {
			addr, err := netip.ParseAddr(a.Local)
			if err != nil || a.Scope != "global" || (addr.Is4() && a.PrefixLen == 32) || (addr.Is6() && a.PrefixLen == 128) {
				continue // host routes (announced addresses among them) are no network
			}
			nets = append(nets, netip.PrefixFrom(addr, a.PrefixLen).Masked())
		}
	}
	return nets, nil
}

func (h *Host) announcementFile(owner string) string { return h.p("bgp", owner+".json") }

// ApplyAnnouncement writes the announcer's config of c: the host
// announces c.Address while c's frontend and backends serve it.
func (h *Host) ApplyAnnouncement(ctx context.Context, c announce.Config) error {
	if err := c.Validate(); err != nil {
		return &FieldError{Field: "announcement", Msg: err.Error()}
	}
	if !ValidOwner(c.Owner) {
		return &FieldError{Field: "owner", Msg: fmt.Sprintf("%q is not a valid owner", c.Owner)}
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	unlock, err := h.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := h.T.WriteFile(ctx, h.announcementFile(c.Owner), append(b, '\n')); err != nil {
		return fmt.Errorf("%s: announcement of %s: %w", h.T, c.Address, err)
	}
	return nil
}

// AnnouncementState is an announcement as the host has it.
type AnnouncementState struct {
	Config announce.Config
	// Announced is whether the announcer routes the address now (its
	// frontend serves it), so bgpd announces it.
	Announced bool
}

// ReadAnnouncement returns owner's announcement (nil: none). A file
// lbhost cannot read back is a *Drift.
func (h *Host) ReadAnnouncement(ctx context.Context, owner string) (*AnnouncementState, error) {
	if !ValidOwner(owner) {
		return nil, &FieldError{Field: "owner", Msg: fmt.Sprintf("%q is not a valid owner", owner)}
	}
	if err := h.needDir(); err != nil {
		return nil, err
	}
	b, err := h.T.ReadFile(ctx, h.announcementFile(owner))
	if transport.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", h.T, err)
	}
	c, err := announce.Parse(b)
	if err != nil || c.Owner != owner {
		return nil, &Drift{Reason: "announcement " + notLbhosts(h.announcementFile(owner))}
	}
	on, err := h.announced(ctx, c.Address)
	if err != nil {
		return nil, err
	}
	return &AnnouncementState{Config: c, Announced: on}, nil
}

// DeleteAnnouncement removes owner's announcement and waits, up to
// timeout, until the announcer has withdrawn its address (FRR then
// withdraws the route at once), so whatever is destroyed after it (the
// frontend) no longer gets traffic from the routers; then it waits drain
// for the routers to converge.
func (h *Host) DeleteAnnouncement(ctx context.Context, owner string, timeout, drain time.Duration) error {
	st, err := h.ReadAnnouncement(ctx, owner)
	var drift *Drift
	if err != nil && !errors.As(err, &drift) {
		return err
	}
	if err := h.T.Remove(ctx, h.announcementFile(owner)); err != nil {
		return fmt.Errorf("%s: %w", h.T, err)
	}
	if st == nil || !st.Announced {
		return nil
	}
	deadline := time.Now().Add(timeout)
	for {
		on, err := h.announced(ctx, st.Config.Address)
		if err != nil {
			return err
		}
		if !on {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: %s is still announced %s after its announcement was removed: is lbhost-router -announce running?", h.T, st.Config.Address, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(drain):
	}
	return nil
}

// announced reports whether the announcer's route to addr is in the
// host's main table.
func (h *Host) announced(ctx context.Context, addr string) (bool, error) {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false, fmt.Errorf("announced address %q: %w", addr, err)
	}
	fam, prefix := "-4", addr+"/32"
	if a.Is6() {
		fam, prefix = "-6", addr+"/128"
	}
	out, err := h.T.Run(ctx, nil, "ip", "-j", fam, "route", "show", "exact", prefix, "proto", announce.Proto)
	if err != nil {
		return false, fmt.Errorf("%s: read routes: %w", h.T, err)
	}
	var routes []json.RawMessage
	if err := json.Unmarshal(out, &routes); err != nil {
		return false, fmt.Errorf("%s: parse ip -j route: %w", h.T, err)
	}
	return len(routes) > 0, nil
}

// BGPSession is one of the speaker's sessions as bgpd reports it.
type BGPSession struct {
	// Peer is the peer's name (its description), Address its address.
	Peer, Address string
	// State is BGP's state: Established, or Idle, Connect, Active,
	// OpenSent, OpenConfirm.
	State string
}

// BGPSessions reads the speaker's sessions (`vtysh -c 'show bgp
// neighbors json'`), sorted by address; none without a speaker.
func (h *Host) BGPSessions(ctx context.Context) ([]BGPSession, error) {
	if err := h.FRR.Validate(); err != nil {
		return nil, err
	}
	argv := []string{"vtysh"}
	if h.FRR.Pathspace != "" {
		argv = append(argv, "-N", h.FRR.Pathspace)
	}
	out, err := h.T.Run(ctx, nil, append(argv, "-c", "show bgp neighbors json")...)
	if err != nil {
		return nil, fmt.Errorf("%s: read BGP sessions: %w", h.T, err)
	}
	return parseSessions(out)
}

func parseSessions(out []byte) ([]BGPSession, error) {
	var peers map[string]struct {
		Desc  string `json:"nbrDesc"`
		State string `json:"bgpState"`
	}
	if len(strings.TrimSpace(string(out))) == 0 {
		return nil, nil
	}
	if err := json.Unmarshal(out, &peers); err != nil {
		return nil, fmt.Errorf("parse vtysh's BGP neighbors: %w", err)
	}
	var s []BGPSession
	for addr, p := range peers {
		if _, err := netip.ParseAddr(addr); err != nil {
			continue // not a neighbour (a peer group, say)
		}
		s = append(s, BGPSession{Peer: cmp.Or(p.Desc, addr), Address: addr, State: p.State})
	}
	slices.SortFunc(s, func(a, b BGPSession) int { return strings.Compare(a.Address, b.Address) })
	return s, nil
}
