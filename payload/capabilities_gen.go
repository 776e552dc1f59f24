// Code generated for payload.Wrap; one type per combination of the
// capability groups in capabilities.go. DO NOT EDIT by hand: the groups
// and this table change together (TestWrapKeepsCapabilities checks them).

package payload

import "github.com/duroxide-go/cdb/duroxide"

type with00 struct{ *core }
type with01 struct {
	*core
	clientWrites
}
type with02 struct {
	*core
	instanceFetcher
}
type with03 struct {
	*core
	clientWrites
	instanceFetcher
}
type with04 struct {
	*core
	suspensionReader
}
type with05 struct {
	*core
	clientWrites
	suspensionReader
}
type with06 struct {
	*core
	instanceFetcher
	suspensionReader
}
type with07 struct {
	*core
	clientWrites
	instanceFetcher
	suspensionReader
}
type with08 struct {
	*core
	pendingRequests
}
type with09 struct {
	*core
	clientWrites
	pendingRequests
}
type with10 struct {
	*core
	instanceFetcher
	pendingRequests
}
type with11 struct {
	*core
	clientWrites
	instanceFetcher
	pendingRequests
}
type with12 struct {
	*core
	suspensionReader
	pendingRequests
}
type with13 struct {
	*core
	clientWrites
	suspensionReader
	pendingRequests
}
type with14 struct {
	*core
	instanceFetcher
	suspensionReader
	pendingRequests
}
type with15 struct {
	*core
	clientWrites
	instanceFetcher
	suspensionReader
	pendingRequests
}
type with16 struct {
	*core
	statusReader
}
type with17 struct {
	*core
	clientWrites
	statusReader
}
type with18 struct {
	*core
	instanceFetcher
	statusReader
}
type with19 struct {
	*core
	clientWrites
	instanceFetcher
	statusReader
}
type with20 struct {
	*core
	suspensionReader
	statusReader
}
type with21 struct {
	*core
	clientWrites
	suspensionReader
	statusReader
}
type with22 struct {
	*core
	instanceFetcher
	suspensionReader
	statusReader
}
type with23 struct {
	*core
	clientWrites
	instanceFetcher
	suspensionReader
	statusReader
}
type with24 struct {
	*core
	pendingRequests
	statusReader
}
type with25 struct {
	*core
	clientWrites
	pendingRequests
	statusReader
}
type with26 struct {
	*core
	instanceFetcher
	pendingRequests
	statusReader
}
type with27 struct {
	*core
	clientWrites
	instanceFetcher
	pendingRequests
	statusReader
}
type with28 struct {
	*core
	suspensionReader
	pendingRequests
	statusReader
}
type with29 struct {
	*core
	clientWrites
	suspensionReader
	pendingRequests
	statusReader
}
type with30 struct {
	*core
	instanceFetcher
	suspensionReader
	pendingRequests
	statusReader
}
type with31 struct {
	*core
	clientWrites
	instanceFetcher
	suspensionReader
	pendingRequests
	statusReader
}

// combinations builds the wrapper for each capability mask.
var combinations = [capCombinations]func(*core) duroxide.Provider{
	0: func(c *core) duroxide.Provider { return &with00{c} },
	1: func(c *core) duroxide.Provider { return &with01{c, clientWrites{c}} },
	2: func(c *core) duroxide.Provider { return &with02{c, instanceFetcher{c}} },
	3: func(c *core) duroxide.Provider { return &with03{c, clientWrites{c}, instanceFetcher{c}} },
	4: func(c *core) duroxide.Provider { return &with04{c, suspensionReader{c}} },
	5: func(c *core) duroxide.Provider { return &with05{c, clientWrites{c}, suspensionReader{c}} },
	6: func(c *core) duroxide.Provider { return &with06{c, instanceFetcher{c}, suspensionReader{c}} },
	7: func(c *core) duroxide.Provider {
		return &with07{c, clientWrites{c}, instanceFetcher{c}, suspensionReader{c}}
	},
	8:  func(c *core) duroxide.Provider { return &with08{c, pendingRequests{c}} },
	9:  func(c *core) duroxide.Provider { return &with09{c, clientWrites{c}, pendingRequests{c}} },
	10: func(c *core) duroxide.Provider { return &with10{c, instanceFetcher{c}, pendingRequests{c}} },
	11: func(c *core) duroxide.Provider {
		return &with11{c, clientWrites{c}, instanceFetcher{c}, pendingRequests{c}}
	},
	12: func(c *core) duroxide.Provider { return &with12{c, suspensionReader{c}, pendingRequests{c}} },
	13: func(c *core) duroxide.Provider {
		return &with13{c, clientWrites{c}, suspensionReader{c}, pendingRequests{c}}
	},
	14: func(c *core) duroxide.Provider {
		return &with14{c, instanceFetcher{c}, suspensionReader{c}, pendingRequests{c}}
	},
	15: func(c *core) duroxide.Provider {
		return &with15{c, clientWrites{c}, instanceFetcher{c}, suspensionReader{c}, pendingRequests{c}}
	},
	16: func(c *core) duroxide.Provider { return &with16{c, statusReader{c}} },
	17: func(c *core) duroxide.Provider { return &with17{c, clientWrites{c}, statusReader{c}} },
	18: func(c *core) duroxide.Provider { return &with18{c, instanceFetcher{c}, statusReader{c}} },
	19: func(c *core) duroxide.Provider {
		return &with19{c, clientWrites{c}, instanceFetcher{c}, statusReader{c}}
	},
	20: func(c *core) duroxide.Provider { return &with20{c, suspensionReader{c}, statusReader{c}} },
	21: func(c *core) duroxide.Provider {
		return &with21{c, clientWrites{c}, suspensionReader{c}, statusReader{c}}
	},
	22: func(c *core) duroxide.Provider {
		return &with22{c, instanceFetcher{c}, suspensionReader{c}, statusReader{c}}
	},
	23: func(c *core) duroxide.Provider {
		return &with23{c, clientWrites{c}, instanceFetcher{c}, suspensionReader{c}, statusReader{c}}
	},
	24: func(c *core) duroxide.Provider { return &with24{c, pendingRequests{c}, statusReader{c}} },
	25: func(c *core) duroxide.Provider {
		return &with25{c, clientWrites{c}, pendingRequests{c}, statusReader{c}}
	},
	26: func(c *core) duroxide.Provider {
		return &with26{c, instanceFetcher{c}, pendingRequests{c}, statusReader{c}}
	},
	27: func(c *core) duroxide.Provider {
		return &with27{c, clientWrites{c}, instanceFetcher{c}, pendingRequests{c}, statusReader{c}}
	},
	28: func(c *core) duroxide.Provider {
		return &with28{c, suspensionReader{c}, pendingRequests{c}, statusReader{c}}
	},
	29: func(c *core) duroxide.Provider {
		return &with29{c, clientWrites{c}, suspensionReader{c}, pendingRequests{c}, statusReader{c}}
	},
	30: func(c *core) duroxide.Provider {
		return &with30{c, instanceFetcher{c}, suspensionReader{c}, pendingRequests{c}, statusReader{c}}
	},
	31: func(c *core) duroxide.Provider {
		return &with31{c, clientWrites{c}, instanceFetcher{c}, suspensionReader{c}, pendingRequests{c}, statusReader{c}}
	},
}
