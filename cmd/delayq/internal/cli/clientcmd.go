package cli

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
)

// clientOptions are the flags of every command that calls a server.
type clientOptions struct {
	server  string
	token   string
	caCert  string
	json    bool
	timeout time.Duration
}

// showCmd is clientCmd for a command that makes one request, bounded by --timeout, and shows
// what it answers: as JSON with --json, else as show writes it.
func showCmd[T any](cmd *cobra.Command, call func(ctx context.Context, c *apiclient.Client, args []string) (T, error), show func(io.Writer, T)) *cobra.Command {
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		v, err := call(ctx, c, args)
		if err != nil {
			return err
		}
		return out.result(v, func(w io.Writer) { show(w, v) })
	})
}

// listCmd is clientCmd for a command that lists every item of a kind with one request,
// bounded by --timeout: with --json as the API's object that wrap makes of the items, where an
// empty list is [] and never null; else as table writes them, or as the line none when there
// are none.
func listCmd[T, L any](cmd *cobra.Command, list func(*apiclient.Client, context.Context) ([]T, error), wrap func([]T) L, none string, table func(io.Writer, []T)) *cobra.Command {
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, _ []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		items, err := list(c, ctx)
		if err != nil {
			return err
		}
		if items == nil {
			items = []T{}
		}
		return out.result(wrap(items), func(w io.Writer) {
			if len(items) == 0 {
				fmt.Fprintln(w, none)
				return
			}
			table(w, items)
		})
	})
}

// clientCmd builds a command that calls a server: it adds the common flags and hands run a
// client, bounding the call by --timeout (plus extra, for a reserve's wait).
func clientCmd(cmd *cobra.Command, run func(ctx context.Context, c *apiclient.Client, out *output, args []string) error) *cobra.Command {
	var o clientOptions
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "http://127.0.0.1:7070", "address of the delayq server")
	f.StringVar(&o.token, "token", "", "API token, sent as \"Authorization: Bearer <token>\"")
	f.StringVar(&o.caCert, "ca-cert", "", "PEM file of the certificate authority that signed an https:// server's certificate, trusted besides the system's")
	f.BoolVar(&o.json, "json", false, "print the API's JSON instead of a table")
	f.DurationVar(&o.timeout, "timeout", 30*time.Second, "bound on the request (a reserve's --wait comes on top)")
	documentEnv(f)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		server := serverURL(o.server)
		cfg := apiclient.Config{BaseURL: server, Token: o.token, UserAgent: "delayq-cli"}
		if o.caCert != "" {
			pool, err := caPool(o.caCert)
			if err != nil {
				return fmt.Errorf("--ca-cert: %w", err)
			}
			cfg.RootCAs = pool
		}
		c, err := apiclient.New(cfg)
		if err != nil {
			return fmt.Errorf("--server: %w", err)
		}
		if o.timeout <= 0 {
			return fmt.Errorf("--timeout %v: want a positive duration", o.timeout)
		}
		out := &output{w: cmd.OutOrStdout(), errw: cmd.ErrOrStderr(), json: o.json, timeout: o.timeout}
		err = run(cmd.Context(), c, out, args)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("no delayq server answers at %s (connection refused): start one with `delayq server`, or point --server (or DELAYQ_SERVER) at yours", server)
		}
		return err
	}
	return cmd
}

// caPool returns the system's certificate authorities and those of the PEM file at path.
func caPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

// serverURL reads --server: an address without a scheme ("127.0.0.1:7070") is taken as http.
func serverURL(s string) string {
	if !strings.Contains(s, "://") {
		return "http://" + s
	}
	return s
}

// output writes a command's result as a table or as JSON.
type output struct {
	w, errw io.Writer
	json    bool
	timeout time.Duration
}

// bound returns ctx bounded by the request timeout plus extra.
func (o *output) bound(ctx context.Context, extra time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, o.timeout+extra)
}

// printJSON writes v as one line of JSON, as the API does (pipe it to jq to indent it).
func (o *output) printJSON(v any) error {
	enc := json.NewEncoder(o.w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// result writes v as JSON with --json, else calls text.
func (o *output) result(v any, text func(w io.Writer)) error {
	if o.json {
		return o.printJSON(v)
	}
	text(o.w)
	return nil
}

// done reports a command without a result body: a line of text, nothing with --json.
func (o *output) done(format string, args ...any) {
	if !o.json {
		fmt.Fprintf(o.w, format+"\n", args...)
	}
}

// parseDurations reads a comma-separated list of durations, such as 15s,3m,1h.
func parseDurations(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, item := range strings.Split(s, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(item))
		if err != nil {
			return nil, fmt.Errorf("%q is not a list of durations such as 15s,3m,1h", s)
		}
		out = append(out, d)
	}
	return out, nil
}

// parseRunAt reads an RFC 3339 time.
func parseRunAt(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("--run-at %q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", s)
	}
	return t, nil
}
