package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/webhook"
)

// newWebhookSecretCmd builds `delayq webhook-secret`, which prints a fresh signing secret.
func newWebhookSecretCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "webhook-secret",
		Short: "Print a fresh random webhook signing secret (whsec_...)",
		Long: strings.TrimSpace(`
Print a fresh random Standard Webhooks secret: "whsec_" and the base64 of 32 random bytes from
the operating system's secure random source. Give it to the server (--webhook-secret or
DELAYQ_WEBHOOK_SECRET) and to the receivers, which verify signatures with it.

To rotate a secret without downtime, start the server with the new one as --webhook-secret
and the old one as --webhook-secret-previous: every delivery is then signed with both, so
receivers verify whichever they know. Once every receiver has the new secret, drop
--webhook-secret-previous. docs/webhooks.md has the details.`),
		Example: `  delayq webhook-secret
  DELAYQ_WEBHOOK_SECRET="$(delayq webhook-secret)" delayq server`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), webhook.NewSecret())
			return err
		},
	}
}
