package durable

import "github.com/duroxide-go/cdb/duroxide"

// instanceEnds returns a channel that receives when the client's
// provider reports that a commit ended an execution of instance
// (duroxide.InstanceEndNotifier), and the cancel that ends the
// subscription. Without the capability the channel is nil, which never
// receives: the wait keeps to its poll schedule. The channel holds one
// wake-up, so ends reported while the wait is reading are not lost and
// the provider, which calls while holding its locks, never blocks.
func (c *Client) instanceEnds(instance string) (<-chan struct{}, func()) {
	n, ok := c.p.(duroxide.InstanceEndNotifier)
	if !ok {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	cancel := n.NotifyInstanceEnd(instance, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	return ch, cancel
}
