package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envVar ties a flag to the environment variable that sets it when the flag is not given.
type envVar struct {
	flag string
	name string
	// list splits the value at commas into one value per item, for repeatable flags.
	list bool
	// secret keeps the value out of error messages.
	secret bool
}

// envVars is the one table of environment variables, for every command. A flag given on the
// command line wins over its variable.
var envVars = []envVar{
	// delayq server, as the API document lists them.
	{flag: "listen", name: "DELAYQ_LISTEN"},
	{flag: "redis", name: "DELAYQ_REDIS", secret: true},
	{flag: "data-dir", name: "DELAYQ_DATA_DIR"},
	{flag: "namespace", name: "DELAYQ_NAMESPACE"},
	{flag: "auth-token", name: "DELAYQ_AUTH_TOKENS", list: true, secret: true},
	{flag: "webhook-secret", name: "DELAYQ_WEBHOOK_SECRET", secret: true},
	{flag: "webhook-allow-cidr", name: "DELAYQ_WEBHOOK_ALLOW_CIDRS", list: true},
	// delayq server, extensions.
	{flag: "allowed-host", name: "DELAYQ_ALLOWED_HOSTS", list: true},
	{flag: "auth-tokens-file", name: "DELAYQ_AUTH_TOKENS_FILE"},
	{flag: "tls-cert", name: "DELAYQ_TLS_CERT"},
	{flag: "tls-key", name: "DELAYQ_TLS_KEY"},
	{flag: "webhook-secret-previous", name: "DELAYQ_WEBHOOK_SECRET_PREVIOUS", secret: true},
	{flag: "log-format", name: "DELAYQ_LOG_FORMAT"},
	{flag: "log-level", name: "DELAYQ_LOG_LEVEL"},
	{flag: "partitions", name: "DELAYQ_PARTITIONS"},
	{flag: "webhook-concurrency", name: "DELAYQ_WEBHOOK_CONCURRENCY"},
	{flag: "shutdown-timeout", name: "DELAYQ_SHUTDOWN_TIMEOUT"},
	{flag: "request-timeout", name: "DELAYQ_REQUEST_TIMEOUT"},
	{flag: "replay-window", name: "DELAYQ_REPLAY_WINDOW"},
	{flag: "unique-for", name: "DELAYQ_UNIQUE_FOR"},
	{flag: "redis-server", name: "DELAYQ_REDIS_SERVER"},
	{flag: "redis-appendfsync", name: "DELAYQ_REDIS_APPENDFSYNC"},
	{flag: "metrics", name: "DELAYQ_METRICS"},
	{flag: "metrics-public", name: "DELAYQ_METRICS_PUBLIC"},
	{flag: "scheduler", name: "DELAYQ_SCHEDULER"},
	{flag: "dashboard-read-only", name: "DELAYQ_DASHBOARD_READ_ONLY"},
	{flag: "archive", name: "DELAYQ_ARCHIVE", secret: true},
	{flag: "archive-bodies", name: "DELAYQ_ARCHIVE_BODIES"},
	{flag: "archive-failed", name: "DELAYQ_ARCHIVE_FAILED"},
	{flag: "archive-keep", name: "DELAYQ_ARCHIVE_KEEP"},
	{flag: "archive-retention", name: "DELAYQ_ARCHIVE_RETENTION"},
	{flag: "beanstalkd-listen", name: "DELAYQ_BEANSTALKD_LISTEN"},
	{flag: "beanstalkd-max-conns", name: "DELAYQ_BEANSTALKD_MAX_CONNS"},
	{flag: "beanstalkd-max-job-size", name: "DELAYQ_BEANSTALKD_MAX_JOB_SIZE"},
	// Client commands.
	{flag: "server", name: "DELAYQ_SERVER"},
	{flag: "token", name: "DELAYQ_TOKEN", secret: true},
	{flag: "ca-cert", name: "DELAYQ_CA_CERT"},
}

// applyEnv sets each of cmd's flags that was not given from its environment variable.
func applyEnv(cmd *cobra.Command, getenv env) error {
	flags := cmd.Flags()
	for _, v := range envVars {
		f := flags.Lookup(v.flag)
		if f == nil || f.Changed {
			continue
		}
		value := getenv(v.name)
		if value == "" {
			continue
		}
		if err := setFromEnv(f, v, value); err != nil {
			return err
		}
	}
	return nil
}

func setFromEnv(f *pflag.Flag, v envVar, value string) error {
	items := []string{value}
	if v.list {
		items = nil
		for _, item := range strings.Split(value, ",") {
			if item = strings.TrimSpace(item); item != "" {
				items = append(items, item)
			}
		}
	}
	for _, item := range items {
		if err := f.Value.Set(item); err != nil {
			if v.secret {
				return fmt.Errorf("environment variable %s: not a valid value for --%s", v.name, f.Name)
			}
			return fmt.Errorf("environment variable %s=%q: %w", v.name, item, err)
		}
	}
	return nil
}

// documentEnv adds "[$NAME]" to the help of each flag of fs that an environment variable sets.
func documentEnv(fs *pflag.FlagSet) {
	for _, v := range envVars {
		if f := fs.Lookup(v.flag); f != nil && !strings.Contains(f.Usage, "$"+v.name) {
			if v.list {
				f.Usage += fmt.Sprintf(" [$%s, comma-separated]", v.name)
			} else {
				f.Usage += fmt.Sprintf(" [$%s]", v.name)
			}
		}
	}
}
