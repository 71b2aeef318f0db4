package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/delayq/delayq/cmd/delayq/internal/apiclient"
	"github.com/delayq/delayq/cmd/delayq/internal/apiv1"
)

func newScheduleCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Create, list, show, pause, resume or delete recurring jobs",
		Long: strings.TrimSpace(`
A schedule enqueues one job per tick of a cron expression (or a fixed interval) into a topic:
the job of the tick at T has the id <name>@T (T in UTC with milliseconds) and is due at T.
Every "delayq server" runs the schedules, however many there are; each tick gives one job.`),
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(
		newSchedulePutCmd(),
		newScheduleListCmd(),
		newScheduleActionCmd("get", "Show a schedule with its next ticks and its last tick enqueued", (*apiclient.Client).Schedule),
		newScheduleActionCmd("pause", "Pause a schedule: it enqueues no tick until resumed", (*apiclient.Client).PauseSchedule),
		newScheduleActionCmd("resume", "Resume a paused schedule, from now", (*apiclient.Client).ResumeSchedule),
		newScheduleDeleteCmd(),
	)
	return cmd
}

// scheduleFlags are the flags of `delayq schedule put`.
type scheduleFlags struct {
	cron, timezone, topic, startAt, endAt, missed string
	job                                           enqueueFlags
}

func newSchedulePutCmd() *cobra.Command {
	var fl scheduleFlags
	cmd := &cobra.Command{
		Use:   "put <name> --cron EXPR --topic TOPIC",
		Short: "Create a schedule, or replace one",
		Long: strings.TrimSpace(`
Create a schedule, or replace the definition of one. A replaced schedule keeps its pause and its
last tick; the jobs of ticks enqueued already (a few seconds ahead) stay as they are.

--cron takes five fields (minute, hour, day of month, month, day of week) or a descriptor:
@yearly, @monthly, @weekly, @daily, @hourly, or "@every <interval>" with an interval of whole
seconds, from 1s to ten years (87600h).`),
		Example: `  delayq schedule put nightly-report --cron '30 2 * * *' --timezone Europe/Berlin --topic reports --body '{"kind":"nightly"}'
  delayq schedule put heartbeat --cron '@every 30s' --topic pings --missed skip`,
		Args: cobra.ExactArgs(1),
	}
	f := cmd.Flags()
	f.StringVar(&fl.cron, "cron", "", `when it ticks, such as '*/5 * * * *', @hourly or '@every 30s'`)
	f.StringVar(&fl.timezone, "timezone", "", "IANA time zone of the cron fields, such as Europe/Berlin (default UTC)")
	f.StringVar(&fl.topic, "topic", "", "topic of each tick's job")
	f.StringVar(&fl.startAt, "start-at", "", "first possible tick, an RFC 3339 time (rounded up to a whole second)")
	f.StringVar(&fl.endAt, "end-at", "", "last possible tick, an RFC 3339 time (in the future, after the first tick)")
	f.StringVar(&fl.missed, "missed", "", "ticks missed while no server ran: latest (enqueue the most recent, the default) or skip")
	fl.job.addTemplateFlags(cmd)
	_ = cmd.MarkFlagRequired("cron")
	_ = cmd.MarkFlagRequired("topic")
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		req, err := fl.request(cmd)
		if err != nil {
			return err
		}
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		s, created, err := c.PutSchedule(ctx, args[0], req)
		if err != nil {
			return err
		}
		return out.result(s, func(w io.Writer) {
			verb := "replaced"
			if created {
				verb = "created"
			}
			fmt.Fprintf(w, "%s schedule %s\n", verb, s.Name)
			printSchedule(w, s)
		})
	})
}

// request builds the schedule request the flags describe.
func (fl *scheduleFlags) request(cmd *cobra.Command) (apiclient.ScheduleRequest, error) {
	job, err := fl.job.request(cmd)
	if err != nil {
		return apiclient.ScheduleRequest{}, err
	}
	r := apiclient.ScheduleRequest{Cron: fl.cron, Timezone: fl.timezone, Topic: fl.topic, Job: job, Missed: fl.missed}
	if r.StartAt, err = optionalTime("start-at", fl.startAt); err != nil {
		return r, err
	}
	r.EndAt, err = optionalTime("end-at", fl.endAt)
	return r, err
}

// optionalTime reads the RFC 3339 time of a flag; the zero time when it was not given.
func optionalTime(flag, v string) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q is not an RFC 3339 time such as 2026-11-22T10:00:00Z", flag, v)
	}
	return t, nil
}

func newScheduleListCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "list", Short: "List every schedule", Args: cobra.NoArgs}
	return listCmd(cmd, (*apiclient.Client).Schedules, func(list []apiv1.Schedule) apiv1.ScheduleList {
		return apiv1.ScheduleList{Schedules: list}
	}, "no schedules", printSchedules)
}

// newScheduleActionCmd builds a command that calls do on one schedule and shows it.
func newScheduleActionCmd(use, short string, do func(*apiclient.Client, context.Context, string) (*apiv1.Schedule, error)) *cobra.Command {
	cmd := &cobra.Command{Use: use + " <name>", Short: short, Args: cobra.ExactArgs(1)}
	return showCmd(cmd, func(ctx context.Context, c *apiclient.Client, args []string) (*apiv1.Schedule, error) {
		return do(c, ctx, args[0])
	}, printSchedule)
}

func newScheduleDeleteCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete <name>",
		Short: "Delete a schedule; the jobs of ticks enqueued already stay",
		Args:  cobra.ExactArgs(1),
	}
	return clientCmd(cmd, func(ctx context.Context, c *apiclient.Client, out *output, args []string) error {
		ctx, cancel := out.bound(ctx, 0)
		defer cancel()
		if err := c.DeleteSchedule(ctx, args[0]); err != nil {
			return err
		}
		out.done("deleted schedule %s", args[0])
		return nil
	})
}
