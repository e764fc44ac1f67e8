// Package metallb reads MetalLB's own address pool objects as they are
// (metallb.io/v1beta1 IPAddressPool, and the interfaces and node selectors
// of the L2Advertisements that announce them) and converts them into
// tfccm's AddressPool objects (package ipam/poolapi): what the controller
// serves with compat { metallb = true } and what `tfccm convert metallb`
// writes. What has no AddressPool equivalent is named in a Note, never
// dropped silently.
package metallb
