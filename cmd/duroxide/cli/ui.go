package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/duroxide-go/cdb/dashboard"
	"github.com/duroxide-go/cdb/durable"
	"github.com/duroxide-go/cdb/duroxide"
)

// ui serves the dashboard until ctx ends.
func (c Command) ui(ctx context.Context, args []string) (int, error) {
	fs := flag.NewFlagSet("duroxide ui", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8080", "listen address (the dashboard has no authentication of its own: keep it on localhost)")
	readOnly := fs.Bool("read-only", false, "hide and refuse every action")
	pos, err := c.parseArgs(fs, args)
	if err != nil {
		return 0, err
	}
	if err := positional(pos); err != nil {
		return 0, err
	}
	err = c.withProvider(ctx, func(p duroxide.Provider) error {
		ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", *addr)
		if err != nil {
			return err
		}
		url := "http://" + ln.Addr().String() + "/"
		fmt.Fprintf(c.Stderr, "duroxide dashboard on %s (Ctrl-C stops it)\n", url)
		if c.Ready != nil {
			c.Ready(url)
		}
		srv := &http.Server{
			Handler:           dashboard.New(durable.NewClient(p), dashboard.Options{ReadOnly: *readOnly}),
			ReadHeaderTimeout: 10 * time.Second,
		}
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ln) }()
		select {
		case err := <-done:
			return err
		case <-ctx.Done():
		}
		shutCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err = srv.Shutdown(shutCtx)
		if serr := <-done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		return err
	})
	return ExitOK, err
}
