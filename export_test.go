package cdb

// DisableSessionTokens makes p send no session tokens, as the provider did
// before it carried them: tests use it to show that the cosmostest-lagging
// backend catches a missing token.
func DisableSessionTokens(p *Provider) {
	p.st.tokens.mu.Lock()
	defer p.st.tokens.mu.Unlock()
	p.st.tokens.disabled = true
}

// SessionTokenFor returns the session token p would send on a read of
// instance's partition ("" if none), so white-box helpers that read through
// the SDK get read-your-writes on a lagging replica too.
func SessionTokenFor(p *Provider, instance string) string {
	if t := p.st.tokens.get(instance); t != nil {
		return *t
	}
	return ""
}

// ObserveSessionToken hands p the session token of a write made behind its
// back (a test's direct edit), as if p had made it: p's later reads of the
// partition then see that write even on a lagging replica.
func ObserveSessionToken(p *Provider, instance, token string) {
	p.st.tokens.observe(instance, token)
}
