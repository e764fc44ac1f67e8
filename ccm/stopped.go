package ccm

// Stopped is closed once the Cloud's work has ended after the stop channel
// given to Initialize closed: the engine interrupted its running tofu and
// every run wrote its state. The CCM's main waits for it before it gives
// up the leader Lease on shutdown. Never closed before Initialize.
func (c *Cloud) Stopped() <-chan struct{} { return c.engine.Done() }
