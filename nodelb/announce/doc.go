// Package announce makes a node answer for node-mode VIPs the way MetalLB's
// L2 speakers do: the address is never added to an interface; a responder
// on the interface answers ARP requests (IPv4) and neighbor solicitations
// (IPv6) for the VIPs this node holds with the interface's hardware
// address, and a new holder sends gratuitous ARP / unsolicited neighbor
// advertisements so neighbours update their caches at once. kube-proxy on
// the node takes the packets from there (ipMode VIP). An agent that stops
// or dies stops answering: nothing stays on the node, and a node whose
// agent is gone never competes with the new holder.
package announce
